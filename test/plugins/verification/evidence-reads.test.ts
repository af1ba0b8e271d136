import { expect } from 'chai';
import type { Pool } from 'pg';
import type { Sql } from '../../../core/db/sql';
import { TOKENS } from '../../../core/tokens';
import { ObservationStore } from '../../../plugins/verification/services/observations';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { signUp } from '../../support/world';

/** A pool that counts the statements sent through it. */
function countingPool(pool: Pool): { pool: Pool; count: () => number } {
  let n = 0;
  const counted = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return (...args: unknown[]) => {
          n++;
          return (target.query as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { pool: counted, count: () => n };
}

const CACHE = { ttlMs: 5000, maxObservations: 100_000, maxAccounts: 1000 };

describe('observation store: evidence reads under load', function () {
  this.timeout(30_000);
  let svc: TestService;
  let clock = Date.now();
  let workspaceId: string;
  before(async () => {
    svc = await startTestService();
    workspaceId = (await signUp(svc, 'evidence-reads')).workspaceId;
  });
  after(() => svc.close());

  it('concurrent reads of one product type share a single database read; after the cache expires, one new read', async () => {
    const { pool, count } = countingPool(svc.container.resolve<Pool>(TOKENS.PgPool));
    const store = new ObservationStore(svc.container.resolve<Sql>(TOKENS.Sql), pool, CACHE, () => clock);
    await store.contribute(workspaceId, [{ product_type: 'shared-read', currency: 'USD', amount: '3.00', observed_at: new Date().toISOString(), source: 's' }]);
    const since = new Date(clock - 86_400_000);
    const reads = await Promise.all(Array.from({ length: 25 }, () => store.forVerification('shared-read', 'USD', since, 100)));
    expect(count()).to.equal(1);
    expect(new Set(reads).size).to.equal(1);
    expect(reads[0]?.observations.map((o) => o.amount)).to.deep.equal(['3.00']);
    clock += 6000;
    await Promise.all(Array.from({ length: 10 }, () => store.forVerification('shared-read', 'USD', since, 100)));
    expect(count()).to.equal(2);
  });

  it("one submitter's flood of fresh quotes does not push the others' older evidence out of the read: each account keeps its newest VERIFY_MAX_OBSERVATIONS_PER_ACCOUNT", async () => {
    const store = new ObservationStore(svc.container.resolve<Sql>(TOKENS.Sql), svc.container.resolve<Pool>(TOKENS.PgPool), CACHE, () => clock);
    const at = (hoursAgo: number) => new Date(Date.now() - hoursAgo * 3_600_000).toISOString();
    const honest = await Promise.all(['flood-a', 'flood-b', 'flood-c'].map(async (n) => (await signUp(svc, n)).workspaceId));
    for (const [i, ws] of honest.entries()) {
      await store.contribute(ws, [10, 11].map((h) => ({ product_type: 'flooded', currency: 'USD', amount: `${10 + i}.00`, observed_at: at(h), source: 'shop' })));
    }
    const flooder = (await signUp(svc, 'flooder')).workspaceId;
    await store.contribute(flooder, Array.from({ length: 30 }, (_, i) => ({ product_type: 'flooded', currency: 'USD', amount: '50.00', observed_at: at(i / 100), source: 'flood' })));
    const read = await store.forVerification('flooded', 'USD', new Date(Date.now() - 86_400_000), 10, 3);
    const byAccount = (id: string) => read.observations.filter((o) => o.workspaceId === id).length;
    expect(byAccount(flooder)).to.equal(3);
    for (const ws of honest) expect(byAccount(ws), ws).to.equal(2);
    expect(read.observations).to.have.length(9);
    // Newest first, as before.
    const times = read.observations.map((o) => o.observedAt);
    expect(times).to.deep.equal([...times].sort((a, b) => b - a));
  });

  it('a write of a name outside ASCII refreshes every cached spelling the database would match it to (ΣΑΣ, σασ, σας)', async () => {
    const store = new ObservationStore(svc.container.resolve<Sql>(TOKENS.Sql), svc.container.resolve<Pool>(TOKENS.PgPool), CACHE, () => clock);
    const since = new Date(clock - 86_400_000);
    // Cached before the write, under the spelling PostgreSQL's lower() gives.
    expect((await store.forVerification('σασ', 'USD', since, 100)).observations).to.have.length(0);
    await store.contribute(workspaceId, [{ product_type: 'ΣΑΣ', currency: 'USD', amount: '2.00', observed_at: new Date().toISOString(), source: 's' }]);
    const folded = (await store.forVerification('σασ', 'USD', since, 100)).observations.length;
    const db = await svc.sequelize.query(`SELECT lower('ΣΑΣ') = lower('σασ') AS same`);
    // Only where the database folds the two alike must the write show under the other spelling.
    if ((db[0][0] as { same: boolean }).same) expect(folded).to.equal(1);
  });

  it('a write made while a read is under way is seen by the next caller', async () => {
    const { pool, count } = countingPool(svc.container.resolve<Pool>(TOKENS.PgPool));
    const store = new ObservationStore(svc.container.resolve<Sql>(TOKENS.Sql), pool, CACHE, () => clock);
    const since = new Date(clock - 86_400_000);
    const first = store.forVerification('raced-read', 'USD', since, 100);
    await store.contribute(workspaceId, [{ product_type: 'raced-read', currency: 'USD', amount: '4.00', observed_at: new Date().toISOString(), source: 's' }]);
    await first;
    const after = await store.forVerification('raced-read', 'USD', since, 100);
    expect(after.observations.map((o) => o.amount)).to.deep.equal(['4.00']);
    expect(count()).to.be.at.least(2);
  });

  it('keeps reads up to VERIFY_EVIDENCE_CACHE_MAX_OBSERVATIONS observations together, dropping the oldest read past it, and never one larger than the bound', async () => {
    const { pool, count } = countingPool(svc.container.resolve<Pool>(TOKENS.PgPool));
    // Each read of three observations weighs 4: two fit in 9, a third drops the oldest.
    const store = new ObservationStore(svc.container.resolve<Sql>(TOKENS.Sql), pool, { ...CACHE, maxObservations: 9 }, () => clock);
    const three = (productType: string) => ['1.00', '2.00', '3.00'].map((amount) => ({ product_type: productType, currency: 'USD', amount, observed_at: new Date().toISOString(), source: 's' }));
    for (const t of ['bound-a', 'bound-b', 'bound-c']) await store.contribute(workspaceId, three(t));
    await store.contribute(workspaceId, [...three('bound-big'), ...three('bound-big'), ...three('bound-big')]);
    const since = new Date(clock - 86_400_000);
    const read = async (t: string) => {
      const before = count();
      expect((await store.forVerification(t, 'USD', since, 100)).observations.length).to.be.greaterThan(0);
      return count() - before;
    };
    expect([await read('bound-a'), await read('bound-b'), await read('bound-a'), await read('bound-b')], 'both kept').to.deep.equal([1, 1, 0, 0]);
    expect([await read('bound-c'), await read('bound-a'), await read('bound-c')], 'c dropped a, the oldest; a read again dropped b').to.deep.equal([1, 1, 0]);
    expect([await read('bound-big'), await read('bound-big')], 'nine observations weigh 10: never kept').to.deep.equal([1, 1]);
    expect([await read('bound-c'), await read('bound-a')], 'and dropped nothing').to.deep.equal([0, 0]);
  });
});
