import { expect } from 'chai';
import { quotaNextSteps } from '../../../plugins/usage';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, registerSandbox, signUp } from '../../support/world';

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

describe('sandbox daily compute allowance', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: lenient });
  });
  after(() => svc.close());

  it("keeps a sandbox's day count across a restart without Redis: a new instance starts from the calls the day recorded", async () => {
    const sandbox = await registerSandbox(svc, 'restarted');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    expect((await api.post('/api/compute/price', { context: { product_type: 'nothing-to-price' } })).status).to.equal(422);
    for (let i = 1; i <= 20; i++) expect((await api.post('/api/compute/price', { context: { current_price: i } })).status, `call ${i}`).to.equal(200);
    // A second instance on the same database with its own in-process store: what a restart leaves.
    const restarted = await startTestService({ config: lenient, databaseUrl: svc.databaseUrl });
    try {
      const again = client(restarted.url, { 'x-api-key': sandbox.key });
      const next = await again.post<Record<string, any>>('/api/compute/price', { context: { current_price: 21 } });
      expect(next.status, next.text).to.equal(200);
      expect(next.body.remaining.daily_compute_calls).to.include({ limit: 25, remaining: 4 });
      for (let i = 22; i <= 25; i++) expect((await again.post('/api/compute/price', { context: { current_price: i } })).status, `call ${i}`).to.equal(200);
      const over = await again.post<Record<string, any>>('/api/compute/price', { context: { current_price: 26 } });
      expect(over.status).to.equal(429);
      expect(over.body.code).to.equal('daily_quota_exceeded');
    } finally {
      await restarted.close();
    }
  });

  it("keeps a spent sandbox's day count when a burst arrives at an instance whose store lost it: every call of the burst is refused", async () => {
    const sandbox = await registerSandbox(svc, 'burst-after-restart');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    for (let i = 1; i <= 25; i++) expect((await api.post('/api/compute/price', { context: { current_price: i } })).status, `call ${i}`).to.equal(200);
    const restarted = await startTestService({ config: lenient, databaseUrl: svc.databaseUrl });
    try {
      const again = client(restarted.url, { 'x-api-key': sandbox.key });
      await again.get('/api/me'); // the key is cached, so the burst meets the allowance together
      const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => again.post('/api/compute/price', { context: { current_price: 30 + i } })));
      expect(burst.map((r) => r.status)).to.deep.equal(Array.from({ length: 12 }, () => 429));
    } finally {
      await restarted.close();
    }
  });

  it('answers the 26th call of the day with 429, the daily quota, retry_after, limit and the next steps', async () => {
    const sandbox = await registerSandbox(svc, 'daily');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    const failed = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'nothing-to-price' } });
    expect(failed.status).to.equal(422);
    const PRICED = ['price_cheapest', 'verify_price', 'price_in_batch'];
    for (let i = 1; i <= 25; i++) {
      // A product type: verification is offered too, two priced actions while the day has room for them.
      const r = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'daily-widget', current_price: i } });
      expect(r.status, `call ${i}`).to.equal(200);
      expect(r.body.remaining.daily_compute_calls).to.include({ limit: 25, remaining: 25 - i });
      expect(r.body.remaining.request_rate).to.include.keys('limit_per_minute', 'remaining', 'resets_at');
      // Only requests the key may make next: no more priced ones than the day has calls left (the one past them is a 429).
      const offered = (r.body.next_actions as Array<{ action: string }>).map((a) => a.action);
      const priced = offered.filter((a) => PRICED.includes(a));
      if (i < 24) expect(priced, `call ${i}`).to.deep.equal(['verify_price', 'price_cheapest']);
      else if (i === 24) expect(priced, 'one call left').to.deep.equal(['verify_price']);
      else expect(priced, 'the last call of the day').to.deep.equal([]);
    }
    const over = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 26 } });
    expect(over.status).to.equal(429);
    expect(over.body.code).to.equal('daily_quota_exceeded');
    expect(over.body.error).to.match(/daily quota/i);
    expect(over.body.retry_after).to.equal(Number(over.headers.get('retry-after')));
    expect(over.body.limit).to.include({ compute_calls_per_day: 25 });
    const steps = over.body.next as Array<{ action: string; available: boolean; method?: string; path?: string; header?: string }>;
    expect(steps.map((n) => n.action)).to.deep.equal(['pay_per_call', 'day_pass', 'top_up', 'claim']);
    // The payment steps name the addresses the payments plugin will serve, and say they are not offered yet.
    expect(steps.map((n) => [n.action, n.available])).to.deep.equal([['pay_per_call', false], ['day_pass', false], ['top_up', false], ['claim', true]]);
    expect(steps.find((n) => n.action === 'claim')?.path).to.equal('/api/agents/claim');
    // Sent by whoever claims, never by this key (which is refused it): the others are the caller's own.
    expect(steps.map((n) => [n.action, (n as { by?: string }).by])).to.deep.equal([['pay_per_call', undefined], ['day_pass', undefined], ['top_up', undefined], ['claim', 'claimer']]);
    expect(steps.find((n) => n.action === 'pay_per_call')?.header).to.equal('X-PAYMENT');
    expect(steps.find((n) => n.action === 'day_pass')).to.include({ method: 'POST', path: '/api/payments/day-pass' });
    // The pass it describes is the configured one (DAY_PASS_CALLS, DAY_PASS_VALID_HOURS; here the defaults).
    expect((steps.find((n) => n.action === 'day_pass') as unknown as { description: string }).description).to.include('500 calls for 24 hours');
    expect((quotaNextSteps(false, { calls: 77, validHours: 12 }).find((n) => n.action === 'day_pass') as { description: string }).description).to.include('77 calls for 12 hours');
    expect(steps.find((n) => n.action === 'top_up')).to.include({ method: 'POST', path: '/api/balance/top-up' });
  });

  it('reports in remaining.daily_compute_calls that the allowance resets at the next 00:00 UTC', async () => {
    const sandbox = await registerSandbox(svc, 'resets');
    const res = await client(svc.url, { 'x-api-key': sandbox.key }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 3 } });
    expect(res.status, res.text).to.equal(200);
    const answeredAt = Date.parse(res.headers.get('date') ?? '');
    const nextMidnight = new Date(Math.floor(answeredAt / 86_400_000) * 86_400_000 + 86_400_000).toISOString();
    expect(res.body.remaining.daily_compute_calls.resets_at).to.equal(nextMidnight);
  });

  it("tells a sandbox where its call's record is: in the receipt, its link opening once the sandbox is claimed (the usage API answers it 403)", async () => {
    const sandbox = await registerSandbox(svc, 'receipts');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.receipt.usage_event.id).to.equal(res.body.receipt.usage_event_id);
    expect(res.body.receipt.hint).to.match(/usage_event above/).and.match(/claim/);
    expect((await api.get<Record<string, any>>(res.body.receipt.url.replace(svc.url, ''))).body.code).to.equal('plan_restricted');
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 1 } });
    const offer = (demo.body.next_actions as Array<Record<string, any>>).find((a) => a.action === 'get_a_free_key');
    expect(offer?.reason).to.match(/^A free sandbox key: \d+ priced calls a day, each with its own usage record in the receipt\.$/);
  });

  it('reaches built-in functions only from a sandbox', async () => {
    const person = await signUp(svc, 'publisher');
    const key = (await createKey(svc, person, { name: 'p' })).key;
    const api = client(svc.url, { 'x-api-key': key });
    const fn = await api.post<Record<string, any>>('/api/functions', { name: `public-${Date.now()}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/x', cost_per_unit: '0.001', is_public: true });
    await api.patch(`/api/functions/${fn.body.function.id}`, { status: 'active' });
    const sandbox = await registerSandbox(svc, 'curious');
    const res = await client(svc.url, { 'x-api-key': sandbox.key }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: fn.body.function.id });
    // SPEC: a sandbox key computes with built-in functions; everything else answers 403 with a reason.
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('plan_restricted');
    const listed = await client(svc.url, { 'x-api-key': sandbox.key }).get<Record<string, any>>('/api/functions');
    expect((listed.body.data as Array<{ built_in: boolean }>).every((f) => f.built_in)).to.equal(true);
    // With the day's calls spent it is still the plan that refuses, not the quota: waiting for midnight would change nothing.
    const sandboxApi = client(svc.url, { 'x-api-key': sandbox.key });
    for (let i = 1; i <= 25; i++) expect((await sandboxApi.post('/api/compute/price', { context: { current_price: i } })).status, `call ${i}`).to.equal(200);
    expect((await sandboxApi.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 } })).body.code).to.equal('daily_quota_exceeded');
    const refusedSoFar = async () => Number(/pricing_compute_requests_total\{function="none",outcome="outside_plan"\} (\d+)/.exec((await client(svc.url).get('/metrics')).text)?.[1] ?? 0);
    const before = await refusedSoFar();
    const spent = await sandboxApi.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: fn.body.function.id });
    expect([spent.status, spent.body.code], spent.text).to.deep.equal([403, 'plan_restricted']);
    expect(await refusedSoFar(), 'counted as the pricing counts such a refusal').to.equal(before + 1);
    const byName = await sandboxApi.post<Record<string, any>>('/api/price-router', { context: { current_price: 1 }, function_name: fn.body.function.name });
    expect([byName.status, byName.body.code], byName.text).to.deep.equal([403, 'plan_restricted']);
    // A built-in named explicitly meets the quota as ever.
    expect((await sandboxApi.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: 'fn_builtin_anchored' })).body.code).to.equal('daily_quota_exceeded');
  });

  it('refuses test runs to a sandbox with 403 and a reason, built-ins included: its compute is the daily allowance', async () => {
    const sandbox = await registerSandbox(svc, 'tester');
    const res = await client(svc.url, { 'x-api-key': sandbox.key }).post<Record<string, any>>('/api/functions/fn_builtin_anchored/test', { context: { current_price: 10 } });
    expect(res.status, res.text).to.equal(403);
    expect(res.body).to.include({ code: 'plan_restricted', plan: 'agent_starter' });
    expect(res.body.reason).to.equal('Agent Starter sandboxes cannot use POST /api/functions/{id}/test. A claimed workspace can.');
    expect(res.body.hint).to.match(/^What POST \/api\/functions\/\{id\}\/test does, for a claimed workspace: run one function on a context \(no routing, fallback or cache\)\. /);
    expect(res.body.hint).to.include('claim');
    expect((res.body.next as Array<{ action: string }>).map((n) => n.action)).to.include('claim');
  });
});

describe('sandbox request-rate allowance', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({
      config: { limits: { registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 }, rateLimit: { perWorkspacePerMinute: 40, perAddressPerMinute: 45, failedAuthPerAddressPer15Min: 100_000 } } },
    });
  });
  after(() => svc.close());

  it('reports in remaining.request_rate the binding count, the same one the X-RateLimit headers report, and whose it is', async () => {
    const rateOf = (r: { headers: Headers; body: Record<string, any> }) => ({
      headers: [Number(r.headers.get('x-ratelimit-limit')), Number(r.headers.get('x-ratelimit-remaining'))],
      body: [r.body.remaining.request_rate.limit_per_minute, r.body.remaining.request_rate.remaining],
      scope: r.body.remaining.request_rate.scope,
    });
    // The first workspace's calls leave it fewer requests than the address has: the workspace binds.
    const first = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'rate-a')).key });
    let last: ReturnType<typeof rateOf> | undefined;
    for (let i = 1; i <= 6; i++) {
      const r = await first.post<Record<string, any>>('/api/compute/price', { context: { current_price: i } });
      expect(r.status).to.equal(200);
      last = rateOf(r);
    }
    expect(last).to.deep.equal({ headers: [40, 34], body: [40, 34], scope: 'workspace' });
    // A fresh workspace on the same address: the address, 7 requests in, now has fewer left.
    const second = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'rate-b')).key });
    const r = await second.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 } });
    expect(r.status).to.equal(200);
    expect(rateOf(r)).to.deep.equal({ headers: [45, 38], body: [45, 38], scope: 'address' });
    expect(Date.parse(r.body.remaining.request_rate.resets_at)).to.be.greaterThan(Date.now());
  });
});
