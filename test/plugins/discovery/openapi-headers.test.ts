import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import { call, client } from '../../support/http';
import type { HttpResult } from '../../support/http';

/** The response headers the OpenAPI document declares (components.headers), as sent. */
const LISTED = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'X-Demo-Budget-Limit',
  'X-Demo-Budget-Remaining',
  'X-Demo-Budget-Reset',
  'Idempotent-Replayed',
  'X-Service-Notices',
  'WWW-Authenticate',
  'Mcp-Session-Id',
  'Allow',
  'X-Request-Id',
  'ETag',
];

/**
 * Real answers of each kind (a success, 401, 403, 429, a demo call, an idempotent replay, MCP
 * initialize): their status is declared for the operation, and every listed header they carry is
 * declared for that operation and status (or its range).
 */
describe('OpenAPI: refusal statuses and response headers as the service sends them', function () {
  this.timeout(60_000);
  let svc: TestService;
  let doc: Record<string, any>;
  before(async () => {
    svc = await startTestService({ config: { limits: { rateLimit: { perWorkspacePerMinute: 6, perAddressPerMinute: 1000 } } } });
    doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
  });
  after(() => svc.close());

  /** A response as declared: inline, or a refusal shared in components.responses. */
  function resolved(r: Record<string, any> | undefined): Record<string, any> | undefined {
    return r?.$ref ? doc.components.responses[(r.$ref as string).replace('#/components/responses/', '')] : r;
  }

  /** The answer's status and headers against the document's operation. */
  function expectDeclared(method: string, path: string, res: HttpResult<unknown>): void {
    const op = doc.paths[path]?.[method];
    expect(op, `${method} ${path} documented`).to.be.an('object');
    const status = String(res.status);
    const declared = resolved(op.responses[status] ?? op.responses[`${status[0]}XX`]);
    expect(declared, `${method} ${path} ${status} declared`).to.be.an('object');
    const headers = Object.keys(declared?.headers ?? {}).map((h) => h.toLowerCase());
    for (const name of LISTED) {
      if (res.headers.get(name) === null) continue;
      expect(headers, `${method} ${path} ${status} sends ${name}`).to.include(name.toLowerCase());
      expect(doc.components.headers[name], `components.headers.${name}`).to.be.an('object');
    }
  }

  it('declares every header listed in components.headers', () => {
    expect(Object.keys(doc.components.headers)).to.have.members(LISTED);
  });

  it('declares the statuses and headers of a success, a 401, a 403 insufficient_scope and a 429', async () => {
    const owner = await signUp(svc, 'openapi-headers');
    const key = (await createKey(svc, owner, { name: 'full' })).key;
    const narrow = (await createKey(svc, owner, { name: 'narrow', scopes: ['billing:read'] })).key;
    const body = { context: { current_price: 4.5, currency: 'USD' } };
    const ok = await client(svc.url).post('/api/compute/price', body, { 'x-api-key': key });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.headers.get('x-ratelimit-limit')).to.equal('6');
    expectDeclared('post', '/api/compute/price', ok);
    const me = await client(svc.url).get('/api/me', { 'x-api-key': key });
    expect(me.status).to.equal(200);
    expectDeclared('get', '/api/me', me);
    const none = await client(svc.url).post('/api/compute/price', body);
    expect(none.status).to.equal(401);
    expect(none.headers.get('www-authenticate')).to.be.a('string');
    expectDeclared('post', '/api/compute/price', none);
    const bad = await client(svc.url).get('/api/me', { 'x-api-key': 'pcs_usr_nonsense' });
    expect(bad.status).to.equal(401);
    expectDeclared('get', '/api/me', bad);
    const scoped = await client(svc.url).post('/api/compute/price', body, { 'x-api-key': narrow });
    expect(scoped.status, scoped.text).to.equal(403);
    expect((scoped.body).code).to.equal('insufficient_scope');
    expectDeclared('post', '/api/compute/price', scoped);
    let limited: HttpResult<unknown> | undefined;
    for (let i = 0; i < 10 && !limited; i++) {
      const res = await client(svc.url).get('/api/functions', { 'x-api-key': key });
      if (res.status === 429) limited = res;
      else expectDeclared('get', '/api/functions', res);
    }
    expect(limited?.headers.get('retry-after')).to.be.a('string');
    expectDeclared('get', '/api/functions', limited as HttpResult<unknown>);
  });

  it('declares the demo budget headers, an idempotent replay and the MCP session id', async () => {
    const demo = await client(svc.url).post('/api/public/compute/demo', { context: { product_type: 'coffee', current_price: 4.5, currency: 'USD' } });
    expect(demo.status, demo.text).to.equal(200);
    expect(demo.headers.get('x-demo-budget-remaining')).to.be.a('string');
    expectDeclared('post', '/api/public/compute/demo', demo);
    const refusedDemo = await client(svc.url).post('/api/public/compute/demo', { context: 5 });
    expect(refusedDemo.status).to.equal(400);
    expectDeclared('post', '/api/public/compute/demo', refusedDemo);

    const owner = await signUp(svc, 'openapi-replay');
    const idempotency = { cookie: owner.cookie, 'idempotency-key': randomUUID() };
    const first = await client(svc.url).post('/api/api-keys', { name: 'replayed' }, idempotency);
    const replay = await client(svc.url).post('/api/api-keys', { name: 'replayed' }, idempotency);
    expect([first.status, replay.status]).to.deep.equal([201, 201]);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expectDeclared('post', '/api/api-keys', replay);

    const init = await call(svc.url, 'POST', '/api/mcp/rpc', {
      body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'openapi-headers', version: '1' } } },
      headers: { accept: 'application/json, text/event-stream' },
    });
    expect(init.status, init.text).to.equal(200);
    expect(init.headers.get('mcp-session-id')).to.be.a('string');
    expectDeclared('post', '/api/mcp/rpc', init);
    const gone = await call(svc.url, 'DELETE', '/api/mcp/rpc');
    expect(gone.status).to.equal(405);
    expectDeclared('delete', '/api/mcp/rpc', gone);
  });

  it("declares the 405 a GET of either keyless demo answers (Allow: POST and a hint, as SPEC has it), as MCP's DELETE declares its own", async () => {
    for (const path of ['/api/public/compute/demo', '/api/public/price-router/verify']) {
      const get = await call<Record<string, any>>(svc.url, 'GET', path);
      expect([get.status, get.headers.get('allow')], path).to.deep.equal([405, 'POST']);
      expect(get.body.hint, path).to.be.a('string').and.contain('POST');
      expectDeclared('get', path, get);
      const op = doc.paths[path].get;
      expect(Object.keys(op.responses), path).to.deep.equal(['405']);
      expect(op.security, path).to.deep.equal([]);
      expect(resolved(op.responses['405'])?.description, path).to.contain(get.body.hint);
    }
  });

  it('declares the refusals found answered but undeclared: a wrong password, an under-age sign-up, a key of no agent on capabilities, an MCP body encoding; the demo declares its budget, not the per-minute rate it does not have', async () => {
    const wrong = await client(svc.url).post('/api/auth/signin', { email: `nobody-${randomUUID()}@example.com`, password: 'not the password' });
    expect(wrong.status).to.equal(401);
    expect(wrong.headers.get('www-authenticate')).to.be.a('string');
    expectDeclared('post', '/api/auth/signin', wrong);
    const young = await client(svc.url).post('/api/auth/signup', { email: `young-${randomUUID()}@example.com`, password: 'correct horse battery', date_of_birth: '2015-01-01' });
    expect(young.status, young.text).to.equal(403);
    expectDeclared('post', '/api/auth/signup', young);
    const owner = await signUp(svc, 'openapi-undeclared');
    const key = (await createKey(svc, owner, { name: 'no agent' })).key;
    const capabilities = await client(svc.url).get('/api/agents/agt_x/capabilities', { 'x-api-key': key });
    expect(capabilities.status, capabilities.text).to.equal(403);
    expectDeclared('get', '/api/agents/{id}/capabilities', capabilities);
    const encoded = await call(svc.url, 'POST', '/api/mcp/rpc', {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      headers: { accept: 'application/json, text/event-stream', 'content-encoding': 'zstd-nope' },
    });
    expect(encoded.status, encoded.text).to.equal(415);
    expectDeclared('post', '/api/mcp/rpc', encoded);
    const demo = resolved(doc.paths['/api/public/compute/demo'].post.responses['200']);
    expect(Object.keys(demo?.headers ?? {})).to.include('X-Demo-Budget-Remaining').and.not.include('X-RateLimit-Limit');
  });

  it('declares the ETag and the 304 of every conditional document, and If-None-Match as a request header; an API answer has neither', async () => {
    const oauth = ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api/mcp/rpc'];
    for (const path of ['/', '/.well-known/agents.json', '/llms.txt', '/api/openapi.json', '/api/changelog', '/api/changelog/feed.json', '/api/changelog/rss.xml', '/changelog', ...oauth]) {
      const first = await call(svc.url, 'GET', path);
      const etag = first.headers.get('etag');
      expect(etag, path).to.be.a('string');
      expectDeclared('get', path, first);
      const again = await call(svc.url, 'GET', path, { headers: { 'if-none-match': etag as string } });
      expect(again.status, path).to.equal(304);
      expect(again.headers.get('etag'), path).to.equal(etag);
      expectDeclared('get', path, again);
      // Each operation $refs the one definition in components.parameters.
      const parameters = (doc.paths[path].get.parameters as Array<{ $ref?: string; in?: string; name?: string }>).map((p) =>
        p.$ref ? doc.components.parameters[p.$ref.replace('#/components/parameters/', '')] : p,
      );
      expect(parameters.filter((p) => p.in === 'header').map((p) => p.name), path).to.include('if-none-match');
    }
    const functions = doc.paths['/api/functions'].get;
    expect(functions.responses).not.to.have.property('304');
    expect(Object.keys(resolved(functions.responses['200'])?.headers)).not.to.include('ETag');
  });

  it('declares the refusals an operation can give: 401 where it takes credentials, 403 where scoped, 429 where rate limited, 413 and 415 with a JSON body', () => {
    const price = doc.paths['/api/compute/price'].post.responses;
    expect(price).to.include.keys('401', '403', '413', '415', '429', '4XX', '5XX');
    expect(Object.keys(resolved(price['401'])?.headers)).to.include('WWW-Authenticate');
    expect(Object.keys(resolved(price['429'])?.headers)).to.include.members(['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']);
    // An optional credential, sent and refused, is a 401; the catalogue has no scope, no body, and sandboxes may read it.
    const catalogue = doc.paths['/api/catalog'].get.responses;
    expect(catalogue).not.to.have.any.keys('403', '413', '415');
    expect(catalogue).to.include.keys('401', '429');
    expect(doc.paths['/api/openapi.json'].get.responses).not.to.have.any.keys('401', '429');
    expect(resolved(doc.paths['/api/compute/price'].post.responses['4XX'])?.description).to.contain('/llms.txt');
  });

  it('writes each refusal shared by many operations once, in components.responses, and every $ref to one resolves', () => {
    const refs = new Set<string>();
    for (const ops of Object.values(doc.paths as Record<string, Record<string, { responses: Record<string, any> }>>)) {
      for (const op of Object.values(ops)) {
        for (const [status, r] of Object.entries(op.responses)) {
          if (['401', '413', '415', '429', '4XX', '5XX'].includes(status)) expect(r, status).to.have.property('$ref');
          if (r.$ref) refs.add(r.$ref as string);
        }
      }
    }
    for (const ref of refs) expect(resolved({ $ref: ref }), ref).to.be.an('object').with.property('description');
    const inComponents = Object.values(doc.components.responses as Record<string, unknown>).map((r) => JSON.stringify(r));
    expect(new Set(inComponents).size, 'no two shared refusals alike').to.equal(inComponents.length);
    // What an agent reading the whole document pays for: it was 538 KB with every refusal written out per operation
    // (418 KB before the conditional documents declared ETag, 304 and If-None-Match, each written once in components;
    // 425 KB before the twelve person-only full-access operations said that API keys are refused rather than offering
    // "a key created without scopes", a sentence each: about 1.4 KB; 427 KB before the seven workspace-configuration
    // operations said that agent keys are refused though they hold full access, and /api/me and capabilities declared
    // not_allowed: about 1.6 KB; 430 KB before compute bodies stated their pin rules in JSON Schema (if/then) and price
    // verification declared Idempotency-Key and idempotent_replay: about 1.9 KB; 433 KB before the claim answers
    // declared their hint and next steps, keys their workspace_id, the registration 429 its scope, resets_at and next,
    // and DELETE /api/functions/{id} its optional credential: about 0.4 KB over, 3 KB of room left).
    expect(JSON.stringify(doc).length).to.be.below(436_000);
  });
});
