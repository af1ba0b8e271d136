import { expect } from 'chai';
import type { CircuitBreakers } from '../../../engine';
import { PRICING } from '../../../plugins/pricing';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { buildWorld } from '../../support/world';
import type { World } from '../../support/world';

type Api = ReturnType<typeof client>;
type Body = Record<string, any>;

/**
 * Long enough that the breaker the test opens is still open when it asks for the 422, after a dozen requests on a busy
 * 2-core CI machine (at 100 ms it had turned half-open first, and the call was answered); short enough to wait out.
 */
const COOLDOWN_MS = 2500;

describe('pricing: compute routed by the default policy (HTTP)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let world: World;
  let a: Api;

  before(async () => {
    svc = await startTestService({ config: { engine: { threads: 1, breakerCooldownMs: COOLDOWN_MS, breakerMinCalls: 3 } } });
    world = await buildWorld(svc);
    a = client(svc.url, { 'x-api-key': world.a.key });
  });
  after(() => svc.close());

  const compute = async (body: Body, api: Api = a) => {
    const res = await api.post<Body>('/api/compute/price', body);
    return res;
  };
  const ok = async (body: Body, api: Api = a) => {
    const res = await compute(body, api);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };
  const route = (body: Body) => (body.trace.stages as Body[]).find((s) => s.stage === 'route') as Body;
  const makeDefault = async (policy: Body, api: Api = a) => {
    const res = await api.post<Body>('/api/routing-policies', { is_default: true, ...policy });
    expect(res.status, res.text).to.equal(201);
    return res.body.policy.id as string;
  };

  it('without a policy a context with only current_price gets a price (echoed, low confidence)', async () => {
    const body = await ok({ context: { product_type: 'coffee', currency: 'USD', current_price: 4.5 } }, client(svc.url, { 'x-api-key': world.b.key }));
    expect(body).to.include({ price: '4.50', confidence: 0.15, strategy: 'default' });
    expect(body.function.name).to.equal('anchored-adjustment');
    expect(route(body)).to.include({ strategy: 'default', policy_id: null });
  });

  it('the default policy routes by its rules: the trace names the strategy, the policy, the rule and every candidate', async () => {
    const id = await makeDefault({
      name: 'tiers',
      strategy: 'policy',
      config: { rules: [{ when: { 'customer.tier': 'gold', 'items.0.sku': { starts_with: 'C-' } }, use: 'charm-pricing' }], default_function: 'cost-plus' },
    });
    const gold = await ok({ context: { unit_cost: 10, target_price: 20.1, customer: { tier: 'gold' }, items: [{ sku: 'C-1' }] } });
    expect(gold.function.name).to.equal('charm-pricing');
    expect(gold.price).to.equal('19.99');
    expect(gold.strategy).to.equal('policy');
    expect(route(gold)).to.deep.include({ strategy: 'policy', policy_id: id });
    expect(route(gold).rule).to.deep.include({ index: 0, use: 'charm-pricing' });
    expect(route(gold).candidates.map((c: Body) => [c.function, c.kept, c.reason ?? null])).to.deep.equal([
      ['charm-pricing', true, null],
      ['cost-plus', false, 'rule miss'],
    ]);
    expect(gold.savings).to.equal(undefined);

    const silver = await ok({ context: { unit_cost: 10, target_price: 20.1, customer: { tier: 'silver' }, items: [{ sku: 'C-1' }] } });
    expect(silver.function.name).to.equal('cost-plus');
    expect(route(silver).rule).to.deep.equal({ index: -1, default_function: 'cost-plus' });
  });

  it('a cheapest default policy: savings against the dearest eligible function; a cached answer has none', async () => {
    await makeDefault({ name: 'cheap', strategy: 'cheapest', config: { candidates: ['cost-plus', 'elasticity-optimum'] } });
    const context = { unit_cost: 10, elasticity: 2, note: 'savings' };
    const first = await ok({ context });
    expect(first.function.name).to.equal('cost-plus');
    expect(first.trace.cache).to.equal('miss');
    expect(first.savings).to.deep.equal({ amount: '0.001', currency: 'USDC', compared_with: { function: 'elasticity-optimum', cost_per_unit: '0.002' }, chosen_cost_per_unit: '0.001' });
    const again = await ok({ context: { note: 'savings', elasticity: 2, unit_cost: 10 } });
    expect(again.trace.cache).to.equal('hit');
    expect(again.savings).to.equal(undefined);
    const pinned = await ok({ context, function_id: 'fn_builtin_elasticity' });
    expect(pinned.strategy).to.equal('explicit');
    expect(pinned.savings).to.equal(undefined);
  });

  it('routing_preference replaces the strategy and keeps the policy: round_robin cycles over its candidates', async () => {
    const id = await makeDefault({ name: 'rr', strategy: 'cheapest', config: { candidates: ['cost-plus', 'elasticity-optimum'] } });
    const names: string[] = [];
    for (let i = 0; i < 4; i++) {
      const body = await ok({ context: { unit_cost: 10, elasticity: 2 }, routing_preference: 'round_robin' });
      expect(route(body)).to.include({ strategy: 'round_robin', policy_id: id });
      names.push(body.function.name);
    }
    // The cycle follows function ids: fn_builtin_cost_plus, then fn_builtin_elasticity.
    expect(names).to.deep.equal(['cost-plus', 'elasticity-optimum', 'cost-plus', 'elasticity-optimum']);
  });

  it('ceilings that exclude every candidate: 422 no_eligible_function listing each candidate and its reason', async () => {
    const policyId = await makeDefault({ name: 'too tight', strategy: 'cheapest', fallback_function: 'cost-plus', config: { candidates: ['cost-plus', 'elasticity-optimum', 'fn_nowhere'], max_cost_per_unit: '0.0005' } });
    const res = await compute({ context: { unit_cost: 10, elasticity: 2 } });
    expect(res.status).to.equal(422);
    expect(res.body.code).to.equal('no_eligible_function');
    expect(res.body.policy_id).to.equal(policyId);
    expect(res.body.hint).to.include(`PATCH /api/routing-policies/${policyId}`);
    expect(res.body.candidates.map((c: Body) => [c.function, c.reason])).to.deep.equal([
      ['cost-plus', 'cost ceiling'],
      ['elasticity-optimum', 'cost ceiling'],
      ['fn_nowhere', 'unreachable'],
    ]);
  });

  it('a policy naming a pipeline function warns on save that routing skips it, and the 422 of a call left with it alone names it as a pipeline function', async () => {
    const name = `walk-pipe-${Date.now()}`;
    const fn = await a.post<Body>('/api/functions', { name, execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(fn.status, fn.text).to.equal(201);
    expect(fn.body.warnings[0]).to.include('a routing policy naming it skips it (candidate reason "pipeline unavailable"; a call the policy leaves with no other function answers 422 no_eligible_function)');
    expect((await a.patch(`/api/functions/${fn.body.function.id as string}`, { status: 'active' })).status).to.equal(200);
    const made = await a.post<Body>('/api/routing-policies', { name: 'pipe only', strategy: 'cheapest', is_default: true, config: { candidates: [name] } });
    expect(made.status, made.text).to.equal(201);
    expect(made.body.policy.warnings).to.deep.equal([
      `These are pipeline functions, which cannot run yet (pipeline execution is not available): routing skips them (candidate reason "pipeline unavailable"), and a call left with no other function answers 422 no_eligible_function. Name an external_api or built-in function instead: ${name}.`,
    ]);
    const res = await compute({ context: { unit_cost: 10 } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.candidates.map((c: Body) => [c.function, c.reason])).to.deep.equal([[name, 'pipeline unavailable']]);
    expect(res.body.hint).to.include(`PATCH /api/routing-policies/${made.body.policy.id as string}: replace the pipeline functions, which cannot run yet`).and.not.include('out of reach or not active');
  });

  it('a policy whose rules send the context nowhere: the 422 says no rule matched and offers a rule, not the ceiling another function is over', async () => {
    const policyId = await makeDefault({ name: 'gold only', strategy: 'policy', config: { rules: [{ when: { tier: 'gold' }, use: 'elasticity-optimum' }], max_cost_per_unit: '0.001' } });
    const res = await compute({ context: { unit_cost: 2 } });
    expect(res.status, res.text).to.equal(422);
    expect([res.body.code, res.body.policy_id, res.body.error]).to.deep.equal(['no_eligible_function', policyId, 'No rule matched the context and the policy has no default_function.']);
    expect(res.body.hint).to.include(`PATCH /api/routing-policies/${policyId}: add a rule or a default_function for this context`).and.not.include('max_cost_per_unit');
    // The context a rule sends to that function: its ceiling is the lever.
    const gold = await compute({ context: { unit_cost: 2, tier: 'gold' } });
    expect(gold.status, gold.text).to.equal(422);
    expect(gold.body.error).to.match(/^Rule 0 matched, but its function elasticity-optimum is not eligible \(cost ceiling\)/);
    expect(gold.body.hint).to.include(`PATCH /api/routing-policies/${policyId}: raise max_cost_per_unit`).and.not.include('add a rule');
  });

  it("under policy, a function no rule sends the context to is no lever though it is over a ceiling: the 422 asks for inputs, not a higher ceiling", async () => {
    const policyId = await makeDefault({ name: 'gold to market', strategy: 'policy', config: { rules: [{ when: { tier: 'gold' }, use: 'competitive-position' }], default_function: 'anchored-adjustment', max_cost_per_unit: '0.001' } });
    const res = await compute({ context: { competitor_prices: [10, 11, 12] } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.code).to.equal('insufficient_context');
    // The trace's candidates still say what is true of the other function.
    expect(res.body.attempts.map((x: Body) => `${x.function}:${x.outcome}`)).to.deep.equal(['anchored-adjustment:not_applicable']);
    expect(res.body, 'raising the ceiling would not send this context to competitive-position').to.not.have.property('excluded_by_policy');
    expect(res.body.hint).to.not.include('max_cost_per_unit').and.not.include(policyId);
    expect(res.body.missing).to.include('current_price');
  });

  it('a ceiling that left out the only functions able to price the context: the 422 names them and the policy, not only the missing inputs', async () => {
    const policyId = await makeDefault({ name: 'budget', strategy: 'cheapest', config: { candidates: ['charm-pricing', 'cost-plus', 'competitive-position'], max_cost_per_unit: '0.001' } });
    const res = await compute({ context: { competitor_prices: [10, 11, 12] } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.code).to.equal('insufficient_context');
    expect((res.body.attempts as Body[]).map((x) => `${x.function}:${x.outcome}`)).to.deep.equal(['charm-pricing:not_applicable', 'cost-plus:not_applicable']);
    expect(res.body.excluded_by_policy).to.have.length(1);
    expect(res.body.excluded_by_policy[0]).to.include({ function: 'competitive-position', id: 'fn_builtin_competitive', kept: false, reason: 'cost ceiling', detail: '0.0015 > 0.001' });
    expect(res.body.hint).to.equal(
      `Your routing policy left out a function that could price this context: competitive-position (cost ceiling: 0.0015 > 0.001). Loosen the policy (PATCH /api/routing-policies/${policyId}: its max_cost_per_unit, max_latency_ms, rules or weights), name one with function_id, or add the inputs the functions tried need (missing).`,
    );
    // A context none of the left-out functions could price either keeps the plain answer: inputs are what is missing.
    const plain = await compute({ context: { product_type: 'no-such-product' } });
    expect(plain.status, plain.text).to.equal(422);
    expect(plain.body).to.not.have.property('excluded_by_policy');
    expect(plain.body.hint).to.match(/^Add .* to the context: the functions your default routing policy let run need them/);
    expect(plain.body).to.not.have.property('example');
  });

  it('a pinned function is the caller\'s choice and runs above the ceiling; a fallback held back by the ceiling that could have priced the context is named in excluded_by_policy', async () => {
    const policyId = await makeDefault({ name: 'pinned under a ceiling', strategy: 'cheapest', fallback_chain: ['elasticity-optimum'], config: { max_cost_per_unit: '0.0012' } });
    const pinned = await ok({ context: { competitor_prices: [10, 11] }, function_id: 'fn_builtin_competitive' });
    expect(pinned.function.name).to.equal('competitive-position');
    const res = await compute({ context: { unit_cost: 10, elasticity: 3 }, function_id: 'fn_builtin_competitive' });
    expect(res.status, res.text).to.equal(422);
    expect((res.body.attempts as Body[]).map((x) => `${x.function}:${x.outcome}`)).to.deep.equal(['competitive-position:not_applicable', 'elasticity-optimum:skipped']);
    expect(res.body.excluded_by_policy, res.text).to.have.length(1);
    expect(res.body.excluded_by_policy[0]).to.include({ function: 'elasticity-optimum', reason: 'cost ceiling', detail: '0.002 > 0.0012' });
    expect(res.body.hint).to.include(`PATCH /api/routing-policies/${policyId}`);
    expect(res.body.error).to.not.match(/cost ceiling/);
  });

  it('shows a never-timed function as "no data" at GET /api/routing/health as at GET /api/functions, and cost_multiplier in one format for built-ins and workspace functions', async () => {
    const api = client(svc.url, { 'x-api-key': world.b.key });
    const created = await api.post<Body>('/api/functions', { name: `untimed-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001', cost_multiplier: '1.50' });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.function.id as string;
    expect(created.body.function.cost_multiplier).to.equal('1.5');
    const list = (await api.get<Body>('/api/functions')).body.data as Body[];
    expect(list.find((f) => f.id === id)?.latency).to.deep.equal({ p50_ms: 'no data', p95_ms: 'no data', samples: 0, window_ms: 300_000 });
    expect(list.find((f) => f.name === 'cost-plus')?.cost_multiplier).to.equal('1');
    const ones = await api.post<Body>('/api/functions', { name: `unit-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(ones.body.function.cost_multiplier).to.equal('1');
    const health = await api.get<Body>('/api/routing/health');
    expect(health.status).to.equal(200);
    expect((health.body.data as Body[]).find((d) => d.function.id === id)?.latency).to.deep.equal({ samples: 0, p50_ms: 'no data', p95_ms: 'no data', ewma_ms: 'no data', window_ms: 300_000, cold: true });
  });

  it('pages and filters GET /api/routing/health as GET /api/functions (limit, cursor, built_in, in its order), and refuses a parameter it does not take', async () => {
    const api = client(svc.url, { 'x-api-key': world.b.key });
    const all = (await api.get<Body>('/api/functions?limit=100')).body.data as Body[];
    const first = await api.get<Body>('/api/routing/health?limit=2');
    expect(first.status, first.text).to.equal(200);
    expect(first.body).to.include({ limit: 2, has_more: true, kept_per: 'instance' });
    expect((first.body.data as Body[]).map((d) => d.function.id)).to.deep.equal(all.slice(0, 2).map((f) => f.id));
    const second = await api.get<Body>(`/api/routing/health?limit=2&cursor=${encodeURIComponent(first.body.next_cursor as string)}`);
    expect((second.body.data as Body[]).map((d) => d.function.id)).to.deep.equal(all.slice(2, 4).map((f) => f.id));
    const builtIns = (await api.get<Body>('/api/routing/health?built_in=true&limit=100')).body.data as Body[];
    expect(builtIns.map((d) => d.function.id)).to.deep.equal(all.filter((f) => f.built_in).map((f) => f.id));
    for (const bad of ['foo=bar', 'limit=0', 'built_in=maybe', 'cursor=nonsense']) {
      const refused = await api.get<Body>(`/api/routing/health?${bad}`);
      expect([refused.status, refused.body.code], bad).to.deep.equal([400, 'validation_error']);
    }
  });

  it('breaker state shows at GET /api/routing/health and in /metrics, and routing skips the open function', async () => {
    const breakers = svc.container.resolve<CircuitBreakers>(PRICING.Breakers);
    // Two workspaces' calls failing (BREAKER_MIN_FAILING_CALLERS, 2): the function's own breaker opens, for everyone.
    // (each with BREAKER_MIN_CALLS of its own calls failing, as its own breaker would open on them).
    for (const caller of ['ws_failing_one', 'ws_failing_two']) for (let i = 0; i < 3; i++) breakers.record('fn_builtin_charm', caller, false);
    const health = await a.get<Body>('/api/routing/health');
    expect(health.status).to.equal(200);
    // Breakers are kept per instance: the answer says which instance's they are.
    expect(health.body).to.include({ kept_per: 'instance' });
    expect(health.body.instance).to.match(/^inst_/);
    expect((await a.get<Body>('/api/routing/health')).body.instance).to.equal(health.body.instance);
    const charm = (health.body.data as Body[]).find((d) => d.function.name === 'charm-pricing') as Body;
    expect(charm.breaker).to.include({ state: 'open', failures: 6, failing_callers: 2, applies_to: 'everyone' });
    expect(charm.breaker.retry_at).to.be.a('string');
    // One function's reading says the same: whose instance it is.
    const one = await a.get<Body>('/api/functions/fn_builtin_charm');
    expect(one.body.breaker).to.include({ state: 'open', failures: 6, instance: health.body.instance, kept_per: 'instance' });
    const metrics = await client(svc.url).get('/metrics');
    expect(metrics.text).to.match(/pricing_breaker_state\{function="charm-pricing"\} 2/);

    await makeDefault({ name: 'with charm', strategy: 'cheapest', config: { candidates: ['charm-pricing', 'cost-plus'] } });
    const body = await ok({ context: { unit_cost: 10, target_price: 20.1 } });
    expect(body.function.name).to.equal('cost-plus');
    expect(route(body).candidates.find((c: Body) => c.function === 'charm-pricing')).to.include({ kept: false, reason: 'breaker open' });
    // With nothing but the open function to route to: the answer a pinned call behind the breaker gets (502, retryable,
    // when the same call may find it again), still listing each candidate and why it was excluded.
    const only = await makeDefault({ name: 'only charm', strategy: 'cheapest', config: { candidates: ['charm-pricing'] } });
    const excluded = await a.post<Body>('/api/compute/price', { context: { unit_cost: 10, target_price: 20.1 } });
    expect(excluded.status, excluded.text).to.equal(502);
    expect(excluded.body).to.include({ code: 'functions_failed', retryable: true, strategy: 'cheapest', policy_id: only });
    expect((excluded.body.candidates as Body[]).map((c) => `${c.function}: ${c.reason}`)).to.deep.equal(['charm-pricing: breaker open']);
    expect(excluded.body.retry_after).to.be.within(1, Math.ceil(COOLDOWN_MS / 1000));
    expect(excluded.headers.get('retry-after')).to.equal(String(excluded.body.retry_after));
    expect(excluded.body.hint).to.include(`retry after ${excluded.body.retry_after} s, when the first lets a trial call through, or PATCH /api/routing-policies/${only}: add candidates`);
    const pinned = await a.post<Body>('/api/compute/price', { context: { unit_cost: 10, target_price: 20.1 }, function_id: 'fn_builtin_charm' });
    expect([pinned.status, pinned.body.code, pinned.body.retryable], 'the pinned call answers alike').to.deep.equal([502, 'functions_failed', true]);

    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 20));
    const later = await a.get<Body>('/api/routing/health');
    expect((later.body.data as Body[]).find((d) => d.function.name === 'charm-pricing')?.breaker.state).to.equal('half_open');
    expect((await client(svc.url).get('/metrics')).text).to.match(/pricing_breaker_state\{function="charm-pricing"\} 1/);
    // The trial call succeeds and closes the breaker.
    const trial = await ok({ context: { target_price: 20.1, trial: true }, function_id: 'fn_builtin_charm' });
    expect(trial.function.name).to.equal('charm-pricing');
    const closed = await a.get<Body>('/api/routing/health');
    expect((closed.body.data as Body[]).find((d) => d.function.name === 'charm-pricing')?.breaker.state).to.equal('closed');
  });
});

describe('pricing: a policy saved before its names were checked (HTTP)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let world: World;

  before(async () => {
    svc = await startTestService({ config: { engine: { threads: 1 } } });
    world = await buildWorld(svc);
  });
  after(() => svc.close());

  it('never binds a name to a function registered after the policy was saved: a stranger taking the name later gets none of its calls', async () => {
    const name = `squat-${Date.now()}`;
    // As an earlier release stored it: a name no function held, kept with a warning.
    await svc.sequelize.query(
      `INSERT INTO routing_policies (id, workspace_id, name, strategy, is_default, fallback_chain, fallback_function, config, created_at, updated_at)
       VALUES ($1, $2, 'legacy', 'cheapest', true, '{}', NULL, $3, now() - interval '1 hour', now() - interval '1 hour')`,
      { bind: [`rp_legacy${Date.now()}`, world.a.owner.workspaceId, JSON.stringify({ candidates: [name, 'cost-plus'], weights: {} })] },
    );
    const stranger = client(svc.url, { 'x-api-key': world.b.key });
    const fn = await stranger.post<Body>('/api/functions', { name, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.0001', is_public: true });
    expect(fn.status, fn.text).to.equal(201);
    expect((await stranger.patch(`/api/functions/${fn.body.function.id}`, { status: 'active' })).status).to.equal(200);

    const res = await client(svc.url, { 'x-api-key': world.a.key }).post<Body>('/api/compute/price', { context: { unit_cost: 2, currency: 'USD' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.function.name).to.equal('cost-plus');
    const candidates = ((res.body.trace.stages as Body[]).find((s) => s.stage === 'route') as Body).candidates as Body[];
    expect(candidates.map((c) => [c.function, c.reason ?? 'kept'])).to.deep.equal([[name, 'unreachable'], ['cost-plus', 'kept']]);

    // Another policy made the default leaves the legacy one's save time (its names stay unbound).
    const owner = client(svc.url, { 'x-api-key': world.a.key });
    const other = await owner.post<Body>('/api/routing-policies', { name: 'other', strategy: 'default', is_default: true });
    expect(other.status, other.text).to.equal(201);
    const [[legacy]] = (await svc.sequelize.query(`SELECT id, updated_at < now() - interval '30 minutes' AS kept FROM routing_policies WHERE name = 'legacy' AND workspace_id = $1`, { bind: [world.a.owner.workspaceId] })) as [Array<{ id: string; kept: boolean }>, unknown];
    expect(legacy?.kept, 'updated_at untouched by losing the default').to.equal(true);
    // A PATCH that carries the name over unsent would bind it: refused, naming where it sits.
    const renamed = await owner.patch<Body>(`/api/routing-policies/${legacy?.id}`, { name: 'renamed', is_default: true });
    expect(renamed.status, renamed.text).to.equal(400);
    expect(renamed.body.code).to.equal('validation_error');
    expect((renamed.body.issues as Body[]).map((i) => i.path)).to.deep.equal(['config.candidates.0']);
    const after = await owner.post<Body>('/api/compute/price', { context: { unit_cost: 2, currency: 'USD' } });
    expect(after.body.function.name, 'the other policy still routes').to.equal('cost-plus');
    // Sent again, the name is meant: it binds.
    const meant = await owner.patch<Body>(`/api/routing-policies/${legacy?.id}`, { config: { candidates: [name, 'cost-plus'] } });
    expect(meant.status, meant.text).to.equal(200);
  });
});
