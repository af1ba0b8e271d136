import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, signUp } from '../../support/world';

type Body = Record<string, any>;
/** The placeholders docs/verification.md names: they say what goes there, and no one prices a product by that name. */
const EXAMPLE_PRODUCT_TYPE = 'example-product (replace with your product type)';
const EXAMPLE_SOURCE = 'example-source (replace with where the price was seen)';
const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
const isRecent = (t: string) => Date.now() - Date.parse(t) >= 0 && Date.now() - Date.parse(t) <= 2 * 3_600_000;

describe('price observations: the example of a refused body', function () {
  this.timeout(60_000);
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService();
    api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'example-reader'), { name: 'data' })).key });
  });
  after(() => svc.close());

  it("is made from what was sent: each item's product type, currency, source, time and context kept, what was refused corrected (a number amount as its string, a leading zero, a bad date made recent)", async () => {
    const at = hoursAgo(3);
    const res = await api.post<Body>('/api/data/observations', {
      observations: [
        { product_type: 'gizmo', currency: 'EUR', amount: 20, observed_at: at, source: 'flyer', context: { region: 'eu-west', Bad: 'x' } },
        { product_type: 'gizmo', currency: ' eur', amount: '0020.10', observed_at: 'yesterday', source: 'flyer' },
      ],
      extra: true,
    });
    expect(res.status, res.text).to.equal(400);
    const [first, second] = res.body.example.observations as Body[];
    expect(res.body.example.observations).to.have.length(2);
    expect(first).to.deep.equal({ product_type: 'gizmo', currency: 'EUR', amount: '20', observed_at: at, source: 'flyer', context: { region: 'eu-west' } });
    expect(second).to.deep.include({ product_type: 'gizmo', currency: 'eur', amount: '20.10', source: 'flyer' });
    expect(isRecent(second?.observed_at), second?.observed_at).to.equal(true);
    expect(res.body.example).to.not.have.property('extra');
    const stored = await api.post<Body>('/api/data/observations', res.body.example);
    expect(stored.status, stored.text).to.equal(201);
    expect(stored.body.data.map((o: Body) => [o.product_type, o.currency, o.amount])).to.deep.equal([
      ['gizmo', 'EUR', '20'],
      ['gizmo', 'EUR', '20.10'],
    ]);
  });

  it('never puts a price the caller did not send under a product: an item without a readable amount is left out; a missing product type or source becomes a placeholder naming itself', async () => {
    const at = hoursAgo(2);
    const res = await api.post<Body>('/api/data/observations', {
      observations: [
        { product_type: 'gizmo', currency: 'USD', observed_at: at, source: 'flyer' },
        { product_type: 'gizmo', currency: 'USD', amount: '2,000', observed_at: at, source: 'flyer' },
        { currency: 'USD', amount: '3.00', observed_at: at },
        { product_type: 'gadget', currency: 'dollars', amount: '5.00', observed_at: at, source: 'flyer' },
      ],
    });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.example).to.deep.equal({ observations: [{ product_type: EXAMPLE_PRODUCT_TYPE, currency: 'USD', amount: '3.00', observed_at: at, source: EXAMPLE_SOURCE }] });
  });

  for (const [what, body] of [
    ['an empty body', {}],
    ['an empty list', { observations: [] }],
    ['one item without an amount', { observations: [{ product_type: 'gizmo', currency: 'USD', amount: null, observed_at: hoursAgo(1), source: 'flyer' }] }],
  ] as const) {
    it(`with nothing to make an observation from (${what}), gives one whose product type and source name themselves as an example, never a real product's price`, async () => {
      const res = await api.post<Body>('/api/data/observations', body);
      expect(res.status, res.text).to.equal(400);
      const example = res.body.example as { observations: Body[] };
      expect(example.observations).to.have.length(1);
      expect(example.observations[0]).to.deep.include({ product_type: EXAMPLE_PRODUCT_TYPE, source: EXAMPLE_SOURCE });
      expect(JSON.stringify(example)).to.not.match(/coffee|gizmo/);
      expect(isRecent(example.observations[0]?.observed_at)).to.equal(true);
    });
  }

  it('posted as given, the stock example is stored and read by verify of its own product type alone, not as evidence about a real one', async () => {
    const example = (await api.post<Body>('/api/data/observations', {})).body.example;
    const res = await api.post<Body>('/api/data/observations', example);
    expect(res.status, res.text).to.equal(201);
    const own = await api.post<Body>('/api/price-router/verify', { context: { product_type: EXAMPLE_PRODUCT_TYPE, currency: 'USD' }, proposed_price: '1.20' });
    expect(own.status, own.text).to.equal(200);
    expect(own.body.evidence).to.include({ ignored_older_than_max_age: 0, used: 1 });
    const coffee = await api.post<Body>('/api/price-router/verify', { context: { product_type: 'coffee', currency: 'USD' }, proposed_price: '4.60' });
    expect(coffee.body.evidence).to.include({ used: 0 });
  });
});
