import { expect } from 'chai';
import { client } from '../../support/http';
import { accessToken } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { buildWorld, createKey } from '../../support/world';
import type { World } from '../../support/world';

type Api = ReturnType<typeof client>;
type Issue = { path: string; reason: string };

const PATH = '/api/routing-policies';

describe('pricing: routing policies over HTTP', function () {
  this.timeout(60_000);
  let svc: TestService;
  let world: World;
  let a: Api;
  let b: Api;

  before(async () => {
    svc = await startTestService({ config: { engine: { threads: 1 } } });
    world = await buildWorld(svc);
    a = client(svc.url, { 'x-api-key': world.a.key });
    b = client(svc.url, { 'x-api-key': world.b.key });
  });
  after(() => svc.close());

  const create = async (api: Api, body: Record<string, unknown>) => {
    const res = await api.post<Record<string, any>>(PATH, body);
    expect(res.status, res.text).to.equal(201);
    return res.body.policy as Record<string, any>;
  };
  const paths = (body: Record<string, any>) => (body.issues as Issue[]).map((i) => i.path);

  describe('POST validation', () => {
    it('strategy policy without config.rules: 400 naming config.rules', async () => {
      const res = await a.post<Record<string, any>>(PATH, { name: 'rules missing', strategy: 'policy', config: { default_function: 'cost-plus' } });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(paths(res.body)).to.deep.equal(['config.rules']);
      expect(res.body.example).to.be.an('object');
    });

    it('strategy weighted without a positive weight: 400 naming config.weights', async () => {
      for (const config of [{}, { weights: { 'cost-plus': 0, 'charm-pricing': 0 } }]) {
        const res = await a.post<Record<string, any>>(PATH, { name: 'weights', strategy: 'weighted', config });
        expect(res.status, JSON.stringify(config)).to.equal(400);
        expect(paths(res.body)).to.deep.equal(['config.weights']);
      }
    });

    it("a create refused for what its strategy needs or a rule's content gets an example made of what it sent that, sent as is, creates the policy meant", async () => {
      for (const [bad, expected] of [
        [
          { name: 'zz', strategy: 'weighted', fallback_chain: ['cost-plus'], config: { max_cost_per_unit: '0.01' } },
          { name: 'zz', strategy: 'weighted', fallback_chain: ['cost-plus'], config: { weights: { 'cost-plus': 3, 'anchored-adjustment': 1 }, max_cost_per_unit: '0.01' } },
        ],
        [{ name: 'pr', strategy: 'priority' }, { name: 'pr', strategy: 'priority', config: { order: ['anchored-adjustment', 'cost-plus'] } }],
        [
          { name: 'op', strategy: 'policy', config: { rules: [{ when: { a: { foo: 1 } }, use: 'cost-plus' }], default_function: 'cost-plus' } },
          { name: 'op', strategy: 'policy', config: { rules: [{ when: { 'customer.tier': 'gold' }, use: 'charm-pricing' }], default_function: 'cost-plus' } },
        ],
        // One refused rule among others is left out alone; the caller's other rules stay.
        [
          { name: 'three', strategy: 'policy', config: { rules: [{ when: { product_type: 'tea' }, use: 'cost-plus' }, { when: { a: { foo: 1 } }, use: 'cost-plus' }, { when: { product_type: 'coffee' }, use: 'charm-pricing' }] } },
          { name: 'three', strategy: 'policy', config: { rules: [{ when: { product_type: 'tea' }, use: 'cost-plus' }, { when: { product_type: 'coffee' }, use: 'charm-pricing' }] } },
        ],
        // An unknown strategy becomes default (never the stock policy, which would also become the workspace default).
        [{ name: 'w', strategy: 'cheapest_first' }, { name: 'w', strategy: 'default' }],
        // Refused by the body schema and by the strategy's needs at once: one example passes both.
        [{ name: 'p', strategy: 'priority', is_default: 'yes' }, { name: 'p', strategy: 'priority', config: { order: ['anchored-adjustment', 'cost-plus'] } }],
      ] as const) {
        const res = await a.post<Record<string, any>>(PATH, bad);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.example, JSON.stringify(bad)).to.deep.equal(expected);
        expect(res.body.example).to.not.have.property('is_default');
        const made = await a.post<Record<string, any>>(PATH, res.body.example);
        expect(made.status, made.text).to.equal(201);
        expect(made.body.policy).to.include({ name: bad.name, strategy: expected.strategy, is_default: false });
      }
    });

    it('an unknown rule operator: 400 naming it, and only it, in the rule', async () => {
      const res = await a.post<Record<string, any>>(PATH, { name: 'regex', strategy: 'policy', config: { rules: [{ when: { product_type: { regex: '^cof' } }, use: 'cost-plus' }] } });
      expect(res.status).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: 'config.rules.0.when.product_type.regex', reason: 'unknown operator "regex" (operators: eq, ne, gt, gte, lt, lte, in, nin, exists, contains, starts_with)' }]);
    });

    it('a condition with a value its operator does not take: 400 saying what the operator takes and what came', async () => {
      for (const [when, reason] of [
        [{ gt: '5' }, 'gt must be a number, got "5"'],
        [{ in: 5 }, 'in must be a list of 1 to 100 strings, numbers, booleans or nulls, got 5'],
        [{ exists: 'yes' }, 'exists must be true or false, got "yes"'],
        [{ starts_with: 5 }, 'starts_with must be a string of 1 to 200 characters, got 5'],
        [{ eq: { a: 1 } }, 'eq must be a string, number, boolean or null, got {"a":1}'],
        [[1, 2], 'a condition is a value or an object of operators, not a list: to match any of several values use {"in": [...]}'],
      ] as const) {
        const res = await a.post<Record<string, any>>(PATH, { name: 'typed', strategy: 'policy', config: { rules: [{ when: { x: when }, use: 'cost-plus' }] } });
        expect(res.status, JSON.stringify(when)).to.equal(400);
        expect(res.body.issues, JSON.stringify(when)).to.deep.equal([{ path: 'config.rules.0.when.x', reason }]);
      }
      // 1e400 parses as Infinity, which JSON would show as null: the caller never sent null.
      const huge = await a.raw<Record<string, any>>('POST', PATH, { rawBody: '{"name":"typed","strategy":"policy","config":{"rules":[{"when":{"x":{"gt":1e400}},"use":"cost-plus"}]}}', headers: { 'content-type': 'application/json' } });
      expect(huge.status, huge.text).to.equal(400);
      expect(huge.body.issues).to.deep.equal([{ path: 'config.rules.0.when.x', reason: 'gt must be a number, got a number beyond the range a JSON number can hold here (about ±1.8e308)' }]);
    });

    it('a rule path deeper than 8 levels: 400', async () => {
      const res = await a.post<Record<string, any>>(PATH, { name: 'deep', strategy: 'policy', config: { rules: [{ when: { 'a.b.c.d.e.f.g.h.i': 1 }, use: 'cost-plus' }] } });
      expect(res.status).to.equal(400);
      expect(res.body.issues).to.deep.equal([
        { path: 'config.rules.0.when.a.b.c.d.e.f.g.h.i', reason: 'key "a.b.c.d.e.f.g.h.i" not accepted: a dotted context path such as customer.tier or items.0.sku (at most 8 levels; the first step a letter or _ followed by letters, digits or _, the others letters, digits or _)' },
      ]);
      const ok = await a.post<Record<string, any>>(PATH, { name: 'deep ok', strategy: 'policy', config: { rules: [{ when: { 'a.b.c.d.e.f.g.h': 1 }, use: 'cost-plus' }] } });
      expect(ok.status, ok.text).to.equal(201);
    });

    it('a body that is not JSON: 400 invalid_json', async () => {
      const res = await a.raw<Record<string, any>>('POST', PATH, { rawBody: '{"name": ', headers: { 'content-type': 'application/json' } });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('invalid_json');
    });
  });

  it('warns when a list names one function twice (by name and by id), and says nothing of lists without repeats', async () => {
    const p = await create(a, { name: 'twice', strategy: 'priority', fallback_chain: ['cost-plus', 'fn_builtin_cost_plus', 'charm-pricing'], config: { order: ['anchored-adjustment', 'charm-pricing'] } });
    expect(p.warnings).to.deep.equal(['fallback_chain names fn_builtin_cost_plus more than once (by name or by id): each function is tried once, where it first appears.']);
    const patched = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { fallback_chain: ['cost-plus'], config: { order: ['charm-pricing', 'Charm-Pricing', 'anchored-adjustment'] } });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.policy.warnings).to.deep.equal(['config.order names Charm-Pricing more than once (by name or by id): each function is tried once, where it first appears.']);
    const clean = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { config: { order: ['charm-pricing', 'anchored-adjustment'] } });
    expect(clean.body.policy).to.not.have.property('warnings');
  });

  it('warns when the policy names its own draft or deactivated function (skipped until activated), and not once it is active', async () => {
    const name = `draft-ref-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
    const fn = await a.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: 'https://example.com/price', cost_per_unit: '0.001' });
    expect(fn.status, fn.text).to.equal(201);
    const p = await create(a, { name: 'names a draft', strategy: 'default', fallback_chain: ['cost-plus', name] });
    expect(p.warnings).to.deep.equal([`These functions are not active and will be skipped until activated (PATCH /api/functions/{id} with {"status":"active"}): ${name} (draft).`]);
    expect((await a.patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { status: 'active' })).status).to.equal(200);
    const again = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { fallback_chain: ['cost-plus', name] });
    expect(again.status, again.text).to.equal(200);
    expect(again.body.policy).to.not.have.property('warnings');
    expect((await a.patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { status: 'inactive' })).status).to.equal(200);
    const off = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { fallback_function: name });
    expect(off.body.policy.warnings).to.deep.equal([`These functions are not active and will be skipped until activated (PATCH /api/functions/{id} with {"status":"active"}): ${name} (inactive).`]);
  });

  it('creates, reads and lists a policy; an unreachable reference is kept with a warning', async () => {
    const p = await create(a, {
      name: 'by tier',
      strategy: 'policy',
      fallback_chain: ['anchored-adjustment', 'fn_not_mine'],
      fallback_function: 'cost-plus',
      config: { rules: [{ when: { 'customer.tier': 'gold' }, use: 'charm-pricing' }], default_function: 'cost-plus', max_cost_per_unit: '0.002' },
    });
    expect(p).to.include({ name: 'by tier', strategy: 'policy', is_default: false, fallback_function: 'cost-plus' });
    expect(p.id).to.match(/^rp_/);
    expect(p.warnings?.[0]).to.include('fn_not_mine');
    const read = await a.get<Record<string, any>>(`${PATH}/${p.id}`);
    expect(read.status).to.equal(200);
    expect(read.body.policy.config).to.deep.equal(p.config);
    const list = await a.get<Record<string, any>>(PATH);
    expect(list.body.data.map((x: { id: string }) => x.id)).to.include(p.id);
    expect((await b.get(`${PATH}/${p.id}`)).status, "another workspace's policy").to.equal(404);
  });

  it('refuses names no function holds yet, on create and on PATCH, so a stranger registering the name later cannot take the calls', async () => {
    const name = `future-pricer-${Date.now()}`;
    const refused = await a.post<Record<string, any>>(PATH, {
      name: 'held for later',
      strategy: 'weighted',
      is_default: true,
      fallback_chain: ['cost-plus', name],
      fallback_function: `${name}-v2`,
      config: { weights: { 'cost-plus': 1, [name]: 2 } },
    });
    expect(refused.status, refused.text).to.equal(400);
    expect(refused.body.code).to.equal('validation_error');
    expect(refused.body.error).to.equal(`No pricing function is named "${name}", "${name}-v2"; a policy may name only functions that exist.`);
    expect(paths(refused.body)).to.deep.equal(['fallback_chain.1', 'fallback_function', `config.weights.${name}`]);
    expect(refused.body.hint).to.include('POST /api/functions');
    expect((await a.get<Record<string, any>>(PATH)).body.data.map((x: { name: string }) => x.name)).to.not.include('held for later');

    // Many unknown names (weights name at most 50 functions): the message names five and counts the rest; issues name each.
    const many = Object.fromEntries(Array.from({ length: 49 }, (_, i) => [`${name}-w${i}`, 1]));
    const crowded = await a.post<Record<string, any>>(PATH, { name: 'many names', strategy: 'weighted', config: { weights: { 'cost-plus': 1, ...many } } });
    expect(crowded.status, crowded.text.slice(0, 300)).to.equal(400);
    expect(crowded.body.error).to.equal(`No pricing function is named "${name}-w0", "${name}-w1", "${name}-w2", "${name}-w3", "${name}-w4" and 44 more (issues lists each); a policy may name only functions that exist.`);
    expect(crowded.body.issues).to.have.length(49);

    const kept = await create(a, { name: 'known names only', strategy: 'default', fallback_chain: ['cost-plus'] });
    const patched = await a.patch<Record<string, any>>(`${PATH}/${kept.id}`, { fallback_function: name });
    expect(patched.status, patched.text).to.equal(400);
    expect(paths(patched.body)).to.deep.equal(['fallback_function']);
    expect((await a.get<Record<string, any>>(`${PATH}/${kept.id}`)).body.policy.fallback_function, 'nothing changed').to.equal(null);

    // Once another workspace holds the name (privately), the reference is kept with the out-of-reach warning: it can only ever mean that function.
    const fn = await b.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: 'https://example.com/price', cost_per_unit: '0.01' });
    expect(fn.status, fn.text).to.equal(201);
    const later = await a.patch<Record<string, any>>(`${PATH}/${kept.id}`, { fallback_function: name });
    expect(later.status, later.text).to.equal(200);
    expect(later.body.policy.warnings[0]).to.include(name);
  });

  it('keeps one default per workspace: a second default unsets the first (and only in that workspace)', async () => {
    const inB = await create(b, { name: 'b default', strategy: 'cheapest', is_default: true });
    const first = await create(a, { name: 'first default', strategy: 'cheapest', is_default: true });
    const second = await create(a, { name: 'second default', strategy: 'fastest', is_default: true });
    expect((await a.get<Record<string, any>>(`${PATH}/${first.id}`)).body.policy.is_default).to.equal(false);
    expect((await a.get<Record<string, any>>(`${PATH}/${second.id}`)).body.policy.is_default).to.equal(true);
    const defaults = (await a.get<Record<string, any>>(`${PATH}?limit=100`)).body.data.filter((x: { is_default: boolean }) => x.is_default);
    expect(defaults.map((x: { id: string }) => x.id)).to.deep.equal([second.id]);
    expect((await b.get<Record<string, any>>(`${PATH}/${inB.id}`)).body.policy.is_default).to.equal(true);
    // Making the first one default again by PATCH unsets the second.
    expect((await a.patch(`${PATH}/${first.id}`, { is_default: true })).status).to.equal(200);
    expect((await a.get<Record<string, any>>(`${PATH}/${second.id}`)).body.policy.is_default).to.equal(false);
    await a.delete(`${PATH}/${first.id}`);
  });

  it("deleting a round_robin policy drops its turn counter from the store, where it would have stayed for 7 days", async () => {
    const rr = await create(a, { name: 'rr to delete', strategy: 'round_robin', is_default: true });
    for (let i = 0; i < 2; i++) {
      const priced = await a.post<Record<string, any>>('/api/compute/price', { context: { current_price: 10, unit_cost: 4 } });
      expect(priced.status, priced.text).to.equal(200);
      expect(priced.body.trace.stages.find((st: { stage: string }) => st.stage === 'route').policy_id).to.equal(rr.id);
    }
    expect(await svc.kv.get(`rr:${rr.id}`)).to.equal('2');
    expect((await a.delete(`${PATH}/${rr.id}`)).status).to.equal(200);
    expect(await svc.kv.get(`rr:${rr.id}`)).to.equal(null);
  });

  it('concurrent saves of a default all succeed, and one default remains', async () => {
    const created = await Promise.all(Array.from({ length: 8 }, (_, i) => b.post<Record<string, any>>(PATH, { name: `race ${i}`, strategy: 'cheapest', is_default: true })));
    expect(created.map((r) => r.status)).to.deep.equal(Array(8).fill(201));
    const defaults = (await b.get<Record<string, any>>(`${PATH}?limit=100`)).body.data.filter((x: { is_default: boolean }) => x.is_default);
    expect(defaults).to.have.length(1);
    for (const r of created) await b.delete(`${PATH}/${r.body.policy.id}`);
  });

  describe('PATCH is validated against the policy it produces', () => {
    it('a PATCH that changes nothing ({}, or fields as stored) leaves updated_at as it was; one that changes something moves it', async () => {
      const p = await create(a, { name: 'unchanged by patch', strategy: 'cheapest', config: { max_cost_per_unit: '0.002' } });
      await new Promise((r) => setTimeout(r, 15));
      for (const body of [{}, { name: 'unchanged by patch' }, { strategy: 'cheapest', config: { max_cost_per_unit: '0.002' } }]) {
        const res = await a.patch<Record<string, any>>(`${PATH}/${p.id as string}`, body);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.policy.updated_at, JSON.stringify(body)).to.equal(p.updated_at);
      }
      const changed = await a.patch<Record<string, any>>(`${PATH}/${p.id as string}`, { config: { max_cost_per_unit: '0.003' } });
      expect(changed.body.policy.updated_at).to.not.equal(p.updated_at);
    });

    it('switching to weighted without weights: 400 naming config.weights, nothing changed', async () => {
      const p = await create(a, { name: 'to weighted', strategy: 'cheapest' });
      const res = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { strategy: 'weighted' });
      expect(res.status).to.equal(400);
      expect(paths(res.body)).to.deep.equal(['config.weights']);
      expect((await a.get<Record<string, any>>(`${PATH}/${p.id}`)).body.policy.strategy).to.equal('cheapest');
      const ok = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { strategy: 'weighted', config: { weights: { 'cost-plus': 3, 'anchored-adjustment': 1 } } });
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.body.policy).to.deep.include({ strategy: 'weighted', config: { weights: { 'cost-plus': 3, 'anchored-adjustment': 1 } } });
    });

    it('switching to policy without rules: 400 naming config.rules', async () => {
      const p = await create(a, { name: 'to policy', strategy: 'cheapest' });
      const res = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { strategy: 'policy' });
      expect(res.status).to.equal(400);
      expect(paths(res.body)).to.deep.equal(['config.rules']);
    });

    it('config is replaced as a whole: a PATCH of one config key that drops the rules is refused, and its example keeps them', async () => {
      const rules = [{ when: { product_type: 'coffee' }, use: 'cost-plus' }];
      const p = await create(a, { name: 'rules kept', strategy: 'policy', config: { rules } });
      const res = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { config: { max_latency_ms: 100 } });
      expect(res.status).to.equal(400);
      expect(paths(res.body)).to.deep.equal(['config.rules']);
      expect(res.body.hint).to.include('config is replaced as a whole').and.include(`GET /api/routing-policies/${p.id}`);
      expect(res.body.example).to.deep.equal({ config: { rules, max_latency_ms: 100 } });
      // The example, sent as it is, does what the first PATCH meant.
      const ok = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, res.body.example);
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.body.policy.config).to.deep.include({ rules, max_latency_ms: 100 });
    });

    for (const [strategy, needs] of [
      ['policy', ['rules']],
      ['weighted', ['weights']],
      ['priority', ['order']],
    ] as const) {
      it(`switching to ${strategy} with strategy alone: the 400's example is a ${strategy} body that keeps the stored config and, sent as is, succeeds`, async () => {
        const p = await create(a, { name: `to ${strategy}`, strategy: 'cheapest', config: { max_cost_per_unit: '0.0015' } });
        const res = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { strategy });
        expect(res.status).to.equal(400);
        expect(res.body.example.strategy).to.equal(strategy);
        expect(res.body.example.config).to.include({ max_cost_per_unit: '0.0015' });
        expect(res.body.example.config).to.include.keys(...needs);
        expect(res.body.hint).to.include(`adds sample ${needs.join(' and ')} for "${strategy}"`);
        const ok = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, res.body.example);
        expect(ok.status, ok.text).to.equal(200);
        expect(ok.body.policy).to.include({ strategy });
        expect(ok.body.policy.config).to.include({ max_cost_per_unit: '0.0015' });
      });
    }

    it('a PATCH body of the wrong shape gets an example that, sent as is, changes no strategy and no config', async () => {
      const config = { max_cost_per_unit: '0.002', max_latency_ms: 100 };
      const p = await create(a, { name: 'keeps its ceilings', strategy: 'cheapest', config });
      for (const bad of [{ is_default: 'yes' }, { name: '' }, { fallback_chain: 'x' }]) {
        const res = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, bad);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.example).to.not.have.any.keys('strategy', 'config');
        const ok = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, res.body.example);
        expect(ok.status, ok.text).to.equal(200);
        expect(ok.body.policy).to.include({ strategy: 'cheapest' });
        expect(ok.body.policy.config).to.deep.equal(config);
      }
    });

    it('a PATCH whose values are refused gets an example made of what it sent, the refused values replaced by the stored ones or left out, that sent as is succeeds', async () => {
      const p = await create(a, { name: 'weighs', strategy: 'weighted', config: { weights: { 'cost-plus': 1 }, max_latency_ms: 100 } });
      for (const [bad, expected] of [
        // A weight of 0 leaves no positive weight: the stored weights take their place (a sample would replace them), the stored ceiling stays.
        [{ config: { weights: { 'cost-plus': 0 } } }, { config: { weights: { 'cost-plus': 1 }, max_latency_ms: 100 } }],
        // A misspelt key is left out, what was sent beside it kept.
        [{ config: { weights: { 'cost-plus': 2 }, max_cost: '0.1' } }, { config: { weights: { 'cost-plus': 2 } } }],
        [{ strategy: 'nope', name: 'renamed' }, { name: 'renamed' }],
      ] as const) {
        const res = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, bad);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.example, JSON.stringify(bad)).to.deep.equal(expected);
        const ok = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, res.body.example);
        expect(ok.status, ok.text).to.equal(200);
      }
    });

    it('fallback_function: null clears it; other fields are kept', async () => {
      const p = await create(a, { name: 'clear fb', strategy: 'cheapest', fallback_chain: ['cost-plus'], fallback_function: 'anchored-adjustment' });
      const res = await a.patch<Record<string, any>>(`${PATH}/${p.id}`, { fallback_function: null });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.policy).to.include({ fallback_function: null, name: 'clear fb', strategy: 'cheapest' });
      expect(res.body.policy.fallback_chain).to.deep.equal(['cost-plus']);
      expect((await a.get<Record<string, any>>(`${PATH}/${p.id}`)).body.policy.fallback_function).to.equal(null);
    });

    it('a PUT answers 405 naming the path as sent and the methods it takes', async () => {
      const res = await a.put<Record<string, any>>(`${PATH}/rp_whatever`, { name: 'x' });
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.equal('GET, PATCH, DELETE, HEAD');
      expect(res.body.error).to.equal('PUT is not supported on /api/routing-policies/rp_whatever.');
      expect(res.body.hint).to.equal('Use GET, PATCH or DELETE on this path.');
    });

    it("another workspace's policy: 404", async () => {
      const p = await create(a, { name: 'mine', strategy: 'cheapest' });
      expect((await b.patch(`${PATH}/${p.id}`, { name: 'theirs' })).status).to.equal(404);
      expect((await b.delete(`${PATH}/${p.id}`)).status).to.equal(404);
      expect((await a.get<Record<string, any>>(`${PATH}/${p.id}`)).body.policy.name).to.equal('mine');
      // The same answer as an id nobody holds.
      const pick = (body: Record<string, unknown>) => ({ error: body.error, code: body.code, hint: body.hint });
      const theirs = await b.get<Record<string, unknown>>(`${PATH}/${p.id}`);
      const nobodys = await b.get<Record<string, unknown>>(`${PATH}/rp_nobody`);
      expect([theirs.status, nobodys.status]).to.deep.equal([404, 404]);
      expect(pick(theirs.body)).to.deep.equal(pick(nobodys.body));
    });
  });

  it('DELETE removes the policy; reading or deleting it again answers 404', async () => {
    const p = await create(a, { name: 'to delete', strategy: 'fastest' });
    const res = await a.delete<Record<string, any>>(`${PATH}/${p.id}`);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ id: p.id, deleted: true });
    const gone = await a.get(`${PATH}/${p.id}`);
    expect(gone.status).to.equal(404);
    expect(gone.body).to.include({ code: 'not_found', error: 'No routing policy with this id in the workspace.' });
    expect(gone.body.hint).to.include('GET /api/routing-policies');
    expect((await a.delete(`${PATH}/${p.id}`)).status).to.equal(404);
  });

  describe('scopes: functions and routing policies are workspace configuration', () => {
    const keyed = async (scopes: string[]) => client(svc.url, { 'x-api-key': (await createKey(svc, world.a.owner, { name: `scoped ${scopes.join(' ')}`, scopes })).key });
    const fnName = () => `scoped-fn-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

    it('a scoped key without full access is refused on every write with 403 insufficient_scope, naming what it lacks', async () => {
      const own = await a.post<Record<string, any>>('/api/functions', { name: fnName(), execution_type: 'pipeline', cost_per_unit: '0.001' });
      expect(own.status, own.text).to.equal(201);
      const policy = await create(a, { name: 'scoped target', strategy: 'cheapest' });
      for (const scopes of [['billing:read'], ['price:compute'], ['read']]) {
        const api = await keyed(scopes);
        const writes: Array<[string, () => Promise<{ status: number; body: Record<string, any> }>]> = [
          ['POST /api/functions', () => api.post('/api/functions', { name: fnName(), execution_type: 'pipeline', cost_per_unit: '0.001' })],
          ['PATCH /api/functions/{id}', () => api.patch(`/api/functions/${own.body.function.id}`, { description: 'changed' })],
          ['POST /api/routing-policies', () => api.post(PATH, { name: 'scoped', strategy: 'cheapest' })],
          ['PATCH /api/routing-policies/{id}', () => api.patch(`${PATH}/${policy.id}`, { name: 'renamed' })],
          ['DELETE /api/routing-policies/{id}', () => api.delete(`${PATH}/${policy.id}`)],
        ];
        for (const [what, send] of writes) {
          const res = await send();
          expect(res.status, `${scopes.join(',')} ${what}: ${JSON.stringify(res.body)}`).to.equal(403);
          expect(res.body.code).to.equal('insufficient_scope');
          expect(res.body.error).to.equal(`${what} needs full access; this credential lacks ${['price:compute', 'billing:read', 'billing:write', 'commerce:configure', 'commerce:execute'].filter((s) => !(scopes[0] === 'read' ? ['price:compute', 'billing:read'] : scopes).includes(s)).join(', ')}.`);
          expect(res.body.required_scopes).to.deep.equal(['price:compute', 'billing:read', 'billing:write', 'commerce:configure', 'commerce:execute']);
          expect(res.body.hint).to.contain('no scopes');
        }
        // Reading stays open to it.
        expect((await api.get(`${PATH}/${policy.id}`)).status).to.equal(200);
      }
      // Nothing changed.
      expect((await a.get<Record<string, any>>(`${PATH}/${policy.id}`)).body.policy.name).to.equal('scoped target');
    });

    it('an access token minted narrower than its full-access agent key is refused on writes with a hint about the token, not the key', async () => {
      const token = await accessToken(svc.url, world.a.agentKey, 'billing:read');
      const res = await client(svc.url, { authorization: `Bearer ${token}` }).post<Record<string, any>>('/api/functions', { name: fnName(), execution_type: 'pipeline', cost_per_unit: '0.001' });
      expect(res.status, res.text).to.equal(403);
      expect(res.body.code).to.equal('insufficient_scope');
      expect(res.body.hint).to.equal(
        "An access token carries the scopes it was minted with: mint one without a scope parameter (POST /api/oauth/token) from a key with full access, or use such a key or a person's session. Routes that change the workspace's configuration (functions, routing policies) take a workspace key or a person's session only, never an agent's token.",
      );
      // Minted without a scope, the same key's token passes the scope check and meets the role rule: routing policies, as
      // functions, are for owners and admins and the keys they made, not an agent's (policy-managers.test.ts).
      const full = await accessToken(svc.url, world.a.agentKey);
      const byAgent = await client(svc.url, { authorization: `Bearer ${full}` }).post<Record<string, any>>(PATH, { name: 'by agent token', strategy: 'cheapest' });
      expect(byAgent.status, byAgent.text).to.equal(403);
      expect(byAgent.body).to.include({ code: 'forbidden', reason: 'agent-bound key' });
    });

        it('an unscoped key, a legacy write key and a person session may write', async () => {
      for (const api of [a, await keyed(['write']), client(svc.url, { cookie: world.a.owner.cookie })]) {
        const fn = await api.post<Record<string, any>>('/api/functions', { name: fnName(), execution_type: 'pipeline', cost_per_unit: '0.001' });
        expect(fn.status, fn.text).to.equal(201);
        const p = await create(api, { name: 'allowed', strategy: 'cheapest' });
        expect((await api.delete(`${PATH}/${p.id}`)).status).to.equal(200);
      }
    });

    it('testing a function needs price:compute: a billing:read key gets 403, a price:compute key runs it', async () => {
      const body = { context: { current_price: 10 } };
      const narrow = await (await keyed(['billing:read'])).post<Record<string, any>>('/api/functions/fn_builtin_anchored/test', body);
      expect(narrow.status).to.equal(403);
      expect(narrow.body).to.include({ code: 'insufficient_scope' });
      expect(narrow.body.required_scopes).to.deep.equal(['price:compute']);
      const compute = await (await keyed(['price:compute'])).post<Record<string, any>>('/api/functions/fn_builtin_anchored/test', body);
      expect(compute.status, compute.text).to.equal(200);
      expect(compute.body.ok).to.equal(true);
    });
  });

  describe('listing', () => {
    it('pages every policy exactly once, also those created within one millisecond (the cursor holds milliseconds, the column microseconds)', async () => {
      const api = client(svc.url, { 'x-api-key': world.sandbox.key });
      const ws = world.sandbox.workspaceId;
      for (const [id, at] of [['rp_same_ms_a', '2026-01-01T00:00:00.123100Z'], ['rp_same_ms_b', '2026-01-01T00:00:00.123900Z'], ['rp_same_ms_c', '2026-01-01T00:00:00.100000Z']]) {
        await svc.sequelize.query(`INSERT INTO routing_policies (id, workspace_id, name, strategy, is_default, fallback_chain, fallback_function, config, created_at) VALUES ($1, $2, $1, 'cheapest', false, '{}', NULL, '{}', $3)`, { bind: [id, ws, at] });
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { status: number; body: Record<string, any> } = await api.get<Record<string, any>>(`${PATH}?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).to.equal(200);
        seen.push(...(page.body.data as Array<{ id: string }>).map((p) => p.id));
        cursor = page.body.next_cursor as string | null;
      } while (cursor);
      expect(seen.filter((id) => id.startsWith('rp_same_ms_')).sort()).to.deep.equal(['rp_same_ms_a', 'rp_same_ms_b', 'rp_same_ms_c']);
      expect(new Set(seen).size).to.equal(seen.length);
    });
  });

  describe('concurrent changes', () => {
    it('two PATCHes of one policy at once keep both changes (each applies to the row as stored)', async () => {
      for (let i = 0; i < 10; i++) {
        const p = await create(a, { name: `race ${i}`, strategy: 'cheapest', fallback_function: 'charm-pricing', fallback_chain: ['cost-plus'] });
        const [cleared, renamed] = await Promise.all([a.patch<Record<string, any>>(`${PATH}/${p.id as string}`, { fallback_function: null }), a.patch<Record<string, any>>(`${PATH}/${p.id as string}`, { name: `renamed ${i}` })]);
        expect([cleared.status, renamed.status]).to.deep.equal([200, 200]);
        const stored = (await a.get<Record<string, any>>(`${PATH}/${p.id as string}`)).body.policy;
        expect(stored).to.include({ name: `renamed ${i}`, fallback_function: null });
      }
    });

    it('making a policy the default while it is deleted answers 404 (or 200 before the delete) and never leaves the workspace without its default', async () => {
      const d = await create(b, { name: 'the default', strategy: 'cheapest', is_default: true });
      for (let i = 0; i < 8; i++) {
        const other = await create(b, { name: `doomed ${i}`, strategy: 'cheapest' });
        const [made, deleted] = await Promise.all([b.patch<Record<string, any>>(`${PATH}/${other.id as string}`, { is_default: true }), b.delete(`${PATH}/${other.id as string}`)]);
        expect([200, 404], made.text).to.include(made.status);
        expect(deleted.status).to.equal(200);
        const defaults = ((await b.get<Record<string, any>>(`${PATH}?limit=100`)).body.data as Array<Record<string, any>>).filter((x) => x.is_default);
        // The deleted one took the default with it only if its PATCH came first; then the old one is no longer default either.
        if (made.status === 404) expect(defaults.map((x) => x.id)).to.deep.equal([d.id]);
        else expect(defaults).to.deep.equal([]);
        if (made.status === 200) expect((await b.patch(`${PATH}/${d.id as string}`, { is_default: true })).status).to.equal(200);
      }
    });
  });
});
