import { expect } from 'chai';
import { Pool } from 'pg';
import { createLogger } from '../../../core/logger';
import { UsageRecorder } from '../../../plugins/usage/services/recorder';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { recorderEvent as event } from './helpers';

/**
 * Two claiming statements in flight at once (USAGE_CONCURRENT_INSERTS > 1, or two instances) take
 * the key rows' locks in the order of their groups; takeBatch moves a second call with a key to the
 * next group, so that group holds the same keys in another order. A slow row (a trigger sleeping
 * 300 ms before one insert) only widens the window.
 */
describe('usage recorder: claiming statements in flight together take their keys in one order', function () {
  this.timeout(60_000);
  let svc: TestService;
  let pool: Pool;
  before(async () => {
    svc = await startTestService({ enabled: ['identity', 'usage'] });
    pool = new Pool({ connectionString: svc.databaseUrl, max: 4 });
    await pool.query(`CREATE FUNCTION slow_claim_for_test() RETURNS trigger AS $$ BEGIN IF NEW.fingerprint = 'slow' THEN PERFORM pg_sleep(0.3); END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
    await pool.query('CREATE TRIGGER slow_claim_for_test BEFORE INSERT ON compute_idempotency_keys FOR EACH ROW EXECUTE FUNCTION slow_claim_for_test()');
  });
  after(async () => {
    await pool.end();
    await svc.close();
  });

  it('writes the group (an unkeyed call with it) instead of failing it on a deadlock, the deferred duplicates finding their keys held', async () => {
    const rec = new UsageRecorder(pool, createLogger('silent'), { concurrentInserts: 2 });
    const k0 = `dl-${Date.now()}-0`;
    const k1 = `dl-${Date.now()}-1`;
    const claim = (key: string, fingerprint = 'f') => ({ key, fingerprint, response: { price: '1' } });
    const settle = (p: Promise<unknown>) => p.then((v) => (v === null ? 'held by another' : 'written'), (e: Error & { code?: string }) => `failed: ${e.code ?? e.message}`);
    // Group 1: a (k0), b (k1, slow). Group 2 (b's and a's duplicates, deferred): c (k1), d (k0), and an unkeyed call.
    const a = settle(rec.recordClaimed(event(), claim(k0)));
    const b = settle(rec.recordClaimed(event(), claim(k1, 'slow')));
    const c = settle(rec.recordClaimed(event(), claim(k1)));
    const d = settle(rec.recordClaimed(event(), claim(k0)));
    const u = new Promise<string>((resolve) => queueMicrotask(() => resolve(settle(rec.recordEvent(event())))));
    const outcomes = { a: await a, b: await b, c: await c, d: await d, unkeyed: await u };
    expect([outcomes.a, outcomes.b, outcomes.unkeyed]).to.deep.equal(['written', 'written', 'written']);
    expect([outcomes.c, outcomes.d]).to.deep.equal(['held by another', 'held by another']);
  });
});
