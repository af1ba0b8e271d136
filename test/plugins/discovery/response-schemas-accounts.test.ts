import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { PrivateKeyAccount } from 'viem/accounts';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { signUp } from '../../support/world';
import type { Person } from '../../support/world';
import { declaredSchema, expectFitsDeclared } from '../../support/response-schema';

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

/** The routes whose success bodies this file checks: method, path in the document, statuses, content type. */
const ROUTES: Record<string, { method: string; path: string; statuses: number[]; type?: string }> = {
  'auth.signup': { method: 'post', path: '/api/auth/signup', statuses: [201] },
  'auth.signin': { method: 'post', path: '/api/auth/signin', statuses: [200] },
  'auth.signout': { method: 'post', path: '/api/auth/signout', statuses: [200] },
  'auth.wallet.nonce': { method: 'post', path: '/api/auth/wallet/nonce', statuses: [200] },
  'auth.wallet.signin': { method: 'post', path: '/api/auth/wallet/signin', statuses: [200, 201] },
  'user.wallets.link': { method: 'post', path: '/api/user/wallets', statuses: [201] },
  'user.wallets.list': { method: 'get', path: '/api/user/wallets', statuses: [200] },
  'user.read': { method: 'get', path: '/api/user', statuses: [200] },
  'user.sessions.list': { method: 'get', path: '/api/user/sessions', statuses: [200] },
  'user.sessions.revokeAll': { method: 'delete', path: '/api/user/sessions', statuses: [200] },
  'user.sessions.revoke': { method: 'delete', path: '/api/user/sessions/{sessionId}', statuses: [200] },
  'apiKeys.list': { method: 'get', path: '/api/api-keys', statuses: [200] },
  'apiKeys.create': { method: 'post', path: '/api/api-keys', statuses: [201] },
  'apiKeys.delete': { method: 'delete', path: '/api/api-keys/{keyId}', statuses: [200] },
  'agents.list': { method: 'get', path: '/api/agents', statuses: [200] },
  'agents.create': { method: 'post', path: '/api/agents', statuses: [201] },
  'agents.read': { method: 'get', path: '/api/agents/{id}', statuses: [200] },
  'agents.update': { method: 'patch', path: '/api/agents/{id}', statuses: [200] },
  'agents.delete': { method: 'delete', path: '/api/agents/{id}', statuses: [200] },
  'agents.keys.create': { method: 'post', path: '/api/agents/{id}/keys', statuses: [201] },
  'discovery.root': { method: 'get', path: '/', statuses: [200] },
  'discovery.agents': { method: 'get', path: '/.well-known/agents.json', statuses: [200] },
  'discovery.mcp': { method: 'get', path: '/.well-known/mcp.json', statuses: [200] },
  'changelog.list': { method: 'get', path: '/api/changelog', statuses: [200] },
  'changelog.jsonFeed': { method: 'get', path: '/api/changelog/feed.json', statuses: [200], type: 'application/feed+json' },
};

type Body = Record<string, any>;

/** The two ways a person's program or browser calls the person-only routes. */
const credentialsOf = (p: Person): Array<[string, Record<string, string>]> => [
  ['session cookie', { cookie: p.cookie }],
  ['person token', { authorization: `Bearer ${p.token}` }],
];

describe('OpenAPI response schemas of the accounts and discovery routes', function () {
  this.timeout(120_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService({ config: lenient });
  });
  after(() => svc.close());

  /** Expects `status` and that the body fits what route `id` declares for it, no field at any depth left undeclared. */
  const expectAnswer = (id: string, res: { status: number; text: string; body: unknown }, status = 200, label = ''): void => {
    expect(res.status, `${id} ${label}: ${res.text}`).to.equal(status);
    expectFitsDeclared(svc, id, res.body, status, { anyDepth: true });
  };

  /** A message from the nonce route, checked against its schema, signed by `wallet`. */
  const signedChallenge = async (wallet: PrivateKeyAccount, chainId?: number): Promise<{ message: string; signature: `0x${string}` }> => {
    const nonce = await client(svc.url).post<Body>('/api/auth/wallet/nonce', { address: wallet.address, ...(chainId ? { chain_id: chainId } : {}) });
    expectAnswer('auth.wallet.nonce', nonce, 200, chainId ? 'with chain_id' : '');
    const message = nonce.body.message as string;
    return { message, signature: await wallet.signMessage({ message }) };
  };

  it('sign-up (201, with and without the optional names), sign-in, and sign-out with a cookie and with a person token fit the declared schemas', async () => {
    const api = client(svc.url);
    const email = `schemas-acc-${Date.now()}@example.com`;
    const full = await api.post<Body>('/api/auth/signup', { email, password: 'correct horse battery', date_of_birth: '1990-01-01', display_name: 'Ada', workspace_name: 'Ada & co' });
    expectAnswer('auth.signup', full, 201, 'with names');
    expect(full.body.workspace.test_workspace_id).to.be.a('string');
    const bare = await api.post<Body>('/api/auth/signup', { email: `bare-${email}`, password: 'correct horse battery', date_of_birth: '1990-01-01' });
    expectAnswer('auth.signup', bare, 201, 'without names');

    for (const via of ['cookie', 'token'] as const) {
      const signin = await api.post<Body>('/api/auth/signin', { email, password: 'correct horse battery' });
      expectAnswer('auth.signin', signin, 200);
      const headers: Record<string, string> = via === 'cookie' ? { cookie: (signin.headers.get('set-cookie') ?? '').split(';')[0] ?? '' } : { authorization: `Bearer ${signin.body.token.access_token}` };
      expectAnswer('auth.signout', await client(svc.url, headers).post('/api/auth/signout'), 200, via);
    }
  });

  it("a wallet's first sign-in (201), its next one (200), linking a wallet to an email account (201) and that wallet's sign-in (200) fit the declared schemas", async () => {
    const api = client(svc.url);
    const wallet = privateKeyToAccount(generatePrivateKey());
    const first = await api.post<Body>('/api/auth/wallet/signin', { ...(await signedChallenge(wallet, 8453)), date_of_birth: '1990-12-10' });
    expectAnswer('auth.wallet.signin', first, 201, 'new wallet');
    expect(first.body.person.email).to.equal(null);
    expectAnswer('auth.wallet.signin', await api.post<Body>('/api/auth/wallet/signin', await signedChallenge(wallet)), 200, 'known wallet');

    const person = await signUp(svc, 'schemas-wallet');
    const second = privateKeyToAccount(generatePrivateKey());
    const linked = await client(svc.url, { cookie: person.cookie }).post<Body>('/api/user/wallets', await signedChallenge(second));
    expectAnswer('user.wallets.link', linked, 201);
    const again = await client(svc.url, { authorization: `Bearer ${person.token}` }).post<Body>('/api/user/wallets', await signedChallenge(second));
    expectAnswer('user.wallets.link', again, 201, 'already linked, person token');
    const signin = await api.post<Body>('/api/auth/wallet/signin', await signedChallenge(second));
    expectAnswer('auth.wallet.signin', signin, 200, 'wallet of an email account');
    expect(signin.body.person.id).to.equal(person.id);
  });

  it('GET /api/user and GET /api/user/wallets fit the declared schemas for a cookie and a person token, with no wallet, with one, and for a wallet account', async () => {
    const plain = await signUp(svc, 'schemas-user');
    const withWallet = await signUp(svc, 'schemas-user-wallet');
    const wallet = privateKeyToAccount(generatePrivateKey());
    expect((await client(svc.url, { cookie: withWallet.cookie }).post('/api/user/wallets', await signedChallenge(wallet))).status).to.equal(201);
    const walletOnly = await client(svc.url).post<Body>('/api/auth/wallet/signin', { ...(await signedChallenge(privateKeyToAccount(generatePrivateKey()))), date_of_birth: '1985-05-05' });
    expect(walletOnly.status, walletOnly.text).to.equal(201);
    const walletPerson = { cookie: (walletOnly.headers.get('set-cookie') ?? '').split(';')[0] ?? '', token: walletOnly.body.token.access_token } as Person;

    for (const [who, p] of [['no wallet', plain], ['a linked wallet', withWallet], ['a wallet account', walletPerson]] as const) {
      for (const [how, headers] of credentialsOf(p)) {
        const api = client(svc.url, headers);
        const user = await api.get<Body>('/api/user');
        expectAnswer('user.read', user, 200, `${who}, ${how}`);
        expect(user.body.workspaces, 'the workspace and its test workspace').to.have.length(2);
        const wallets = await api.get<Body>('/api/user/wallets');
        expectAnswer('user.wallets.list', wallets, 200, `${who}, ${how}`);
        expect(wallets.body.data).to.have.length(p === plain ? 0 : 1);
      }
    }
    // In the test workspace too.
    const inTest = await client(svc.url, { cookie: plain.cookie, 'x-workspace-id': plain.testWorkspaceId }).get<Body>('/api/user');
    expectAnswer('user.read', inTest, 200, 'in the test workspace');
    expect(inTest.body.current_workspace_id).to.equal(plain.testWorkspaceId);
  });

  it('listing sessions (cookie and token), ending one, ending all but one and ending all fit the declared schemas', async () => {
    const person = await signUp(svc, 'schemas-sessions');
    const signIn = async (): Promise<Body> => (await client(svc.url, { 'user-agent': 'schemas-test/1.0' }).post<Body>('/api/auth/signin', { email: person.email, password: 'correct horse battery' })).body;
    const others = [await signIn(), await signIn(), await signIn()];
    expect(others.map((o) => o.session.id)).to.have.length(3);
    for (const [how, headers] of credentialsOf(person)) {
      const list = await client(svc.url, headers).get<Body>('/api/user/sessions');
      expectAnswer('user.sessions.list', list, 200, how);
      expect(list.body.data.filter((s: Body) => s.current)).to.have.length(1);
    }
    const api = client(svc.url, { cookie: person.cookie });
    expectAnswer('user.sessions.revoke', await api.delete<Body>(`/api/user/sessions/${others[0]?.session.id}`), 200, 'one');
    const kept = await api.delete<Body>(`/api/user/sessions?currentSessionId=${person.sessionId}`);
    expectAnswer('user.sessions.revokeAll', kept, 200, 'keeping the current one');
    expect(kept.body).to.deep.equal({ revoked: 2, kept: person.sessionId });
    const all = await client(svc.url, { authorization: `Bearer ${person.token}` }).delete<Body>('/api/user/sessions');
    expectAnswer('user.sessions.revokeAll', all, 200, 'all');
    expect(all.body.kept).to.equal(null);
  });

  it('creating keys (full, scoped, expiring, agent-bound, and a replay), listing them (cookie and token, revoked and used ones among them) and revoking one fit the declared schemas', async () => {
    const person = await signUp(svc, 'schemas-keys');
    const api = client(svc.url, { cookie: person.cookie });
    const agent = await api.post<Body>('/api/agents', { name: 'schemas-key-agent' });
    const bodies: Array<[string, Body]> = [
      ['full access', { name: 'full' }],
      ['scoped', { name: 'scoped', scopes: ['price:compute', 'billing:read'] }],
      ['legacy', { name: 'legacy', scopes: ['read'] }],
      ['expiring', { name: 'expiring', expires_at: new Date(Date.now() + 86_400_000).toISOString() }],
      ['agent-bound', { name: 'agent', agent_id: agent.body.agent.id }],
    ];
    const ids: string[] = [];
    for (const [what, body] of bodies) {
      const res = await api.post<Body>('/api/api-keys', body);
      expectAnswer('apiKeys.create', res, 201, what);
      ids.push(res.body.api_key.id);
    }
    const headers = { 'idempotency-key': `schemas-${Date.now()}` };
    const byToken = client(svc.url, { authorization: `Bearer ${person.token}` });
    expectAnswer('apiKeys.create', await byToken.post<Body>('/api/api-keys', { name: 'once' }, headers), 201, 'first under an Idempotency-Key, person token');
    const replay = await byToken.post<Body>('/api/api-keys', { name: 'once' }, headers);
    expectAnswer('apiKeys.create', replay, 201, 'replay');
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.body.api_key.key).to.equal(null);
    expect(replay.body).to.have.all.keys('api_key', 'hint', 'next');

    const revoked = await api.delete<Body>(`/api/api-keys/${ids[0]}`);
    expectAnswer('apiKeys.delete', revoked, 200);
    await svc.sequelize.query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', { bind: [ids[1]] });
    for (const [how, creds] of credentialsOf(person)) {
      const list = await client(svc.url, creds).get<Body>('/api/api-keys?limit=3');
      expectAnswer('apiKeys.list', list, 200, `${how}, first page`);
      expect(list.body.has_more).to.equal(true);
      const rest = await client(svc.url, creds).get<Body>(`/api/api-keys?limit=100&cursor=${encodeURIComponent(list.body.next_cursor)}`);
      expectAnswer('apiKeys.list', rest, 200, `${how}, last page`);
      const all = [...list.body.data, ...rest.body.data] as Body[];
      expect(all.some((k) => k.revoked_at !== null), 'a revoked key').to.equal(true);
      expect(all.some((k) => k.last_used_at !== null), 'a used key').to.equal(true);
      expect(all.some((k) => k.agent_id !== null), 'an agent-bound key').to.equal(true);
    }
  });

  it('listing, creating, reading, renaming, disabling, re-enabling and deleting agents, and minting an agent key, fit the declared schemas', async () => {
    const person = await signUp(svc, 'schemas-agents');
    const api = client(svc.url, { cookie: person.cookie });
    const created = await api.post<Body>('/api/agents', { name: 'schemas-agent' });
    expectAnswer('agents.create', created, 201);
    const id = created.body.agent.id as string;
    const byToken = client(svc.url, { authorization: `Bearer ${person.token}` });
    expectAnswer('agents.create', await byToken.post<Body>('/api/agents', { name: 'schemas-agent-2' }), 201, 'person token');
    for (const [how, creds] of credentialsOf(person)) {
      expectAnswer('agents.list', await client(svc.url, creds).get<Body>('/api/agents'), 200, how);
      expectAnswer('agents.read', await client(svc.url, creds).get<Body>(`/api/agents/${id}`), 200, how);
    }
    const minted = await api.post<Body>(`/api/agents/${id}/keys`, { name: 'schemas agent key', scopes: ['price:compute'] });
    expectAnswer('agents.keys.create', minted, 201);
    expectAnswer('agents.keys.create', await byToken.post<Body>(`/api/agents/${id}/keys`, {}), 201, 'default name, person token');
    expectAnswer('agents.update', await api.patch<Body>(`/api/agents/${id}`, { name: 'schemas-agent-renamed' }), 200, 'rename');
    expectAnswer('agents.update', await api.patch<Body>(`/api/agents/${id}`, { status: 'disabled' }), 200, 'disable');
    expectAnswer('agents.update', await byToken.patch<Body>(`/api/agents/${id}`, { status: 'active' }), 200, 're-enable');
    await api.post<Body>(`/api/agents/${id}/keys`, { name: 'to be revoked' });
    const deleted = await api.delete<Body>(`/api/agents/${id}`);
    expectAnswer('agents.delete', deleted, 200);
    expect(deleted.body.revoked_keys).to.equal(1);
    const list = await api.get<Body>('/api/agents?limit=1');
    expectAnswer('agents.list', list, 200, 'a page with a disabled agent and a cursor');
    expect(list.body.next_cursor).to.be.a('string');
  });

  it('the discovery documents (/, agents.json, mcp.json) fit the declared schemas at every depth (mcp.json\'s authentication.oauth included), with and without their optional parts', async () => {
    const api = client(svc.url);
    const root = await api.get<Body>('/');
    expectAnswer('discovery.root', root, 200, 'every plugin');
    expect(root.body).to.include.keys('get_a_key', 'try_without_a_key', 'mcp', 'health');
    const agents = await api.get<Body>('/.well-known/agents.json');
    expectAnswer('discovery.agents', agents, 200, 'every plugin');
    expect(agents.body.ways_in.map((w: Body) => w.id)).to.include.members(['keyless_demo', 'self_registration', 'oauth_client_credentials', 'person_account']);
    expect(agents.body).to.include.keys('self_registration', 'mcp');
    const mcp = await api.get<Body>('/.well-known/mcp.json');
    expectAnswer('discovery.mcp', mcp, 200);
    expect(mcp.body.tools.some((t: Body) => t.outputSchema !== undefined)).to.equal(true);
    expect(mcp.body.authentication).to.have.property('oauth');

    const bare = await startTestService({ enabled: ['identity', 'discovery'], config: lenient });
    try {
      const few = client(bare.url);
      const bareRoot = await few.get<Body>('/');
      expect(bareRoot.status, bareRoot.text).to.equal(200);
      expectFitsDeclared(bare, 'discovery.root', bareRoot.body, 200, { anyDepth: true });
      expect(bareRoot.body).to.not.have.any.keys('try_without_a_key', 'mcp', 'health');
      const bareAgents = await few.get<Body>('/.well-known/agents.json');
      expect(bareAgents.status, bareAgents.text).to.equal(200);
      expectFitsDeclared(bare, 'discovery.agents', bareAgents.body, 200, { anyDepth: true });
      expect(bareAgents.body).to.not.have.any.keys('mcp');
      expect(bareAgents.body.ways_in.map((w: Body) => w.id)).to.not.include.members(['keyless_demo', 'person_account']);
    } finally {
      await bare.close();
    }
  });

  it('the changelog list and its JSON Feed fit the declared schemas, whole and for one audience', async () => {
    const api = client(svc.url);
    for (const query of ['', '?audience=agents', '?audience=people']) {
      const list = await api.get<Body>(`/api/changelog${query}`);
      expectAnswer('changelog.list', list, 200, query);
      expect(list.body.data.length, query).to.be.greaterThan(0);
      const feed = await api.get<Body>(`/api/changelog/feed.json${query}`);
      expectAnswer('changelog.jsonFeed', feed, 200, query);
      expect(feed.body.items.length, query).to.equal(list.body.data.length);
    }
  });

  it('a field an answer has and the schema lacks fails the check: a real answer passes, the same with one more field does not', async () => {
    const person = await signUp(svc, 'schemas-extra-field');
    const user = await client(svc.url, { cookie: person.cookie }).get<Body>('/api/user');
    expect(user.status, user.text).to.equal(200);
    expect(declaredSchema(svc, 'user.read').safeParse(user.body).success).to.equal(true);
    expect(declaredSchema(svc, 'user.read').safeParse({ ...user.body, undocumented: true }).success).to.equal(false);
  });

  it('the OpenAPI document describes the success body of every route here with its declared fields', async () => {
    const doc = (await client(svc.url).get<Body>('/api/openapi.json?format=json')).body;
    const resolve = (s: Body): Body => (typeof s.$ref === 'string' ? doc.components.schemas[s.$ref.split('/').pop() as string] : s);
    for (const [id, r] of Object.entries(ROUTES)) {
      for (const status of r.statuses) {
        const op = doc.paths[r.path]?.[r.method];
        expect(op?.operationId, `${id} at ${r.method} ${r.path}`).to.equal(id);
        const schema = resolve(op.responses[String(status)].content[r.type ?? 'application/json'].schema);
        expect(Object.keys(schema.properties ?? {}).sort(), `${id} ${status}`).to.deep.equal(Object.keys(declaredSchema(svc, id, status).shape).sort());
      }
    }
  });
});
