import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, signUp } from '../../support/world';

type Body = Record<string, any>;

/**
 * Cost-plus against the network's band, over HTTP: the band it places its price in is the one a verdict on that
 * price draws, and only where a verdict would draw one (VERIFY_MIN_EFFECTIVE_OBSERVATIONS workspaces, 5 by default).
 */
describe('compute: cost-plus\'s confidence follows the verdict\'s band of the network (end to end)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let caller: ReturnType<typeof client>;

  /** Each workspace posts its own quotes of the product type. */
  async function observe(productType: string, quotes: string[][]): Promise<void> {
    const observedAt = new Date(Date.now() - 3_600_000).toISOString();
    for (const [i, amounts] of quotes.entries()) {
      const api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, `${productType}-${i}`), { name: 'q' })).key });
      const res = await api.post<Body>('/api/data/observations', { observations: amounts.map((amount) => ({ product_type: productType, currency: 'USD', amount, observed_at: observedAt, source: `shop-${i}` })) });
      expect(res.status, res.text).to.equal(201);
    }
  }

  const costPlus = (productType: string, unitCost: number) =>
    caller.post<Body>('/api/price-router', { function_name: 'cost-plus', context: { product_type: productType, currency: 'USD', unit_cost: unitCost, target_margin: 0.3 } });

  before(async () => {
    svc = await startTestService();
    caller = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'band-caller'), { name: 'c' })).key });
    await observe('band-widget', [['19.50'], ['19.80'], ['20.00'], ['20.20'], ['20.50'], ['20.10']]);
    await observe('thin-widget', [['19.50'], ['20.00'], ['20.50']]);
  });
  after(() => svc.close());

  it('a price inside the band raises input_quality; one above it is × 0.7; both show the band a verdict on them shows', async () => {
    const inside = await costPlus('band-widget', 14);
    expect(inside.status, inside.text).to.equal(200);
    expect(inside.body.price).to.equal('20.00');
    expect(inside.body.method.confidence_factors).to.deep.equal({ input_quality: 0.55, bounds: 1 });
    expect(inside.body.confidence).to.equal(0.55);
    expect(inside.body.method.details.network).to.include({ position: 'inside', reference_price: '20.05' });

    const above = await costPlus('band-widget', 20);
    expect(above.status, above.text).to.equal(200);
    expect(above.body.price).to.equal('28.57');
    expect(above.body.method.confidence_factors).to.deep.equal({ input_quality: 0.5, bounds: 1, network_band: 0.7 });
    expect(above.body.confidence).to.equal(0.35);
    expect(above.body.method.details.network).to.include({ position: 'above' });
    expect(above.body.method.notes[0]).to.match(/^the price 28\.57 is above the network's band \[\d+\.\d+, \d+\.\d+\] around its reference 20\.05 /);

    // The service's own verifier, on the same evidence, calls the first price reasonable and the second high, in the same band.
    const band = above.body.method.details.network.band as [string, string];
    expect(inside.body.method.details.network.band).to.deep.equal(band);
    for (const [proposed, verdict] of [['20.00', 'reasonable'], ['28.57', 'high']] as const) {
      const judged = await caller.post<Body>('/api/price-router/verify', { context: { product_type: 'band-widget', currency: 'USD' }, proposed_price: proposed });
      expect(judged.status, judged.text).to.equal(200);
      expect(judged.body.verdict).to.equal(verdict);
      expect([judged.body.band.lower, judged.body.band.upper]).to.deep.equal(band);
    }
  });

  it('with fewer workspaces than a verdict needs (3 of 5), no band: the price is compared with the reference and its confidence unchanged', async () => {
    const res = await costPlus('thin-widget', 14);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.method.confidence_factors).to.deep.equal({ input_quality: 0.5, bounds: 1 });
    expect(res.body.method.details.network).to.not.have.property('band');
    expect(res.body.method.notes[0]).to.include('no band was given to judge it against: confidence unchanged');
    const judged = await caller.post<Body>('/api/price-router/verify', { context: { product_type: 'thin-widget', currency: 'USD' }, proposed_price: '20.00' });
    expect(judged.body.verdict).to.equal('unknown');
  });
});
