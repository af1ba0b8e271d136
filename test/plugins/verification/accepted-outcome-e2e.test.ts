import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, signUp } from '../../support/world';

describe('accepted compute outcomes become observations (end to end over HTTP)', function () {
  this.timeout(30_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  it('compute → PATCH outcome accepted → the price is an observation with origin accepted_outcome; rejected removes it', async () => {
    const person = await signUp(svc, 'observer');
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'o' })).key });
    const priced = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'e2e-tea', currency: 'USD', current_price: 3.2 } });
    expect(priced.status).to.equal(200);
    const id = priced.body.receipt.usage_event_id as string;
    const accepted = await api.patch<Record<string, any>>(`/api/usage/events/${id}/outcome`, { outcome: 'accepted', quality_score: 0.9 });
    expect(accepted.status).to.equal(200);
    const list = await api.get<Record<string, any>>('/api/data/observations?product_type=e2e-tea');
    expect(list.status).to.equal(200);
    const found = (list.body.data as Array<Record<string, any>>).filter((o) => o.origin === 'accepted_outcome');
    expect(found).to.have.length(1);
    expect(found[0]?.amount).to.equal(priced.body.price);
    await api.patch(`/api/usage/events/${id}/outcome`, { outcome: 'rejected' });
    const after = await api.get<Record<string, any>>('/api/data/observations?product_type=e2e-tea');
    expect((after.body.data as Array<Record<string, any>>).filter((o) => o.origin === 'accepted_outcome')).to.have.length(0);
  });

  it('a currency of 4 or 5 letters a compute takes (USDC) is observed, verified against and stored from an accepted outcome alike', async () => {
    const person = await signUp(svc, 'usdc-observer');
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'u' })).key });
    const priced = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'e2e-token', currency: 'USDC', current_price: 1.5 } });
    expect(priced.status, priced.text).to.equal(200);
    expect(priced.body.currency).to.equal('USDC');
    const accepted = await api.patch<Record<string, any>>(`/api/usage/events/${priced.body.receipt.usage_event_id as string}/outcome`, { outcome: 'accepted' });
    expect(accepted.status, accepted.text).to.equal(200);
    const stored = await api.get<Record<string, any>>('/api/data/observations?product_type=e2e-token');
    // Stored as an amount (1.500000 and 1.50 are one price), as accepted outcomes in any currency are.
    expect((stored.body.data as Array<Record<string, any>>).map((o) => [o.origin, o.currency, Number(o.amount)])).to.deep.equal([['accepted_outcome', 'USDC', Number(priced.body.price)]]);
    const observedAt = new Date(Date.now() - 3_600_000).toISOString();
    const posted = await api.post<Record<string, any>>('/api/data/observations', { observations: [{ product_type: 'e2e-token', currency: 'usdc', amount: '1.5', observed_at: observedAt, source: 'exchange' }] });
    expect(posted.status, posted.text).to.equal(201);
    expect(posted.body.data[0].currency).to.equal('USDC');
    const verdict = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'e2e-token', currency: 'USDC' }, proposed_price: '1.5' });
    expect(verdict.status, verdict.text).to.equal(200);
    expect(verdict.body.evidence.matched).to.equal(2);
    const tooLong = await api.post<Record<string, any>>('/api/data/observations', { observations: [{ product_type: 'e2e-token', currency: 'DOLLARS', amount: '1.5', observed_at: observedAt, source: 'exchange' }] });
    expect(tooLong.status).to.equal(400);
    expect(tooLong.body.issues).to.deep.equal([{ path: 'observations.0.currency', reason: 'currency must be a code of 3 to 5 letters such as USD or USDC' }]);
  });
});
