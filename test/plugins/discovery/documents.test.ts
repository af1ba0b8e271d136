import { expect } from 'chai';
import { errorStatus } from '../../../core/errors';
import type { ErrorCode } from '../../../core/errors';
import { PAYMENT_CODES } from '../../../plugins/discovery/error-guide';
import { parse as parseYaml } from 'yaml';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Router } from 'express';
import { METHOD_NOT_ALLOWED } from '../../../core/http/pipeline';
import { startTestService } from '../../support/service';
import { signUp } from '../../support/world';
import type { TestService } from '../../support/service';
import { call, client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { openApiPath } from '../../../plugins/discovery';
import type { RouteSpec } from '../../../core/http/route';

/**
 * Whether a handler can answer 201: it calls `created(…)` (compiled as `(0, route_1.created)(…)`) or
 * names the status itself (`status: 201`, a `201` passed to a reply helper).
 */
const canCreate = (spec: RouteSpec): boolean => /\bcreated\)?\(|\b201\b/.test(spec.handler.toString());

/** Every method+path the Express router serves from declared routes (405 fallbacks excluded). */
function mountedOperations(router: Router): string[] {
  const out: string[] = [];
  for (const layer of router.stack as Array<{ route?: { path: string; methods: Record<string, boolean>; stack: unknown[] } }>) {
    if (!layer.route) continue;
    // A 405 mounted ahead of a parameterised route (GET /api/agents/register) is no operation.
    if ((layer.route.stack as Array<{ name: string }>).every((h) => h.name === METHOD_NOT_ALLOWED)) continue;
    const methods = Object.keys(layer.route.methods).filter((m) => m !== '_all');
    for (const m of methods) out.push(`${m.toUpperCase()} ${layer.route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  }
  return out.sort();
}

/** Every address a document names under `base` (with its method when it gives one) that no registered route serves; a sentence's full stop is not part of it. */
function unserved(svc: TestService, doc: string, base: string): string[] {
  const served = svc.routes.all().map(({ spec }) => ({ method: spec.method.toUpperCase(), matcher: new RegExp(`^${spec.path.replace(/:[A-Za-z0-9_]+/g, '[^/]+')}$`) }));
  const escaped = base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const named = [...doc.matchAll(new RegExp(`(?:(GET|POST|PUT|PATCH|DELETE) )?${escaped}(/[^\\s,)"?;:]*)`, 'g'))];
  expect(named.length).to.be.greaterThan(3);
  return named.filter(([, method, path]) => !served.some((r) => (!method || r.method === method) && r.matcher.test((path ?? '').replace(/\.$/, '')))).map(([m]) => m);
}

describe('discovery documents and OpenAPI', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: { server: { publicUrl: 'https://pricing.example.com/' }, limits: { registrations: { perAddressPerDay: 7, overallPerDay: 321 }, sandbox: { computeCallsPerDay: 17 } } } });
  });
  after(() => svc.close());

  it('serves OpenAPI as YAML by default and as JSON with format=json or Accept: application/json', async () => {
    const api = client(svc.url);
    const yaml = await api.get('/api/openapi.json');
    expect(yaml.status).to.equal(200);
    expect(yaml.headers.get('content-type')).to.match(/yaml/);
    const fromYaml = parseYaml(yaml.text) as Record<string, any>;
    expect(fromYaml.openapi).to.match(/^3\.1/);
    const json = await api.get<Record<string, any>>('/api/openapi.json?format=json');
    expect(json.headers.get('content-type')).to.match(/application\/json/);
    expect(json.body.openapi).to.equal(fromYaml.openapi);
    const accept = await api.get<Record<string, any>>('/api/openapi.json', { accept: 'application/json' });
    expect(accept.headers.get('content-type')).to.match(/application\/json/);
    expect(accept.body).to.deep.equal(json.body);
  });

  it('marks OpenAPI chosen by Accept as varying on Accept, so a shared cache keeps YAML and JSON apart', async () => {
    const api = client(svc.url);
    for (const accept of [undefined, 'application/json', 'application/yaml']) {
      const res = await api.get('/api/openapi.json', accept ? { accept } : {});
      expect(res.status).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('public, max-age=60');
      expect(res.headers.get('vary'), `Accept: ${accept}`).to.equal('Accept');
    }
    // With format in the address the answer does not depend on Accept.
    const fixed = await api.get('/api/openapi.json?format=json', { accept: 'application/yaml' });
    expect(fixed.headers.get('content-type')).to.match(/application\/json/);
    expect(fixed.headers.get('vary')).to.equal(null);
  });

  it('answers the base URL with where to start: the documents, a free key and the keyless demo, each a link it serves', async () => {
    const res = await client(svc.url).get<Record<string, any>>('/');
    expect(res.status).to.equal(200);
    expect(res.body.documents).to.deep.equal({
      llms_txt: 'https://pricing.example.com/llms.txt',
      agents_json: 'https://pricing.example.com/.well-known/agents.json',
      mcp_json: 'https://pricing.example.com/.well-known/mcp.json',
      openapi: 'https://pricing.example.com/api/openapi.json',
    });
    expect(res.body.get_a_key).to.deep.include({ method: 'POST', url: 'https://pricing.example.com/api/agents/register', body: { name: 'my-pricing-agent' } });
    expect(res.body.try_without_a_key).to.include({ method: 'POST', url: 'https://pricing.example.com/api/public/compute/demo' });
    // Each link is served here (the public URL stands for this instance).
    for (const url of Object.values(res.body.documents as Record<string, string>)) expect((await fetch(url.replace('https://pricing.example.com', svc.url))).status, url).to.equal(200);
    // A path nothing serves points at it.
    const missing = await client(svc.url).get<Record<string, any>>('/no/such/path');
    expect(missing.status).to.equal(404);
    expect(missing.body.hint).to.contain('GET / says where to start').and.contain('/llms.txt').and.contain('POST /api/agents/register');
  });

  it('lists the production server only (PUBLIC_URL without its trailing slash, as every link)', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    expect(doc.servers).to.deep.equal([{ url: 'https://pricing.example.com', description: 'Production' }]);
  });

  it('describes every mounted route, and nothing that is not mounted, besides the 405 a route declares for a method the path lacks', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const documented = Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([m, op]) => ({ operation: `${m.toUpperCase()} ${path}`, refusedOnly: Object.keys(op.responses).every((status) => status === '405') })),
    );
    expect(documented.filter((d) => !d.refusedOnly).map((d) => d.operation).sort()).to.deep.equal(mountedOperations(svc.router));
    // The 405-only operations are those missingMethods declares, each answered 405 as documented.
    const declared = svc.routes.all().flatMap(({ spec }) => Object.keys(spec.missingMethods ?? {}).map((m) => `${m.toUpperCase()} ${openApiPath(spec.path)}`));
    const refused = documented.filter((d) => d.refusedOnly).map((d) => d.operation);
    expect(refused.sort()).to.deep.equal([...new Set(declared)].sort());
    expect(refused).to.include.members(['GET /api/public/compute/demo', 'GET /api/public/price-router/verify', 'DELETE /api/functions/{id}']);
    for (const operation of refused) {
      const [method, path] = operation.split(' ') as [string, string];
      const res = await call(svc.url, method, path.replace(/\{[^}]+\}/g, 'fn_missing'));
      expect(res.status, operation).to.equal(405);
      expect(res.headers.get('allow'), operation).to.be.a('string').and.not.include(method);
    }
  });

  it('passes the OpenAPI linter (Redocly recommended rules) without errors', async () => {
    const text = (await client(svc.url).get('/api/openapi.json?format=json')).text;
    const oc = await import('@redocly/openapi-core');
    const config = await oc.createConfig({ extends: ['recommended'] });
    const problems = await oc.lintDocument({ document: oc.makeDocumentFromString(text, '/openapi.json'), config: config, externalRefResolver: new oc.BaseResolver() });
    const errors = problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message}`);
    expect(errors).to.deep.equal([]);
  });

  it('gives every pattern as an ECMA-262 regular expression that compiles, without a leaked /flags suffix', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const patterns: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === 'pattern' && typeof v === 'string') patterns.push(v);
          else walk(v);
        }
      }
    };
    walk(doc);
    expect(patterns).not.to.be.empty;
    for (const p of patterns) {
      expect(p, p).not.to.match(/\/[a-z]+$/);
      expect(() => new RegExp(p, 'u'), p).not.to.throw();
    }
  });

  it('documents 201 on exactly the operations whose handler can answer 201', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const responsesOf = (spec: RouteSpec): Record<string, unknown> => doc.paths[openApiPath(spec.path)][spec.method].responses;
    const creating = svc.routes.all().filter(({ spec }) => canCreate(spec)).map(({ spec }) => spec);
    // The detection itself: these are known to answer 201 (a new wallet account on sign-in).
    expect(creating.map((s) => s.id)).to.include.members(['apiKeys.rotate', 'auth.signup', 'user.wallets.link', 'auth.wallet.signin', 'agents.register', 'oauth.register']);
    const undocumented = creating.filter((spec) => !('201' in responsesOf(spec))).map((s) => s.id);
    expect(undocumented, 'answer 201, documented without it').to.deep.equal([]);
    const unfounded = svc.routes.all().filter(({ spec }) => !canCreate(spec) && '201' in responsesOf(spec)).map(({ spec }) => spec.id);
    expect(unfounded, 'documented 201, never answer it').to.deep.equal([]);
    // Wallet sign-in answers 200 for a known wallet: both are documented.
    expect(responsesOf(svc.routes.all().find(({ spec }) => spec.id === 'auth.wallet.signin')?.spec as RouteSpec)).to.include.keys('200', '201');
  });

  it('documents the content type each document is served in: text as a string, JSON as an object, both forms of OpenAPI', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const served: Array<[string, Record<string, string>?]> = [
      ['/llms.txt'],
      ['/.well-known/llms.txt'],
      ['/api/changelog/rss.xml'],
      ['/api/changelog/feed.json'],
      ['/changelog'],
      ['/api/openapi.json'],
      ['/api/openapi.json', { accept: 'application/json' }],
      ['/.well-known/agents.json'],
    ];
    for (const [path, headers] of served) {
      const res = await client(svc.url).get(path, headers);
      const type = (res.headers.get('content-type') ?? '').split(';')[0] ?? '';
      const media = doc.paths[path]?.get?.responses?.[String(res.status)]?.content?.[type];
      expect(media, `${path} answers ${res.status} ${type}`).to.be.an('object');
      expect(media.schema.type, `${path} ${type}`).to.equal(/json$/.test(type) ? 'object' : 'string');
    }
  });

  it('documents RFC 6749 error bodies on the OAuth endpoints, and the common Error shape as the service writes it', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const component = (ref: string): Record<string, any> => doc.components.schemas[ref.replace('#/components/schemas/', '')];
    /** The component schemas a documented response may be: its $ref, or each branch of anyOf/oneOf. */
    const documented = (path: string, status: number): Array<Record<string, any>> => {
      const responses = doc.paths[path].post.responses;
      let declared = responses[String(status)] ?? responses[`${String(status)[0]}XX`];
      // A refusal many operations share is a components.responses entry.
      if (declared.$ref) declared = doc.components.responses[(declared.$ref as string).replace('#/components/responses/', '')];
      const schema = declared.content['application/json'].schema;
      return (schema.$ref ? [schema] : [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]).map((x: { $ref: string }) => component(x.$ref));
    };
    /** Required fields present, and enumerated values among those listed. */
    const fits = (schema: Record<string, any>, body: Record<string, unknown>): boolean =>
      (schema.required as string[]).every((k) => k in body) &&
      Object.entries(schema.properties as Record<string, { enum?: unknown[] }>).every(([k, p]) => !(k in body) || !p.enum || p.enum.includes(body[k]));
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const answers: Array<[string, HttpResult]> = [
      ['/api/oauth/token', await call(svc.url, 'POST', '/api/oauth/token', { rawBody: 'grant_type=password', headers: form })],
      ['/api/oauth/token', await call(svc.url, 'POST', '/api/oauth/token', { rawBody: 'grant_type=client_credentials', headers: form })],
      ['/api/oauth/register', await client(svc.url).post('/api/oauth/register', { grant_types: ['password'] })],
      ['/api/oauth/register', await client(svc.url).post('/api/oauth/register', { client_name: 5 })],
      ['/api/compute/price', await client(svc.url).post('/api/compute/price', { context: {} }, { 'x-api-key': 'pcs_nonsense' })],
      ['/api/functions', await client(svc.url).post('/api/functions', {})],
      // MCP: transport refusals in JSON-RPC, a bad credential in the common shape.
      ['/api/mcp/rpc', await client(svc.url).post('/api/mcp/rpc', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'https://evil.example' })],
      ['/api/mcp/rpc', await client(svc.url).post('/api/mcp/rpc', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': 'not-a-session' })],
      ['/api/mcp/rpc', await client(svc.url).post('/api/mcp/rpc', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'x-api-key': 'pcs_nonsense' })],
    ];
    for (const [path, res] of answers) {
      expect(res.status, `${path}: ${res.text}`).to.be.within(400, 499);
      const schemas = documented(path, res.status);
      expect(schemas.some((schema) => fits(schema, res.body)), `${path} ${res.status} ${res.text} fits none of ${JSON.stringify(schemas.map((x) => x.required))}`).to.equal(true);
    }
    expect(answers.slice(0, 3).map(([, res]) => Object.keys(res.body).sort())).to.deep.equal([['code', 'error', 'error_description', 'hint'], ['code', 'error', 'error_description', 'hint'], ['code', 'error', 'error_description', 'hint']]);
    // Every field the Error component requires is one errorBody always writes, request_id included.
    expect(component('#/components/schemas/Error').required).to.have.members(['error', 'code', 'message', 'request_id']);
  });

  it('documents limit as what it accepts: a string of 1 to 100 with a string default, refused exactly when the pattern refuses it', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const limits = Object.values(doc.paths as Record<string, Record<string, { parameters?: Array<Record<string, any>> }>>)
      .flatMap((ops) => Object.values(ops))
      .flatMap((op) => op.parameters ?? [])
      .filter((p) => p.in === 'query' && p.name === 'limit');
    expect(limits).not.to.be.empty;
    const tried = ['1', '01', '20', '99', '100', '0', '000', '101', '500', '1e1', '-5', 'ten'];
    for (const { schema } of limits) {
      expect(schema.type).to.equal('string');
      const pattern = new RegExp(schema.pattern as string, 'u');
      expect(schema.default, 'the default is a value of the parameter').to.be.a('string').that.matches(pattern);
      expect(tried.filter((v) => pattern.test(v))).to.deep.equal(['1', '01', '20', '99', '100']);
    }
    for (const v of tried) {
      const res = await client(svc.url).get(`/api/catalog?limit=${v}`);
      expect(res.status, `limit=${v}`).to.equal(new RegExp(limits[0]?.schema.pattern as string, 'u').test(v) ? 200 : 400);
    }
  });

  it('documents the x-workspace-id header on exactly the operations a person may call, where it picks the workspace', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const headersOf = (spec: RouteSpec): string[] =>
      ((doc.paths[openApiPath(spec.path)][spec.method].parameters ?? []) as Array<{ in: string; name: string }>).filter((p) => p.in === 'header').map((p) => p.name.toLowerCase());
    const person = (spec: RouteSpec): boolean => spec.auth !== 'public' && (spec.accepts ?? ['person']).includes('person');
    const wrong = svc.routes.all().filter(({ spec }) => headersOf(spec).includes('x-workspace-id') !== person(spec)).map(({ spec }) => spec.id);
    expect(wrong, 'documented x-workspace-id where no person may call, or left it out where one may').to.deep.equal([]);
    expect(headersOf(svc.routes.all().find(({ spec }) => spec.id === 'me.read')?.spec as RouteSpec)).to.include('x-workspace-id');
    // The MCP transport's own headers, beside the workspace a person's credential picks.
    for (const method of ['post', 'get', 'delete'] as const) {
      const mcp = svc.routes.all().find(({ spec }) => spec.path === '/api/mcp/rpc' && spec.method === method)?.spec as RouteSpec;
      expect(headersOf(mcp), method).to.include.members(['mcp-session-id', 'mcp-protocol-version', 'x-workspace-id']);
    }
    // What it documents: a person's own workspace is chosen, another one is refused.
    const alice = await signUp(svc, 'ws-header');
    const own = await client(svc.url).get<Record<string, any>>('/api/me', { authorization: `Bearer ${alice.token}`, 'x-workspace-id': alice.workspaceId });
    expect(own.body.tenant_id, own.text).to.equal(alice.workspaceId);
    expect((await client(svc.url).get('/api/me', { authorization: `Bearer ${alice.token}`, 'x-workspace-id': 'ws_not_mine' })).status).to.equal(404);
  });

  it('gives every route example a body that passes the route\'s own body schema', () => {
    const failing = svc.routes
      .all()
      .filter(({ spec }) => spec.body && spec.example !== undefined)
      .map(({ spec }) => ({ id: spec.id, result: spec.body?.safeParse(spec.example) }))
      .filter(({ result }) => !result?.success)
      .map(({ id, result }) => `${id}: ${result?.error?.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
    expect(failing).to.deep.equal([]);
  });

  it('agents.json states ways in, self-registration with the limits in force, MCP, OpenAPI and the changelog object', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/.well-known/agents.json')).body;
    expect(doc.ways_in.map((w: { id: string }) => w.id)).to.include.members(['keyless_demo', 'self_registration', 'oauth_client_credentials', 'pay_per_call', 'person_account']);
    // Each keyless endpoint is "METHOD URL", the MCP endpoint too, which a client can use as it is.
    expect(doc.ways_in.find((w: { id: string }) => w.id === 'keyless_demo').endpoints).to.deep.equal([
      'POST https://pricing.example.com/api/public/compute/demo',
      'POST https://pricing.example.com/api/public/price-router/verify',
      'POST https://pricing.example.com/api/mcp/rpc',
    ]);
    expect(doc.self_registration.limits).to.deep.include({ per_address_per_day: 7, overall_per_day: 321 });
    expect(doc.self_registration.limits.sandbox.compute_calls_per_day).to.equal(17);
    expect(doc.mcp.endpoint).to.equal('https://pricing.example.com/api/mcp/rpc');
    expect(doc.openapi).to.equal('https://pricing.example.com/api/openapi.json');
    expect(doc.authentication.token_endpoint).to.equal('POST https://pricing.example.com/api/oauth/token');
    expect(doc.changelog).to.include.keys('json_feed', 'rss', 'page', 'agent_filter', 'check', 'newest_agent_entry');
    expect(doc.changelog.json_feed).to.equal('https://pricing.example.com/api/changelog/feed.json');
  });

  it('names only addresses this service serves in agents.json, mcp.json and llms.txt', async () => {
    const base = 'https://pricing.example.com';
    for (const path of ['/.well-known/agents.json', '/.well-known/mcp.json', '/llms.txt']) {
      const res = await client(svc.url).get(path);
      expect(res.status).to.equal(200);
      expect(unserved(svc, res.text, base), path).to.deep.equal([]);
    }
  });

  it('mcp.json advertises streamable-http, also http+jsonrpc, stateless sessions and their rules', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/.well-known/mcp.json')).body;
    expect(doc.transport).to.equal('streamable-http');
    expect(doc.transports).to.include('http+jsonrpc');
    expect(doc.sessions).to.equal('stateless');
    expect(doc.session_rules).to.include({ header: 'Mcp-Session-Id', required: false, valid_hours: 24 });
    expect(doc.changelog).to.include.keys('json_feed', 'rss', 'page', 'agent_filter', 'newest_agent_entry');
  });

  it('llms.txt is served at both addresses, identical, with the limits in force', async () => {
    const a = await client(svc.url).get('/llms.txt');
    const b = await client(svc.url).get('/.well-known/llms.txt');
    expect(a.status).to.equal(200);
    expect(a.headers.get('content-type')).to.match(/text\/plain/);
    expect(a.text).to.equal(b.text);
    expect(a.text).to.contain('7 per day per network address, 321 per day overall');
    expect(a.text).to.contain('17 compute calls per day');
    // What an agent may retry, and what it may not.
    expect(a.text).to.contain('Retry, after Retry-After, on retryable: true: 503 service_busy');
    expect(a.text).to.contain('422 insufficient_context is not retryable as is');
    expect(a.text).to.contain('17 compute calls per day (price verifications count as calls)');
  });

  it('explains in llms.txt every error code with its status and what to do, but the payment codes while no payments are served', async () => {
    const text = (await client(svc.url).get('/llms.txt')).text;
    for (const [code, httpStatus] of Object.entries(errorStatus)) {
      // The MCP tool timeout is a JSON-RPC error inside an HTTP 200, and says so.
      const status = code === 'upstream_timeout' ? 'JSON-RPC -32001' : httpStatus;
      const line = text.split('\n').find((l) => l.startsWith(`- ${status} ${code}: `));
      if (PAYMENT_CODES.includes(code as ErrorCode)) expect(line, code).to.equal(undefined);
      else expect(line, code).to.be.a('string').and.have.length.greaterThan(`- ${status} ${code}: `.length + 20);
    }
  });

  it('gives, in llms.txt and agents.json, request bodies that work as sent: the keyless verification and the registration', async () => {
    const text = (await client(svc.url).get('/llms.txt')).text;
    const line = text.split('\n').find((l) => l.includes('/api/public/price-router/verify (keyless'));
    const body = JSON.parse(/: (\{.*\}) answers/.exec(line ?? '')?.[1] ?? 'null') as unknown;
    const verdict = await client(svc.url).post<Record<string, any>>('/api/public/price-router/verify', body);
    expect(verdict.status, verdict.text).to.equal(200);
    expect(verdict.body.verdict).to.be.a('string');
    const agents = await client(svc.url).get<Record<string, any>>('/.well-known/agents.json');
    const registered = await client(svc.url).post<Record<string, any>>('/api/agents/register', agents.body.self_registration.body);
    expect(registered.status, registered.text).to.equal(201);
    expect(registered.body.agent.name).to.equal('my-pricing-agent');
  });
});

describe('discovery documents of a service without the accounts, pricing, verification and mcp plugins', function () {
  this.timeout(30_000);
  const base = 'https://pricing.example.com';
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ enabled: ['health', 'identity', 'discovery'], config: { server: { publicUrl: base } } });
  });
  after(() => svc.close());

  it('agents.json names only addresses the service serves and no MCP endpoint', async () => {
    const res = await client(svc.url).get<Record<string, any>>('/.well-known/agents.json');
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('public, max-age=60');
    expect(unserved(svc, res.text, base)).to.deep.equal([]);
    expect(res.body).not.to.have.property('mcp');
    expect(res.text).not.to.contain('/api/mcp/rpc');
    expect(res.text).not.to.contain('mcp.json');
    expect(res.body.ways_in.map((w: { id: string }) => w.id)).to.deep.equal(['self_registration', 'oauth_client_credentials', 'pay_per_call', 'agent_owned_workspace']);
    expect(res.body.self_registration.endpoint).to.equal(`${base}/api/agents/register`);
  });

  it('llms.txt names only addresses the service serves, and neither MCP nor its tools', async () => {
    const res = await client(svc.url).get('/llms.txt');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/text\/plain/);
    expect(unserved(svc, res.text, base)).to.deep.equal([]);
    expect(res.text).not.to.match(/MCP|compute_price|mcp\.json|## Price/);
    expect(res.text).to.contain(`- Discovery: ${base}/.well-known/agents.json.\n`);
    // Explained only where their routes are served: invitations (team) and verification are not; /readyz (health) is.
    expect(res.text).not.to.match(/^- \d+ gone: /m);
    expect(res.text).to.match(/^- 503 not_ready: /m);
    expect(res.text).not.to.contain('price verifications count as calls');
    expect(res.text).not.to.contain('data contributions');
    // Nor the pricing engine's codes and retries, with no pricing plugin here; registration's pause, which is served, is.
    for (const code of ['function_not_found', 'function_draft', 'no_eligible_function', 'insufficient_context', 'functions_failed', 'service_busy', 'pipeline_execution_unavailable']) {
      expect(res.text, code).not.to.contain(code);
    }
    expect(res.text).not.to.contain('Priced calls');
    expect(res.text).to.match(/^- 503 self_registration_closed: /m);
  });

  it('OpenAPI offers neither the MCP manifest (a 404 here) nor a person\'s credentials and x-workspace-id where a key also serves (nobody signs in here)', async () => {
    const doc = JSON.parse((await client(svc.url).get('/api/openapi.json?format=json')).text) as Record<string, any>;
    expect(doc.paths).to.not.have.property('/.well-known/mcp.json');
    const me = doc.paths['/api/me'].get as Record<string, any>;
    expect(me.security.flatMap((r: Record<string, unknown>) => Object.keys(r))).to.include('ApiKey').and.not.include.members(['PersonToken']).and.not.include('Session');
    expect((me.parameters ?? []).map((p: { name: string }) => p.name)).to.not.include('x-workspace-id');
    // A route a person alone may call keeps saying so (it answers 401 to everyone here).
    const confirm = doc.paths['/api/agents/claim/{token}'].post as Record<string, any>;
    expect(confirm.security.flatMap((r: Record<string, unknown>) => Object.keys(r))).to.include('PersonToken');
  });

  it('promises neither prices nor verdicts where neither is served: agents.json, llms.txt and / say so', async () => {
    const said = 'This instance serves neither prices nor verdicts (its operator turned them off); its OpenAPI document lists what it serves.';
    expect((await client(svc.url).get<Record<string, any>>('/.well-known/agents.json')).body.description).to.equal(said);
    const llms = (await client(svc.url).get('/llms.txt')).text;
    expect(llms).to.contain(`> A network service that computes prices. ${said}`);
    expect(llms).to.not.match(/get a verdict|get a computed price/);
    expect((await client(svc.url).get<Record<string, any>>('/')).body.description).to.match(/serves neither prices nor verdicts/);
  });

  it('answers /.well-known/mcp.json with 404 not_found and a hint', async () => {
    const res = await client(svc.url).get('/.well-known/mcp.json');
    expect(res.status).to.equal(404);
    expect(res.body.code).to.equal('not_found');
    expect(res.body.hint).to.be.a('string').and.contain('agents.json');
    expect(res.headers.get('cache-control')).to.equal(null);
  });
});

describe('discovery documents of a service without the verification plugin', function () {
  this.timeout(30_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ enabled: ['health', 'identity', 'accounts', 'team', 'usage', 'pricing', 'catalog', 'discovery', 'mcp'] });
  });
  after(() => svc.close());

  it('describes prices and no verdicts in agents.json, llms.txt and /, as it serves them', async () => {
    expect((await client(svc.url).get<Record<string, any>>('/.well-known/agents.json')).body.description).to.equal('Send a context, get a computed price.');
    const llms = (await client(svc.url).get('/llms.txt')).text;
    expect(llms).to.contain('> A network service that computes prices. Send a context and get a computed price.\n');
    expect(llms).to.not.match(/verdict/);
    expect((await client(svc.url).get<Record<string, any>>('/')).body.description).to.equal('Computes prices for a context with built-in, workspace and marketplace pricing functions.');
  });
});

describe('a service without the discovery plugin', function () {
  this.timeout(30_000);
  it('answers an unknown path with a hint naming what it serves, not GET / (itself a 404 here)', async () => {
    const svc = await startTestService({ enabled: ['health', 'identity'] });
    try {
      const res = await client(svc.url).get<Record<string, any>>('/nowhere');
      expect(res.status).to.equal(404);
      expect(res.body.hint).to.equal('See POST /api/agents/register for a free key.');
      expect((await client(svc.url).get('/')).status).to.equal(404);
    } finally {
      await svc.close();
    }
  });
});

describe('changelog feeds', function () {
  this.timeout(30_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  it('publishes a JSON Feed 1.1 with items[]._service.audience, and an agent filter', async () => {
    const res = await client(svc.url).get('/api/changelog/feed.json');
    expect(res.headers.get('content-type')).to.match(/application\/feed\+json/);
    const feed = JSON.parse(res.text) as Record<string, any>;
    expect(feed.version).to.equal('https://jsonfeed.org/version/1.1');
    expect(feed.items.length).to.be.greaterThan(0);
    for (const item of feed.items) {
      expect(item).to.include.keys('id', 'url', 'title', 'date_published');
      expect(item._service.audience).to.be.an('array');
    }
    const agents = JSON.parse((await client(svc.url).get('/api/changelog/feed.json?audience=agents')).text) as Record<string, any>;
    expect(agents.items.every((i: { _service: { audience: string[] } }) => i._service.audience.includes('agents'))).to.equal(true);
    expect(agents.items.length).to.be.lessThan(feed.items.length);
    // A feed names itself (feed_url is its identity to readers): the filtered one with its filter.
    expect(feed.feed_url).to.equal(`${svc.url}/api/changelog/feed.json`);
    expect(agents.feed_url).to.equal(`${svc.url}/api/changelog/feed.json?audience=agents`);
  });

  it('publishes RSS 2.0 that parses as XML', async () => {
    const res = await client(svc.url).get('/api/changelog/rss.xml');
    expect(res.headers.get('content-type')).to.match(/application\/rss\+xml/);
    expect(XMLValidator.validate(res.text)).to.equal(true);
    const rss = new XMLParser({ ignoreAttributes: false }).parse(res.text) as Record<string, any>;
    expect(rss.rss['@_version']).to.equal('2.0');
    expect(rss.rss.channel.item.length).to.be.greaterThan(0);
    expect(rss.rss.channel['atom:link']['@_href']).to.equal(`${svc.url}/api/changelog/rss.xml`);
    const people = new XMLParser({ ignoreAttributes: false }).parse((await client(svc.url).get('/api/changelog/rss.xml?audience=people')).text) as Record<string, any>;
    expect(people.rss.channel['atom:link']['@_href']).to.equal(`${svc.url}/api/changelog/rss.xml?audience=people`);
  });

  it('has a page', async () => {
    const res = await client(svc.url).get('/changelog');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/text\/html/);
    expect(res.text).to.contain('<h1>Changelog</h1>');
  });
});
