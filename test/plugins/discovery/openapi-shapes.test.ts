import { expect } from 'chai';
import { errorBodySchema } from '../../../core/errors';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { expectFitsDeclared } from '../../support/response-schema';
import { createKey, mintToken, registerSandbox, signUp } from '../../support/world';

type Body = Record<string, any>;

/**
 * Shapes the service knows, typed in the OpenAPI document instead of left open (a generated client
 * would make them `unknown`): request bodies, fields of answers, the common Error shape.
 */
describe('OpenAPI: known shapes typed', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  let doc: Body;
  let key: string;
  /** A schema, or the component its $ref names. */
  const resolve = (s: Body): Body => (typeof s.$ref === 'string' ? (doc.components.schemas[s.$ref.split('/').pop() as string] as Body) : s);
  /** The JSON request body schema of an operation. */
  const requestSchema = (path: string, method = 'post'): Body => doc.paths[path][method].requestBody.content['application/json'].schema;

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 500, { error: 'boom' }));
    // A loopback function to fail, one demo call an hour and one sandbox call a day: the refusals are quick to reach.
    svc = await startTestService({ config: { outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 0 }, limits: { demo: { callsPerHour: 1 }, sandbox: { computeCallsPerDay: 1 } } } });
    doc = (await client(svc.url).get<Body>('/api/openapi.json?format=json')).body;
    key = (await createKey(svc, await signUp(svc, 'shapes'), { name: 'shapes' })).key;
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  it('documents a batch item as the BatchItem schema (no catch-all branch), while an invalid item is still answered in its place under 200', async () => {
    const items = requestSchema('/api/compute/batch').properties.items;
    expect(items.description).to.match(/fails validation is answered in its place with its error/);
    const branches: Body[] = items.items.anyOf ?? [items.items];
    expect(branches.map((b) => b.$ref)).to.deep.equal(['#/components/schemas/BatchItem']);
    const item = resolve(branches[0] as Body);
    expect(item).to.include({ type: 'object', additionalProperties: false });
    expect(item.required).to.deep.equal(['context']);
    expect(Object.keys(item.properties)).to.have.members(['context', 'function_id', 'routing_preference']);

    const res = await client(svc.url, { 'x-api-key': key }).post<Body>('/api/compute/batch', { items: [{ context: { current_price: 3 } }, 'not an item'] });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.items.map((i: { status: number }) => i.status)).to.deep.equal([200, 400]);
    expect(res.body.items[1].error.code).to.equal('validation_error');
    // The answer's items name their result's schema (docs/agents.md lists BatchItemResult), for generated clients to type.
    const answered = doc.paths['/api/compute/batch'].post.responses['200'].content['application/json'].schema;
    const resultSchema = resolve(answered).properties.items.items.properties.result;
    expect(resultSchema).to.deep.equal({ $ref: '#/components/schemas/BatchItemResult' });
    expect(doc.components.schemas.BatchItemResult.description).to.match(/status 200/);
  });

  it('marks a request body required exactly where an empty one is refused: rotation and the claim link take none, compute and registration need theirs', async () => {
    const required = (path: string, method = 'post'): unknown => doc.paths[path][method].requestBody.required;
    expect(required('/api/api-keys/rotate')).to.equal(false);
    expect(required('/api/agents/claim-link')).to.equal(false);
    expect(required('/api/workspaces/{workspace_id}/leave')).to.equal(false);
    expect(required('/api/compute/price')).to.equal(true);
    expect(required('/api/functions')).to.equal(true);
    // As declared: a sandbox asks for its claim link with no body at all.
    const sandbox = await registerSandbox(svc);
    const link = await client(svc.url).raw('POST', '/api/agents/claim-link', { headers: { 'x-api-key': sandbox.key } });
    expect(link.status, link.text).to.equal(201);
    const compute = await client(svc.url).raw<Body>('POST', '/api/compute/price', { headers: { 'x-api-key': key } });
    expect(compute.status, compute.text).to.equal(400);
  });

  it("types GET /api/me's token fields as the route answers them: expires_at a date-time, key_id the key's id", async () => {
    const token = resolve(doc.paths['/api/me'].get.responses['200'].content['application/json'].schema).properties.token;
    expect(token.properties.expires_at).to.include({ type: 'string', format: 'date-time' });
    expect(token.properties.key_id).to.include({ type: 'string' });
    expect(token.properties.expires_at.description).to.be.a('string').and.not.be.empty;
    expect(token.properties.key_id.description).to.be.a('string').and.not.be.empty;
    expect(token.required).to.have.members(['expires_at', 'key_id']);

    // An agent key is exchanged for a token (a person's key is used directly).
    const agent = await registerSandbox(svc, 'shapes-token');
    const me = await client(svc.url, { authorization: `Bearer ${await mintToken(svc, agent.key)}` }).get<Body>('/api/me');
    expect(me.status, me.text).to.equal(200);
    expect(me.body.token.key_id).to.equal(agent.keyId);
    expect(Date.parse(me.body.token.expires_at)).to.be.greaterThan(Date.now());
    expectFitsDeclared(svc, 'me.read', me.body);
  });

  it('declares every field of real refusals in the Error schema: each kind parses with it made strict (no undeclared top-level field), request_id matching X-Request-Id', async () => {
    const owner = await signUp(svc, 'shapes-errors');
    const api = client(svc.url, { 'x-api-key': key });
    const narrow = (await createKey(svc, owner, { name: 'narrow', scopes: ['billing:read'] })).key;
    const sandbox = await registerSandbox(svc, 'shapes-errors-sandbox');
    // A function that fails, in a workspace of its own so the others' calls do not route to it.
    const failer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'shapes-failing'), { name: 'failing' })).key });
    const failing = await failer.post<Body>('/api/functions', { name: `shapes-failing-${Date.now()}`, execution_type: 'external_api', endpoint_url: upstream.url('/fail'), cost_per_unit: '0.002' });
    expect(failing.status, failing.text).to.equal(201);
    const fnId = failing.body.function.id as string;
    expect((await failer.patch(`/api/functions/${fnId}`, { status: 'active' })).status).to.equal(200);
    // A default policy no function fits, in a workspace of its own so the calls above route as usual.
    const tight = client(svc.url, { 'x-api-key': (await createKey(svc, owner, { name: 'tight' })).key });
    const policy = await tight.post<Body>('/api/routing-policies', { is_default: true, name: 'too tight', strategy: 'cheapest', config: { candidates: ['cost-plus', 'fn_nowhere'], max_cost_per_unit: '0.0005' } });
    expect(policy.status, policy.text).to.equal(201);
    const demo = () => client(svc.url).post<Body>('/api/public/compute/demo', { context: { current_price: 10, currency: 'USD' } });
    const sandboxApi = client(svc.url, { 'x-api-key': sandbox.key });

    const refusals: Array<[number, string, HttpResult<Body>, string[]]> = [
      [401, 'unauthorized', await client(svc.url).get<Body>('/api/me'), ['next', 'retryable']],
      [401, 'invalid_credentials', await client(svc.url, { 'x-api-key': 'pcs_nonsense' }).get<Body>('/api/me'), ['next', 'retryable']],
      [400, 'validation_error', await api.post<Body>('/api/compute/price', { context: { current_price: 'x' } }), ['issues', 'example']],
      [403, 'insufficient_scope', await client(svc.url, { 'x-api-key': narrow }).post<Body>('/api/compute/price', { context: { current_price: 1 } }), ['required_scopes']],
      [403, 'plan_restricted', await sandboxApi.post<Body>('/api/compute/batch', { items: [{ context: { current_price: 1 } }] }), ['plan', 'reason', 'next']],
      [404, 'function_not_found', await api.post<Body>('/api/compute/price', { context: { unit_cost: 2 }, function_id: 'cost-plus' }), ['suggested_function_id']],
      [422, 'insufficient_context', await api.post<Body>('/api/compute/price', { context: { product_type: 'tea' } }), ['missing', 'inputs_by_function', 'attempts']],
      [422, 'no_eligible_function', await tight.post<Body>('/api/compute/price', { context: { unit_cost: 10 } }), ['strategy', 'policy_id', 'candidates']],
      [502, 'functions_failed', await failer.post<Body>('/api/compute/price', { context: { current_price: 10 }, function_id: fnId }), ['retryable', 'attempts']],
    ];
    expect((await demo()).status).to.equal(200);
    refusals.push([429, 'rate_limited', await demo(), ['retry_after', 'limit', 'next']]);
    expect((await sandboxApi.post('/api/compute/price', { context: { current_price: 1 } })).status).to.equal(200);
    refusals.push([429, 'daily_quota_exceeded', await sandboxApi.post<Body>('/api/compute/price', { context: { current_price: 1 } }), ['limit', 'next']]);

    const strict = errorBodySchema.strict();
    for (const [status, code, res, fields] of refusals) {
      expect(res.status, `${code}: ${res.text}`).to.equal(status);
      expect(res.body.code).to.equal(code);
      expect(res.body, code).to.include.keys(fields);
      expect(res.body.request_id, code).to.equal(res.headers.get('x-request-id'));
      const parsed = strict.safeParse(res.body);
      expect(parsed.success, parsed.success ? '' : `${code}: ${JSON.stringify(parsed.error.issues)}`).to.equal(true);
    }
    // Next steps of every kind: a request (path, body), one repeating this request with a header, one not offered yet.
    const steps = refusals.flatMap(([, , res]) => (res.body.next ?? []) as Body[]);
    expect(steps.some((step) => step.header === 'X-PAYMENT' && step.available === false), JSON.stringify(steps)).to.equal(true);
    // A field no route sends fails the strict parse: the check has teeth.
    expect(strict.safeParse({ ...refusals[0]?.[2].body, undeclared_field: 1 }).success).to.equal(false);
  });

  it("states timeout_ms's ceiling as the one enforced (COMPUTE_CALL_MAX_MS, a setting), not a fixed maximum a client would trust and be refused below", async () => {
    for (const [path, method] of [['/api/functions', 'post'], ['/api/functions/{id}', 'patch']] as const) {
      const timeout = resolve(requestSchema(path, method)).properties.timeout_ms as Body;
      // A PATCH also takes null: back to the service default.
      expect(timeout.type, `${method} ${path}`).to.deep.equal(method === 'patch' ? ['integer', 'null'] : 'integer');
      expect(timeout, `${method} ${path}`).to.include({ minimum: 50 });
      expect(timeout, `${method} ${path}`).to.not.have.property('maximum');
      expect(timeout.description).to.contain('at most COMPUTE_CALL_MAX_MS (25000 by default');
    }
    const api = client(svc.url, { 'x-api-key': key });
    const refused = await api.post<Body>('/api/functions', { name: `timeout-${Date.now()}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/p', cost_per_unit: '0.001', timeout_ms: 26_000 });
    expect(refused.status, refused.text).to.equal(400);
    expect(refused.body.issues).to.deep.equal([{ path: 'timeout_ms', reason: 'must be at most 25000 (COMPUTE_CALL_MAX_MS, the time budget of one priced call, fallbacks included)' }]);
  });

  it('documents the MCP POST body as one JSON-RPC 2.0 request (jsonrpc, id, method, params), not an object of anything; a batch is refused', async () => {
    const schema = resolve(requestSchema('/api/mcp/rpc'));
    expect(schema.properties.jsonrpc.enum).to.deep.equal(['2.0']);
    expect(schema.properties.id.anyOf.map((b: Body) => b.type)).to.have.members(['string', 'number']);
    expect(schema.properties.method).to.include({ type: 'string' });
    expect(schema.properties.params).to.include({ type: 'object' });
    expect(schema.required).to.have.members(['jsonrpc', 'method']);
    expect(schema.description).to.match(/batch .* is refused/);

    const mcp = client(svc.url, { 'x-api-key': key, accept: 'application/json, text/event-stream' });
    const listed = await mcp.post<Body>('/api/mcp/rpc', { jsonrpc: '2.0', id: 'a1', method: 'tools/list', params: {} });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body).to.include({ jsonrpc: '2.0', id: 'a1' });
    expect((await mcp.post('/api/mcp/rpc', { jsonrpc: '2.0', method: 'notifications/initialized' })).status).to.equal(202);
    const batch = await mcp.post<Body>('/api/mcp/rpc', [{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect(batch.status).to.equal(400);
    expect(batch.body.error.code).to.equal(-32600);
  });
});
