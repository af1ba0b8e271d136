import { expect } from 'chai';
import type { CircuitBreakers } from '../../../engine';
import { CATALOG } from '../../../plugins/catalog';
import type { LeaderboardAggregator } from '../../../plugins/catalog';
import { PRICING } from '../../../plugins/pricing';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { declaredSchema, expectFitsDeclared, undeclared } from '../../support/response-schema';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import type { Person, Sandbox } from '../../support/world';

type Body = Record<string, any>;

/** The routes whose 2xx bodies this file checks: id, method, OpenAPI path, success status. */
const ROUTES = [
  ['functions.list', 'get', '/api/functions', 200],
  ['functions.create', 'post', '/api/functions', 201],
  ['functions.read', 'get', '/api/functions/{id}', 200],
  ['functions.update', 'patch', '/api/functions/{id}', 200],
  ['functions.test', 'post', '/api/functions/{id}/test', 200],
  ['policies.list', 'get', '/api/routing-policies', 200],
  ['policies.create', 'post', '/api/routing-policies', 201],
  ['policies.read', 'get', '/api/routing-policies/{id}', 200],
  ['policies.update', 'patch', '/api/routing-policies/{id}', 200],
  ['policies.delete', 'delete', '/api/routing-policies/{id}', 200],
  ['pipelines.list', 'get', '/api/pipelines', 200],
  ['pipelines.stages', 'get', '/api/pipelines/stages', 200],
  ['routing.health', 'get', '/api/routing/health', 200],
  ['catalog.list', 'get', '/api/catalog', 200],
  ['catalog.read', 'get', '/api/catalog/{id}', 200],
  ['leaderboard.read', 'get', '/api/public/leaderboard', 200],
  ['leaderboard.scoring', 'get', '/api/public/leaderboard/scoring', 200],
  ['observations.create', 'post', '/api/data/observations', 201],
  ['observations.list', 'get', '/api/data/observations', 200],
] as const;
type RouteId = (typeof ROUTES)[number][0];

describe('OpenAPI response schemas of the function, routing policy, pipeline, catalogue, leaderboard and observation routes', function () {
  this.timeout(180_000);
  let svc: TestService;
  let upstream: Upstream;
  let owner: Person;
  let ownerKey: string;
  let otherKey: string;
  let sandbox: Sandbox;
  let owned: ReturnType<typeof client>;
  const checked = new Set<RouteId>();

  /** A real answer of `id` fits its declared schema, strictly at the top level and with no undeclared nested key. */
  const expectFits = (id: RouteId, res: { status: number; body: unknown; text: string }, status = 200): void => {
    expect(res.status, `${id}: ${res.text}`).to.equal(status);
    expectFitsDeclared(svc, id, res.body, status);
    expect(undeclared(declaredSchema(svc, id, status), res.body), `${id}: fields without a schema`).to.deep.equal([]);
    checked.add(id);
  };

  before(async () => {
    upstream = await startUpstream((req, res) => {
      if (req.path === '/details') return sendJson(res, 200, { price: 12.5, confidence: 0.7, notes: ['from the owner'], details: { model: 'v2' } });
      if (req.path === '/plain') return sendJson(res, 200, { price: 9, confidence: 0.5 });
      return sendJson(res, 500, { error: 'down' });
    });
    svc = await startTestService({
      config: {
        outbound: { allowList: ['127.0.0.1'] },
        catalog: { leaderboardRefreshMs: 3_600_000 },
        limits: {
          registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
          rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
          // Every changelog entry is recent enough for a new key's first notice, whatever the date.
          notices: { windowDays: 36_500, firstContactMaxAgeDays: 36_500 },
          // One consumer publishes usage and confidence, so the published stats are checked too.
          leaderboard: { minDistinctConsumers: 1, confidenceMinCustomers: 1 },
        },
      },
    });
    owner = await signUp(svc, 'schemas-owner');
    ownerKey = (await createKey(svc, owner, { name: 'owner' })).key;
    otherKey = (await createKey(svc, await signUp(svc, 'schemas-other'), { name: 'other' })).key;
    sandbox = await registerSandbox(svc, 'schemas-pricing-sandbox');
    owned = client(svc.url, { 'x-api-key': ownerKey });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  let extId = '';
  let pipelineId = '';
  let failingId = '';

  it('a function created (external_api and pipeline), read, activated, replayed and changed fits the declared schemas', async () => {
    const name = `schemas-ext-${Date.now()}`;
    const idem = { 'idempotency-key': `schemas-fn-${Date.now()}` };
    const body = { name, execution_type: 'external_api', endpoint_url: upstream.url('/details'), timeout_ms: 1000, cost_per_unit: '0.002', is_public: true, tags: ['schemas'] };
    const created = await owned.post<Body>('/api/functions', body, idem);
    expect(created.body.next).to.have.length(1);
    expect(created.body.function).to.include({ status: 'draft', endpoint_url: upstream.url('/details'), commission_pct: null });
    expectFits('functions.create', created, 201);
    extId = created.body.function.id;
    const draft = await owned.get<Body>(`/api/functions/${extId}`);
    expectFits('functions.read', draft);

    const activated = await owned.patch<Body>(`/api/functions/${extId}`, { status: 'active' });
    expect(activated.body.function.status).to.equal('active');
    expectFits('functions.update', activated);
    // The replay answers the function as it is now: active, so without the activation step.
    const replay = await owned.post<Body>('/api/functions', body, idem);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.body).to.not.have.property('next');
    expectFits('functions.create', replay, 201);
    expectFits('functions.read', await owned.get<Body>(`/api/functions/${extId}`));

    // A pipeline function, by a person's session: warnings on create and on PATCH, no endpoint.
    const session = client(svc.url, { cookie: owner.cookie });
    const pipeline = await session.post<Body>('/api/functions', { name: `schemas-pipe-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(pipeline.body.warnings).to.have.length(1);
    expectFits('functions.create', pipeline, 201);
    pipelineId = pipeline.body.function.id;
    const changed = await session.patch<Body>(`/api/functions/${pipelineId}`, { description: 'a pipeline', tags: ['p'] });
    expect(changed.body.warnings).to.have.length(1);
    expectFits('functions.update', changed);
    const readPipeline = await client(svc.url, { authorization: `Bearer ${owner.token}` }).get<Body>(`/api/functions/${pipelineId}`);
    expect(readPipeline.body.function).to.include({ execution_type: 'pipeline', commission_pct: null }).and.not.have.property('endpoint_url');
    expectFits('functions.read', readPipeline);

    const failing = await owned.post<Body>('/api/functions', { name: `schemas-fail-${Date.now()}`, execution_type: 'external_api', endpoint_url: upstream.url('/fail'), cost_per_unit: '0' });
    expectFits('functions.create', failing, 201);
    failingId = failing.body.function.id;
  });

  it("another workspace's public function, a built-in with an open breaker, and a sandbox's read fit the declared schema", async () => {
    const marketplace = await client(svc.url, { 'x-api-key': otherKey }).get<Body>(`/api/functions/${extId}`);
    expect(marketplace.body.function).to.include({ label: 'marketplace' }).and.not.have.any.keys('endpoint_url', 'timeout_ms', 'commission_pct');
    expectFits('functions.read', marketplace);

    const breakers = svc.container.resolve<CircuitBreakers>(PRICING.Breakers);
    for (let i = 0; i < 10; i++) breakers.record('fn_builtin_charm', `ws_failing_${i % 2}`, false);
    const open = await owned.get<Body>('/api/functions/fn_builtin_charm');
    expect(open.body.function).to.include({ breaker: 'open', label: 'built-in' });
    expect(open.body.breaker).to.include({ state: 'open', failures: 10, kept_per: 'instance' });
    expect(open.body.breaker.opened_at).to.be.a('string');
    expect(open.body.breaker.retry_at).to.be.a('string');
    expectFits('functions.read', open);
    const closed = await client(svc.url, { 'x-api-key': sandbox.key }).get<Body>('/api/functions/fn_builtin_cost_plus');
    expect(closed.body.breaker).to.include({ state: 'closed', opened_at: null, retry_at: null });
    expectFits('functions.read', closed);
  });

  it("the function list fits the declared schema for a new key and a sandbox's (with notices), a session, a person token and a sandbox token", async () => {
    const fresh = (await createKey(svc, owner, { name: 'notices' })).key;
    const withNotices = await client(svc.url, { 'x-api-key': fresh }).get<Body>('/api/functions?limit=100');
    expect(withNotices.body.notices).to.be.an('array').that.is.not.empty;
    expectFits('functions.list', withNotices);
    // Notices go to API keys only (a sandbox's key among them), never to sessions or tokens.
    const callers: Array<[Record<string, string>, boolean]> = [[{ cookie: owner.cookie }, false], [{ authorization: `Bearer ${owner.token}` }, false], [{ 'x-api-key': sandbox.key }, true], [{ authorization: `Bearer ${sandbox.token}` }, false]];
    for (const [headers, notices] of callers) {
      const res = await client(svc.url, headers).get<Body>('/api/functions?limit=2');
      expect(res.body.notices !== undefined, Object.keys(headers)[0]).to.equal(notices);
      expectFits('functions.list', res);
    }
    const mine = await owned.get<Body>('/api/functions?built_in=false');
    expect(mine.body.data.map((f: Body) => f.id)).to.include.members([extId, pipelineId]);
    expectFits('functions.list', mine);
  });

  it("test runs fit the declared schema: a built-in's price, missing and refused inputs, an external answer with and without details, and a failure", async () => {
    const priced = await owned.post<Body>('/api/functions/fn_builtin_cost_plus/test', { context: { unit_cost: 6 } });
    expect(priced.body).to.include({ ok: true });
    expectFits('functions.test', priced);
    const missing = await owned.post<Body>('/api/functions/fn_builtin_cost_plus/test', { context: { current_price: 4 } });
    expect(missing.body).to.include({ ok: false }).and.have.all.keys('function', 'ok', 'error', 'missing', 'example', 'ms');
    expectFits('functions.test', missing);
    const refused = await client(svc.url, { cookie: owner.cookie }).post<Body>('/api/functions/fn_builtin_cost_plus/test', { context: { unit_cost: 6, target_margin: 30 } });
    expect(refused.body).to.have.property('refused');
    expectFits('functions.test', refused);
    const details = await client(svc.url, { 'x-api-key': otherKey }).post<Body>(`/api/functions/${extId}/test`, { context: { current_price: 10 } });
    expect(details.body.result.details).to.deep.equal({ model: 'v2' });
    expectFits('functions.test', details);
    await owned.patch(`/api/functions/${extId}`, { endpoint_url: upstream.url('/plain') });
    const plain = await owned.post<Body>(`/api/functions/${extId}/test`, { context: { current_price: 10 } });
    expect(plain.body.result).to.not.have.property('details');
    expectFits('functions.test', plain);
    const failed = await owned.post<Body>(`/api/functions/${failingId}/test`, { context: { current_price: 10 } });
    expect(failed.body).to.include({ ok: false }).and.have.all.keys('function', 'ok', 'error', 'ms');
    expectFits('functions.test', failed);
  });

  it('routing policies created (with and without warnings), listed, read, changed and deleted fit the declared schemas', async () => {
    const rules = { name: 'by tier', strategy: 'policy', fallback_chain: ['fn_no_such_function'], fallback_function: 'cost-plus', config: { rules: [{ when: { 'customer.tier': { in: ['gold'] } }, use: 'charm-pricing', name: 'gold' }], default_function: 'cost-plus', max_cost_per_unit: '0.002', max_latency_ms: 500 } };
    const idem = { 'idempotency-key': `schemas-rp-${Date.now()}` };
    const warned = await owned.post<Body>('/api/routing-policies', rules, idem);
    expect(warned.body.policy.warnings).to.have.length(1);
    expectFits('policies.create', warned, 201);
    expectFits('policies.create', await owned.post<Body>('/api/routing-policies', rules, idem), 201);
    const plain = await client(svc.url, { cookie: owner.cookie }).post<Body>('/api/routing-policies', { name: 'weights', strategy: 'weighted', config: { weights: { 'cost-plus': 2, 'anchored-adjustment': 1 }, candidates: ['cost-plus', 'anchored-adjustment'] } });
    expect(plain.body.policy).to.not.have.property('warnings');
    expectFits('policies.create', plain, 201);
    await owned.post('/api/routing-policies', { name: 'fast', strategy: 'fastest', config: { tie_band_pct: 5 } });
    await owned.post('/api/routing-policies', { name: 'ordered', strategy: 'priority', config: { order: ['cost-plus'] } });

    expectFits('policies.list', await owned.get<Body>('/api/routing-policies?limit=2'));
    expectFits('policies.list', await client(svc.url, { 'x-api-key': sandbox.key }).get<Body>('/api/routing-policies'));
    const id = warned.body.policy.id as string;
    expectFits('policies.read', await client(svc.url, { authorization: `Bearer ${owner.token}` }).get<Body>(`/api/routing-policies/${id}`));
    const stillWarned = await owned.patch<Body>(`/api/routing-policies/${id}`, { name: 'by tier, renamed' });
    expect(stillWarned.body.policy.warnings).to.have.length(1);
    expectFits('policies.update', stillWarned);
    const cleared = await owned.patch<Body>(`/api/routing-policies/${id}`, { fallback_chain: [], fallback_function: null });
    expect(cleared.body.policy).to.not.have.property('warnings');
    expectFits('policies.update', cleared);
    const deleted = await owned.delete<Body>(`/api/routing-policies/${id}`);
    expect(deleted.body).to.deep.equal({ id, deleted: true });
    expectFits('policies.delete', deleted);
  });

  it('the pipeline listings and the routing health (timed and untimed functions, an open breaker) fit the declared schemas, for a key and a sandbox', async () => {
    for (const key of [ownerKey, sandbox.key]) {
      const api = client(svc.url, { 'x-api-key': key });
      expectFits('pipelines.list', await api.get<Body>('/api/pipelines'));
      expectFits('pipelines.stages', await api.get<Body>('/api/pipelines/stages'));
      expect((await api.post('/api/compute/price', { context: { unit_cost: 6 }, function_id: 'fn_builtin_cost_plus' })).status).to.equal(200);
      const health = await api.get<Body>('/api/routing/health');
      const byName = (n: string) => (health.body.data as Body[]).find((d) => d.function.name === n);
      expect(byName('cost-plus')?.latency.p50_ms).to.be.a('number');
      expect(byName('charm-pricing')?.breaker.state).to.equal('open');
      expectFits('routing.health', health);
    }
  });

  it('the catalogue fits the declared schemas without a credential, for the owner of listed functions and for a sandbox', async () => {
    const anonymous = client(svc.url);
    const all = await anonymous.get<Body>('/api/catalog?limit=100');
    expect(all.body.data.map((f: Body) => f.id)).to.include(extId);
    expectFits('catalog.list', all);
    expectFits('catalog.list', await anonymous.get<Body>('/api/catalog?tag=schemas'));
    const mine = await owned.get<Body>('/api/catalog?search=schemas-');
    expect(mine.body.data.find((f: Body) => f.id === extId)).to.include({ label: 'yours' }).and.have.property('endpoint_url');
    expectFits('catalog.list', mine);
    expectFits('catalog.list', await client(svc.url, { 'x-api-key': sandbox.key }).get<Body>('/api/catalog'));
    expectFits('catalog.read', await anonymous.get<Body>('/api/catalog/cost-plus'));
    expectFits('catalog.read', await anonymous.get<Body>(`/api/catalog/${extId}`));
    const own = await owned.get<Body>(`/api/catalog/${extId}`);
    expect(own.body.function).to.have.property('commission_pct', '30');
    expectFits('catalog.read', own);
  });

  it('observations contributed (recent, and too old to count) and listed (contributions and an accepted outcome) fit the declared schemas', async () => {
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
    const recent = await owned.post<Body>('/api/data/observations', { observations: [{ product_type: 'schemas-gadget', currency: 'usd', amount: '20.50', observed_at: hoursAgo(2), source: 'shelf', context: { region: 'eu' } }] });
    expect(recent.body).to.not.have.property('warnings');
    expectFits('observations.create', recent, 201);
    const old = await client(svc.url, { cookie: owner.cookie }).post<Body>('/api/data/observations', { observations: [{ product_type: 'schemas-gadget', currency: 'USD', amount: '19', observed_at: hoursAgo(24 * 150), source: 'archive' }] });
    expect(old.body.warnings).to.have.length(1);
    expectFits('observations.create', old, 201);

    const priced = await owned.post<Body>('/api/compute/price', { context: { product_type: 'schemas-tea', current_price: 3.2, region: 'eu' } });
    expect(priced.status, priced.text).to.equal(200);
    const outcome = await owned.patch<Body>(`/api/usage/events/${priced.body.receipt.usage_event_id}/outcome`, { outcome: 'accepted', quality_score: 0.9 });
    expect(outcome.status, outcome.text).to.equal(200);
    const accepted = await owned.get<Body>('/api/data/observations?origin=accepted_outcome');
    expect(accepted.body.data[0]).to.include({ origin: 'accepted_outcome', usage_event_id: priced.body.receipt.usage_event_id });
    expectFits('observations.list', accepted);
    expectFits('observations.list', await client(svc.url, { authorization: `Bearer ${owner.token}` }).get<Body>('/api/data/observations?limit=1'));
  });

  it('the leaderboard, with usage published and below the threshold, and its scoring fit the declared schemas', async () => {
    await svc.container.resolve<LeaderboardAggregator>(CATALOG.Aggregator).refresh();
    const board = await client(svc.url).get<Body>('/api/public/leaderboard?limit=100');
    const statuses = (board.body.data as Body[]).map((e) => e.stats.usage_status);
    expect(statuses).to.include.members(['published', 'below_threshold']);
    expect((board.body.data as Body[]).some((e) => e.stats.average_confidence !== null && e.stats.acceptance_rate !== null)).to.equal(true);
    expectFits('leaderboard.read', board);
    expectFits('leaderboard.read', await client(svc.url, { 'x-api-key': ownerKey }).get<Body>('/api/public/leaderboard?limit=1'));
    expectFits('leaderboard.scoring', await client(svc.url).get<Body>('/api/public/leaderboard/scoring'));
  });

  it('a nested field the schema lacks fails the check, where an open-ended object lets it through', () => {
    const read = declaredSchema(svc, 'functions.read');
    expect(undeclared(read, { function: { id: 'fn_x', surprise: 1 }, breaker: { state: 'closed' } })).to.deep.equal(['$.function.surprise']);
    const test = declaredSchema(svc, 'functions.test');
    expect(undeclared(test, { example: { context: { anything: { deep: true } } }, result: { details: { own: 1 } } })).to.deep.equal([]);
  });

  it('checked a real answer of every listed route', () => {
    expect([...checked].sort()).to.deep.equal(ROUTES.map(([id]) => id).sort());
  });

  it("the OpenAPI document describes each route's success body with its declared fields, not an object of anything", async () => {
    const doc = (await client(svc.url).get<Body>('/api/openapi.json?format=json')).body;
    const resolve = (s: Body): Body => (typeof s.$ref === 'string' ? doc.components.schemas[s.$ref.split('/').pop() as string] : s);
    for (const [id, method, path, status] of ROUTES) {
      const op = doc.paths[path][method];
      expect(op.operationId).to.equal(id);
      const schema = resolve(op.responses[String(status)].content['application/json'].schema);
      expect(Object.keys(schema.properties ?? {}).sort(), id).to.deep.equal(Object.keys(declaredSchema(svc, id, status).shape).sort());
    }
  });
});
