import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { buildWorld } from '../../support/world';
import type { World } from '../../support/world';

type Api = ReturnType<typeof client>;
type Body = Record<string, any>;
type Issue = { path: string; reason: string };

const PATH = '/api/routing-policies';
/** A name no function holds in this service: no test here registers it. */
const NOPE = 'no-such-fn';
const SAMPLE_RULES = [{ when: { 'customer.tier': 'gold' }, use: 'charm-pricing' }];

/** The examples of refused creates and PATCHes are what was sent, mended, never a stock change: sent back, each is accepted. */
describe('pricing: the examples of refused routing policies', function () {
  this.timeout(60_000);
  let svc: TestService;
  let world: World;
  let a: Api;

  before(async () => {
    svc = await startTestService({ config: { engine: { threads: 1 } } });
    world = await buildWorld(svc);
    a = client(svc.url, { 'x-api-key': world.a.key });
  });
  after(() => svc.close());

  const STORED = { name: 'stored', strategy: 'cheapest', fallback_chain: ['cost-plus'], config: { max_cost_per_unit: '0.002' } };
  /** A fresh policy per case: each example sent back changes it. */
  const stored = async (body: Body = STORED): Promise<Body> => {
    const res = await a.post<Body>(PATH, body);
    expect(res.status, res.text).to.equal(201);
    return res.body.policy as Body;
  };
  const paths = (body: Body) => (body.issues as Issue[]).map((i) => i.path);
  const read = async (id: string): Promise<Body> => (await a.get<Body>(`${PATH}/${id}`)).body.policy as Body;

  /** Sends a refused PATCH, checks its 400, then its example: accepted, and what it leaves as `after` says. */
  const refusedPatch = async (bad: unknown, code: string, issuePaths: string[] | null, example: Body, after: Body = STORED, before: Body = STORED) => {
    const p = await stored(before);
    const raw = typeof bad === 'string';
    const res = raw ? await a.raw<Body>('PATCH', `${PATH}/${p.id}`, { rawBody: bad, headers: { 'content-type': 'application/json' } }) : await a.patch<Body>(`${PATH}/${p.id}`, bad);
    const what = JSON.stringify(bad);
    expect(res.status, `${what}: ${res.text}`).to.equal(400);
    expect(res.body.code, what).to.equal(code);
    if (issuePaths) expect(paths(res.body), what).to.deep.equal(issuePaths);
    expect(res.body.example, what).to.deep.equal(example);
    const again = await a.patch<Body>(`${PATH}/${p.id}`, res.body.example);
    expect(again.status, `${what}, its example sent back: ${again.text}`).to.equal(200);
    expect(await read(p.id as string), what).to.deep.include(after);
  };

  it('a PATCH refused by the body schema, or not JSON, gets what it sent without the refused fields as its example ({} when nothing is left), never a rename', async () => {
    await refusedPatch({ fallback_chain: 'cost-plus' }, 'validation_error', ['fallback_chain'], {});
    await refusedPatch({ name: '' }, 'validation_error', ['name'], {});
    await refusedPatch({ fallback_chain: 'cost-plus', name: 'renamed' }, 'validation_error', ['fallback_chain'], { name: 'renamed' }, { ...STORED, name: 'renamed' });
    // A config left empty is left out: sent, it would clear the stored ceiling.
    await refusedPatch({ config: { bogus: 1 } }, 'validation_error', ['config.bogus'], {});
    await refusedPatch({ config: { max_latency_ms: 50, bogus: 1 } }, 'validation_error', ['config.bogus'], { config: { max_latency_ms: 50 } }, { ...STORED, config: { max_latency_ms: 50 } });
    // Nothing was sent that could be kept: the example changes nothing.
    await refusedPatch('{"fallback_chain": ', 'invalid_json', null, {});
    // A new strategy with a config (which replaces the stored one whole): the config holds samples of what the strategy needs.
    for (const [strategy, needs] of [
      ['priority', { order: ['anchored-adjustment', 'cost-plus'] }],
      ['weighted', { weights: { 'cost-plus': 3, 'anchored-adjustment': 1 } }],
    ] as const) {
      const sent = { strategy, config: { max_cost_per_unit: 'abc', max_latency_ms: 40 } };
      const example = { strategy, config: { ...needs, max_latency_ms: 40 } };
      await refusedPatch(sent, 'validation_error', ['config.max_cost_per_unit'], example, { ...STORED, ...example });
    }
    // One refused weight is left out alone: the caller's valid weights stay, and no function it never named is added.
    const weights = { strategy: 'weighted', config: { weights: { 'cost-plus': -1, 'charm-pricing': 2 } } };
    await refusedPatch(weights, 'validation_error', ['config.weights.cost-plus'], { strategy: 'weighted', config: { weights: { 'charm-pricing': 2 } } }, { ...STORED, strategy: 'weighted', config: { weights: { 'charm-pricing': 2 } } });
    const created = await a.post<Body>(PATH, { name: 'weights-create', ...weights });
    expect(created.status, created.text).to.equal(400);
    expect(created.body.example).to.deep.equal({ name: 'weights-create', strategy: 'weighted', config: { weights: { 'charm-pricing': 2 } } });
  });

  it('a PATCH refused by the body schema whose rest would leave the stored policy without what its strategy needs gets an example keeping the stored keys, accepted as is', async () => {
    const weighted = { name: 'weighted-stored', strategy: 'weighted', config: { weights: { 'cost-plus': 1, 'charm-pricing': 2 } } };
    const withWeights = { ...weighted, config: { ...weighted.config, max_latency_ms: 50 } };
    await refusedPatch({ config: { max_latency_ms: 50, bogus: 1 } }, 'validation_error', ['config.bogus'], { config: withWeights.config }, withWeights, weighted);
    const ruled = { name: 'policy-stored', strategy: 'policy', config: { rules: SAMPLE_RULES } };
    const withCeiling = { ...ruled, config: { ...ruled.config, max_cost_per_unit: '0.5' } };
    await refusedPatch({ config: { max_cost_per_unit: '0.5', rules: 'gold' } }, 'validation_error', ['config.rules'], { config: withCeiling.config }, withCeiling, ruled);
  });

  it('a PATCH whose every sent rule or weight is refused gets an example that keeps the stored ones, never the stock sample in their place', async () => {
    const ruled = { name: 'rules-kept', strategy: 'policy', config: { rules: [{ when: { 'customer.tier': 'silver' }, use: 'cost-plus' }, { when: { region: 'eu' }, use: 'anchored-adjustment' }], default_function: 'cost-plus' } };
    // Only the refused rule was sent: nothing is left to change, so the example changes nothing.
    await refusedPatch({ config: { rules: [{ when: { b: { bad: 1 } }, use: 'cost-plus' }] } }, 'validation_error', ['config.rules.0.when.b.bad'], {}, ruled, ruled);
    // A ceiling sent beside it: the example keeps the stored rules and default function beside the ceiling.
    const withCeiling = { ...ruled, config: { ...ruled.config, max_cost_per_unit: '0.5' } };
    await refusedPatch({ config: { rules: [{ when: { b: { bad: 1 } }, use: 'cost-plus' }], max_cost_per_unit: '0.5' } }, 'validation_error', ['config.rules.0.when.b.bad'], { config: withCeiling.config }, withCeiling, ruled);
    const weighted = { name: 'weights-kept', strategy: 'weighted', config: { weights: { 'cost-plus': 1, 'charm-pricing': 2 } } };
    await refusedPatch({ config: { weights: { 'cost-plus': -1 } } }, 'validation_error', ['config.weights.cost-plus'], {}, weighted, weighted);
  });

  describe("a refused PATCH of a policy over the workspace's functions: its example keeps the stored weights or rules (without what was refused, with what was sent and valid), never sample ones", () => {
    const tag = Date.now().toString(36);
    const [okA, okB, slow] = ['ok-a', 'ok-b', 'slow'].map((n) => `kept-${n}-${tag}`) as [string, string, string];
    const weighted = { name: 'ws-weights', strategy: 'weighted', config: { weights: { [okA]: 3, [okB]: 1, [slow]: 0 } } };
    const ruled = { name: 'ws-rules', strategy: 'policy', config: { rules: [{ when: { 'customer.tier': 'gold' }, use: okA }, { when: { region: 'eu' }, use: okB }, { when: { qty: { gt: 10 } }, use: slow }] } };
    before(async () => {
      for (const name of [okA, okB, slow]) {
        const fn = await a.post<Body>('/api/functions', { name, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.0001' });
        expect(fn.status, fn.text).to.equal(201);
        expect((await a.patch(`/api/functions/${fn.body.function.id as string}`, { status: 'active' })).status).to.equal(200);
      }
    });

    it('weights all naming no function, or leaving no positive weight: the stored weights (the one sent over its stored value)', async () => {
      await refusedPatch({ config: { weights: { [NOPE]: 5 } } }, 'validation_error', [`config.weights.${NOPE}`], { config: weighted.config }, weighted, weighted);
      const zeroed = { config: { weights: { [okA]: 0, [okB]: 1, [slow]: 0 } } };
      await refusedPatch({ config: { weights: { [okA]: 0 } } }, 'validation_error', ['config.weights'], zeroed, { ...weighted, ...zeroed }, weighted);
      const hinted = await a.patch<Body>(`${PATH}/${(await stored(weighted)).id as string}`, { config: { weights: { [okA]: 0 } } });
      expect(hinted.body.hint).to.include('the stored value (or nothing) where yours was refused').and.not.include('sample');
    });

    it('a weight the body schema refuses, the strategy sent beside it: the stored weights', async () => {
      await refusedPatch({ strategy: 'weighted', config: { weights: { [okA]: -1 } } }, 'validation_error', [`config.weights.${okA}`], { strategy: 'weighted', config: weighted.config }, weighted, weighted);
    });

    it('rules all naming no function, or none: the stored rules; a valid rule sent beside a refused one is kept alone', async () => {
      await refusedPatch({ config: { rules: [{ when: { qty: 1 }, use: NOPE }] } }, 'validation_error', ['config.rules.0.use'], { config: ruled.config }, ruled, ruled);
      await refusedPatch({ config: { rules: [] } }, 'validation_error', ['config.rules'], { config: ruled.config }, ruled, ruled);
      const sentRule = { when: { qty: 2 }, use: okB };
      await refusedPatch({ config: { rules: [{ when: { qty: 1 }, use: NOPE }, sentRule] } }, 'validation_error', ['config.rules.0.use'], { config: { rules: [sentRule] } }, { ...ruled, config: { rules: [sentRule] } }, ruled);
    });
  });

  it('a create naming a function that does not exist gets an example without the name (samples where the strategy needs one) that creates the policy', async () => {
    for (const [bad, issuePaths, example] of [
      [{ name: 'r6', strategy: 'policy', config: { rules: [{ when: { a: 1 }, use: NOPE }] } }, ['config.rules.0.use'], { name: 'r6', strategy: 'policy', config: { rules: SAMPLE_RULES } }],
      [
        { name: 'r7', strategy: 'policy', fallback_function: NOPE, config: { rules: [{ when: { a: 1 }, use: NOPE }, { when: { a: 2 }, use: 'cost-plus' }], default_function: NOPE } },
        ['fallback_function', 'config.rules.0.use', 'config.default_function'],
        { name: 'r7', strategy: 'policy', config: { rules: [{ when: { a: 2 }, use: 'cost-plus' }] } },
      ],
      [
        { name: 'w6', strategy: 'weighted', fallback_chain: ['cost-plus', NOPE], config: { weights: { 'cost-plus': 1, [NOPE]: 2 } } },
        ['fallback_chain.1', `config.weights.${NOPE}`],
        { name: 'w6', strategy: 'weighted', fallback_chain: ['cost-plus'], config: { weights: { 'cost-plus': 1 } } },
      ],
      [{ name: 'o6', strategy: 'priority', config: { order: [NOPE] } }, ['config.order.0'], { name: 'o6', strategy: 'priority', config: { order: ['anchored-adjustment', 'cost-plus'] } }],
    ] as const) {
      const what = JSON.stringify(bad);
      const res = await a.post<Body>(PATH, bad);
      expect(res.status, `${what}: ${res.text}`).to.equal(400);
      expect(res.body.code, what).to.equal('validation_error');
      expect(paths(res.body), what).to.deep.equal(issuePaths);
      expect(res.body.hint, what).to.include('example is your request without those names');
      expect(res.body.example, what).to.deep.equal(example);
      const made = await a.post<Body>(PATH, res.body.example);
      expect(made.status, `${what}, its example sent back: ${made.text}`).to.equal(201);
    }
  });

  it('a PATCH naming a function that does not exist gets an example without the name, the stored config keys kept, that is accepted', async () => {
    await refusedPatch({ fallback_chain: [NOPE] }, 'validation_error', ['fallback_chain.0'], {});
    await refusedPatch({ fallback_chain: ['anchored-adjustment', NOPE], name: 'x' }, 'validation_error', ['fallback_chain.1'], { fallback_chain: ['anchored-adjustment'], name: 'x' }, { ...STORED, name: 'x', fallback_chain: ['anchored-adjustment'] });
    await refusedPatch({ fallback_function: NOPE }, 'validation_error', ['fallback_function'], {}, { ...STORED, fallback_function: null });
    await refusedPatch(
      { strategy: 'weighted', config: { weights: { [NOPE]: 2, 'cost-plus': 1 } } },
      'validation_error',
      [`config.weights.${NOPE}`],
      { strategy: 'weighted', config: { weights: { 'cost-plus': 1 }, max_cost_per_unit: '0.002' } },
      { ...STORED, strategy: 'weighted', config: { weights: { 'cost-plus': 1 }, max_cost_per_unit: '0.002' } },
    );
  });

  it('unknown config keys are each an issue at their own path (config.bogus), as unknown keys everywhere, with the key each likely meant; the example leaves them out and is accepted', async () => {
    const res = await a.post<Body>(PATH, { name: 'x', strategy: 'cheapest', config: { bogus: 1 } });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.issues).to.deep.equal([{ path: 'config.bogus', reason: 'unknown field "bogus" not accepted' }]);
    expect(res.body.example).to.deep.equal({ name: 'x', strategy: 'cheapest', config: {} });
    expect((await a.post<Body>(PATH, res.body.example)).status).to.equal(201);

    const two = await a.post<Body>(PATH, { name: 'y', strategy: 'cheapest', config: { max_cost: '0.1', zzz: 1 } });
    expect(two.status, two.text).to.equal(400);
    expect(two.body.issues).to.deep.equal([
      { path: 'config.max_cost', reason: 'unknown field "max_cost" (did you mean "max_cost_per_unit"?) not accepted' },
      { path: 'config.zzz', reason: 'unknown field "zzz" not accepted' },
    ]);

    const p = await stored();
    const patched = await a.patch<Body>(`${PATH}/${p.id}`, { config: { max_latency: 50 } });
    expect(patched.status, patched.text).to.equal(400);
    expect(patched.body.issues).to.deep.equal([{ path: 'config.max_latency', reason: 'unknown field "max_latency" (did you mean "max_latency_ms"?) not accepted' }]);
    expect(patched.body.example).to.deep.equal({});
    expect((await a.patch<Body>(`${PATH}/${p.id}`, patched.body.example)).status).to.equal(200);
  });

  it('a PATCH carrying over a name registered after the policy was saved gets an example sending that field again without it, which is accepted', async () => {
    const late = `late-${Date.now()}`;
    const id = `rp_late${Date.now()}`;
    // As an earlier release stored it: names no function held then.
    await svc.sequelize.query(
      `INSERT INTO routing_policies (id, workspace_id, name, strategy, is_default, fallback_chain, fallback_function, config, created_at, updated_at)
       VALUES ($1, $2, 'legacy', 'cheapest', false, ARRAY[$3], NULL, $4, now() - interval '1 hour', now() - interval '1 hour')`,
      { bind: [id, world.a.owner.workspaceId, late, JSON.stringify({ candidates: [late, 'cost-plus'], max_cost_per_unit: '0.002' })] },
    );
    const fn = await client(svc.url, { 'x-api-key': world.b.key }).post<Body>('/api/functions', { name: late, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.0001' });
    expect(fn.status, fn.text).to.equal(201);
    const res = await a.patch<Body>(`${PATH}/${id}`, { name: 'renamed' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(paths(res.body)).to.deep.equal(['fallback_chain.0', 'config.candidates.0']);
    expect(res.body.example).to.deep.equal({ name: 'renamed', fallback_chain: [], config: { candidates: ['cost-plus'], max_cost_per_unit: '0.002' } });
    const again = await a.patch<Body>(`${PATH}/${id}`, res.body.example);
    expect(again.status, again.text).to.equal(200);
    expect(again.body.policy).to.deep.include({ name: 'renamed', fallback_chain: [], config: { candidates: ['cost-plus'], max_cost_per_unit: '0.002' } });
  });
});
