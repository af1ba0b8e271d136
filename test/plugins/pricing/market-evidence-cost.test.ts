import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

/**
 * A context carrying a unit_cost for a product type the network holds observations of: compute and
 * price verification read the same evidence, so a price computed on it is not judged against it.
 */
describe('pricing: a unit_cost beside the network\'s observations of the product type', function () {
  this.timeout(60_000);
  let svc: TestService;
  let alice: ReturnType<typeof client>;
  let bob: ReturnType<typeof client>;
  let carol: ReturnType<typeof client>;
  let dave: ReturnType<typeof client>;
  let erin: ReturnType<typeof client>;
  let frank: ReturnType<typeof client>;
  const product = `widget-${process.pid}-${Date.now().toString(36)}`;
  const observe = (api: ReturnType<typeof client>, product_type: string, amounts: Array<[string, string]>) =>
    api.post<Record<string, any>>('/api/data/observations', {
      observations: amounts.map(([amount, source], i) => ({ product_type, currency: 'USD', amount, source, observed_at: new Date(Date.now() - (i + 1) * 3_600_000).toISOString() })),
    });
  const compute = (body: Record<string, unknown>) => carol.post<Record<string, any>>('/api/compute/price', body);
  const verify = (price: string) => carol.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: product, currency: 'USD' }, proposed_price: price });

  before(async () => {
    svc = await startTestService();
    alice = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'widget-alice'), { name: 'a' })).key });
    bob = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'widget-bob'), { name: 'b' })).key });
    carol = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'widget-carol'), { name: 'c' })).key });
    dave = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'widget-dave'), { name: 'd' })).key });
    erin = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'widget-erin'), { name: 'e' })).key });
    frank = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'widget-frank'), { name: 'f' })).key });
    // Ten observations from seven sources of six workspaces (a verdict counts each workspace once), around 19.80.
    expect((await observe(alice, product, [['19.50', 'shelf'], ['19.80', 'shelf'], ['20.10', 'web']])).status).to.equal(201);
    expect((await observe(bob, product, [['19.70', 'cafe'], ['19.90', 'cafe']])).status).to.equal(201);
    expect((await observe(carol, product, [['19.60', 'kiosk'], ['20.00', 'kiosk']])).status).to.equal(201);
    expect((await observe(dave, product, [['19.85', 'stall']])).status).to.equal(201);
    expect((await observe(erin, product, [['19.75', 'market']])).status).to.equal(201);
    expect((await observe(frank, product, [['19.80', 'booth']])).status).to.equal(201);
  });
  after(() => svc.close());

  it('cost-plus says where its cost-based price sits against the band a verdict on it draws (lowering its confidence above it), and does not count as positioned on the observations', async () => {
    const res = await compute({ context: { product_type: product, currency: 'USD', unit_cost: 20 }, function_id: 'fn_builtin_cost_plus' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.price).to.equal('28.57');
    const judged = await verify(res.body.price);
    expect(judged.body.verdict).to.equal('high');
    const reference = judged.body.reference.price as string;
    // The verifier's band on the same evidence: above it, cost-plus's confidence is lowered.
    const band = [judged.body.band.lower as string, judged.body.band.upper as string];
    expect(res.body.method.details.network).to.deep.include({ reference_price: reference, sources: 7, band, position: 'above' });
    expect(res.body.method.confidence_factors).to.include({ network_band: 0.7 });
    expect(res.body.method.notes.join(' ')).to.include(`the price 28.57 is above the network's band [${band.join(', ')}] around its reference ${reference} (10 price observation(s) of "${product}" in USD from 7 source(s))`);
    expect(res.body.method.inputs_used).to.not.include('network_observations');
  });

  it('routed by default, a unit_cost without a margin is positioned on the observations with the cost as floor, a price verification calls reasonable; a margin of the caller\'s keeps cost-plus', async () => {
    const res = await compute({ context: { product_type: product, currency: 'USD', unit_cost: 20 } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.function.name).to.equal('competitive-position');
    // The reference is under the cost: the cost is the floor, and says so.
    expect(res.body.price).to.equal('20.00');
    expect(res.body.method.notes.join(' ')).to.match(/match not possible above the floor \(unit_cost 20\): the floor binds/);
    const judged = await verify(res.body.price);
    expect(judged.body.verdict, JSON.stringify(judged.body.reasons)).to.equal('reasonable');
    const own = await compute({ context: { product_type: product, currency: 'USD', unit_cost: 20, target_margin: 0.3 } });
    expect(own.status, own.text).to.equal(200);
    expect(own.body.function.name).to.equal('cost-plus');
    expect(own.body.price).to.equal('28.57');
  });

  it('a product type whose observations are all past the largest price the service quotes answers a 422 that says so, not that the network holds none', async () => {
    const huge = `${product}-huge`;
    for (const [api, source] of [[alice, 'a'], [bob, 'b'], [carol, 'c']] as const) {
      expect((await observe(api, huge, [['950000000000000000', source], ['951000000000000000', source]])).status).to.equal(201);
    }
    const res = await compute({ context: { product_type: huge, currency: 'USD' } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.code).to.equal('insufficient_context');
    expect(res.body.error).to.match(/the network holds 6 price observation\(s\) of "[^"]+" in USD, but every source's price is above 1000000000000000, the largest price the service quotes/);
  });

  it('observations set aside as no reference (two price groups) are named with the reason: the 422 does not say the network holds none, and the trace says why', async () => {
    const dual = `${product}-dual`;
    expect((await observe(alice, dual, [['99', 'a'], ['100', 'a'], ['101', 'a']])).status).to.equal(201);
    expect((await observe(bob, dual, [['19', 'b'], ['20', 'b'], ['21', 'b']])).status).to.equal(201);
    const refused = await compute({ context: { product_type: dual, currency: 'USD' } });
    expect(refused.status, refused.text).to.equal(422);
    expect(refused.body.code).to.equal('insufficient_context');
    expect(refused.body.error).to.include(`the network holds 6 price observation(s) of "${dual}" in USD, but the quotes split into two groups around 20.00 and 100.00, and their reference 60.00 lies in the gap (a more specific product_type separates them), so they give no reference`);
    const priced = await compute({ context: { product_type: dual, currency: 'USD', unit_cost: 10 } });
    expect(priced.status, priced.text).to.equal(200);
    expect(priced.body.function.name).to.equal('cost-plus');
    const stage = (priced.body.trace.stages as Array<Record<string, any>>).find((s) => s.stage === 'market_evidence');
    expect(stage).to.deep.include({ found: true, observations: 6, withheld: 'the quotes split into two groups around 20.00 and 100.00, and their reference 60.00 lies in the gap (a more specific product_type separates them)' });
    expect(stage).to.not.have.property('sources');
  });

  it('anchored-adjustment with a unit_cost and no margin moves a market-level current_price towards the network reference, not below the market towards a default margin', async () => {
    expect((await verify('19.50')).body.verdict).to.equal('reasonable');
    const res = await compute({ context: { product_type: product, currency: 'USD', current_price: 19.5, unit_cost: 10 }, function_id: 'fn_builtin_anchored' });
    expect(res.status, res.text).to.equal(200);
    const judged = await verify(res.body.price);
    expect(judged.body.verdict, JSON.stringify(judged.body.reasons)).to.equal('reasonable');
    expect(res.body.method.details).to.deep.include({ reference: 'network_observations', reference_price: judged.body.reference.price });
    expect(res.body.method.inputs_used).to.include('network_observations');
    expect(res.body.method.notes[0]).to.match(/^target [0-9.]+ from competitive positioning on network observations: no target_margin or markup given/);
  });
});
