import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { ApiError } from '../../../core/errors';
import { mayHaveCommitted } from '../../../core/db/failures';
import { createLogger } from '../../../core/logger';
import { UsageRecorder } from '../../../plugins/usage/services/recorder';
import { freezeBackends } from '../../support/db';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { tcpProxy } from '../../support/tcp-proxy';
import type { TcpProxy } from '../../support/tcp-proxy';
import { recorderEvent } from './helpers';

const event = (requestId: string) => recorderEvent({ workspaceId: 'ws_undelivered_test', requestId });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const outcome = <T>(p: Promise<T>) => p.then((value) => ({ value }), (err: unknown) => ({ err }));

/**
 * A usage insert whose outcome the writer cannot know (its connection broke, or the database did not
 * answer in time, after the statement was sent) answers the caller 503 "nothing was charged". The
 * insert may have committed, or may still commit: the event must end not delivered and not billable
 * all the same, once the database answers again.
 */
describe('usage recorder: events whose insert outcome is unknown', function () {
  this.timeout(30_000);
  let svc: TestService;
  let proxy: TcpProxy;
  let pool: Pool;

  before(async () => {
    svc = await startTestService({ enabled: ['identity', 'usage'] });
  });
  beforeEach(async () => {
    const db = new URL(svc.databaseUrl);
    proxy = await tcpProxy(db.hostname, Number(db.port));
  });
  afterEach(async () => {
    await pool?.end().catch(() => undefined);
    await proxy.close();
  });
  after(() => svc.close());

  async function rows(requestId: string): Promise<Array<Record<string, unknown>>> {
    const [found] = await svc.sequelize.query('SELECT status, error_code, billable, cost::text AS cost FROM usage_events WHERE request_id = $1', { bind: [requestId] });
    return found as Array<Record<string, unknown>>;
  }

  async function settled(requestId: string, done: (r: Array<Record<string, unknown>>) => boolean): Promise<Array<Record<string, unknown>>> {
    let found: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 100 && !done((found = await rows(requestId))); i++) await sleep(50);
    return found;
  }

  const undelivered = [{ status: 'error', error_code: 'not_delivered', billable: false, cost: '0.00000000' }];

  it('an insert that committed but whose answer was lost (connection cut): the caller hears 503, the event ends not delivered and not billable', async () => {
    pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2 });
    const rec = new UsageRecorder(pool, createLogger('silent'), { undeliveredRetryMs: 50 });
    await rec.record(event('warm-up'));

    proxy.mode = 'mute-replies';
    const call = outcome(rec.record(event('reply-lost')));
    expect(await settled('reply-lost', (r) => r.length > 0), 'the insert reached the database and committed').to.deep.equal([{ status: 'ok', error_code: null, billable: true, cost: '0.00100000' }]);
    proxy.drop();
    proxy.mode = 'pass';

    const { err } = (await call) as { err?: unknown };
    expect(err).to.be.instanceOf(ApiError).and.include({ status: 503, code: 'service_unavailable' });
    expect((err as ApiError).extras.hint).to.match(/^Nothing was charged/);
    expect(await settled('reply-lost', (r) => r[0]?.status === 'error')).to.deep.equal(undelivered);
    await rec.close();
  });

  it('a keyed call whose insert outcome was unknown, replayed to a retry before the mark lands, stays charged (its answer reached a caller); not replayed, its key is let go', async () => {
    pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2 });
    const rec = new UsageRecorder(pool, createLogger('silent'), { undeliveredRetryMs: 50 });
    await rec.record(event('warm-up-keyed'));
    for (const replayed of [true, false]) {
      const requestId = `keyed-unknown-${replayed}`;
      const key = `${requestId}-${Date.now()}`;
      proxy.mode = 'mute-replies';
      const call = outcome(rec.recordClaimed(event(requestId), { key, fingerprint: 'f', response: { price: '19.99' } }));
      expect(await settled(requestId, (r) => r.length > 0), 'the insert committed').to.deep.equal([{ status: 'ok', error_code: null, billable: true, cost: '0.00100000' }]);
      // Meanwhile a retry on another instance replayed it (what CallReplays.markReplayed records).
      if (replayed) await svc.sequelize.query('UPDATE compute_idempotency_keys SET replayed_at = now() WHERE key = $1', { bind: [key] });
      proxy.drop();
      proxy.mode = 'pass';
      expect(((await call) as { err?: unknown }).err).to.be.instanceOf(ApiError);
      await rec.drainAll();
      await sleep(400);
      const [keys] = await svc.sequelize.query('SELECT replayed_at IS NOT NULL AS replayed FROM compute_idempotency_keys WHERE key = $1', { bind: [key] });
      if (replayed) {
        expect(await rows(requestId)).to.deep.equal([{ status: 'ok', error_code: null, billable: true, cost: '0.00100000' }]);
        expect(keys).to.deep.equal([{ replayed: true }]);
      } else {
        expect(await settled(requestId, (r) => r[0]?.status === 'error')).to.deep.equal(undelivered);
        expect(keys, 'the key is let go with the mark').to.deep.equal([]);
      }
    }
    await rec.close();
  });

  it('an insert sent to a frozen database: the caller hears 503 once the client-side bound passes, and the insert the thawed database commits ends not delivered', async function () {
    // Freezing needs the server's processes on this machine: the embedded test database.
    if (process.env.TEST_DATABASE_URL) this.skip();
    const app = `undelivered-${Date.now()}`;
    pool = new Pool({ connectionString: svc.databaseUrl, max: 1, application_name: app, query_timeout: 400 });
    const rec = new UsageRecorder(pool, createLogger('silent'), { undeliveredRetryMs: 50 });
    await rec.record(event('warm-up-frozen'));

    const thaw = await freezeBackends(svc.databaseUrl, app);
    let call: Promise<{ value?: string; err?: unknown }>;
    const started = Date.now();
    try {
      call = outcome(rec.record(event('frozen')));
      const { err } = await call;
      expect(err).to.be.instanceOf(ApiError).and.include({ status: 503, code: 'service_unavailable' });
      expect(Date.now() - started).to.be.below(2000);
      expect((await rows('frozen')).filter((r) => r.billable), 'nothing billable while frozen').to.deep.equal([]);
    } finally {
      thaw();
    }
    // The thawed server runs the insert it was sent; the writer's mark wins in either order.
    expect(await settled('frozen', (r) => r[0]?.status === 'error')).to.deep.equal(undelivered);
    await sleep(300);
    expect(await rows('frozen'), 'still one row, not delivered, once everything has run').to.deep.equal(undelivered);
    await rec.close();
  });

  it('a not-delivered mark the database does not answer is written once it does', async () => {
    pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2, query_timeout: 300 });
    const rec = new UsageRecorder(pool, createLogger('silent'), { undeliveredRetryMs: 50 });
    const id = await rec.record(event('mark-later'));
    proxy.mode = 'hold';
    await rec.markNotDelivered([id]);
    expect(await rows('mark-later'), 'not marked while the database does not answer').to.deep.equal([{ status: 'ok', error_code: null, billable: true, cost: '0.00100000' }]);
    proxy.release();
    expect(await settled('mark-later', (r) => r[0]?.status === 'error')).to.deep.equal(undelivered);
    await rec.close();
  });

  it('shutdown makes one last attempt at the marks still waiting', async () => {
    pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2, query_timeout: 300 });
    // A retry far in the future: only close() can write it.
    const rec = new UsageRecorder(pool, createLogger('silent'), { undeliveredRetryMs: 60_000 });
    const id = await rec.record(event('mark-at-close'));
    proxy.mode = 'hold';
    await rec.markNotDelivered([id]);
    proxy.release();
    await rec.close();
    expect(await rows('mark-at-close')).to.deep.equal(undelivered);
  });

  it('one event the database refuses among those waiting is given up alone: the others are still marked', async () => {
    pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2 });
    const log: string[] = [];
    // Two inserts in flight at once, each on its own connection, both cut off below.
    const rec = new UsageRecorder(pool, createLogger('warn', { write: (l: string) => log.push(l) }), { undeliveredRetryMs: 50, concurrentInserts: 2 });
    await Promise.all([rec.record(event('warm-a')), rec.record(event('warm-b'))]);

    proxy.mode = 'mute-replies';
    const committed = outcome(rec.record(event('refused-neighbour')));
    expect(await settled('refused-neighbour', (r) => r.length > 0)).to.have.length(1);
    // A price that is no number: its insert fails whatever it is sent with, and so does its mark.
    const refused = outcome(rec.record(recorderEvent({ requestId: 'refused-itself', price: 'not a number' })));
    await sleep(100);
    proxy.drop();
    proxy.mode = 'pass';
    expect(((await committed) as { err?: unknown }).err).to.be.instanceOf(ApiError);
    expect(((await refused) as { err?: unknown }).err).to.be.instanceOf(ApiError);

    expect(await settled('refused-neighbour', (r) => r[0]?.status === 'error')).to.deep.equal(undelivered);
    expect(await rows('refused-itself')).to.deep.equal([]);
    await rec.close();
    expect(log.join('')).to.match(/refused by the database; given up/);
  });

  it('a marked row keeps the time of its call, not the time the database came back', async () => {
    pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2 });
    const rec = new UsageRecorder(pool, createLogger('silent'), { undeliveredRetryMs: 50 });
    await rec.record(event('warm-time'));
    proxy.mode = 'hold';
    const failedBy = Date.now();
    const call = outcome(rec.record(event('held-time')));
    await sleep(200);
    proxy.drop();
    proxy.release();
    expect(((await call) as { err?: unknown }).err).to.be.instanceOf(ApiError);
    // The database answers again only now.
    await sleep(1200);
    expect(await settled('held-time', (r) => r[0]?.status === 'error')).to.deep.equal(undelivered);
    const [[at]] = (await svc.sequelize.query('SELECT created_at FROM usage_events WHERE request_id = $1', { bind: ['held-time'] })) as [Array<{ created_at: Date }>, unknown];
    expect(at?.created_at.getTime()).to.be.within(failedBy - 1000, failedBy + 1000);
    await rec.close();
  });

  it('marks the database did not take before shutdown are kept in a file in DATA_DIR, and the next start writes them and removes the file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pcs-marks-'));
    try {
      pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2, query_timeout: 200, connectionTimeoutMillis: 200 });
      const log: string[] = [];
      const first = new UsageRecorder(pool, createLogger('warn', { write: (l: string) => log.push(l) }), { undeliveredRetryMs: 60_000, undeliveredJournalDir: dir });
      const id = await first.record(event('kept-for-next-start'));
      proxy.mode = 'hold';
      await first.markNotDelivered([id]);
      await first.close();
      expect(log.join('')).to.match(/kept in a file the next start marks them from/).and.include(id);
      const files = readdirSync(dir);
      expect(files).to.have.length(1);
      expect(statSync(path.join(dir, files[0] as string)).mode & 0o777).to.equal(0o600);
      expect(await rows('kept-for-next-start'), 'still charged while no instance runs').to.deep.equal([{ status: 'ok', error_code: null, billable: true, cost: '0.00100000' }]);
      await pool.end();
      proxy.release();
      proxy.mode = 'pass';

      // The next start, with the database answering.
      pool = new Pool({ connectionString: svc.databaseUrl, max: 2 });
      const next = new UsageRecorder(pool, createLogger('silent'), { undeliveredRetryMs: 50, undeliveredJournalDir: dir });
      expect(await settled('kept-for-next-start', (r) => r[0]?.status === 'error')).to.deep.equal(undelivered);
      for (let i = 0; i < 40 && readdirSync(dir).length > 0; i++) await sleep(25);
      expect(readdirSync(dir), 'the file goes once its marks are written').to.deep.equal([]);
      await next.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after shutdown nothing is retried any more, even with marks left waiting', async () => {
    pool = new Pool({ connectionString: proxy.via(svc.databaseUrl), max: 2, query_timeout: 200, connectionTimeoutMillis: 200 });
    const log: string[] = [];
    const rec = new UsageRecorder(pool, createLogger('warn', { write: (l: string) => log.push(l) }), { undeliveredRetryMs: 20 });
    const id = await rec.record(event('closed-waiting'));
    proxy.mode = 'hold';
    await rec.markNotDelivered([id]);
    await rec.close();
    expect(log.join(''), 'the last attempt reports what is left').to.match(/before shutdown/);
    await pool.end();
    const lines = log.length;
    await sleep(300);
    expect(log.slice(lines), 'no retry against the ended pool').to.deep.equal([]);
    // A mark failing after shutdown began is not kept for a retry that will not come: it is said at once.
    await rec.markNotDelivered([id]);
    expect(log.slice(lines).join('')).to.match(/arrived after shutdown began/).and.include(id);
    proxy.release();
  });

  describe('mayHaveCommitted', () => {
    it('is false where the database answered with an error or the statement was never sent', () => {
      for (const err of [
        { code: '57014', message: 'canceling statement due to statement timeout' },
        { code: '23514', message: 'violates check constraint' },
        { code: '53300', message: 'too many connections' },
        { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
        new Error('timeout exceeded when trying to connect'),
        new Error('Connection terminated due to connection timeout'),
        new Error('timeout expired'),
        new TypeError('Do not know how to serialize a BigInt'),
        new Error('Client has encountered a connection error and is not queryable'),
        new Error('Client was closed and is not queryable'),
        new Error('Cannot use a pool after calling end on the pool'),
      ]) {
        expect(mayHaveCommitted(err), JSON.stringify(err)).to.equal(false);
      }
    });

    it('is true where the connection broke or was given up on after sending', () => {
      for (const err of [
        new Error('Query read timeout'),
        new Error('Connection terminated unexpectedly'),
        { code: 'ECONNRESET', message: 'read ECONNRESET' },
        { code: '57P01', message: 'terminating connection due to administrator command' },
        { code: '08006', message: 'connection failure' },
        { code: 'EPIPE', message: 'write EPIPE' },
        new Error('Connection terminated'),
      ]) {
        expect(mayHaveCommitted(err), String((err as Error).message)).to.equal(true);
      }
    });
  });
});
