import { expect } from 'chai';
import { client } from '../../support/http';
import { expectRetryAfter } from '../../support/identity';
import type { ErrorBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

/**
 * The registration 429 says what the other daily 429s say (the sandbox's compute calls, the demo's hour): which count was
 * spent and when it starts again (limit.scope, limit.resets_at), and in next what the caller can do instead; its hint
 * does not assume the caller holds a key.
 */
describe('identity: the registration 429 is as complete as the other daily 429s', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  const register = (address: string) => api.post<ErrorBody>('/api/agents/register', { name: 'pricing-agent/quota' }, { 'x-forwarded-for': address });
  const nextMidnight = () => new Date((Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000).toISOString();

  before(async () => {
    svc = await startTestService({ config: { limits: { registrations: { perAddressPerDay: 1, overallPerDay: 3 } } } });
    api = client(svc.url);
  });
  after(() => svc.close());

  it("an address's spent registrations: limit with scope address and resets_at, next offering the demo and a person's sign-up, no key assumed", async () => {
    expect((await register('198.51.100.31')).status).to.equal(201);
    const res = await register('198.51.100.31');
    expectRetryAfter(res);
    expect(res.body.code).to.equal('daily_quota_exceeded');
    expect(res.body.limit).to.deep.equal({ per_address_per_day: 1, overall_per_day: 3, scope: 'address', resets_at: nextMidnight() });
    expect(res.body.next?.map((n) => n.action)).to.deep.equal(['try_demo', 'sign_up']);
    expect(res.body.hint).to.match(/demo/).and.match(/signs up/);
    expect(res.body.hint).to.not.match(/rotate/i);
    // The demo step works as given.
    const demo = res.body.next?.[0] as { path: string; body: unknown };
    expect((await api.post(demo.path, demo.body, { 'x-forwarded-for': '198.51.100.31' })).status).to.equal(200);
  });

  it("the service's spent registrations: scope service, the same resets_at and next", async () => {
    expect((await register('198.51.100.32')).status).to.equal(201);
    expect((await register('198.51.100.33')).status).to.equal(201);
    const res = await register('198.51.100.34');
    expectRetryAfter(res);
    expect(res.body.limit).to.deep.include({ scope: 'service', resets_at: nextMidnight() });
    expect(res.body.next?.map((n) => n.action)).to.deep.equal(['try_demo', 'sign_up']);
  });
});
