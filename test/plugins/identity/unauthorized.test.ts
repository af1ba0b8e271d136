import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { accessToken, asPerson, createAgent, createAgentKey, createKey, exec, identityConfig, register, signUp, unknownKey } from '../../support/identity';
import type { ErrorBody, Person } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

/** A GET with raw header pairs, so that a header may come twice (fetch would join them). */
function rawGet(base: string, path: string, headers: string[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    // Raw pairs replace Node's defaults, Host among them.
    const req = httpRequest(`${base}${path}`, { method: 'GET', headers: ['host', new URL(base).host, ...headers] }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** SPEC's 401 fields: top-level code and message, retryable false, a Bearer challenge, a hint naming accepted credentials. */
function expect401(res: HttpResult<ErrorBody>, code: 'unauthorized' | 'invalid_credentials'): void {
  expect(res.status, res.text).to.equal(401);
  expect(res.body.code).to.equal(code);
  expect(res.body.message).to.be.a('string').and.not.be.empty;
  expect(res.body.error).to.equal(res.body.message);
  expect(res.body.retryable).to.equal(false);
  expect(res.headers.get('www-authenticate')).to.match(/^Bearer realm="[^"]+"/);
  expect(res.body.hint).to.be.a('string').and.not.be.empty;
}

function expectWhereToGetOne(res: HttpResult<ErrorBody>): void {
  expect(res.body.hint).to.match(/x-api-key/).and.match(/Bearer/);
  expect(res.body.next).to.be.an('array').that.is.not.empty;
  for (const step of res.body.next ?? []) expect(step.path, JSON.stringify(step)).to.be.a('string').and.match(/^\/api\//);
  // A step to POST carries a body to send (placeholders in <ANGLE_BRACKETS> where only the caller knows the value).
  for (const step of res.body.next ?? []) expect((step as { body?: unknown }).body, JSON.stringify(step)).to.be.an('object');
  expect(res.body.next?.map((s) => s.path)).to.include.members(['/api/agents/register', '/api/oauth/register']);
}

const PERSON_ONLY: Array<{ method: string; path: (ids: { keyId: string; agentId: string }) => string; body?: unknown; keyManagement: boolean }> = [
  { method: 'GET', path: () => '/api/api-keys', keyManagement: true },
  { method: 'POST', path: () => '/api/api-keys', body: { name: 'from a key' }, keyManagement: true },
  { method: 'DELETE', path: ({ keyId }) => `/api/api-keys/${keyId}`, keyManagement: true },
  { method: 'POST', path: ({ agentId }) => `/api/agents/${agentId}/keys`, body: {}, keyManagement: true },
  { method: 'GET', path: () => '/api/agents', keyManagement: false },
];

describe('identity: 401 and 403 answers for credentials', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let owner: Person;
  let personKey: { id: string; key: string };
  let agentId: string;
  let agentKey: { id: string; key: string };

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
    owner = await signUp(svc.url);
    personKey = await createKey(svc.url, asPerson(owner), { name: 'automation' });
    agentId = await createAgent(svc.url, asPerson(owner));
    agentKey = await createAgentKey(svc.url, asPerson(owner), agentId, { scopes: ['price:compute'] });
  });
  after(() => svc.close());

  it('answers a request without a credential with 401 unauthorized, a Bearer challenge, a hint and where to get a credential', async () => {
    for (const [method, path] of [
      ['GET', '/api/me'],
      ['POST', '/api/api-keys/rotate'],
    ] as const) {
      const res = await api.raw<ErrorBody>(method, path, method === 'POST' ? { body: {} } : {});
      expect401(res, 'unauthorized');
      expectWhereToGetOne(res);
    }
  });

  it("answers a person-only route without a credential with 401 naming a person's session or token, and only the sign-in step (a sandbox key would be refused there)", async () => {
    for (const [method, path] of [
      ['GET', '/api/api-keys'],
      ['GET', '/api/agents'],
      ['GET', '/api/user'],
    ] as const) {
      const res = await api.raw<ErrorBody>(method, path);
      expect401(res, 'unauthorized');
      expect(res.body.error, path).to.equal("This route needs a person's session or person token and none was sent.");
      expect(res.body.hint, path).to.match(/POST \/api\/auth\/signin/).and.match(/API keys and OAuth access tokens are not accepted here/);
      expect(res.body.next?.map((s) => s.action), path).to.deep.equal(['sign_in']);
    }
  });

  it('answers a route an unclaimed sandbox is refused (team, policy changes) without a credential with the sign-in step only: registering gives a sandbox key it refuses', async () => {
    for (const [method, path] of [
      ['GET', '/api/workspaces/ws_anything/members'],
      ['POST', '/api/routing-policies'],
      ['POST', '/api/functions'],
      // A key naming workspace:claim, which a person creates.
      ['POST', '/api/agents/claim'],
    ] as const) {
      const res = await api.raw<ErrorBody>(method, path, method === 'POST' ? { body: {} } : {});
      expect401(res, 'unauthorized');
      expect(res.body.next?.map((s) => s.action), path).to.deep.equal(['sign_in']);
    }
    // One a sandbox may call keeps every way in.
    const compute = await api.raw<ErrorBody>('POST', '/api/compute/price', { body: { context: { current_price: 3 } } });
    expect401(compute, 'unauthorized');
    expect(compute.body.next?.map((s) => s.action)).to.deep.equal(['register_agent', 'register_oauth_client', 'sign_in', 'try_demo']);
  });

  it("offers a try_demo step whose body prices when sent as is", async () => {
    const res = await api.get<ErrorBody>('/api/me');
    const step = (res.body.next as Array<{ action: string; path: string; body: unknown }>).find((s) => s.action === 'try_demo');
    const demo = await api.post<Record<string, any>>(step?.path ?? '', step?.body);
    expect(demo.status, demo.text).to.equal(200);
    expect(demo.body.price).to.be.a('string');
  });

  it('offers the keyless verification as try_demo on the verify route\'s 401 for a refused credential too, as for none', async () => {
    const body = { context: { product_type: 'widget' }, proposed_price: '20' };
    const sent: Array<Record<string, string>> = [{}, { 'x-api-key': unknownKey('usr') }, { 'x-api-key': 'pcs_usr_short' }, { authorization: 'Bearer garbage' }, { authorization: 'Basic eDp5' }];
    for (const headers of sent) {
      const res = await api.post<ErrorBody>('/api/price-router/verify', body, headers);
      expect(res.status, res.text).to.equal(401);
      const demo = (res.body.next as Array<{ action: string; path: string; body: unknown }>).find((s) => s.action === 'try_demo');
      expect(demo?.path, JSON.stringify(headers)).to.equal('/api/public/price-router/verify');
      const tried = await api.post<Record<string, any>>(demo?.path ?? '', demo?.body);
      expect(tried.status, tried.text).to.equal(200);
      expect(tried.body.verdict).to.be.oneOf(['reasonable', 'high', 'low', 'unknown']);
    }
    // Compute's refused credential still offers the compute demo.
    const compute = await api.post<ErrorBody>('/api/compute/price', { context: { current_price: 3 } }, { 'x-api-key': unknownKey('usr') });
    expect((compute.body.next as Array<{ action: string; path: string }>).find((s) => s.action === 'try_demo')?.path).to.equal('/api/public/compute/demo');
  });

  it('answers a malformed key with 401 invalid_credentials and the same fields', async () => {
    for (const bad of ['pcs_sbx_short', 'not-a-key-at-all']) {
      const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': bad });
      expect401(res, 'invalid_credentials');
      expectWhereToGetOne(res);
      expect(res.body.error).to.match(/malformed/);
      expect(res.headers.get('www-authenticate')).to.match(/error="invalid_token"/);
    }
  });

  it('answers an unknown key with 401 invalid_credentials and the same fields', async () => {
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': unknownKey('sbx') });
    expect401(res, 'invalid_credentials');
    expectWhereToGetOne(res);
    expect(res.body.error).to.match(/not recognised/);
  });

  it('answers an unknown bearer value with 401 invalid_credentials and the same fields', async () => {
    for (const bearer of ['opaque-token', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl', unknownKey('agt')]) {
      const res = await api.get<ErrorBody>('/api/me', { authorization: `Bearer ${bearer}` });
      expect401(res, 'invalid_credentials');
      expectWhereToGetOne(res);
    }
  });

  it('answers an Authorization header of another scheme, or of none, with 401 invalid_credentials saying so (a credential was sent)', async () => {
    for (const [authorization, said] of [
      ['Basic dXNlcjpwYXNz', /scheme "Basic" is not accepted/],
      [`Token ${personKey.key}`, /scheme "Token" is not accepted/],
      [personKey.key, /no scheme/],
      ['Bearer', /Bearer scheme and no token/],
      ['Bearer ', /Bearer scheme and no token/],
    ] as const) {
      const res = await api.get<ErrorBody>('/api/me', { authorization });
      expect401(res, 'invalid_credentials');
      expect(res.body.error).to.match(said);
      expect(res.body.hint).to.match(/Authorization: Bearer/);
    }
  });

  it('answers an empty x-api-key header with 401 invalid_credentials saying so (a key variable that is not set), not as no credential', async () => {
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': '' });
    expect401(res, 'invalid_credentials');
    expect(res.body.error).to.equal('The x-api-key header is empty (an empty variable?).');
  });

  it('refuses a request carrying two x-api-key or two Authorization headers, whichever comes first', async () => {
    for (const headers of [
      ['x-api-key', personKey.key, 'x-api-key', personKey.key],
      ['authorization', `Bearer ${personKey.key}`, 'authorization', 'Bearer garbage'],
      ['authorization', 'Bearer garbage', 'authorization', `Bearer ${personKey.key}`],
    ]) {
      const res = await rawGet(svc.url, '/api/me', headers);
      expect(res.status, res.text).to.equal(401);
      const body = JSON.parse(res.text) as ErrorBody;
      expect(body.code).to.equal('invalid_credentials');
      expect(body.error).to.equal(`This request carries 2 ${headers[0] === 'x-api-key' ? 'x-api-key' : 'Authorization'} headers; send one credential in one header.`);
    }
  });

  it('refuses a request carrying an x-api-key and a different Authorization: Bearer credential, rather than acting as one of them', async () => {
    const token = await accessToken(svc.url, agentKey.key);
    for (const bearer of [owner.token, token, personKey.key]) {
      for (const path of ['/api/me', '/api/catalog']) {
        const res = await api.get<ErrorBody>(path, { 'x-api-key': agentKey.key, authorization: `Bearer ${bearer}` });
        expect401(res, 'invalid_credentials');
        expect(res.body.error).to.equal('This request carries two credentials, one in x-api-key and one in Authorization: Bearer; send one.');
        expect(res.body.hint).to.match(/^Keep only the header of the credential that should act\. /);
      }
    }
    const mcp = await api.raw<ErrorBody>('POST', '/api/mcp/rpc', {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      headers: { 'x-api-key': agentKey.key, authorization: `Bearer ${owner.token}`, accept: 'application/json, text/event-stream' },
    });
    expect401(mcp, 'invalid_credentials');
    // The same key in both headers is one credential; a cookie beside a key stays ambient (the key acts).
    const same = await api.get<{ principal?: { kind?: string } }>('/api/me', { 'x-api-key': agentKey.key, authorization: `Bearer ${agentKey.key}` });
    expect(same.status, same.text).to.equal(200);
    const withCookie = await api.get('/api/me', { 'x-api-key': agentKey.key, cookie: owner.cookie });
    expect(withCookie.status, withCookie.text).to.equal(200);
  });

  it('refuses an unrecognised credential on routes where a credential is optional, instead of serving it as anonymous', async () => {
    const mcpBody = { body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'compute_price', arguments: { context: { current_price: 5 } } } } };
    for (const headers of [{ authorization: 'Bearer opaque-garbage' } as Record<string, string>, { authorization: `Bearer ${unknownKey('agt')}` }, { 'x-api-key': 'not-a-key-at-all' }]) {
      const catalog = await api.raw<ErrorBody>('GET', '/api/catalog', { headers });
      expect401(catalog, 'invalid_credentials');
      expectWhereToGetOne(catalog);
      const mcp = await api.raw<ErrorBody>('POST', '/api/mcp/rpc', { ...mcpBody, headers: { ...headers, accept: 'application/json, text/event-stream' } });
      expect401(mcp, 'invalid_credentials');
    }
    // Without any credential the same routes serve the demo tenant.
    expect((await api.raw('GET', '/api/catalog')).status).to.equal(200);
    expect((await api.raw('POST', '/api/mcp/rpc', { ...mcpBody, headers: { accept: 'application/json, text/event-stream' } })).status).to.equal(200);
  });

  it('answers an unusable credential on routes where a credential is optional with the 401 a required route gives for that header, not as keyless', async () => {
    const mcpBody = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'compute_price', arguments: { context: { current_price: 5 } } } };
    for (const authorization of ['Bearer', 'Bearer    ', 'Basic dXNlcjpwYXNz', 'Token abc', `Token ${personKey.key}`, personKey.key]) {
      const required = await api.get<ErrorBody>('/api/me', { authorization });
      expect401(required, 'invalid_credentials');
      const optional = [
        ['GET /api/catalog', await api.raw<ErrorBody>('GET', '/api/catalog', { headers: { authorization } })],
        ['POST /api/mcp/rpc', await api.raw<ErrorBody>('POST', '/api/mcp/rpc', { body: mcpBody, headers: { authorization, accept: 'application/json, text/event-stream' } })],
      ] as const;
      for (const [route, res] of optional) {
        expect401(res, 'invalid_credentials');
        const { request_id: _a, ...body } = res.body;
        const { request_id: _b, ...expected } = required.body;
        expect(body, `${route} with Authorization: ${authorization}`).to.deep.equal(expected);
        // The same challenge, but for where the resource's metadata is (the MCP endpoint has a document of its own).
        const withoutMetadata = (v: string | null) => (v ?? '').replace(/, resource_metadata="[^"]+"$/, '');
        expect(withoutMetadata(res.headers.get('www-authenticate')), route).to.equal(withoutMetadata(required.headers.get('www-authenticate')));
        expect(res.headers.get('www-authenticate'), route).to.match(route.includes('mcp') ? /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/mcp\/rpc"$/ : /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource"$/);
      }
    }
    // Public routes (the keyless demo) keep ignoring what is sent.
    const demo = await api.raw('POST', '/api/public/compute/demo', { body: { context: { unit_cost: 10 } }, headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    expect(demo.status, demo.text).to.equal(200);
  });

  it('answers a revoked key with 401 invalid_credentials at once', async () => {
    const key = await createKey(svc.url, asPerson(owner), { name: 'to revoke' });
    expect((await api.get('/api/me', { 'x-api-key': key.key })).status).to.equal(200);
    const del = await api.delete(`/api/api-keys/${key.id}`, asPerson(owner));
    expect(del.status).to.equal(200);
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': key.key });
    expect401(res, 'invalid_credentials');
    expectWhereToGetOne(res);
    expect(res.body.error).to.match(/revoked/);
  });

  it('answers an expired key with 401 invalid_credentials', async () => {
    const key = await createKey(svc.url, asPerson(owner), { name: 'short lived', expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    await exec(svc, `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [key.id]);
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': key.key });
    expect401(res, 'invalid_credentials');
    expectWhereToGetOne(res);
    expect(res.body.error).to.match(/expired/);
  });

  it('answers person-only routes sent a valid API key with 401, their own message, a hint and next: []', async () => {
    const sandbox = await register(svc.url);
    const missing = await api.get<ErrorBody>('/api/api-keys');
    for (const key of [personKey.key, sandbox.api_key.key]) {
      for (const route of PERSON_ONLY) {
        const path = route.path({ keyId: personKey.id, agentId });
        const res = await api.raw<ErrorBody>(route.method, path, { ...(route.body !== undefined ? { body: route.body } : {}), headers: { 'x-api-key': key } });
        expect401(res, 'unauthorized');
        expect(res.body.next, `${route.method} ${path}`).to.deep.equal([]);
        expect(res.body.error).not.to.equal(missing.body.error);
        expect(res.body.error).to.match(/person|people/i);
        expect(res.body.hint).to.match(/sign in/i);
      }
    }
    expect((await api.get('/api/me', { 'x-api-key': personKey.key })).status, 'the key was not revoked').to.equal(200);
  });

  it('answers key-management routes sent an agent access token with 403 agent_cannot_manage_keys', async () => {
    const token = await accessToken(svc.url, agentKey.key);
    for (const route of PERSON_ONLY.filter((r) => r.keyManagement)) {
      const path = route.path({ keyId: personKey.id, agentId });
      const res = await api.raw<ErrorBody>(route.method, path, { ...(route.body !== undefined ? { body: route.body } : {}), headers: { authorization: `Bearer ${token}` } });
      expect(res.status, `${route.method} ${path}: ${res.text}`).to.equal(403);
      expect(res.body.code).to.equal('agent_cannot_manage_keys');
      expect(res.body.hint).to.be.a('string');
    }
    expect((await api.get('/api/me', { 'x-api-key': personKey.key })).status, 'the key was not revoked').to.equal(200);
  });

  it('answers agent listing sent an agent access token with 403 and a reason', async () => {
    const token = await accessToken(svc.url, agentKey.key);
    const res = await api.get<ErrorBody>('/api/agents', { authorization: `Bearer ${token}` });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('forbidden');
    expect(res.body.reason).to.be.a('string').and.not.be.empty;
    expect(res.text).not.to.contain(agentId);
    // The hint fits every person-only route (accepting an invitation, leaving a team), not agent management alone.
    expect(res.body.hint).to.equal("This route is for a person signed in to the workspace (session or person token); an agent's token reaches only its agent's own capabilities.");
    const accepting = await api.post<ErrorBody>('/api/invitations/accept', { token: 'pcs_inv_x' }, { authorization: `Bearer ${token}` });
    expect([accepting.status, accepting.body.hint]).to.deep.equal([403, res.body.hint]);
  });

  it('answers agent management sent an agent access token with 403', async () => {
    const token = await accessToken(svc.url, agentKey.key);
    const auth = { authorization: `Bearer ${token}` };
    const answers = [
      await api.post<ErrorBody>('/api/agents', { name: 'made-by-agent' }, auth),
      await api.get<ErrorBody>(`/api/agents/${agentId}`, auth),
      await api.patch<ErrorBody>(`/api/agents/${agentId}`, { status: 'disabled' }, auth),
      await api.delete<ErrorBody>(`/api/agents/${agentId}`, auth),
    ];
    for (const res of answers) {
      expect(res.status, res.text).to.equal(403);
      expect(res.body.reason).to.be.a('string').and.not.be.empty;
    }
    const still = await api.get<{ agent: { status: string } }>(`/api/agents/${agentId}`, asPerson(owner));
    expect(still.body.agent.status).to.equal('active');
  });

  it("answers a workspace key of no agent on an agent's capabilities with 403 saying so, not a 401 calling a valid key invalid", async () => {
    const made = await api.post<{ api_key: { key: string } }>('/api/api-keys', { name: 'workspace key' }, asPerson(owner));
    expect(made.status, made.text).to.equal(201);
    const res = await api.get<ErrorBody>(`/api/agents/${agentId}/capabilities`, { 'x-api-key': made.body.api_key.key });
    expect(res.status, res.text).to.equal(403);
    expect(res.body).to.include({ code: 'forbidden', reason: 'not an agent credential' });
    expect(res.body.error).to.match(/this key belongs to no agent/);
  });

  it("answers an agent token on another agent's capabilities with 401 unauthorized (the token is valid, not rejected), and its own with 200", async () => {
    const otherAgent = await createAgent(svc.url, asPerson(owner), 'pricing-agent/other');
    const token = await accessToken(svc.url, agentKey.key);
    const other = await api.get<ErrorBody>(`/api/agents/${otherAgent}/capabilities`, { authorization: `Bearer ${token}` });
    expect(other.status).to.equal(401);
    // Valid, only not this agent's: not invalid_credentials nor an invalid_token challenge, which tell a client to drop it.
    expect(other.body).to.include({ code: 'unauthorized', retryable: false });
    expect(other.body.hint).to.match(/still works for your own agent/);
    expect(other.headers.get('www-authenticate')).to.match(/^Bearer realm="pricing-compute", error="invalid_request"/);
    expect(other.text).not.to.contain('pricing-agent/other');
    const own = await api.get<{ agent: { id: string } }>(`/api/agents/${agentId}/capabilities`, { authorization: `Bearer ${token}` });
    expect(own.status, own.text).to.equal(200);
    expect(own.body.agent.id).to.equal(agentId);
  });
});
