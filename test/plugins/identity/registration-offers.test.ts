import { expect } from 'chai';
import { systemClock } from '../../../core/clock';
import { MemoryKvStore } from '../../../core/kv/memory';
import { createLogger } from '../../../core/logger';
import { client } from '../../support/http';
import type { ErrorBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { SpentRegistrations } from '../../../plugins/identity/services/spent-registrations';

/**
 * SPEC: next_actions are requests the caller may make next. A caller whose address spent its registrations for the day
 * would be refused 429 daily_quota_exceeded: the keyless demo's next_actions and receipt, and a keyless 401's next, stop
 * offering registration to that address (other addresses are still offered it).
 */
describe('identity: registration is not offered to an address whose registrations are spent', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  const spentAt = { 'x-forwarded-for': '198.51.100.21' };
  const freshAt = { 'x-forwarded-for': '198.51.100.22' };
  const register = (headers: Record<string, string>) => api.post<ErrorBody>('/api/agents/register', { name: 'pricing-agent/offers' }, headers);
  const actions = (body: { next_actions?: Array<{ action: string }>; next?: Array<Record<string, unknown>> }) => (body.next_actions ?? body.next ?? []).map((a) => a.action);

  before(async () => {
    svc = await startTestService({ config: { limits: { registrations: { perAddressPerDay: 2, overallPerDay: 1000 }, demo: { callsPerHour: 3 } } } });
    api = client(svc.url);
    expect((await register(spentAt)).status).to.equal(201);
    // The last place: this one spends the address's day, before any refusal.
    expect((await register(spentAt)).status).to.equal(201);
  });
  after(() => svc.close());

  it("leaves get_a_free_key out of the keyless demo's next_actions, and registration out of its receipt", async () => {
    const spent = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 9.99 } }, spentAt);
    expect(spent.status, spent.text).to.equal(200);
    expect(actions(spent.body)).to.not.include('get_a_free_key');
    expect(spent.body.receipt.hint).to.not.match(/agents\/register/);
    const fresh = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 9.99 } }, freshAt);
    expect(actions(fresh.body)).to.include('get_a_free_key');
    expect(fresh.body.receipt.hint).to.match(/agents\/register/);
  });

  it("leaves register_agent and register_oauth_client out of a keyless 401's next", async () => {
    const spent = await api.post<ErrorBody>('/api/compute/price', { context: { current_price: 9.99 } }, spentAt);
    expect(spent.status, spent.text).to.equal(401);
    expect(actions(spent.body)).to.not.include('register_agent').and.not.include('register_oauth_client');
    expect(actions(spent.body)).to.include('sign_in');
    const fresh = await api.post<ErrorBody>('/api/compute/price', { context: { current_price: 9.99 } }, freshAt);
    expect(actions(fresh.body)).to.include.members(['register_agent', 'register_oauth_client']);
  });

  it('still refuses the spent address 429, and then keeps registration out of what it is offered', async () => {
    expect((await register(spentAt)).status).to.equal(429);
    const after = await api.post<ErrorBody>('/api/compute/price', { context: { current_price: 9.99 } }, spentAt);
    expect(actions(after.body)).to.not.include('register_agent');
  });

  it("leaves registration out of the demo budget's 429", async () => {
    let over = await api.post<ErrorBody>('/api/public/compute/demo', { context: { current_price: 9.99 } }, spentAt);
    while (over.status === 200) over = await api.post<ErrorBody>('/api/public/compute/demo', { context: { current_price: 9.99 } }, spentAt);
    expect(over.status, over.text).to.equal(429);
    expect(actions(over.body)).to.not.include('register_agent');
    expect(over.body.hint).to.not.match(/sandbox key/);
  });

  it('tells every instance sharing the store: one marks an address spent, the other stops offering it at once', async () => {
    const clock = systemClock;
    const kv = new MemoryKvStore(clock, createLogger('silent'));
    const a = new SpentRegistrations(kv, clock, () => 64, 100);
    const b = new SpentRegistrations(kv, clock, () => 64, 100);
    await a.start();
    await b.start();
    expect(b.spent('203.0.113.9')).to.equal(false);
    await a.mark({ address: '203.0.113.9' });
    expect(b.spent('203.0.113.9')).to.equal(true);
    expect(b.spent('::ffff:203.0.113.9'), 'the same address as a dual-stack socket reports it').to.equal(true);
    expect(b.spent('203.0.113.10')).to.equal(false);
    await a.mark({ overall: true });
    expect(b.spent('203.0.113.10')).to.equal(true);
    await a.stop();
    await b.stop();
  });
});
