import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import type { Person, Sandbox } from '../../support/world';
import { call, client } from '../../support/http';

type Operation = Record<string, any>;

/**
 * The OpenAPI document's account of who may call an operation (security requirements, their scopes,
 * x-required-scopes, x-full-access, the description's sentence) checked against real answers.
 */
describe('OpenAPI: scopes, full access and sandbox keys as the routes check them', function () {
  this.timeout(60_000);
  let svc: TestService;
  let doc: Record<string, any>;
  let owner: Person;
  let fullKey: string;
  let narrowKey: string;
  let sandbox: Sandbox;
  before(async () => {
    svc = await startTestService();
    doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    owner = await signUp(svc, 'openapi-access');
    fullKey = (await createKey(svc, owner, { name: 'full' })).key;
    narrowKey = (await createKey(svc, owner, { name: 'narrow', scopes: ['billing:read'] })).key;
    sandbox = await registerSandbox(svc, 'openapi-access-sandbox');
  });
  after(() => svc.close());

  const op = (method: string, path: string): Operation => doc.paths[path][method] as Operation;

  it('names the scopes a key is refused without, in every security requirement and in x-required-scopes', async () => {
    const cases: Array<{ method: string; path: string; sent: string; key: () => string; body?: unknown }> = [
      { method: 'post', path: '/api/compute/price', sent: '/api/compute/price', key: () => narrowKey, body: { context: { current_price: 4 } } },
      { method: 'post', path: '/api/functions', sent: '/api/functions', key: () => narrowKey, body: {} },
      { method: 'post', path: '/api/agents/claim', sent: '/api/agents/claim', key: () => fullKey, body: { token: 'x' } },
      { method: 'get', path: '/api/workspaces/{workspace_id}/members', sent: `/api/workspaces/${owner.workspaceId}/members`, key: () => fullKey },
    ];
    for (const c of cases) {
      const res = await call(svc.url, c.method.toUpperCase(), c.sent, { headers: { 'x-api-key': c.key() }, ...(c.body !== undefined ? { body: c.body } : {}) });
      expect(res.status, `${c.method} ${c.path}: ${res.text}`).to.equal(403);
      expect(res.body.code).to.equal('insufficient_scope');
      const o = op(c.method, c.path);
      expect(o['x-required-scopes'], c.path).to.have.members(res.body.required_scopes as string[]);
      expect(o['x-required-scopes'], c.path).to.have.lengthOf((res.body.required_scopes as string[]).length);
      expect(o.security.find((r: Record<string, string[]>) => 'ApiKey' in r)?.ApiKey, c.path).to.have.members(res.body.required_scopes as string[]);
    }
    expect(op('post', '/api/compute/price').description).to.contain('Needs scope price:compute.');
    expect(op('post', '/api/agents/claim').description).to.contain('Needs scope workspace:claim (workspace:claim named on the API key itself');
    expect(op('get', '/api/workspaces/{workspace_id}/members').description).to.contain('Needs scope team:admin');
  });

  it('marks full-access routes, which refuse a scoped key, and leaves the others unmarked', async () => {
    const create = op('post', '/api/functions');
    expect(create['x-full-access']).to.equal(true);
    expect(create.description).to.contain('Needs a full-access credential');
    expect(op('post', '/api/compute/price')['x-full-access']).to.equal(false);
    expect(op('get', '/api/me')['x-required-scopes']).to.deep.equal([]);
    // A public route takes no credential: no requirement, no extension.
    const demo = op('post', '/api/public/compute/demo');
    expect(demo.security).to.deep.equal([]);
    expect(demo).not.to.have.property('x-required-scopes');
  });

  it("says in every operation's description only what its security list takes: a person-only full-access operation says API keys are refused, as they are", async () => {
    const KEY = ['ApiKey', 'ApiKeyBearer'];
    const personOnlyFullAccess: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, o] of Object.entries(ops)) {
        const schemes = ((o.security ?? []) as Array<Record<string, string[]>>).flatMap((r) => Object.keys(r));
        const takesKey = schemes.some((s) => KEY.includes(s));
        const takesAgent = takesKey || schemes.includes('AccessToken');
        const text = (o.description ?? '') as string;
        const at = `${method.toUpperCase()} ${path}`;
        if (!takesKey) expect(text, at).not.to.match(/key created without scopes|a key naming|named on the API key/);
        if (!takesAgent) expect(text, at).not.to.match(/Sandbox keys may/);
        if (o['x-full-access'] !== true) continue;
        if (takesKey) expect(text, at).to.contain('a key created without scopes');
        else {
          expect(text, at).to.contain('API keys, whatever their scopes, are refused (401)');
          personOnlyFullAccess.push(at);
        }
        expect(text.includes("a person's session") || text.includes('their session'), at).to.equal(schemes.includes('Session'));
      }
    }
    expect(personOnlyFullAccess).to.include.members([
      'POST /api/agents/claim/{token}',
      'POST /api/auth/signout',
      'POST /api/user/wallets',
      'DELETE /api/user/sessions',
      'DELETE /api/user/sessions/{sessionId}',
      'DELETE /api/api-keys/{keyId}',
      'POST /api/agents',
      'PATCH /api/agents/{id}',
      'DELETE /api/agents/{id}',
      'POST /api/agents/{id}/keys',
      'POST /api/invitations/accept',
      'POST /api/workspaces/{workspace_id}/leave',
    ]);
    // As answered: an unscoped person key on the claim link's confirmation is refused 401.
    const claim = await client(svc.url).post('/api/agents/claim/pcs_clm_unknown', {}, { 'x-api-key': fullKey });
    expect([claim.status, claim.body.code], claim.text).to.deep.equal([401, 'unauthorized']);
  });

  it('lets a person act by role where a key must name a scope, and leaves tokens out where a key must name one', () => {
    const members = op('get', '/api/workspaces/{workspace_id}/members');
    expect(members.security.find((r: Record<string, string[]>) => 'Session' in r)?.Session).to.deep.equal([]);
    for (const o of [members, op('post', '/api/agents/claim')]) {
      for (const requirement of o.security as Array<Record<string, string[]>>) {
        for (const scopes of Object.values(requirement)) expect(o['x-required-scopes']).to.include.members(scopes);
      }
    }
  });

  it('says whether sandbox keys may call an operation, as a sandbox key is answered', async () => {
    const price = await client(svc.url).post('/api/compute/price', { context: { current_price: 4.5, currency: 'USD' } }, { 'x-api-key': sandbox.key });
    expect(price.status, price.text).to.equal(200);
    expect(op('post', '/api/compute/price').description).to.contain('Sandbox keys may call this.');
    const batch = await client(svc.url).post('/api/compute/batch', { items: [{ context: { current_price: 4.5 } }] }, { 'x-api-key': sandbox.key });
    expect(batch.status, batch.text).to.equal(403);
    expect(batch.body.code).to.equal('plan_restricted');
    expect(op('post', '/api/compute/batch').description).to.contain('Sandbox keys may not call this');
  });

  it('documents POST /api/agents/claim as taking the key itself, and refuses a session before reading the body, as documented', async () => {
    const schemes = (op('post', '/api/agents/claim').security as Array<Record<string, string[]>>).flatMap((r) => Object.keys(r));
    expect(schemes).to.include('ApiKey');
    expect(schemes).not.to.include('Session');
    // An invalid body from a person: the credential is refused first (it was 400 validation_error, the route's kinds unchecked).
    const res = await client(svc.url).post('/api/agents/claim', {}, { cookie: owner.cookie });
    expect(res.status, res.text).to.equal(401);
    expect(res.body.code).to.equal('unauthorized');
    expect(res.body.error).to.equal("A workspace:claim key is required: this route takes an API key naming workspace:claim, not a person's session.");
    expect(res.headers.get('www-authenticate')).to.match(/^Bearer /);
  });

  it('offers each way of sending a credential as its own scheme, and on each route only those its credential check takes', async () => {
    expect(Object.keys(doc.components.securitySchemes)).to.have.members(['ApiKey', 'ApiKeyBearer', 'AccessToken', 'PersonToken', 'Session', 'ClientBasic']);
    const schemesOf = (o: Operation): string[] => (o.security as Array<Record<string, string[]>>).flatMap((r) => Object.keys(r));
    expect(schemesOf(op('post', '/api/compute/price'))).to.have.members(['ApiKey', 'ApiKeyBearer', 'AccessToken', 'Session', 'PersonToken']);
    expect(schemesOf(op('get', '/api/user'))).to.have.members(['Session', 'PersonToken']);
    // What the person-only route answers to each bearer value.
    const token = sandbox.token;
    expect((await client(svc.url).get('/api/user', { authorization: `Bearer ${owner.token}` })).status).to.equal(200);
    expect((await client(svc.url).get('/api/user', { authorization: `Bearer ${fullKey}` })).status).to.equal(401);
    expect((await client(svc.url).get('/api/user', { authorization: `Bearer ${token}` })).status).to.equal(403);
    expect((await client(svc.url).get('/api/me', { authorization: `Bearer ${token}` })).status).to.equal(200);
  });

  it('documents the token endpoint\'s client authentication (Basic, body, x-api-key, a key as Bearer) and its body fields, each of which gets a token', async () => {
    const token = op('post', '/api/oauth/token');
    expect(token.security).to.deep.equal([{ ClientBasic: [] }, { ApiKey: [] }, { ApiKeyBearer: [] }, {}]);
    // Every refusal, a body it cannot read included, is an RFC 6749 error body.
    const response = (status: string) => {
      const r = token.responses[status];
      return typeof r.$ref === 'string' ? doc.components.responses[r.$ref.split('/').pop()] : r;
    };
    for (const status of ['400', '401', '413', '415']) expect(response(status).content['application/json'].schema, status).to.deep.equal({ $ref: '#/components/schemas/OAuthError' });
    expect(doc.components.securitySchemes.ClientBasic).to.include({ type: 'http', scheme: 'basic' });
    for (const type of ['application/x-www-form-urlencoded', 'application/json']) {
      expect(token.requestBody.content[type].schema, type).to.deep.equal({ $ref: '#/components/schemas/OAuthTokenRequest' });
    }
    const fields = doc.components.schemas.OAuthTokenRequest;
    expect(Object.keys(fields.properties)).to.have.members(['grant_type', 'client_id', 'client_secret', 'scope']);
    expect(fields.properties.grant_type.enum).to.deep.equal(['client_credentials']);
    expect(fields.required).to.deep.equal(['grant_type']);
    const reg = (await client(svc.url).post<Record<string, any>>('/api/oauth/register', { client_name: 'openapi-access' })).body;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const answers = [
      await call(svc.url, 'POST', '/api/oauth/token', { rawBody: 'grant_type=client_credentials&scope=price:compute', headers: { ...form, authorization: `Basic ${Buffer.from(`${reg.client_id}:${reg.client_secret}`).toString('base64')}` } }),
      await call(svc.url, 'POST', '/api/oauth/token', { rawBody: new URLSearchParams({ grant_type: 'client_credentials', client_id: reg.client_id, client_secret: reg.client_secret }).toString(), headers: form }),
      await call(svc.url, 'POST', '/api/oauth/token', { body: { grant_type: 'client_credentials', client_id: reg.client_id, client_secret: reg.client_secret, scope: 'price:compute' } }),
      await call(svc.url, 'POST', '/api/oauth/token', { rawBody: 'grant_type=client_credentials', headers: { ...form, 'x-api-key': sandbox.key } }),
      await call(svc.url, 'POST', '/api/oauth/token', { rawBody: 'grant_type=client_credentials', headers: { ...form, authorization: `Bearer ${sandbox.key}` } }),
    ];
    expect(answers.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200]);
  });
});
