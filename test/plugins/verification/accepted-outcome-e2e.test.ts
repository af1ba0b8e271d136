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
});
