import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import { Sql } from '../../../core/db/sql';
import { MemoryKvStore } from '../../../core/kv';
import { createLogger } from '../../../core/logger';
import { Metrics } from '../../../core/metrics';
import { DEMO_WORKSPACE_ID } from '../../../plugins/pricing';
import { LeaderboardAggregator } from '../../../plugins/catalog/services/aggregate';
import { EMPTY_AGGREGATE, publish, roundToStep } from '../../../plugins/catalog/services/scoring';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import { countQueries, createFunction, insertEvents, lenient } from './helpers';

interface Board {
  computed_at: string | null;
  data: Array<{ function: { id: string }; total_invocations: number | null; stats: { usage_status: string } }>;
}

describe('catalog: leaderboard scoring rules', () => {
  const rules = { minDistinctConsumers: 3, confidenceMinCustomers: 5, confidenceRounding: 0.05 };

  it('rounds to the nearest multiple of the step without float noise', () => {
    expect(roundToStep(0.834, 0.05)).to.equal(0.85);
    expect(roundToStep(0.812, 0.05)).to.equal(0.8);
    expect(roundToStep(0.9749, 0.05)).to.equal(0.95);
    expect(roundToStep(0.975, 0.05)).to.equal(1);
    expect(roundToStep(0.3, 0.1)).to.equal(0.3);
    expect(roundToStep(0.123, 0.001)).to.equal(0.123);
    expect(roundToStep(0.62, 0.25)).to.equal(0.5);
  });

  it('scores an unused function on the priors alone (58)', () => {
    const p = publish(EMPTY_AGGREGATE, rules);
    expect(p.score).to.equal(58);
    expect(p.stats.components).to.deep.equal({ acceptance: 0.5, quality: 0.5, reliability: 0.9 });
    expect(p.stats.usage_status).to.equal('below_threshold');
  });

  it('never publishes confidence where usage is not published, even with a lower confidence floor', () => {
    const a = { ...EMPTY_AGGREGATE, calls: 4, ok: 4, confidenceN: 4, confidenceSum: 3.6, consumers: 2 };
    const p = publish(a, { ...rules, confidenceMinCustomers: 1 });
    expect(p.stats.average_confidence).to.equal(null);
    expect(p.stats.confidence_status).to.equal('below_threshold');
    const q = publish({ ...a, consumers: 3 }, { ...rules, confidenceMinCustomers: 1 });
    expect(q.stats.average_confidence).to.equal(0.9);
  });

  it('reports no_data when the floor is met but no call carried a confidence', () => {
    const p = publish({ ...EMPTY_AGGREGATE, calls: 5, consumers: 5 }, rules);
    expect(p.stats.confidence_status).to.equal('no_data');
    expect(p.stats.average_confidence).to.equal(null);
  });
});

describe('catalog: leaderboard aggregate refresh', function () {
  this.timeout(60_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService({ config: { ...lenient, catalog: { leaderboardRefreshMs: 1000 } } });
  });
  after(() => svc.close());

  it('is computed at start and refreshed in the background on its interval, with no request forcing it', async () => {
    const owner = await signUp(svc, 'lb-bg');
    const key = (await createKey(svc, owner, { name: 'bg' })).key;
    const fn = await createFunction(svc, key, { label: 'lb-bg', isPublic: true });
    const first = await client(svc.url).get<Board>('/api/public/leaderboard?limit=100');
    expect(first.body.computed_at).to.be.a('string');
    const sandboxes = [await registerSandbox(svc, 'bg-1'), await registerSandbox(svc, 'bg-2'), await registerSandbox(svc, 'bg-3')];
    await insertEvents(svc, sandboxes.map((s) => ({ functionId: fn.id, workspaceId: s.workspaceId })));
    const deadline = Date.now() + 10_000;
    let published: Board | null = null;
    while (Date.now() < deadline) {
      const b = (await client(svc.url).get<Board>('/api/public/leaderboard?limit=100')).body;
      if (b.data.find((e) => e.function.id === fn.id)?.stats.usage_status === 'published') {
        published = b;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(published, 'the background refresh never published the new usage').not.to.equal(null);
    expect(published?.data.find((e) => e.function.id === fn.id)?.total_invocations).to.equal(3);
    expect(Date.parse(published?.computed_at ?? '')).to.be.greaterThan(Date.parse(first.body.computed_at ?? ''));
  });

  it('shares the aggregate on the store: a fresh shared snapshot is adopted without a query, a stale one is recomputed once', async () => {
    const kv = new MemoryKvStore({ now: () => Date.now() });
    const clock = new ManualClock(Date.now());
    const sql = new Sql(svc.sequelize);
    const opts = { refreshMs: 60_000, windowDays: 30, demoWorkspaceId: DEMO_WORKSPACE_ID };
    const log = createLogger('silent');
    const one = new LeaderboardAggregator(sql, kv, clock, log, new Metrics({ defaultMetrics: false }), opts);
    const two = new LeaderboardAggregator(sql, kv, clock, log, new Metrics({ defaultMetrics: false }), opts);
    const pool = { query: () => undefined };
    const computed = await one.refresh();
    const adopting = await countQueries(svc, pool, () => two.tick());
    expect(adopting).to.deep.equal([]);
    expect(two.current()).to.deep.equal(computed);

    clock.advance(61_000);
    const recomputing = await countQueries(svc, pool, () => two.tick());
    expect(recomputing.filter((q) => q.includes('usage_events'))).to.have.length(1);
    expect(two.current()?.computedAt).to.equal(clock.now());
    // The first instance now finds the fresh snapshot on the store and adopts it.
    const adoptingAgain = await countQueries(svc, pool, () => one.tick());
    expect(adoptingAgain).to.deep.equal([]);
    expect(one.current()?.computedAt).to.equal(clock.now());
    await kv.close();
  });
});
