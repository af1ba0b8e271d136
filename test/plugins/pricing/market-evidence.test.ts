import { expect } from 'chai';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';

/**
 * Compute positions a context that names a product_type, and brings no competitor_prices, on the
 * price observations the network holds for it (the evidence price verification reads).
 */
describe('pricing: network price observations as market evidence for compute', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  let alice: ReturnType<typeof client>;
  let bob: ReturnType<typeof client>;
  let carol: ReturnType<typeof client>;
  let agent: ReturnType<typeof client>;
  const product = `market-tea-${process.pid}-${Date.now().toString(36)}`;
  const observe = (api: ReturnType<typeof client>, amounts: Array<[string, string]>) =>
    api.post<Record<string, any>>('/api/data/observations', {
      observations: amounts.map(([amount, source], i) => ({ product_type: product, currency: 'USD', amount, source, observed_at: new Date(Date.now() - (i + 1) * 3_600_000).toISOString() })),
    });

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 9.99, confidence: 0.5, currency: 'USD' }));
    svc = await startTestService({ config: { outbound: { allowList: ['127.0.0.1'] } } });
    alice = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'market-alice'), { name: 'a' })).key });
    bob = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'market-bob'), { name: 'b' })).key });
    carol = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'market-carol'), { name: 'c' })).key });
    agent = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'market-agent')).key });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  it('a context with only a product_type is 422 while the network holds no observations of it', async () => {
    const res = await agent.post<Record<string, any>>('/api/compute/price', { context: { product_type: product, currency: 'USD' } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.code).to.equal('insufficient_context');
    expect(res.body.error).to.match(/or a product_type the network holds price observations of/);
    // Every input each function reads, so a caller can see everything a method needs (both demand-line inputs, the pacing inputs).
    expect(res.body.inputs_by_function['elasticity-optimum']).to.include.members(['demand_intercept', 'demand_slope', 'max_markup_multiple']);
    expect(res.body.inputs_by_function['anchored-adjustment']).to.include.members(['units_sold', 'units_received', 'inventory_start', 'season_elapsed']);
    expect(res.body.inputs_by_function['cost-plus']).to.include.members(['expected_volume', 'min_price']);
    expect(res.body.inputs_by_function['cost-plus']).not.to.include('currency');
  });

  it('once two workspaces contributed observations, the same context is priced by competitive-position on them (any caller, the sandbox included), on the reference a verdict uses', async () => {
    expect((await observe(alice, [['4.00', 'shelf'], ['4.40', 'shelf'], ['5.00', 'web']])).status).to.equal(201);
    expect((await observe(bob, [['4.60', 'cafe']])).status).to.equal(201);
    const res = await agent.post<Record<string, any>>('/api/compute/price', { context: { product_type: product.toUpperCase(), currency: 'USD' } });
    expect(res.status, res.text).to.equal(200);
    // Time-weighted medians of the sources (an hour apart): alice/shelf 4.00 (two observations, the newer one's weight
    // a little higher), alice/web 5.00, bob/cafe 4.60. Alice's three observations weigh no more than bob's one (no
    // workspace outweighs the heaviest other), so bob/cafe carries half the weight and more: the reference is 4.60.
    expect(res.body.price).to.equal('4.60');
    expect(res.body.function.name).to.equal('competitive-position');
    expect(res.body.method.inputs_used).to.deep.equal(['product_type', 'network_observations']);
    expect(res.body.method.details).to.deep.include({ reference: 'network_observations', observations: 4, sources: 3, reference_price: '4.60' });
    expect(res.body.method.confidence_factors).to.deep.include({ provenance: 0.6, independence: 1 });
    const stage = (res.body.trace.stages as Array<Record<string, any>>).find((s) => s.stage === 'market_evidence');
    expect(stage).to.deep.include({ found: true, currency: 'USD', observations: 4, sources: 3 });
    expect(stage?.ms).to.be.a('number');
    // Asked by the sandbox that priced it (bob's own 4.60 would be his echo of the proposed price, left out as circular).
    const verdict = await agent.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: product, currency: 'USD' }, proposed_price: res.body.price });
    expect(verdict.status, verdict.text).to.equal(200);
    expect(verdict.body.reference.price).to.equal(res.body.method.details.reference_price);
  });

  it("refuses explicit without a function with an example that pins competitive-position to the caller's product_type context, priced as sent", async () => {
    const context = { product_type: product, currency: 'USD' };
    const refused = await alice.post<Record<string, any>>('/api/compute/price', { context, routing_preference: 'explicit' });
    expect(refused.status, refused.text).to.equal(400);
    expect(refused.body.example).to.deep.equal({ context, function_id: 'fn_builtin_competitive', routing_preference: 'explicit' });
    const priced = await alice.post<Record<string, any>>('/api/compute/price', refused.body.example);
    expect(priced.status, priced.text).to.equal(200);
    expect(priced.body.function.name).to.equal('competitive-position');
  });

  it('anchored-adjustment moves a current_price towards them; the caller\'s own competitor_prices are used instead when sent', async () => {
    const moved = await alice.post<Record<string, any>>('/api/compute/price', { context: { product_type: product, currency: 'USD', current_price: 6 }, function_id: 'fn_builtin_anchored' });
    expect(moved.status, moved.text).to.equal(200);
    expect(moved.body.price).to.equal('5.40');
    expect(moved.body.method.inputs_used).to.include('network_observations');
    expect(moved.body.method.details).to.deep.include({ reference: 'network_observations', observations: 4, reference_price: '4.60', target_price: '4.60' });
    const own = await alice.post<Record<string, any>>('/api/compute/price', { context: { product_type: product, currency: 'USD', competitor_prices: [7, 7.2] }, function_id: 'fn_builtin_competitive' });
    expect(own.status).to.equal(200);
    expect(own.body.price).to.equal('7.10');
    expect(own.body.trace.stages.map((s: Record<string, unknown>) => s.stage)).to.not.include('market_evidence');
  });

  it('a cached result is keyed by the evidence too: a new observation is priced in at once', async () => {
    const ctx = { context: { product_type: product, currency: 'USD' }, function_id: 'fn_builtin_competitive' };
    const first = await bob.post<Record<string, any>>('/api/compute/price', ctx);
    const again = await bob.post<Record<string, any>>('/api/compute/price', ctx);
    expect(again.body.trace.cache).to.equal('hit');
    expect(again.body.price).to.equal(first.body.price);
    // From a third workspace: had bob posted them, his observations would outweigh alice's (newer), and the
    // reference 4.60 would rest on him (4.00 without him), which gives no network evidence. Three of them, as many as
    // alice's: with two, alice would still hold half the weight, and the reference would rest on her (9.00 without her).
    expect((await observe(carol, [['9.00', 'kiosk'], ['9.20', 'airport'], ['9.10', 'station']])).status).to.equal(201);
    const after = await bob.post<Record<string, any>>('/api/compute/price', ctx);
    expect(after.body.trace.cache).to.equal('miss');
    // Six sources now, weighing about 2 (alice's 4.00), then 1 each: 4.60, 5.00, 9.00, 9.10, 9.20; half the weight
    // (3.5) is reached at 5.00.
    expect(after.body.price, JSON.stringify(after.body.method)).to.equal('5.00');
    expect(after.body.method.details).to.deep.include({ sources: 6, observations: 7 });
  });

  it('the function test endpoint sees the same evidence a compute does', async () => {
    const res = await alice.post<Record<string, any>>('/api/functions/fn_builtin_competitive/test', { context: { product_type: product, currency: 'USD' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.ok).to.equal(true);
    expect(res.body.result.inputs_used).to.include('network_observations');
  });

  it('an external function receives the caller\'s context only, never the network\'s observations', async () => {
    const created = await alice.post<Record<string, any>>('/api/functions', { name: `market-ext-${Date.now()}`, execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0.001' });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.function.id as string;
    expect((await alice.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    const res = await alice.post<Record<string, any>>('/api/compute/price', { context: { product_type: product, currency: 'USD' }, function_id: id });
    expect(res.status, res.text).to.equal(200);
    const sent = JSON.parse(upstream.requests.at(-1)?.body ?? '{}') as Record<string, unknown>;
    expect(sent.context).to.deep.equal({ product_type: product, currency: 'USD' });
    expect(Object.keys(sent).sort()).to.deep.equal(['context', 'function']);
  });

  it('another instance\'s first observations of a product type are priced in once this one reloads its list of observed product types; until then no lookup is made', async () => {
    const other = await startTestService({ databaseUrl: svc.databaseUrl });
    const stale = await startTestService({ databaseUrl: svc.databaseUrl });
    const reloading = await startTestService({ databaseUrl: svc.databaseUrl, config: { engine: { marketIndexRefreshMs: 1000 } } });
    const unindexed = await startTestService({ databaseUrl: svc.databaseUrl, config: { engine: { marketIndexMax: 0 } } });
    try {
      const fresh = `${product}-elsewhere`;
      const writer = client(other.url, { 'x-api-key': (await createKey(other, await signUp(other, 'market-other'), { name: 'w' })).key });
      // One agent key, good on every instance of the database.
      const readerKey = (await registerSandbox(reloading, 'market-reader')).key;
      const price = (s: TestService) => client(s.url, { 'x-api-key': readerKey }).post<Record<string, any>>('/api/compute/price', { context: { product_type: fresh, currency: 'USD' } });
      expect((await price(reloading)).status).to.equal(422);
      const written = await writer.post('/api/data/observations', { observations: [{ product_type: fresh, currency: 'USD', amount: '2.50', source: 's', observed_at: new Date().toISOString() }] });
      expect(written.status).to.equal(201);
      // Loaded at its start, reloaded only after a minute: the product type is not on its list, so it is not looked up.
      const notYet = await price(stale);
      expect(notYet.status).to.equal(422);
      expect(notYet.body.code).to.equal('insufficient_context');
      // Past ENGINE_MARKET_INDEX_MAX no list is kept and every lookup asks the database: seen at once.
      const direct = await price(unindexed);
      expect(direct.status, direct.text).to.equal(200);
      expect(direct.body.price).to.equal('2.50');
      const started = Date.now();
      let res = await price(reloading);
      while (res.status !== 200 && Date.now() - started < 5000) {
        await new Promise((r) => setTimeout(r, 300));
        res = await price(reloading);
      }
      expect(res.status, res.text).to.equal(200);
      expect(res.body.price).to.equal('2.50');
    } finally {
      await Promise.all([other.close(), stale.close(), reloading.close(), unindexed.close()]);
    }
  });

  it('ENGINE_MARKET_EVIDENCE=false prices every context from what it carries', async () => {
    const off = await startTestService({ config: { engine: { marketEvidence: false } } });
    try {
      const api = client(off.url, { 'x-api-key': (await createKey(off, await signUp(off, 'market-off'), { name: 'o' })).key });
      const observed = await api.post('/api/data/observations', { observations: [{ product_type: 'off-tea', currency: 'USD', amount: '3.00', source: 's', observed_at: new Date().toISOString() }] });
      expect(observed.status).to.equal(201);
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'off-tea', currency: 'USD' } });
      expect(res.status).to.equal(422);
      expect(res.body.code).to.equal('insufficient_context');
    } finally {
      await off.close();
    }
  });
});
