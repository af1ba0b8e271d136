import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, joinWorkspace, mintToken, registerSandbox, signUp } from '../../support/world';

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

/** Fields a compute response has carried since it was first published; they may only be added to. */
const COMPUTE_RESPONSE_FIELDS = ['price', 'currency', 'confidence', 'function', 'strategy', 'method', 'trace', 'next_actions', 'receipt', 'request_id'];

/** Nested fields every compute response has carried since they were published (dotted paths); they may only be added to. */
const COMPUTE_RESPONSE_PATHS: readonly string[] = Object.freeze([
  'trace.stages',
  'trace.chosen_function',
  'trace.fallback_used',
  'trace.cache',
  'trace.charged',
  'trace.attempts',
  'trace.overhead_ms',
  'trace.total_ms',
  'receipt.usage_event_id',
  'receipt.url',
  'receipt.recorded_at',
  'receipt.usage_event',
  'method.confidence_factors',
  'method.inputs_used',
  'method.notes',
  'function.id',
  'function.name',
  'function.built_in',
  'function.execution_type',
]);
/** Fields of a call the router chose for among several functions. */
const ROUTED_RESPONSE_PATHS: readonly string[] = Object.freeze(['savings', 'savings.amount', 'savings.currency', 'savings.compared_with', 'savings.chosen_cost_per_unit']);
/** Fields of a sandbox's call: its daily calls and request-rate allowance. */
const SANDBOX_RESPONSE_PATHS: readonly string[] = Object.freeze([
  'remaining.daily_compute_calls.limit',
  'remaining.daily_compute_calls.remaining',
  'remaining.daily_compute_calls.resets_at',
  'remaining.request_rate.limit_per_minute',
  'remaining.request_rate.remaining',
  'remaining.request_rate.resets_at',
  'remaining.request_rate.scope',
]);

/** The dotted paths a body lacks (absent or undefined). */
function missingPaths(body: unknown, paths: readonly string[]): string[] {
  return paths.filter((p) => {
    let at: unknown = body;
    for (const part of p.split('.')) {
      if (at === null || typeof at !== 'object' || !Object.prototype.hasOwnProperty.call(at, part)) return true;
      at = (at as Record<string, unknown>)[part];
    }
    return at === undefined;
  });
}

describe('compute API', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  let personCookie: string;

  before(async () => {
    svc = await startTestService({ config: lenient });
    const person = await signUp(svc, 'pricer');
    personCookie = person.cookie;
    key = (await createKey(svc, person, { name: 'compute' })).key;
  });
  after(() => svc.close());

  it('prices a context with a current price only, with an honest low confidence and an ordered trace', async () => {
    const res = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 12.5, currency: 'EUR' } }, { 'x-api-key': key });
    expect(res.status).to.equal(200);
    expect(res.body.price).to.equal('12.50');
    expect(res.body.currency).to.equal('EUR');
    expect(res.body.confidence).to.be.at.most(0.2);
    const stages = (res.body.trace.stages as Array<{ stage: string; ms: number }>).map((s) => s.stage);
    expect(stages).to.deep.equal(['authenticate_and_validate', 'admission', 'route', 'cache', 'execute', 'charge', 'record_usage']);
    for (const s of res.body.trace.stages as Array<{ ms: number }>) expect(s.ms).to.be.a('number');
    expect(res.body.trace.chosen_function.name).to.equal('anchored-adjustment');
    expect(res.body.trace.fallback_used).to.equal(false);
    expect(res.body.trace.cache).to.equal('miss');
    expect(res.body.trace.charged).to.deep.equal({ amount: '0.001', currency: 'USDC', paid_via: null, billable: true });
    expect(res.body.trace.overhead_ms).to.be.a('number');
    expect(res.body.receipt.url).to.match(new RegExp(`/api/usage/events/${res.body.receipt.usage_event_id}$`));
    expect(res.body.receipt).not.to.have.property('hint');
    expect(res.body.next_actions.length).to.be.at.most(3);
    // Exactly the documented fields: nothing of how the service chose them (a priced action's flag) leaks.
    for (const a of res.body.next_actions as Array<Record<string, unknown>>) expect(a).to.have.all.keys('action', 'method', 'path', 'reason', 'example');
    const sandbox = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'next-actions-shape')).key });
    const priced = await sandbox.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 2, product_type: 'coffee' } });
    expect(priced.body.next_actions.map((a: { action: string }) => a.action)).to.include('price_cheapest');
    for (const a of priced.body.next_actions as Array<Record<string, unknown>>) expect(a).to.have.all.keys('action', 'method', 'path', 'reason', 'example');
  });

  for (const [context, input] of [
    [{ unit_cost: 4, target_margin: 30 }, 'target_margin'],
    [{ unit_cost: 2e15 }, 'unit_cost'],
    [{ current_price: 10, units_sold: -5, units_received: 100, season_elapsed: 0.5 }, 'units_sold'],
    [{ unit_cost: -4 }, 'unit_cost'],
    [{ unit_cost: 'four dollars', current_price: 10 }, 'unit_cost'],
    [{ unit_cost: 4, elasticity: 'high' }, 'elasticity'],
  ] as const) {
    it(`refuses ${JSON.stringify(context)} with 422 naming ${input}, rather than pricing it with a function that does not read it`, async () => {
      const res = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context }, { 'x-api-key': key });
      expect(res.status, res.text).to.equal(422);
      expect(res.body).to.include({ code: 'insufficient_context' });
      expect(res.body.refused).to.deep.equal([input]);
      expect(res.body.issues).to.have.length(1);
      expect(res.body.issues[0].path).to.equal(`context.${input}`);
      expect(res.body.issues[0].reason).to.match(new RegExp(`^${input} must`));
      expect(res.body.hint).to.include(`Fix ${input}`);
      expect(res.body).to.not.have.property('price');
      // The walk stopped at the refusal: no other function was tried after it.
      const attempts = res.body.attempts as Array<{ outcome: string }>;
      expect(attempts.at(-1)?.outcome).to.equal('not_applicable');
      expect(attempts.filter((a) => a.outcome === 'ok')).to.deep.equal([]);
    });
  }

  it('a context whose inputs are all there but price to nothing is told so, not asked for more inputs', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 0.001 }, function_id: 'fn_builtin_anchored' });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.missing).to.deep.equal([]);
    expect(res.body.error).to.match(/rounds to nothing in USD's smallest unit/);
    expect(res.body.hint).to.equal('No input is missing: the message gives the reason each function could not price this context and how to change the values it names.');
    expect(res.body).to.not.have.property('example');
    // Routed: other functions lack inputs, and the hint does not offer the current_price that was sent as the way to a price.
    const routed = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1e-30 } });
    expect(routed.status, routed.text).to.equal(422);
    expect(routed.body.missing).to.include('unit_cost');
    expect(routed.body.hint).to.equal("Add one of the inputs in missing (inputs_by_function says what each built-in reads): the current_price you sent did not get a price on its own (attempts give each function's reason).");
    const lacking = await api.post<Record<string, any>>('/api/compute/price', { context: {}, function_id: 'fn_builtin_anchored' });
    expect(lacking.body.missing).to.deep.equal(['current_price']);
    // Pinned: the hint speaks of the function named, and offers no stock example another function would price.
    expect(lacking.body.hint).to.equal(
      'Add current_price to the context: the function you named with function_id needs it (attempts give its reason, inputs_by_function what each built-in reads), or omit function_id to let routing choose a function that prices what you sent.',
    );
    expect(lacking.body).to.not.have.property('example');
    const byName = await api.post<Record<string, any>>('/api/price-router', { context: { current_price: 4.2 }, function_name: 'cost-plus' });
    expect(byName.status, byName.text).to.equal(422);
    expect(byName.body.hint).to.match(/^Add unit_cost to the context: the function you named with function_name needs it/);
    expect(byName.body.hint).to.not.include('current_price alone');
    expect(byName.body).to.not.have.property('example');
    // Unpinned, without a policy: the general advice and a stock example stand.
    const open = await api.post<Record<string, any>>('/api/compute/price', { context: {} });
    expect(open.status, open.text).to.equal(422);
    expect(open.body.hint).to.match(/^Add the inputs a method needs/);
    expect(open.body.example).to.be.an('object');
  });

  it("answers a max_price under one cent 422 naming it and the cent, as the context's fault: such calls leave a built-in's breaker closed and a good call answers 200", async () => {
    // A workspace of its own: its breaker counts these calls alone.
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'sub-cent'), { name: 'sub-cent' })).key });
    const calls: Array<[string, Record<string, unknown>]> = [
      ['fn_builtin_anchored', { current_price: 0.005, currency: 'USD', max_price: 0.006 }],
      ['fn_builtin_charm', { target_price: 0.005, max_price: 0.006 }],
      ['fn_builtin_competitive', { competitor_prices: [0.005, 0.006], max_price: 0.006 }],
    ];
    for (let i = 0; i < 6; i++) calls.push(['fn_builtin_anchored', { current_price: 0.005, max_price: 0.006 + i / 10_000 }]);
    for (const [fn, context] of calls) {
      const res = await api.post<Record<string, any>>('/api/compute/price', { context, function_id: fn });
      expect(res.status, `${fn} ${res.text}`).to.equal(422);
      expect(res.body.code).to.equal('insufficient_context');
      expect(res.body.error).to.match(/No price in USD's smallest unit \(0\.01\) lies at or under max_price 0\.00\d+: raise it to 0\.01 or more/);
      expect(res.body.refused).to.deep.equal(['max_price']);
      expect((res.body.attempts as Array<{ outcome: string }>).map((a) => a.outcome)).to.deep.equal(['not_applicable']);
    }
    const good = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 10.5 }, function_id: 'fn_builtin_anchored' });
    expect(good.status, good.text).to.equal(200);
    expect(good.body.price).to.equal('10.50');
  });

  it('offers verify_price only for a context with a product_type (the evidence it weighs), and its example body passes as offered', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const actionsOf = (body: Record<string, any>) => body.next_actions as Array<{ action: string; method: string; path: string; example?: unknown }>;
    const bare = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 10 } });
    expect(bare.status).to.equal(200);
    expect(actionsOf(bare.body).map((a) => a.action)).to.not.include('verify_price');
    expect(actionsOf(bare.body).length).to.be.within(1, 3);
    const typed = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'next-action-widget', current_price: 10 } });
    const verify = actionsOf(typed.body).find((a) => a.action === 'verify_price');
    expect(verify).to.include({ method: 'POST', path: '/api/price-router/verify' });
    const verdict = await api.post<Record<string, any>>(verify?.path ?? '', verify?.example);
    expect(verdict.status, verdict.text).to.equal(200);
    expect(verdict.body.verdict).to.be.a('string');
  });

  it("verify_price's example proposes exactly the computed price: a number where one holds it, the decimal string where a number would round it", async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const verifyOf = (body: Record<string, any>) => (body.next_actions as Array<{ action: string; path: string; example: { proposed_price: unknown } }>).find((a) => a.action === 'verify_price');
    const plain = await api.post<Record<string, any>>('/api/compute/price', { function_id: 'fn_builtin_cost_plus', context: { product_type: 'next-action-widget', unit_cost: '10', markup: 0 } });
    expect(plain.status, plain.text).to.equal(200);
    expect(verifyOf(plain.body)?.example.proposed_price).to.equal(Number(plain.body.price));
    const big = await api.post<Record<string, any>>('/api/compute/price', { function_id: 'fn_builtin_cost_plus', context: { product_type: 'yacht', unit_cost: '987654321098765.43', markup: 0 } });
    expect(big.status, big.text).to.equal(200);
    expect(big.body.price).to.equal('987654321098765.43');
    const verify = verifyOf(big.body);
    expect(verify?.example.proposed_price).to.equal('987654321098765.43');
    // Sent as offered, the service's own price is not judged below its floor.
    const verdict = await api.post<Record<string, any>>(verify?.path ?? '', verify?.example);
    expect(verdict.status, verdict.text).to.equal(200);
    expect(verdict.body.verdict).to.not.equal('low');
  });

  it("fits verify_price's example to what verification accepts: context keys it refuses (min_price 0, unit_cost 0, a current price below 10^-18) are left out, and a product type too long to match is not offered at all", async () => {
    const api = client(svc.url, { 'x-api-key': key });
    for (const [context, left] of [
      [{ product_type: 'fit-widget', current_price: 4.5, min_price: 0 }, ['product_type', 'current_price']],
      [{ product_type: 'fit-widget', current_price: 4.5, unit_cost: 0, max_price: 9 }, ['product_type', 'current_price', 'max_price']],
      [{ product_type: 'fit-widget', current_price: 1e-21, unit_cost: 2 }, ['product_type', 'unit_cost']],
    ] as const) {
      const res = await api.post<Record<string, any>>('/api/compute/price', { context });
      expect(res.status, res.text).to.equal(200);
      const verify = (res.body.next_actions as Array<{ action: string; path: string; example: { context: Record<string, unknown> } }>).find((a) => a.action === 'verify_price');
      expect(verify, JSON.stringify(res.body.next_actions)).to.not.equal(undefined);
      expect(Object.keys(verify?.example.context ?? {}), JSON.stringify(context)).to.deep.equal(left);
      const verdict = await api.post<Record<string, any>>(verify?.path ?? '', verify?.example);
      expect(verdict.status, verdict.text).to.equal(200);
    }
    const long = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'x'.repeat(150), current_price: 4.5 } });
    expect(long.status, long.text).to.equal(200);
    expect((long.body.next_actions as Array<{ action: string }>).map((a) => a.action)).to.not.include('verify_price');
  });

  it('offers in next_actions only what the credential may do and the workspace lacks: a policy to a full-access key without a default, no batch to a batch item', async () => {
    const owner = await signUp(svc, 'next-actions');
    const full = client(svc.url, { 'x-api-key': (await createKey(svc, owner, { name: 'full' })).key });
    const computeOnly = client(svc.url, { 'x-api-key': (await createKey(svc, owner, { name: 'compute', scopes: ['price:compute'] })).key });
    const actions = async (api: ReturnType<typeof client>) => {
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 19 } });
      expect(res.status, res.text).to.equal(200);
      return (res.body.next_actions as Array<{ action: string }>).map((a) => a.action);
    };
    expect(await actions(full)).to.include('set_routing_policy');
    // POST /api/routing-policies needs full access: a compute-only key would get 403 following it.
    const computeOnlyActions = await actions(computeOnly);
    expect(computeOnlyActions).to.not.include('set_routing_policy');
    // Routed by the default policy (not by cost): the cheapest route is offered in its place.
    expect(computeOnlyActions).to.include('price_cheapest');
    expect((await computeOnly.post('/api/routing-policies', { name: 'x', strategy: 'cheapest' })).status).to.equal(403);
    // A workspace with a default policy is not offered an example that would replace it, and one routing by cost not the cheapest route.
    expect((await full.post('/api/routing-policies', { name: 'mine', strategy: 'cheapest', is_default: true })).status).to.equal(201);
    const routedByCost = await actions(full);
    expect(routedByCost).to.not.include('set_routing_policy');
    expect(routedByCost).to.not.include('price_cheapest');
    const batch = await full.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 19 } }] });
    expect(batch.status, batch.text).to.equal(200);
    const itemActions = (batch.body.items[0].result.next_actions as Array<{ action: string }>).map((a) => a.action);
    expect(itemActions).to.not.include('price_in_batch');
    expect(itemActions).to.include('report_outcome');
  });

  it("offers a sandbox key neither price_in_batch nor set_routing_policy, and each action it offers, sent with its method, path and example by that key, is not refused 403", async () => {
    const sandbox = await registerSandbox(svc, 'next-actions-sandbox');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'sandbox-next-widget', current_price: 10 } });
    expect(res.status, res.text).to.equal(200);
    const actions = res.body.next_actions as Array<{ action: string; method: string; path: string; example?: unknown }>;
    const names = actions.map((a) => a.action);
    // A sandbox may verify (sandbox: true), so something is offered and followed below.
    expect(names).to.include('verify_price');
    expect(names).to.not.include('price_in_batch');
    expect(names).to.not.include('set_routing_policy');
    expect(names).to.deep.equal(['verify_price', 'price_cheapest']);
    for (const a of actions) {
      expect(a, `${a.action} carries an example body`).to.have.property('example');
      const followed = await api.raw(a.method, a.path, a.example === undefined ? {} : { body: a.example });
      expect(followed.status, `${a.action} ${a.method} ${a.path}: ${followed.text}`).to.not.equal(403);
      expect(followed.status, `${a.action} ${a.method} ${a.path}: ${followed.text}`).to.be.within(200, 299);
    }
  });

  it('offers set_routing_policy only to a credential that may create one: not to an agent\'s key or its token, nor to a member\'s key, and no longer to a key whose creator became a member', async () => {
    const owner = await signUp(svc, 'policy-offer-owner');
    const ownerApi = client(svc.url, { cookie: owner.cookie });
    const agent = await ownerApi.post<Record<string, any>>('/api/agents', { name: 'policy-offer-agent' });
    expect(agent.status, agent.text).to.equal(201);
    const agentKey = await ownerApi.post<Record<string, any>>(`/api/agents/${agent.body.agent.id as string}/keys`, { name: 'policy offer agent key' });
    expect(agentKey.status, agentKey.text).to.equal(201);
    const admin = await joinWorkspace(svc, owner, 'policy-offer-admin', 'admin');
    const adminKey = await client(svc.url, admin.session).post<Record<string, any>>('/api/api-keys', { name: 'admin key' });
    expect(adminKey.status, adminKey.text).to.equal(201);
    const member = await joinWorkspace(svc, owner, 'policy-offer-member', 'member');
    const memberKey = await client(svc.url, member.session).post<Record<string, any>>('/api/api-keys', { name: 'member key' });
    expect(memberKey.status, memberKey.text).to.equal(201);
    // A test workspace's team is its parent's: its owner's key there manages it too.
    const testKey = await client(svc.url, { cookie: owner.cookie, 'x-workspace-id': owner.testWorkspaceId }).post<Record<string, any>>('/api/api-keys', { name: 'owner key, test workspace' });
    expect(testKey.status, testKey.text).to.equal(201);
    const credentials: Array<[string, Record<string, string>, boolean]> = [
      ['owner key', { 'x-api-key': (await createKey(svc, owner, { name: 'owner key' })).key }, true],
      ['owner key in the test workspace', { 'x-api-key': testKey.body.api_key.key as string }, true],
      ['admin key', { 'x-api-key': adminKey.body.api_key.key as string }, true],
      ['owner session', { cookie: owner.cookie }, true],
      ['agent key', { 'x-api-key': agentKey.body.api_key.key as string }, false],
      ['agent token', { authorization: `Bearer ${await mintToken(svc, agentKey.body.api_key.key as string)}` }, false],
      ['member key', { 'x-api-key': memberKey.body.api_key.key as string }, false],
      ['member session', member.session, false],
    ];
    const offer = async (headers: Record<string, string>) => {
      const res = await client(svc.url, headers).post<Record<string, any>>('/api/compute/price', { context: { current_price: 10 } });
      expect(res.status, res.text).to.equal(200);
      return (res.body.next_actions as Array<{ action: string; method: string; path: string; example: unknown }>).find((a) => a.action === 'set_routing_policy');
    };
    for (const [label, headers, offered] of credentials) {
      const action = await offer(headers);
      expect(Boolean(action), label).to.equal(offered);
      // Whoever is not offered it would be refused it: the offer follows the route's own rule.
      const sent = await client(svc.url, headers).post<Record<string, any>>('/api/routing-policies', { name: `tried by ${label}`, strategy: 'cheapest' });
      expect(sent.status, `${label}: ${sent.text}`).to.equal(offered ? 201 : 403);
      if (offered) expect((await client(svc.url, headers).delete(`/api/routing-policies/${sent.body.policy.id as string}`)).status).to.be.oneOf([200, 204]);
    }
    // The admin made a member: their key is no longer offered it (nor allowed it).
    const demoted = await ownerApi.patch(`/api/workspaces/${owner.workspaceId}/members/${admin.person.id}`, { role: 'member' });
    expect(demoted.status, demoted.text).to.equal(200);
    expect(await offer({ 'x-api-key': adminKey.body.api_key.key as string })).to.equal(undefined);
  });

  it('gives every offered action an example body its path accepts from the same key (report_outcome, verify_price, price_in_batch, set_routing_policy, price_cheapest)', async () => {
    const owner = await signUp(svc, 'action-examples');
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, owner, { name: 'full' })).key });
    const followed = new Set<string>();
    // With a product_type: report_outcome, verify_price, price_in_batch; without one (and no default policy yet): report_outcome, price_in_batch, set_routing_policy.
    // Then, with the default policy set_routing_policy's example made, a call pinned to a function (explicit): report_outcome, price_in_batch, price_cheapest.
    for (const body of [{ context: { product_type: 'example-widget', current_price: 10 } }, { context: { current_price: 11 } }, { context: { current_price: 12 }, function_id: 'fn_builtin_anchored' }]) {
      const res = await api.post<Record<string, any>>('/api/compute/price', body);
      expect(res.status, res.text).to.equal(200);
      for (const a of res.body.next_actions as Array<{ action: string; method: string; path: string; example?: unknown }>) {
        expect(a.method, `${a.action} is a request with a body`).to.not.equal('GET');
        expect(a, `${a.action} carries an example`).to.have.property('example');
        const r = await api.raw(a.method, a.path, { body: a.example });
        expect(r.status, `${a.action} ${a.method} ${a.path} ${JSON.stringify(a.example)}: ${r.text}`).to.be.within(200, 299);
        followed.add(a.action);
      }
    }
    expect([...followed]).to.include.members(['report_outcome', 'verify_price', 'price_in_batch', 'set_routing_policy', 'price_cheapest']);
  });

  it('routes the price_in_batch example as the call was routed: pinned by id or by name, or with its routing_preference', async () => {
    const owner = await signUp(svc, 'batch-example-routing');
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, owner, { name: 'full' })).key });
    const calls: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
      ['/api/compute/price', { context: { current_price: 12, unit_cost: 3 }, function_id: 'fn_builtin_anchored' }, { function_id: 'fn_builtin_anchored' }],
      ['/api/price-router', { context: { current_price: 12, unit_cost: 3 }, function_name: 'cost-plus' }, { function_id: 'fn_builtin_cost_plus' }],
      ['/api/compute/price', { context: { current_price: 12, unit_cost: 3 }, routing_preference: 'fastest' }, { routing_preference: 'fastest' }],
    ];
    for (const [path, body, routing] of calls) {
      const res = await api.post<Record<string, any>>(path, body);
      expect(res.status, res.text).to.equal(200);
      const action = (res.body.next_actions as Array<{ action: string; example: { items: Array<Record<string, unknown>> } }>).find((a) => a.action === 'price_in_batch');
      expect(action?.example.items, JSON.stringify(body)).to.deep.equal([{ context: body.context, ...routing }]);
      const batch = await api.post<Record<string, any>>('/api/compute/batch', action?.example);
      expect(batch.status, batch.text).to.equal(200);
      expect(batch.body.items[0].status, batch.text).to.equal(200);
      // A pinned call's item is priced by the same function, to the same price (fastest may explore another).
      if (routing.function_id) {
        expect(batch.body.items[0].result.function.id, JSON.stringify(body)).to.equal(res.body.function.id);
        expect(batch.body.items[0].result.price).to.equal(res.body.price);
      } else expect(batch.body.items[0].result.strategy).to.equal('fastest');
    }
  });

  it('keeps every field it ever published (response compatibility)', async () => {
    const res = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 3 } }, { 'x-api-key': key });
    expect(res.status).to.equal(200);
    expect(Object.keys(res.body)).to.include.members(COMPUTE_RESPONSE_FIELDS);
    // A call the router chose for among several functions: every nested field, savings included.
    const routed = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 3, current_price: 5, note: 'compatibility' }, routing_preference: 'cheapest' }, { 'x-api-key': key });
    expect(routed.status, routed.text).to.equal(200);
    expect(routed.body.trace.cache).to.equal('miss');
    expect(missingPaths(routed.body, [...COMPUTE_RESPONSE_PATHS, ...ROUTED_RESPONSE_PATHS])).to.deep.equal([]);
    // A sandbox's call: its allowances too.
    const sandbox = await registerSandbox(svc, 'compatibility');
    const own = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 5 } }, { 'x-api-key': sandbox.key });
    expect(own.status, own.text).to.equal(200);
    expect(missingPaths(own.body, [...COMPUTE_RESPONSE_PATHS, ...SANDBOX_RESPONSE_PATHS])).to.deep.equal([]);
  });

  it('reports its own overhead within the call: 0 <= overhead_ms <= total_ms, total_ms covers every stage and fits in the round trip the client measured', async () => {
    const started = performance.now();
    const res = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 14.2, note: 'overhead' } }, { 'x-api-key': key });
    const roundTripMs = performance.now() - started;
    expect(res.status, res.text).to.equal(200);
    const { overhead_ms: overhead, total_ms: total, stages } = res.body.trace as { overhead_ms: number; total_ms: number; stages: Array<{ stage: string; ms: number }> };
    const stagesMs = stages.reduce((sum, st) => sum + st.ms, 0);
    const executeMs = stages.filter((st) => st.stage === 'execute').reduce((sum, st) => sum + st.ms, 0);
    expect(overhead).to.be.at.least(0);
    expect(overhead).to.be.at.most(total);
    // Stages are sequential parts of the call (each rounded to a microsecond).
    expect(total).to.be.at.least(stagesMs - 0.01);
    expect(total).to.be.at.most(roundTripMs);
    // The overhead is the call's time less the time its function ran.
    expect(overhead).to.be.closeTo(total - executeMs, 0.01);
  });

  it('answers savings only when the router chose among functions', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const routed = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 7, current_price: 12 }, routing_preference: 'cheapest' });
    expect(routed.status).to.equal(200);
    expect(routed.body.savings).to.include({ currency: 'USDC' });
    expect(routed.body.savings.amount).to.match(/^\d+\.\d+$/);
    const pinned = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 7 }, function_id: 'fn_builtin_cost_plus' });
    expect(pinned.status).to.equal(200);
    expect(pinned.body).not.to.have.property('savings');
    const again = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 7, current_price: 12 }, routing_preference: 'cheapest' });
    expect(again.body.trace.cache).to.equal('hit');
    expect(again.body).not.to.have.property('savings');
  });

  it('answers a sandbox naming a marketplace function with 403 plan_restricted (outside its plan), and an unknown one with the same 404 as before', async () => {
    const lister = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'lister'), { name: 'l' })).key });
    const listed = await lister.post<Record<string, any>>('/api/functions', { name: `listed-${Date.now()}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.001', is_public: true });
    expect(listed.status, listed.text).to.equal(201);
    const fn = listed.body.function as { id: string; name: string };
    const sandbox = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'plan-bound')).key });
    // A draft listing is on no marketplace yet: the same 404 as for any unknown id.
    expect((await sandbox.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 10 }, function_id: fn.id })).status).to.equal(404);
    expect((await lister.patch(`/api/functions/${fn.id}`, { status: 'active' })).status).to.equal(200);
    const refusedIds: string[] = [];
    for (const [path, body] of [
      ['/api/compute/price', { context: { unit_cost: 10 }, function_id: fn.id }],
      ['/api/price-router', { context: { unit_cost: 10 }, function_name: fn.name }],
      // Its name in function_id: still the plan that refuses it.
      ['/api/compute/price', { context: { unit_cost: 10 }, function_id: fn.name }],
    ] as const) {
      const res = await sandbox.post<Record<string, any>>(path, body);
      expect(res.status, res.text).to.equal(403);
      refusedIds.push(res.body.request_id as string);
      expect(res.body).to.include({ code: 'plan_restricted', plan: 'agent_starter', reason: 'Agent Starter sandboxes cannot price with marketplace functions. A claimed workspace can.' });
      expect(res.body.next.map((n: { action: string }) => n.action)).to.deep.equal(['claim']);
    }
    // Refused for its plan (a permission) before pricing: no usage event, as docs/routing.md says.
    expect(refusedIds).to.have.length(3);
    const [refusedRows] = await svc.sequelize.query(`SELECT error_code FROM usage_events WHERE request_id = ANY($1::text[])`, { bind: [refusedIds] });
    expect(refusedRows).to.deep.equal([]);
    // Keyless, the same name answers the demo's 404: its event records the code the caller was given.
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/compute/demo', { context: { unit_cost: 10 }, function_id: fn.id });
    expect(demo.status, demo.text).to.equal(404);
    const [demoRows] = await svc.sequelize.query(`SELECT error_code FROM usage_events WHERE request_id = $1`, { bind: [demo.body.request_id] });
    expect(demoRows).to.deep.equal([{ error_code: 'function_not_found' }]);
    const unknown = await sandbox.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 10 }, function_id: 'fn_nowhere' });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error).to.equal('No pricing function with this id or name is available to you.');
    // Its hint names what a sandbox can price with, not the marketplace it cannot use.
    expect(unknown.body.hint).to.equal('A sandbox prices with built-in functions only until a person claims it; GET /api/functions?built_in=true lists them.');
  });

  it('answers a function name sent as function_id with 404 naming the id it meant, and a PATCH of a built-in with 403', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const byName = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 10 }, function_id: 'cost-plus' });
    expect(byName.status, byName.text).to.equal(404);
    expect(byName.body).to.include({ code: 'function_not_found', suggested_function_id: 'fn_builtin_cost_plus' });
    expect(byName.body.error).to.equal('function_id takes a function\'s id, and "cost-plus" is the name of fn_builtin_cost_plus.');
    expect(byName.body.hint).to.include('"function_id": "fn_builtin_cost_plus"').and.include('POST /api/price-router');
    // Followed, the hint works both ways.
    expect((await api.post('/api/compute/price', { context: { unit_cost: 10 }, function_id: 'fn_builtin_cost_plus' })).status).to.equal(200);
    expect((await api.post('/api/price-router', { context: { unit_cost: 10 }, function_name: 'cost-plus' })).status).to.equal(200);
    // A reference with stray spaces names what it names trimmed, as a registered name is trimmed.
    for (const [path, body] of [
      ['/api/price-router', { context: { unit_cost: 10 }, function_name: ' cost-plus\t' }],
      ['/api/compute/price', { context: { unit_cost: 10 }, function_id: ' fn_builtin_cost_plus ' }],
    ] as const) {
      const spaced = await api.post<Record<string, any>>(path, body);
      expect(spaced.status, spaced.text).to.equal(200);
      expect(spaced.body.function).to.include({ id: 'fn_builtin_cost_plus', name: 'cost-plus' });
      expect(spaced.body.strategy).to.equal('explicit');
    }
    // function_name where only an id pins says where it is taken, on a call and on a batch item.
    const named = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 10 }, function_name: 'cost-plus' });
    expect(named.status, named.text).to.equal(400);
    expect(named.body.issues).to.deep.equal([{ path: 'function_name', reason: '"function_name" is taken by POST /api/price-router; here pin a function by its id in function_id (GET /api/functions lists ids)' }]);
    const item = await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { unit_cost: 10 }, function_name: 'cost-plus', colour: 'red' }] });
    expect(item.body.items[0].error.issues).to.deep.equal([
      { path: 'items[0].function_name', reason: '"function_name" is taken by POST /api/price-router; here pin a function by its id in function_id (GET /api/functions lists ids)' },
      { path: 'items[0].colour', reason: 'unknown field "colour" not accepted' },
    ]);
    for (const ref of ['fn_builtin_cost_plus', 'cost-plus']) {
      const patched = await api.patch<Record<string, any>>(`/api/functions/${ref}`, { status: 'inactive' });
      expect(patched.status, patched.text).to.equal(403);
      expect(patched.body).to.include({ code: 'forbidden', reason: 'built-in function' });
    }
  });

  it('answers a missing function and another workspace\'s private function with the identical 404', async () => {
    const other = await signUp(svc, 'other');
    const otherKey = (await createKey(svc, other, { name: 'other' })).key;
    const fn = await client(svc.url, { 'x-api-key': otherKey }).post<Record<string, any>>('/api/functions', { name: `private-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
    const api = client(svc.url, { 'x-api-key': key });
    const hidden = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: fn.body.function.id });
    const missing = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: 'fn_doesnotexist12345678' });
    expect(hidden.status).to.equal(404);
    expect(missing.status).to.equal(404);
    // Each failed call names its own record; nothing else differs.
    expect(hidden.body.usage_event_id).to.be.a('string').and.not.equal(missing.body.usage_event_id);
    const strip = (b: Record<string, unknown>) => ({ ...b, request_id: undefined, usage_event_id: undefined });
    expect(strip(hidden.body)).to.deep.equal(strip(missing.body));
    const byName = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/price-router', { context: { current_price: 1 }, function_name: fn.body.function.name });
    expect(byName.status).to.equal(404);
    expect(strip(byName.body)).to.deep.equal(strip(missing.body));
    // Its name sent as function_id is not recognised as a name either: nothing out of reach is named.
    const nameAsId = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: fn.body.function.name });
    expect(strip(nameAsId.body)).to.deep.equal(strip(missing.body));
  });

  it('suggests the built-in a 404 reference spells another way (cost_plus, CostPlus), in the field it was sent in', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const byName = await api.post<Record<string, any>>('/api/price-router', { context: { unit_cost: 10 }, function_name: 'cost_plus' });
    expect(byName.status, byName.text).to.equal(404);
    expect(byName.body).to.include({ code: 'function_not_found', error: 'No pricing function with this id or name is available to you.', suggested_function_name: 'cost-plus' });
    expect(byName.body.hint).to.match(/^Did you mean the built-in cost-plus\? Send "function_name": "cost-plus"\. GET \/api\/functions lists/);
    const byId = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 10 }, function_id: 'CostPlus' });
    expect(byId.status, byId.text).to.equal(404);
    expect(byId.body).to.include({ suggested_function_id: 'fn_builtin_cost_plus' });
    // Sent as suggested, it prices.
    expect((await api.post('/api/compute/price', { context: { unit_cost: 10 }, function_id: byId.body.suggested_function_id })).status).to.equal(200);
    // Keyless too, with the demo's own hint after the suggestion.
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/compute/demo', { context: { unit_cost: 10 }, function_id: 'cost plus' });
    expect(demo.status, demo.text).to.equal(404);
    expect(demo.body).to.include({ suggested_function_id: 'fn_builtin_cost_plus' });
    expect(demo.body.hint).to.match(/^Did you mean the built-in cost-plus\? Send "function_id": "fn_builtin_cost_plus"\. Without a key the demo/);
    // A name no built-in spells gets no suggestion.
    const none = await api.post<Record<string, any>>('/api/price-router', { context: { unit_cost: 10 }, function_name: 'costplusplus' });
    expect(none.body).to.not.have.property('suggested_function_name');
  });

  it('refuses a draft named explicitly with the activating PATCH, and a deactivated one without it', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const fn = await api.post<Record<string, any>>('/api/functions', { name: `mine-${Date.now()}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.001' });
    expect(fn.status).to.equal(201);
    expect(fn.body.function.status).to.equal('draft');
    const id = fn.body.function.id as string;
    const draft = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: id });
    expect(draft.status).to.equal(409);
    expect(draft.body.code).to.equal('function_draft');
    expect(draft.body.error).to.contain(`PATCH /api/functions/${id}`);
    // A draft was never active: deactivating it is refused (SPEC's states go draft, active, inactive), naming the activating PATCH.
    const deactivateDraft = await api.patch<Record<string, any>>(`/api/functions/${id}`, { status: 'inactive' });
    expect(deactivateDraft.status, deactivateDraft.text).to.equal(409);
    expect(deactivateDraft.body).to.include({ code: 'function_draft', function_id: id, status: 'draft' });
    expect(deactivateDraft.body.error).to.contain(`PATCH /api/functions/${id} {"status":"active"}`);
    // Never the activation as its example: the caller asked to keep it out of use (and a public draft activated is listed).
    expect(deactivateDraft.body).to.not.have.property('example');
    const withChange = await api.patch<Record<string, any>>(`/api/functions/${id}`, { status: 'inactive', description: 'kept private' });
    expect(withChange.status, withChange.text).to.equal(409);
    expect(withChange.body.example).to.deep.equal({ description: 'kept private' });
    expect(withChange.body.hint).to.include('the example is your change without the status, and keeps it a draft');
    // A field the next check would refuse is left out of it too.
    const withBadTimeout = await api.patch<Record<string, any>>(`/api/functions/${id}`, { status: 'inactive', description: 'kept private', cost_per_unit: '99999999' });
    expect(withBadTimeout.status, withBadTimeout.text).to.equal(409);
    expect(withBadTimeout.body.example).to.deep.equal({ description: 'kept private' });
    const sentAsGiven = await api.patch<Record<string, any>>(`/api/functions/${id}`, withChange.body.example);
    expect(sentAsGiven.status, sentAsGiven.text).to.equal(200);
    expect(sentAsGiven.body.function).to.include({ status: 'draft', description: 'kept private' });
    expect((await api.get<Record<string, any>>(`/api/functions/${id}`)).body.function.status).to.equal('draft');
    expect((await api.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    expect((await api.patch(`/api/functions/${id}`, { status: 'inactive' })).status).to.equal(200);
    const inactive = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: id });
    expect(inactive.status).to.equal(409);
    expect(inactive.body.code).to.equal('function_inactive');
    expect(inactive.body.error).not.to.contain('PATCH');
    expect(inactive.body.hint).to.equal('Pick another function, or let your routing choose (omit function_id).');
    // Named through the price router, the hint names the field the caller sent.
    const byName = await api.post<Record<string, any>>('/api/price-router', { context: { current_price: 1 }, function_name: fn.body.function.name });
    expect(byName.status).to.equal(409);
    expect(byName.body.code).to.equal('function_inactive');
    expect(byName.body.hint).to.equal('Pick another function, or let your routing choose (omit function_name).');
  });

  it("answers another workspace's public function its owner deactivated, or a public draft, with the identical 404, whose hint says a withdrawn marketplace function answers it too", async () => {
    const author = await signUp(svc, 'author');
    const authorApi = client(svc.url, { 'x-api-key': (await createKey(svc, author, { name: 'author' })).key });
    const fn = await authorApi.post<Record<string, any>>('/api/functions', { name: `listed-${Date.now()}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.001', is_public: true });
    expect(fn.status, fn.text).to.equal(201);
    const id = fn.body.function.id as string;
    const consumer = client(svc.url, { 'x-api-key': key });
    const missing = await consumer.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: 'fn_doesnotexist12345678' });
    expect(missing.body.hint).to.include('A marketplace function its owner withdrew (deactivated or made private) answers this too.');
    const same = (res: { status: number; body: Record<string, any> }) => {
      expect(res.status).to.equal(404);
      expect({ ...res.body, request_id: undefined, usage_event_id: undefined }).to.deep.equal({ ...missing.body, request_id: undefined, usage_event_id: undefined });
    };
    same(await consumer.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: id }));
    expect((await authorApi.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    expect((await consumer.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: id })).status, 'listed and active: it runs (and fails at its address)').to.not.equal(404);
    expect((await authorApi.patch(`/api/functions/${id}`, { status: 'inactive' })).status).to.equal(200);
    same(await consumer.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: id }));
    const byName = await consumer.post<Record<string, any>>('/api/price-router', { context: { current_price: 1 }, function_name: fn.body.function.name });
    expect(byName.status).to.equal(404);
    expect(byName.body.error).to.equal(missing.body.error);
  });

  it("only lets the owner change a function: others get the identical 404 while it is out of their reach, and 403 naming its owner's right once it is on the marketplace", async () => {
    const other = await signUp(svc, 'intruder');
    const intruder = client(svc.url, { 'x-api-key': (await createKey(svc, other, { name: 'x' })).key });
    const owner = client(svc.url, { 'x-api-key': key });
    const fn = await owner.post<Record<string, any>>('/api/functions', { name: `owned-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001', is_public: true });
    const id = fn.body.function.id as string;
    const missing = await intruder.patch<Record<string, any>>('/api/functions/fn_nonexistent', { status: 'active' });
    expect(missing.status).to.equal(404);
    // A public draft is out of its reach: nothing about it shows.
    const draft = await intruder.patch<Record<string, any>>(`/api/functions/${id}`, { status: 'active' });
    expect(draft.status).to.equal(404);
    expect({ ...draft.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
    // Listed, it is the intruder's to use and read, not to change: a 404 would say it is not there.
    expect((await owner.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    for (const ref of [id, fn.body.function.name as string]) {
      const listed = await intruder.patch<Record<string, any>>(`/api/functions/${ref}`, { description: 'mine now' });
      expect(listed.status, listed.text).to.equal(403);
      expect(listed.body).to.include({ code: 'forbidden', reason: 'function of another workspace', error: `${fn.body.function.name as string} is another workspace's function, listed on the marketplace: only its owner can change it.` });
      expect(listed.body.hint).to.include('POST /api/functions');
    }
    expect((await intruder.post<Record<string, any>>(`/api/functions/${id}/signing-secret`, {})).status).to.equal(403);
    expect((await owner.get<Record<string, any>>(`/api/functions/${id}`)).body.function.description).to.not.equal('mine now');
  });

  it('warns on creating and changing a pipeline function that it cannot run yet; an external_api function carries no such warning', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const fn = await api.post<Record<string, any>>('/api/functions', { name: `pipe-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(fn.status).to.equal(201);
    expect(fn.body.warnings).to.have.length(1);
    expect(fn.body.warnings[0]).to.match(/^Pipeline execution is not available/).and.include('a compute or a test run naming it (function_id, function_name) answers 501 pipeline_execution_unavailable');
    const activated = await api.patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { status: 'active' });
    expect(activated.status).to.equal(200);
    expect(activated.body.warnings).to.deep.equal(fn.body.warnings);
    const ext = await api.post<Record<string, any>>('/api/functions', { name: `ext-${Date.now()}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.001' });
    expect(ext.body).to.not.have.property('warnings');
  });

  it('answers the registration example sent back literally by a second workspace with 409 offering a free name, whose example registers', async () => {
    const first = client(svc.url, { 'x-api-key': key });
    const example = (await first.post<Record<string, any>>('/api/functions', {})).body.example as Record<string, unknown>;
    expect(example.name).to.equal('your-company.dynamic-pricer');
    expect((await first.post('/api/functions', example)).status).to.equal(201);

    const second = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'copier'), { name: 'copy' })).key });
    const taken = await second.post<Record<string, any>>('/api/functions', example);
    expect(taken.status, taken.text).to.equal(409);
    expect(taken.body.code).to.equal('conflict');
    expect(taken.body.error).to.equal('The function name "your-company.dynamic-pricer" is taken; names are unique across the network.');
    expect(taken.body.hint).to.match(/^"your-company\.dynamic-pricer-2" is free right now: example is your request under that name\./);
    expect(taken.body.example).to.deep.equal({ ...example, name: 'your-company.dynamic-pricer-2' });
    const retried = await second.post<Record<string, any>>('/api/functions', taken.body.example);
    expect(retried.status, retried.text).to.equal(201);
    expect(retried.body.function.name).to.equal('your-company.dynamic-pricer-2');
    // A built-in's name is reserved, and so is every variant of it: no free variant is offered.
    const builtIn = await second.post<Record<string, any>>('/api/functions', { name: 'cost-plus', execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(builtIn.status).to.equal(409);
    expect(builtIn.body.code).to.equal('conflict');
    expect(builtIn.body).not.to.have.property('example');
  });

  it('keeps function names unique across the network, built-ins included', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const name = `unique-${Date.now()}`;
    expect((await api.post('/api/functions', { name, execution_type: 'pipeline', cost_per_unit: '0.001' })).status).to.equal(201);
    const dup = await api.post<Record<string, any>>('/api/functions', { name: name.toUpperCase().toLowerCase(), execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(dup.status).to.equal(409);
    expect((await api.post('/api/functions', { name: 'cost-plus', execution_type: 'pipeline', cost_per_unit: '0.001' })).status).to.equal(409);
    // A name shaped like an id could stand in for a built-in's id when callers pass function_name.
    const idLike = await api.post<Record<string, any>>('/api/functions', { name: 'fn_builtin_charm', execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(idLike.status).to.equal(400);
    expect(idLike.body.issues).to.deep.equal([{ path: 'name', reason: 'must not start with "fn_", the prefix of function ids' }]);
  });

  it('refuses a current_price too large to represent as such, not as negative, and a negative policy ceiling as negative', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const huge = await api.raw<Record<string, any>>('POST', '/api/compute/price', { rawBody: '{"context":{"current_price":1e400}}', headers: { 'content-type': 'application/json' } });
    expect(huge.status, huge.text).to.equal(400);
    expect(huge.body.issues).to.deep.equal([{ path: 'context.current_price', reason: 'current_price must be a finite number; this one is too large to represent' }]);
    const negative = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: -1 } });
    expect(negative.body.issues).to.deep.equal([{ path: 'context.current_price', reason: 'current_price must be a non-negative number' }]);
    const ceiling = await api.post<Record<string, any>>('/api/routing-policies', { name: `neg-${Date.now()}`, strategy: 'cheapest', config: { max_cost_per_unit: '-1' } });
    expect(ceiling.status, ceiling.text).to.equal(400);
    expect(ceiling.body.issues).to.deep.equal([{ path: 'config.max_cost_per_unit', reason: 'a non-negative decimal string such as "0.002"' }]);
  });

  it('prices batches: per-item errors inside a 200, at most 100 items', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 10 } }, { context: { product_type: 'tea' } }, { context: { unit_cost: 2 }, function_id: 'fn_missing_function_x' }] });
    expect(res.status).to.equal(200);
    expect(res.body.summary).to.deep.equal({ total: 3, succeeded: 1, failed: 2, replayed: 0 });
    expect(res.body.items[0]).to.include({ index: 0, status: 200 });
    expect(res.body.items[0].result.price).to.equal('10.00');
    expect(res.body.items[1]).to.include({ index: 1, status: 422 });
    expect(res.body.items[1].error.code).to.equal('insufficient_context');
    expect(res.body.items[2].status).to.equal(404);
    // A failed item names its own record (the items share one request id): each event is found by its id, as the
    // priced item's receipt names its own.
    const ids = [res.body.items[0].result.receipt.usage_event_id, res.body.items[1].error.usage_event_id, res.body.items[2].error.usage_event_id] as string[];
    expect(new Set(ids).size).to.equal(3);
    const events = await Promise.all(ids.map((id) => api.get<Record<string, any>>(`/api/usage/events/${id}`)));
    expect(events.map((e) => [e.status, e.body.usage_event?.operation, e.body.usage_event?.status, e.body.usage_event?.error_code ?? null])).to.deep.equal([
      [200, 'batch_item', 'ok', null],
      [200, 'batch_item', 'error', 'insufficient_context'],
      [200, 'batch_item', 'error', 'function_not_found'],
    ]);
    // An item refused before pricing is no call and has no record.
    expect((await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 'x' } }] })).body.items[0].error).to.not.have.property('usage_event_id');
    // An item that fails validation gets its own 400 in its place; the others are priced.
    const mixed = await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 'x' } }, 'not an item', { context: { current_price: 3 } }, { context: { current_price: 4 }, colour: 'red' }] });
    expect(mixed.status).to.equal(200);
    expect(mixed.body.summary).to.deep.equal({ total: 4, succeeded: 1, failed: 3, replayed: 0 });
    expect(mixed.body.items.map((i: { status: number }) => i.status)).to.deep.equal([400, 400, 200, 400]);
    expect(mixed.body.items[0].error).to.include({ code: 'validation_error' });
    expect(mixed.body.items[0].error.issues).to.deep.equal([{ path: 'items[0].context.current_price', reason: 'current_price must be a non-negative number, not a string' }]);
    expect(mixed.body.items[0].error.example).to.deep.equal({ context: { product_type: 'coffee', current_price: 4.5, currency: 'USD' } });
    expect(mixed.body.items[1].error.code).to.equal('validation_error');
    expect(mixed.body.items[2].result.price).to.equal('3.00');
    expect(mixed.body.items[3].error.issues[0].reason).to.match(/unknown field "colour"/);
    // As a single call's example: the item sent without what was refused (a refused context gets the stock one above).
    expect(mixed.body.items[3].error.example).to.deep.equal({ context: { current_price: 4 } });
    const single = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 4 }, colour: 'red' });
    expect(single.body.example).to.deep.equal(mixed.body.items[3].error.example);
    const hundred = await api.post<Record<string, any>>('/api/compute/batch', { items: Array.from({ length: 100 }, (_, i) => ({ context: { current_price: i + 1 } })) });
    expect(hundred.status).to.equal(200);
    expect(hundred.body.summary.succeeded).to.equal(100);
    const tooMany = await api.post<Record<string, any>>('/api/compute/batch', { items: Array.from({ length: 101 }, () => ({ context: { current_price: 1 } })) });
    expect(tooMany.status).to.equal(400);
    expect(tooMany.body.issues[0].path).to.equal('items');
    expect(tooMany.body.example).to.have.property('items');
  });

  it('names a batch item that fails validation (items[i]) in its error\'s message and issue paths', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 5 } }, null, { context: { current_price: -2 } }, { context: { unit_cost: 2 }, routing_preference: 'explicit' }] });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.items.map((i: { status: number }) => i.status)).to.deep.equal([200, 400, 400, 400]);
    // Refused past the schema (explicit without a function): named the same way.
    expect(res.body.items[3].error.error).to.match(/^items\[3\]: routing_preference "explicit" needs function_id/);
    expect(res.body.items[3].error.issues).to.deep.equal([{ path: 'items[3].function_id', reason: 'required when routing_preference is "explicit"' }]);
    expect(res.body.items[1].error).to.include({ code: 'validation_error', error: 'Request body failed validation (items[1]: must be an object, not null).' });
    expect(res.body.items[1].error.issues).to.deep.equal([{ path: 'items[1]', reason: 'must be an object, not null' }]);
    expect(res.body.items[1].error.hint).to.equal('Fix the fields listed in issues; example shows a batch item that passes.');
    expect(res.body.items[1].error.example).to.deep.equal({ context: { product_type: 'coffee', current_price: 4.5, currency: 'USD' } });
    expect(res.body.items[2].error.error).to.equal('Request body failed validation (items[2].context.current_price: current_price must be a non-negative number).');
    expect(res.body.items[2].error.issues).to.deep.equal([{ path: 'items[2].context.current_price', reason: 'current_price must be a non-negative number' }]);
  });

  it('tells a key without price:compute that people create keys, not to create one itself (POST /api/api-keys refuses keys)', async () => {
    const scoped = await client(svc.url, { cookie: personCookie }).post<Record<string, any>>('/api/api-keys', { name: 'billing only', scopes: ['billing:read'] });
    expect(scoped.status, scoped.text).to.equal(201);
    const res = await client(svc.url, { 'x-api-key': scoped.body.api_key.key as string }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 3 } });
    expect(res.status, res.text).to.equal(403);
    expect(res.body.code).to.equal('insufficient_scope');
    expect(res.body.hint).to.equal('Use a key with this scope, or one created with no scopes: a person of the workspace creates it (POST /api/api-keys, with their session or person token).');
    // As the hint says: the key itself is refused there.
    expect((await client(svc.url, { 'x-api-key': scoped.body.api_key.key as string }).post('/api/api-keys', { name: 'wider' })).status).to.be.oneOf([401, 403]);
  });

  it('answers a body over the limit 413 with the limit in bytes, and tells only a batch to split its items', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const big = 'x'.repeat(1_100_000);
    const batch = await api.raw<Record<string, any>>('POST', '/api/compute/batch', { rawBody: JSON.stringify({ items: [{ context: { note: big } }] }), headers: { 'content-type': 'application/json' } });
    expect(batch.status, batch.text).to.equal(413);
    expect(batch.body.hint).to.match(/^Send at most \d+ bytes\. Split the items into several batches\.$/);
    const single = await api.raw<Record<string, any>>('POST', '/api/compute/price', { rawBody: JSON.stringify({ context: { note: big } }), headers: { 'content-type': 'application/json' } });
    expect(single.status, single.text).to.equal(413);
    expect(single.body.hint).to.match(/^Send at most \d+ bytes\.$/);
    expect(single.body.limit).to.deep.equal(batch.body.limit);
  });

  it("names the item in the issue paths of any refusal of a batch item, a 422 refusing a value too, as a single call's paths name its body", async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const single = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 1e300 } });
    expect(single.status, single.text).to.equal(422);
    const paths = (single.body.issues as Array<{ path: string }>).map((i) => i.path);
    expect(paths, single.text).to.include('context.current_price');
    const batch = await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 5 } }, { context: { current_price: 1e300 } }] });
    expect(batch.status, batch.text).to.equal(200);
    const item = batch.body.items[1];
    expect(item.status).to.equal(422);
    expect(item.error.code).to.equal(single.body.code);
    expect(item.error.issues.map((i: { path: string }) => i.path)).to.deep.equal(paths.map((p) => `items[1].${p}`));
    expect(item.error.error, 'a 422 message is the single call\'s').to.equal(single.body.error);
  });

  it('refuses batch pricing to an unclaimed agent workspace with 403 and a reason', async () => {
    const sandbox = await registerSandbox(svc, 'batcher');
    const res = await client(svc.url).post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 1 } }] }, { 'x-api-key': sandbox.key });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('plan_restricted');
    // The reason says what lifts the refusal (SPEC: batch needs a claimed workspace).
    expect(res.body.reason).to.equal('Agent Starter sandboxes cannot use POST /api/compute/batch. A claimed workspace can.');
    // The refusal reads as one: the route's summary (which describes a batch that worked) is labelled in the hint, not pasted in the message.
    expect(res.body.error).to.equal('The Agent Starter sandbox is refused POST /api/compute/batch (open to claimed workspaces only); nothing was done.');
    expect(res.body.hint).to.match(/^What POST \/api\/compute\/batch does, for a claimed workspace: price up to 100 items, .+\. Sandbox keys compute with built-in functions/);
    // Its claim step reads as the quota's steps do: available, or not.
    expect(res.body.next).to.have.length(1);
    expect(res.body.next[0]).to.include({ action: 'claim', method: 'POST', path: '/api/agents/claim', available: true });
  });

  it('resolves function_name on the price router and answers invalid JSON with invalid_json', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const ok = await api.post<Record<string, any>>('/api/price-router', { context: { unit_cost: 10, target_margin: 0.5 }, function_name: 'cost-plus' });
    expect(ok.status).to.equal(200);
    expect(ok.body.price).to.equal('20.00');
    expect(ok.body.strategy).to.equal('explicit');
    const bad = await api.raw<Record<string, any>>('POST', '/api/price-router', { rawBody: '{"context":', headers: { 'content-type': 'application/json' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.code).to.equal('invalid_json');
    expect(bad.body.example).to.have.property('context');
  });

  it("answers an id sent as function_name with 404 naming the function's name (suggested_function_name); an id out of reach gets the plain 404", async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/price-router', { context: { unit_cost: 10 }, function_name: 'fn_builtin_cost_plus' });
    expect(res.status, res.text).to.equal(404);
    expect(res.body).to.include({ code: 'function_not_found', suggested_function_name: 'cost-plus', error: 'function_name takes a function\'s name, and "fn_builtin_cost_plus" is the id of cost-plus.' });
    expect(res.body.hint).to.equal('Send "function_name": "cost-plus", or the id as function_id.');
    const missing = await api.post<Record<string, any>>('/api/price-router', { context: { unit_cost: 10 }, function_name: 'fn_doesnotexist12345678' });
    expect(missing.status).to.equal(404);
    expect(missing.body).to.not.have.property('suggested_function_name');
    expect(missing.body.error).to.equal('No pricing function with this id or name is available to you.');
  });

  it('refuses routing_preference explicit without a function as a validation failure with issues, hint and example', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    for (const path of ['/api/compute/price', '/api/price-router']) {
      const res = await api.post<Record<string, any>>(path, { context: { current_price: 10 }, routing_preference: 'explicit' });
      expect(res.status, path).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues).to.deep.equal([{ path: 'function_id', reason: 'required when routing_preference is "explicit"' }]);
      expect(res.body.hint).to.match(/GET \/api\/functions/);
      expect(res.body.example).to.include({ routing_preference: 'explicit' });
    }
  });

  it("makes a refused call's example of what it sent: the caller's context pinned to a built-in that prices it, a refused field left out; sent as is, it prices", async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const context = { unit_cost: 7, currency: 'EUR', product_type: 'tea' };
    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
      // explicit without a function: the context's own input picks the built-in (unit_cost: cost-plus).
      ['/api/compute/price', { context, routing_preference: 'explicit' }, { context, function_id: 'fn_builtin_cost_plus', routing_preference: 'explicit' }],
      // a pinned function with another preference: the preference is left out.
      ['/api/compute/price', { context, function_id: 'fn_builtin_cost_plus', routing_preference: 'cheapest' }, { context, function_id: 'fn_builtin_cost_plus' }],
      ['/api/price-router', { context, function_name: 'cost-plus', routing_preference: 'fastest' }, { context, function_name: 'cost-plus' }],
      // both pins: function_name is refused, the function_id sent is the pin kept.
      ['/api/price-router', { context, function_name: 'cost-plus', function_id: 'fn_builtin_charm' }, { context, function_id: 'fn_builtin_charm' }],
      // an unknown field is left out, the rest kept.
      ['/api/compute/price', { context, routing: 'cheapest' }, { context }],
      // a built-in's name where compute takes only an id: its id, the pin kept.
      ['/api/compute/price', { context, function_name: 'charm-pricing' }, { context, function_id: 'fn_builtin_charm' }],
      // a refused context value is left out alone, the rest of the context kept.
      ['/api/compute/price', { context: { ...context, current_price: '12' } }, { context }],
      // explicit: the first built-in that can price the context, not merely one whose input is present (an empty list prices nothing).
      ['/api/compute/price', { context: { ...context, competitor_prices: [] }, routing_preference: 'explicit' }, { context: { ...context, competitor_prices: [] }, function_id: 'fn_builtin_cost_plus', routing_preference: 'explicit' }],
    ];
    for (const [path, sent, example] of cases) {
      const res = await api.post<Record<string, any>>(path, sent);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.example, JSON.stringify(sent)).to.deep.equal(example);
      const again = await api.post<Record<string, any>>(path, res.body.example);
      expect(again.status, again.text).to.equal(200);
      expect(again.body.currency).to.equal('EUR');
    }
    // A pin that cannot be kept (not an id, an unknown name) gets the route's own example, never an unpinned copy of the call.
    for (const sent of [{ context, function_id: 123, routing_preference: 'explicit' }, { context, function_name: 'someone-elses-fn' }]) {
      const res = await api.post<Record<string, any>>('/api/compute/price', sent);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.example, JSON.stringify(sent)).to.not.deep.include({ context });
      expect((await api.post<Record<string, any>>('/api/compute/price', res.body.example)).status).to.equal(200);
    }
  });

  it("completes a refused call's example from the route's example when what is left of the caller's context cannot be priced; sent as is, it prices", async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const example = { product_type: 'coffee', currency: 'USD', current_price: 4.5, unit_cost: 1.2, target_margin: 0.65 };
    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
      // the refused current_price was all there was to price from: the example's context, no empty one.
      ['/api/compute/price', { context: { current_price: -5 }, routing_preference: 'fancy' }, { context: example }],
      ['/api/compute/price', { context: { current_price: 'abc' } }, { context: example }],
      // what the caller sent and was valid stays as sent, over the example's.
      ['/api/compute/price', { context: { current_price: -5, product_type: 'tea', currency: 'EUR' } }, { context: { ...example, product_type: 'tea', currency: 'EUR' } }],
      // pinned to a built-in: that built-in's own example under the caller's fields.
      ['/api/price-router', { context: { current_price: -5, currency: 'EUR' }, function_name: 'anchored-adjustment' }, { context: { current_price: 10, target_price: 11, currency: 'EUR' }, function_name: 'anchored-adjustment' }],
    ];
    for (const [path, sent, expected] of cases) {
      const res = await api.post<Record<string, any>>(path, sent);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.example, JSON.stringify(sent)).to.deep.equal(expected);
      const again = await api.post<Record<string, any>>(path, res.body.example);
      expect(again.status, `${JSON.stringify(res.body.example)}: ${again.text}`).to.equal(200);
    }
  });

  it("never adds pricing inputs to a context the refusal kept whole: the example is the call as sent without the refused field, and it answers 422 naming what is missing, not a price built on made-up inputs", async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
      ['/api/price-router', { context: { current_price: 3 }, function_name: 'cost-plus', verify: true }, { context: { current_price: 3 }, function_name: 'cost-plus' }],
      ['/api/compute/price', { context: { current_price: 3 }, function_name: 'cost-plus' }, { context: { current_price: 3 }, function_id: 'fn_builtin_cost_plus' }],
      ['/api/compute/price', { context: { product_type: 'nothing-known' }, routing_preference: 'fancy' }, { context: { product_type: 'nothing-known' } }],
    ];
    for (const [path, sent, expected] of cases) {
      const res = await api.post<Record<string, any>>(path, sent);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.example, JSON.stringify(sent)).to.deep.equal(expected);
      const again = await api.post<Record<string, any>>(path, res.body.example);
      expect(again.status, `${JSON.stringify(res.body.example)}: ${again.text}`).to.equal(422);
      expect(again.body.code).to.equal('insufficient_context');
    }
  });

  it('lists functions with a built-in filter and rejects an unknown filter value', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const builtIns = await api.get<Record<string, any>>('/api/functions?built_in=true');
    expect(builtIns.status).to.equal(200);
    expect(builtIns.body.data.length).to.be.at.least(5);
    expect((builtIns.body.data as Array<{ built_in: boolean; label: string }>).every((f) => f.built_in && f.label === 'built-in')).to.equal(true);
    const own = await api.get<Record<string, any>>('/api/functions?built_in=false');
    expect((own.body.data as Array<{ built_in: boolean }>).every((f) => !f.built_in)).to.equal(true);
    const bad = await api.get<Record<string, any>>('/api/functions?built_in=maybe');
    expect(bad.status).to.equal(400);
    expect(bad.body.issues[0].path).to.equal('built_in');
    // A misspelt filter is refused naming the one meant, rather than ignored (the unfiltered list taken for the filtered one).
    const misspelt = await api.get<Record<string, any>>('/api/functions?builtin=true');
    expect(misspelt.status, misspelt.text).to.equal(400);
    expect(misspelt.body.code).to.equal('validation_error');
    expect(misspelt.body.issues).to.have.length(1);
    expect(misspelt.body.issues[0].path).to.equal('builtin');
    expect(misspelt.body.issues[0].reason).to.match(/^unknown query parameter; did you mean "built_in"\? \(accepted: .*built_in/);
    expect(misspelt.body.hint).to.match(/^Correct or remove the query parameters listed in issues/);
  });

  it('pages the function list by cursor without skipping or repeating a function, whatever punctuation the names hold', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    // Locale order and code-point order disagree on these ("pg_b" sorts first by locale, after "pg1b" by code point).
    const names = ['pg_b', 'pg-b', 'pg.b', 'pg0', 'pg1b', 'pgb', 'pg_c'];
    for (const name of names) expect((await api.post('/api/functions', { name, execution_type: 'pipeline', cost_per_unit: '0.001' })).status, name).to.equal(201);
    const whole = await api.get<Record<string, any>>('/api/functions?limit=100');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: Record<string, any> } = await api.get<Record<string, any>>(`/api/functions?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).to.equal(200);
      expect(page.body.data.length).to.be.at.most(2);
      seen.push(...(page.body.data as Array<{ name: string }>).map((f) => f.name));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    expect(seen).to.deep.equal((whole.body.data as Array<{ name: string }>).map((f) => f.name));
    expect(seen).to.include.members(names);
    expect(new Set(seen).size).to.equal(seen.length);
  });

  it('tests built-in and own functions, and refuses another workspace\'s private or unlisted function with one 403 that does not tell which', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const builtIn = await api.post<Record<string, any>>('/api/functions/fn_builtin_charm/test', { context: { target_price: 20.2 } });
    expect(builtIn.status).to.equal(200);
    expect(builtIn.body.result.price).to.equal('19.99');
    // A refused value is named as a compute names it: refused, not missing.
    const refusedValue = await api.post<Record<string, any>>('/api/functions/fn_builtin_cost_plus/test', { context: { unit_cost: -10 } });
    expect(refusedValue.status).to.equal(200);
    expect(refusedValue.body).to.include({ ok: false, error: 'unit_cost must not be negative (got -10).' });
    expect(refusedValue.body.refused).to.deep.equal(['unit_cost']);
    expect(refusedValue.body).to.not.have.property('missing');
    const missingInput = await api.post<Record<string, any>>('/api/functions/fn_builtin_cost_plus/test', { context: { current_price: 10 } });
    expect(missingInput.body.missing).to.deep.equal(['unit_cost']);
    // A run that could not price offers a body the built-in prices; sent as is, it does.
    for (const id of ['fn_builtin_cost_plus', 'fn_builtin_competitive', 'fn_builtin_elasticity', 'fn_builtin_charm', 'fn_builtin_anchored']) {
      const failed = await api.post<Record<string, any>>(`/api/functions/${id}/test`, { context: { nothing: true } });
      expect(failed.body.ok, id).to.equal(false);
      const followed = await api.post<Record<string, any>>(`/api/functions/${id}/test`, failed.body.example);
      expect(followed.body.ok, `${id}: ${followed.text}`).to.equal(true);
      // The example of a body refused before the run (not JSON) prices too.
      const invalid = await api.raw<Record<string, any>>('POST', `/api/functions/${id}/test`, { rawBody: '{x', headers: { 'content-type': 'application/json' } });
      expect(invalid.status, id).to.equal(400);
      const sentBack = await api.post<Record<string, any>>(`/api/functions/${id}/test`, invalid.body.example);
      expect(sentBack.body.ok, `${id}: ${sentBack.text}`).to.equal(true);
    }
    const other = await signUp(svc, 'secretive');
    const otherKey = (await createKey(svc, other, { name: 'x' })).key;
    const fn = await client(svc.url, { 'x-api-key': otherKey }).post<Record<string, any>>('/api/functions', { name: `secret-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
    const refused = await api.post<Record<string, any>>(`/api/functions/${fn.body.function.id}/test`, { context: { current_price: 1 } });
    expect(refused.status).to.equal(403);
    expect(refused.body).to.include({ code: 'forbidden', reason: 'function of another workspace not on the marketplace' });
    // A public one its owner has not activated is refused with the very same body: neither its listing flag nor its status shows.
    const draft = await client(svc.url, { 'x-api-key': otherKey }).post<Record<string, any>>('/api/functions', { name: `public-draft-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001', is_public: true });
    const unlisted = await api.post<Record<string, any>>(`/api/functions/${draft.body.function.id}/test`, { context: { current_price: 1 } });
    expect(unlisted.status).to.equal(403);
    const strip = (b: Record<string, unknown>) => ({ ...b, request_id: undefined });
    expect(strip(unlisted.body)).to.deep.equal(strip(refused.body));
    expect(JSON.stringify(unlisted.body)).to.not.match(/draft|inactive/);
    expect((await api.post(`/api/functions/fn_nope_nope_nope/test`, { context: {} })).status).to.equal(404);
  });

  it('lists reference pipelines but answers 501 to running one, after checking credentials', async () => {
    const api = client(svc.url);
    const list = await api.get<Record<string, any>>('/api/pipelines', { 'x-api-key': key });
    expect(list.status).to.equal(200);
    expect(list.body.data.length).to.be.greaterThan(0);
    expect((await api.get('/api/pipelines/stages', { 'x-api-key': key })).status).to.equal(200);
    // Paged as every list is: limit and cursor walk the whole list in order; an unknown parameter is refused.
    for (const path of ['/api/pipelines', '/api/pipelines/stages']) {
      const whole = (await api.get<Record<string, any>>(path, { 'x-api-key': key })).body.data as unknown[];
      const walked: unknown[] = [];
      let cursor: string | null = null;
      do {
        const page: { status: number; body: Record<string, any> } = await api.get<Record<string, any>>(`${path}?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { 'x-api-key': key });
        expect(page.status).to.equal(200);
        expect(page.body.limit).to.equal(1);
        expect(page.body.data).to.have.length(1);
        walked.push(...(page.body.data as unknown[]));
        cursor = page.body.next_cursor as string | null;
      } while (cursor);
      expect(walked, path).to.deep.equal(whole);
      const unknown = await api.get<Record<string, any>>(`${path}?foo=1`, { 'x-api-key': key });
      expect(unknown.status).to.equal(400);
      expect(unknown.body.issues[0]).to.include({ path: 'foo' });
    }
    const run = await api.post<Record<string, any>>('/api/pipelines/pl_cost_to_shelf/run', {}, { 'x-api-key': key });
    expect(run.status).to.equal(501);
    expect(run.body.code).to.equal('pipeline_execution_unavailable');
    expect((await api.post('/api/pipelines/pl_cost_to_shelf/run', {})).status).to.equal(401);
    const pub = await api.post<Record<string, any>>('/api/public/pipelines/pl_cost_to_shelf/run', {});
    expect(pub.status).to.equal(501);
    expect(pub.body.code).to.equal('pipeline_execution_unavailable');
    // The keyless caller is pointed at what it can open without a key; the keyed one at the listing it can read.
    expect(run.body.hint).to.match(/^Reference pipelines and their stages can be listed \(GET \/api\/pipelines/);
    expect(pub.body.hint).to.match(/^With a key, reference pipelines/).and.include('POST /api/public/compute/demo').and.include('GET /api/catalog');
    expect((await api.get('/api/catalog')).status).to.equal(200);
    // SPEC: always 501, whatever the id, and whatever body comes along.
    for (const id of ['x', 'no-such-pipeline', 'a'.repeat(300)]) {
      expect((await api.post<Record<string, any>>(`/api/pipelines/${id}/run`, { anything: true }, { 'x-api-key': key })).body.code, id).to.equal('pipeline_execution_unavailable');
      expect((await api.post<Record<string, any>>(`/api/public/pipelines/${id}/run`, { anything: true })).status, id).to.equal(501);
    }
  });

  it('names to a keyless caller who names an unknown function the built-ins the demo reaches, not GET /api/functions (401 without a key) nor the catalogue (marketplace functions too)', async () => {
    const api = client(svc.url);
    const demo = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 1 }, function_id: 'fn_doesnotexist12345678' });
    expect(demo.status, demo.text).to.equal(404);
    expect(demo.body.code).to.equal('function_not_found');
    expect(demo.body.hint).to.include('anchored-adjustment (fn_builtin_anchored)').and.not.include('GET /api/functions').and.not.include('GET /api/catalog');
    // A sandbox key would not reach marketplace functions either: the way there is a claimed workspace's key.
    expect(demo.body.hint).to.include('claimed workspace').and.include('POST /api/auth/signup');
    expect((await api.get('/api/functions')).status).to.equal(401);
    const catalogue = await api.get<Record<string, any>>('/api/catalog');
    expect(catalogue.status).to.equal(200);
    expect((catalogue.body.data as Array<{ name: string }>).map((f) => f.name)).to.include('anchored-adjustment');
    const explicit = await api.post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 1 }, routing_preference: 'explicit' });
    expect(explicit.status, explicit.text).to.equal(400);
    expect(explicit.body.hint).to.include('the demo reaches fn_builtin_cost_plus, ').and.include('let the demo choose');
    // With a key the same mistake names the caller's own listing.
    const keyed = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 1 }, function_id: 'fn_doesnotexist12345678' });
    expect(keyed.body.hint).to.include('GET /api/functions');
  });

  it('writes no usage event for routing_preference "explicit" without a function: a 400 is refused before pricing', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 2 }, routing_preference: 'explicit' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body).to.include({ code: 'validation_error' });
    const batch = await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: { unit_cost: 2 }, routing_preference: 'explicit' }] });
    expect(batch.body.items[0].error.code).to.equal('validation_error');
    const [rows] = await svc.sequelize.query(`SELECT id FROM usage_events WHERE request_id = ANY($1::text[])`, { bind: [[res.body.request_id, batch.body.request_id]] });
    expect(rows).to.deep.equal([]);
  });

  it('records a usage event for every successful call, with the receipt id', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 100 + i } });
      ids.push(r.body.receipt.usage_event_id as string);
    }
    const [rows] = await svc.sequelize.query(`SELECT id, status, channel, classification, cost, billable, paid_via FROM usage_events WHERE id = ANY($1::text[])`, { bind: [ids] });
    expect(rows).to.have.length(5);
    for (const r of rows as Array<Record<string, unknown>>) expect(r).to.include({ status: 'ok', channel: 'api', classification: 'mine', billable: true, paid_via: null });
    void personCookie;
  });
});
