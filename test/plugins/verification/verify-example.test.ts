import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, signUp } from '../../support/world';

type Body = Record<string, any>;

describe('price verification: the example of a refused body keeps what the caller meant', function () {
  this.timeout(60_000);
  let svc: TestService;
  let verify: (body: unknown) => Promise<{ status: number; text: string; body: Body }>;

  before(async () => {
    svc = await startTestService();
    const key = (await createKey(svc, await signUp(svc, 'example-verifier'), { name: 'v' })).key;
    verify = (body) => client(svc.url, { 'x-api-key': key }).post<Body>('/api/price-router/verify', body);
  });
  after(() => svc.close());

  it('carries the refused price in the form it plainly means ("0020.10" → "20.10", " 20 " → "20"), with the caller\'s context, not the stock "4.50"', async () => {
    const lead = await verify({ context: { product_type: 'gizmo', currency: 'EUR' }, proposed_price: '0020.10' });
    expect(lead.status, lead.text).to.equal(400);
    expect(lead.body.example).to.deep.equal({ context: { product_type: 'gizmo', currency: 'EUR' }, proposed_price: '20.10' });
    const spaced = await verify({ context: { product_type: 'gizmo' }, price: ' 20 ' });
    expect(spaced.body.example).to.deep.equal({ context: { product_type: 'gizmo' }, proposed_price: '20' });
    // One price unreadable beside a readable alias: the readable one is what the caller meant.
    const both = await verify({ context: { product_type: 'gizmo' }, proposed_price: 'abc', price: 7 });
    expect(both.body.example).to.deep.equal({ context: { product_type: 'gizmo' }, proposed_price: 7 });
    const sentBack = await verify(lead.body.example);
    expect(sentBack.status, sentBack.text).to.equal(200);
    expect(sentBack.body.proposed_price).to.equal('20.10');
  });

  it('reads a null proposed_price as absent: beside price the call is judged on price, never told "not both"; alone, the price is missing', async () => {
    const withAlias = await verify({ context: { product_type: 'gizmo' }, proposed_price: null, price: 4 });
    expect(withAlias.status, withAlias.text).to.equal(200);
    expect(withAlias.body.proposed_price).to.equal('4.00');
    const nullAlias = await verify({ context: { product_type: 'gizmo' }, proposed_price: '4', price: null });
    expect(nullAlias.status, nullAlias.text).to.equal(200);
    const alone = await verify({ context: { product_type: 'gizmo' }, proposed_price: null });
    expect(alone.status).to.equal(400);
    expect(alone.body.issues.map((i: Body) => i.path)).to.deep.equal(['proposed_price']);
    expect(alone.body.issues[0].reason).to.match(/^proposed_price is required/);
  });

  it("keeps what fits of a context too large in the example (the caller's product_type, currency and bounds), not the stock coffee context", async () => {
    const res = await verify({ context: { product_type: 'gizmo', currency: 'EUR', unit_cost: 12, notes: 'x'.repeat(40_000), tag: 'blue' }, proposed_price: '0020.10' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues.map((i: Body) => i.path)).to.include('context');
    expect(res.body.example).to.deep.equal({ context: { product_type: 'gizmo', currency: 'EUR', unit_cost: 12, tag: 'blue' }, proposed_price: '20.10' });
    const sentBack = await verify(res.body.example);
    expect(sentBack.status, sentBack.text).to.equal(200);
  });
});
