import { expect } from 'chai';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

const CONTEXT = { product_type: 'coffee', currency: 'USD', current_price: 4.5 };
let named = 0;

/**
 * SPEC publishes a function's usage on the leaderboard only from 3 distinct consumers: its breaker counts and latency
 * samples, which any workspace reaching a marketplace function reads, must not tell another workspace what the
 * leaderboard withholds.
 */
describe("pricing: what other workspaces read of a marketplace function's call volume", () => {
  let svc: TestService;
  let upstream: Upstream;
  let owner: ReturnType<typeof client>;
  let buyers: Array<ReturnType<typeof client>>;

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 4.2, confidence: 0.8 }));
    svc = await startTestService({ config: { outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 0 } } });
    owner = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'volume-owner'), { name: 'o' })).key });
    buyers = [];
    for (const name of ['volume-a', 'volume-b', 'volume-c']) buyers.push(client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, name), { name: 'b' })).key }));
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  const listed = async () => {
    const res = await owner.post<Record<string, any>>('/api/functions', { name: `volume-fn-${++named}-${Date.now().toString(36)}`, execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0.002', is_public: true });
    expect(res.status, res.text).to.equal(201);
    expect((await owner.patch(`/api/functions/${res.body.function.id}`, { status: 'active' })).status).to.equal(200);
    return res.body.function as { id: string; name: string };
  };
  const call = async (who: ReturnType<typeof client>, id: string) => {
    const res = await who.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: id });
    expect(res.status, res.text).to.equal(200);
  };
  const readings = async (who: ReturnType<typeof client>, id: string) => {
    const one = await who.get<Record<string, any>>(`/api/functions/${id}`);
    expect(one.status, one.text).to.equal(200);
    const health = await who.get<Record<string, any>>('/api/routing/health?built_in=false&limit=100');
    expect(health.status, health.text).to.equal(200);
    const row = (health.body.data as Array<Record<string, any>>).find((r) => r.function.id === id);
    const listing = await who.get<Record<string, any>>('/api/functions?built_in=false&limit=100');
    const listed = (listing.body.data as Array<Record<string, any>>).find((f) => f.id === id);
    return { breaker: one.body.breaker, samples: one.body.function.latency.samples, healthBreaker: row?.breaker, healthSamples: row?.latency.samples, listedSamples: listed?.latency.samples };
  };

  it('withholds the counts (null) from other workspaces below LEADERBOARD_MIN_DISTINCT_CONSUMERS consumers besides the owner, shows them from there on, and always to the owner', async () => {
    const fn = await listed();
    // The owner's own calls are no consumer's.
    await call(owner, fn.id);
    for (const b of buyers.slice(0, 2)) await call(b, fn.id);
    const [a] = buyers as [ReturnType<typeof client>];
    const hidden = await readings(a, fn.id);
    for (const breaker of [hidden.breaker, hidden.healthBreaker]) {
      expect(breaker).to.include({ state: 'closed', applies_to: 'everyone', calls: null, failures: null, callers: null, failing_callers: null });
    }
    expect([hidden.samples, hidden.healthSamples, hidden.listedSamples]).to.deep.equal([null, null, null]);
    const anonymous = await client(svc.url).get<Record<string, any>>(`/api/catalog/${fn.id}`);
    expect(anonymous.status, anonymous.text).to.equal(200);
    expect(anonymous.body.function.latency, anonymous.text).to.include({ samples: null });

    const own = await readings(owner, fn.id);
    expect(own.breaker).to.include({ calls: 3, failures: 0, callers: 3, failing_callers: 0 });
    expect([own.samples, own.healthSamples, own.listedSamples]).to.deep.equal([3, 3, 3]);

    // A third consumer: the counts are the leaderboard's to publish, and every reader's to read.
    await call(buyers[2] as ReturnType<typeof client>, fn.id);
    const shown = await readings(a, fn.id);
    expect(shown.breaker).to.include({ calls: 4, failures: 0, callers: 4, failing_callers: 0 });
    expect(shown.healthBreaker).to.include({ calls: 4, callers: 4 });
    expect([shown.samples, shown.healthSamples, shown.listedSamples]).to.deep.equal([4, 4, 4]);
  });

  it("a fastest policy's trace names another workspace's function's samples only as the leaderboard would", async () => {
    const fn = await listed();
    const [a] = buyers as [ReturnType<typeof client>];
    const policy = await a.post<Record<string, any>>('/api/routing-policies', { name: 'fastest marketplace', strategy: 'fastest', is_default: true, config: { candidates: [fn.id] } });
    expect(policy.status, policy.text).to.equal(201);
    const res = await a.post<Record<string, any>>('/api/compute/price', { context: CONTEXT });
    expect(res.status, res.text).to.equal(200);
    expect(JSON.stringify(res.body.trace)).to.include('"samples":null').and.not.match(/"samples":\d/);
    // Built-ins' volume is the service's own: shown.
    const b = buyers[1] as ReturnType<typeof client>;
    const builtIn = await b.post<Record<string, any>>('/api/routing-policies', { name: 'fastest built-in', strategy: 'fastest', is_default: true, config: { candidates: ['cost-plus'] } });
    expect(builtIn.status, builtIn.text).to.equal(201);
    const priced = await b.post<Record<string, any>>('/api/compute/price', { context: { ...CONTEXT, unit_cost: 3 } });
    expect(priced.status, priced.text).to.equal(200);
    expect(JSON.stringify(priced.body.trace)).to.match(/"samples":\d/);
  });
});
