import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, registerSandbox, signUp } from '../../support/world';

describe('keyless demo', function () {
  this.timeout(30_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: { limits: { demo: { callsPerHour: 3 } } } });
  });
  after(() => svc.close());

  it('prices without a key on the demo tenant, with budget headers, and refuses over budget', async () => {
    const api = client(svc.url);
    const ok = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 9.99, unit_cost: 5 } });
    expect(ok.status).to.equal(200);
    expect(ok.body.demo).to.equal(true);
    expect(ok.body.trace.charged.amount).to.equal('0.00');
    // The router chose among several functions that could price it, but the demo charges nothing: nothing was saved.
    expect(ok.body.strategy).to.equal('default');
    expect(ok.body.trace.fallback_used).to.equal(false);
    expect(ok.body).to.not.have.property('savings');
    expect(ok.body).to.not.have.property('credential_ignored');
    expect(ok.headers.get('x-demo-budget-limit')).to.equal('3');
    expect(ok.headers.get('x-demo-budget-remaining')).to.equal('2');
    expect(Date.parse(ok.headers.get('x-demo-budget-reset') ?? '')).to.be.greaterThan(Date.now());
    expect(ok.body.budget).to.include({ limit_per_hour: 3, remaining: 2 });
    // Nobody can open the demo tenant's usage: the receipt says so and where to get receipts one can read.
    expect(ok.body.receipt.hint).to.match(/demo tenant/).and.match(/POST \/api\/agents\/register/);
    expect((await api.get(new URL(ok.body.receipt.url as string).pathname)).status).to.equal(401);
    const invalid = await api.post<Record<string, any>>('/api/public/compute/demo', { context: 'nope' });
    expect(invalid.status).to.equal(400);
    expect(invalid.headers.get('x-demo-budget-remaining')).to.equal('1');
    expect(invalid.headers.get('x-demo-budget-limit')).to.equal('3');
    // The reset time too: the start of the next clock hour.
    const invalidAt = Date.parse(invalid.headers.get('date') ?? '');
    expect(invalid.headers.get('x-demo-budget-reset')).to.equal(new Date(Math.floor(invalidAt / 3_600_000) * 3_600_000 + 3_600_000).toISOString());
    // The call spending the last of the budget offers no demo call next (its verify would be refused), only a key.
    const last = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { product_type: 'coffee', current_price: 1 } });
    expect(last.status).to.equal(200);
    expect(last.body.budget).to.include({ remaining: 0 });
    expect((last.body.next_actions as Array<{ action: string }>).map((a) => a.action)).to.deep.equal(['get_a_free_key']);
    const over = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 1 } });
    expect(over.status).to.equal(429);
    expect(over.body.retry_after).to.equal(Number(over.headers.get('retry-after')));
    expect(over.headers.get('x-demo-budget-remaining')).to.equal('0');
    // One reset time, the start of the next clock hour: the header, the body and retry_after agree.
    const answeredAt = Date.parse(over.headers.get('date') ?? '');
    const nextHour = new Date(Math.floor(answeredAt / 3_600_000) * 3_600_000 + 3_600_000).toISOString();
    expect(over.headers.get('x-demo-budget-reset')).to.equal(nextHour);
    expect(over.body.limit).to.deep.equal({ demo_calls_per_hour: 3, resets_at: nextHour });
    expect(Math.abs(answeredAt + over.body.retry_after * 1000 - Date.parse(nextHour))).to.be.below(2000);
    const [rows] = await svc.sequelize.query(`SELECT channel, workspace_id FROM usage_events WHERE channel = 'demo'`);
    expect(rows).to.have.length(2);
  });

  it('carries the budget headers on a body refused while read (413 too large, undecodable encoding), counting it like a validation error', async () => {
    const small = await startTestService({ config: { limits: { demo: { callsPerHour: 3 } }, server: { bodyLimitBytes: 2048 } } });
    try {
      const api = client(small.url);
      const large = await api.raw('POST', '/api/public/compute/demo', { rawBody: JSON.stringify({ context: { current_price: 1, note: 'x'.repeat(4000) } }), headers: { 'content-type': 'application/json' } });
      expect(large.status, large.text).to.equal(413);
      expect(large.body.code).to.equal('payload_too_large');
      expect(large.body.limit).to.deep.equal({ body_bytes: 2048 });
      expect(large.headers.get('x-demo-budget-limit')).to.equal('3');
      expect(large.headers.get('x-demo-budget-remaining')).to.equal('2');
      expect(Date.parse(large.headers.get('x-demo-budget-reset') ?? '')).to.be.greaterThan(Date.now());
      const garbled = await api.raw('POST', '/api/public/compute/demo', { rawBody: 'not gzip at all', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      expect(garbled.status, garbled.text).to.equal(400);
      expect(garbled.body.code).to.equal('invalid_json');
      expect(garbled.headers.get('x-demo-budget-remaining')).to.equal('1');
      const ok = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 2 } });
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('x-demo-budget-remaining')).to.equal('0');
      // Spent: the next refused body is the budget's 429, not a 413 that would let it go on counting nothing.
      const over = await api.raw('POST', '/api/public/compute/demo', { rawBody: JSON.stringify({ context: { note: 'x'.repeat(4000) } }), headers: { 'content-type': 'application/json' } });
      expect(over.status).to.equal(429);
      expect(over.headers.get('x-demo-budget-remaining')).to.equal('0');
    } finally {
      await small.close();
    }
  });

  it("keeps an address's hourly budget across a restart without Redis: a new instance counts the demo calls the hour recorded", async () => {
    const from = { 'x-forwarded-for': '198.51.100.77' };
    for (let i = 1; i <= 2; i++) expect((await client(svc.url, from).post('/api/public/compute/demo', { context: { current_price: i } })).status, `call ${i}`).to.equal(200);
    // A second instance on the same database with its own in-process store: what a restart leaves.
    const restarted = await startTestService({ config: { limits: { demo: { callsPerHour: 3 } } }, databaseUrl: svc.databaseUrl });
    try {
      const api = client(restarted.url, from);
      const third = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 3 } });
      expect(third.status, third.text).to.equal(200);
      expect(third.headers.get('x-demo-budget-remaining')).to.equal('0');
      const over = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 4 } });
      expect(over.status, over.text).to.equal(429);
      // Another address keeps its own budget.
      expect((await client(restarted.url, { 'x-forwarded-for': '198.51.100.78' }).post('/api/public/compute/demo', { context: { current_price: 5 } })).status).to.equal(200);
    } finally {
      await restarted.close();
    }
  });

  it('stays on the demo tenant when the caller also sends a key: nothing counts against its workspace', async () => {
    // Its own service: the budget of the one above is spent.
    const fresh = await startTestService();
    try {
      await demoWithKey(fresh);
    } finally {
      await fresh.close();
    }
  });

  async function demoWithKey(svc: TestService): Promise<void> {
    const sandbox = await registerSandbox(svc);
    const res = await client(svc.url, { 'x-api-key': sandbox.key }).post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 2 } });
    expect(res.status).to.equal(200);
    expect(res.body.demo).to.equal(true);
    expect(res.body.credential_ignored).to.match(/did not check the credential sent; send it to POST \/api\/compute\/price/);
    expect(res.body.trace.charged).to.include({ amount: '0.00', billable: false });
    expect(res.body).to.not.have.property('remaining');
    const [rows] = await svc.sequelize.query(`SELECT workspace_id, caller_key_id FROM usage_events WHERE id = $1`, { bind: [res.body.receipt.usage_event_id] });
    expect(rows).to.deep.equal([{ workspace_id: 'ws_public_demo', caller_key_id: null }]);
    const [own] = await svc.sequelize.query(`SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1`, { bind: [sandbox.workspaceId] });
    expect(own).to.deep.equal([{ n: 0 }]);
  }

  it('says on every refusal, too, that a credential sent along was neither checked nor used (400, 404, 422, 429); a keyless refusal does not', async () => {
    const fresh = await startTestService({ config: { limits: { demo: { callsPerHour: 4 } } } });
    try {
      const sandbox = await registerSandbox(fresh);
      const withKey = client(fresh.url, { 'x-api-key': sandbox.key });
      for (const [body, status, code] of [
        [{ context: 'coffee' }, 400, 'validation_error'],
        [{ context: { unit_cost: 2 }, function_id: 'fn_mine_perhaps' }, 404, 'function_not_found'],
        [{ context: { unit_cost: 'x' } }, 422, 'insufficient_context'],
        [{ context: { unit_cost: 2 } }, 200, undefined],
        [{ context: { unit_cost: 2 } }, 429, 'rate_limited'],
      ] as const) {
        const res = await withKey.post<Record<string, any>>('/api/public/compute/demo', body);
        expect(res.status, res.text).to.equal(status);
        if (code) expect(res.body.code).to.equal(code);
        expect(res.body.credential_ignored, res.text).to.match(/did not check the credential sent; send it to POST \/api\/compute\/price/);
        // The spent budget offers the route that takes the credential, not a sandbox registration, and the hint says so too.
        if (status === 429) {
          expect(res.body.next.map((n: { action: string; path: string }) => `${n.action} ${n.path}`)).to.deep.equal(['use_your_credential /api/compute/price']);
          expect(res.body.hint).to.match(/^Send the same body with your credential to POST \/api\/compute\/price: .* Or wait \d+ s for the demo\.$/).and.not.match(/sandbox key/);
        }
        // A priced answer offers no key of its own to a caller holding one.
        if (status === 200) expect(res.body.next_actions.map((n: { action: string }) => n.action)).to.not.include('get_a_free_key');
      }
      const keyless = await client(fresh.url).post<Record<string, any>>('/api/public/compute/demo', { context: { unit_cost: 2 } });
      expect(keyless.status).to.equal(429);
      expect(keyless.body).to.not.have.property('credential_ignored');
      expect(keyless.body.next.map((n: { action: string }) => n.action)).to.deep.equal(['register_agent']);
      expect(keyless.body.hint).to.match(/get a free sandbox key/);
    } finally {
      await fresh.close();
    }
  });

  it('naming a marketplace function keyless: 404 naming the built-ins the demo reaches, not the catalogue that lists the marketplace beside them', async () => {
    const owner = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'demo-market'), { name: 'm' })).key });
    const made = await owner.post<Record<string, any>>('/api/functions', { name: `demo-market-${Date.now().toString(36)}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.001', is_public: true });
    expect(made.status, made.text).to.equal(201);
    expect((await owner.patch(`/api/functions/${made.body.function.id as string}`, { status: 'active' })).status).to.equal(200);
    const res = await client(svc.url, { 'x-forwarded-for': '198.51.100.92' }).post<Record<string, any>>('/api/public/compute/demo', { context: { unit_cost: 2 }, function_id: made.body.function.id });
    expect(res.status, res.text).to.equal(404);
    expect(res.body.code).to.equal('function_not_found');
    expect(res.body.hint).to.match(/^Without a key the demo reaches the built-in functions only: cost-plus \(fn_builtin_cost_plus\), /);
    expect(res.body.hint).to.include('anchored-adjustment (fn_builtin_anchored)').and.not.include('GET /api/catalog');
  });

  it('answers function_name with where it is taken (the price router, with a key) and how the demo pins a built-in', async () => {
    const res = await client(svc.url, { 'x-forwarded-for': '198.51.100.91' }).post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 2 }, function_name: 'cost-plus' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues).to.deep.equal([{ path: 'function_name', reason: '"function_name" is taken by POST /api/price-router, with a key; the demo pins a built-in by its id in function_id (GET /api/catalog lists them)' }]);
  });

  it("answers GET with 405, Allow: POST, a hint and the POST's example body", async () => {
    const res = await client(svc.url).get<Record<string, any>>('/api/public/compute/demo');
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('POST');
    expect(res.body.hint).to.equal('Use POST on this path; example is a body it takes.');
    // The demo budget of this suite is spent by now: the example is the route's own, which passes its schema (the discovery tests run it).
    const demo = svc.routes.all().find(({ spec }) => spec.id === 'demo.compute')?.spec;
    expect(res.body.example).to.deep.equal(demo?.example);
    expect(demo?.body?.safeParse(res.body.example).success).to.equal(true);
  });

  it('counts the demo calls of every IPv6 address in one /64 against one budget (RATE_LIMIT_IPV6_PREFIX), and another /64 apart', async () => {
    const api = client(svc.url);
    const from = (address: string) => ({ 'x-forwarded-for': address });
    // The events this test makes: those after the suite's earlier demo calls (from 127.0.0.1).
    // As text: a JavaScript Date would cut the column's microseconds and count the last earlier event in.
    const [before] = await svc.sequelize.query(`SELECT coalesce(max(created_at), '-infinity')::text AS t FROM usage_events WHERE channel = 'demo'`);
    const since = (before as Array<{ t: string }>)[0]?.t;
    for (const [i, address] of ['2001:db8:1::1', '2001:db8:1::2', '2001:db8:1::3'].entries()) {
      const ok = await api.post('/api/public/compute/demo', { context: { current_price: 5 } }, from(address));
      expect(ok.status, `${address}: ${ok.text}`).to.equal(200);
      expect(ok.headers.get('x-demo-budget-remaining')).to.equal(String(2 - i));
    }
    const over = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 5 } }, from('2001:db8:1::4'));
    expect(over.status, over.text).to.equal(429);
    expect(over.body.code).to.equal('rate_limited');
    expect(over.body.retry_after).to.equal(Number(over.headers.get('retry-after')));
    expect(over.headers.get('x-demo-budget-remaining')).to.equal('0');
    const elsewhere = await api.post('/api/public/compute/demo', { context: { current_price: 5 } }, from('2001:db8:2::1'));
    expect(elsewhere.status, elsewhere.text).to.equal(200);
    expect(elsewhere.headers.get('x-demo-budget-remaining')).to.equal('2');
    // Usage events keep each caller's full address: the four answered calls came from four addresses.
    const [rows] = await svc.sequelize.query(`SELECT count(DISTINCT caller_address_hash)::int AS n FROM usage_events WHERE channel = 'demo' AND status = 'ok' AND created_at > $1::timestamptz`, { bind: [since] });
    expect((rows as Array<{ n: number }>)[0]?.n).to.equal(4);
  });
});
