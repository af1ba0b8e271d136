import { expect } from 'chai';
import { ACCOUNTS } from '../../../plugins/accounts';
import type { Sessions } from '../../../plugins/accounts';
import { client } from '../../support/http';
import { asPerson, createAgent, identityConfig, setRole, signUp } from '../../support/identity';
import type { ErrorBody, KeyView, MeBody, Person } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

const NAMED_SCOPES = ['price:compute', 'workspace:claim', 'team:admin', 'billing:read', 'billing:write', 'commerce:configure', 'commerce:proposal:approve', 'commerce:execute'];

interface CreatedKey {
  api_key: KeyView & { key: string };
}

describe('accounts: API keys and scopes (POST /api/api-keys)', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let owner: Person;

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
    owner = await signUp(svc.url);
  });
  after(() => svc.close());

  function expectScopeRefusal(res: { status: number; text: string; body: ErrorBody }, bad: string): void {
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.error).to.contain(bad);
    expect(res.body.valid_scopes).to.deep.equal(NAMED_SCOPES);
    expect(res.body.hint).to.be.a('string').and.contain('price:compute');
    expect(res.body.issues?.some((i) => i.path.startsWith('scopes') && i.reason.includes(bad))).to.equal(true);
    expect(res.body.example).to.be.an('object');
  }

  it('creates a key shown once, with the scopes it names', async () => {
    const res = await api.post<CreatedKey>('/api/api-keys', { name: 'checkout', scopes: ['price:compute', 'billing:read'] }, asPerson(owner));
    expect(res.status, res.text).to.equal(201);
    expect(res.body.api_key.key).to.match(/^pcs_usr_/);
    expect(res.body.api_key.shown_once).to.equal(true);
    expect(res.body.api_key.scopes).to.deep.equal(['price:compute', 'billing:read']);
    expect(res.body.api_key.created_by).to.equal(owner.id);
    const me = await api.get<MeBody>('/api/me', { 'x-api-key': res.body.api_key.key });
    expect(me.body.scopes).to.have.members(['price:compute', 'billing:read']);
  });

  it('refuses a name that is not a scope with 400 listing the valid scopes', async () => {
    const res = await api.post<ErrorBody>('/api/api-keys', { name: 'typo', scopes: ['price:compute', 'billing:reed'] }, asPerson(owner));
    expectScopeRefusal(res, 'billing:reed');
    expect(res.body.issues?.[0]?.path).to.equal('scopes.1');
  });

  it('refuses a name that is not a scope on agent keys too', async () => {
    const agentId = await createAgent(svc.url, asPerson(owner));
    const res = await api.post<ErrorBody>(`/api/agents/${agentId}/keys`, { scopes: ['compute'] }, asPerson(owner));
    expectScopeRefusal(res, 'compute');
  });

  it('refuses an expires_at already past with the same 400 on agent keys as on POST /api/api-keys, and mints no key', async () => {
    const agentId = await createAgent(svc.url, asPerson(owner));
    const body = { name: 'k', expires_at: '2000-01-01T00:00:00Z' };
    const direct = await api.post<ErrorBody>('/api/api-keys', body, asPerson(owner));
    const viaAgent = await api.post<ErrorBody>(`/api/agents/${agentId}/keys`, body, asPerson(owner));
    expect(viaAgent.status, viaAgent.text).to.equal(400);
    expect(viaAgent.body.code).to.equal('validation_error');
    expect(viaAgent.body.error).to.equal('expires_at must be in the future.');
    expect(viaAgent.body.issues).to.deep.equal([{ path: 'expires_at', reason: 'in the past' }]);
    expect({ status: viaAgent.status, error: viaAgent.body.error, issues: viaAgent.body.issues }).to.deep.equal({ status: direct.status, error: direct.body.error, issues: direct.body.issues });
    // Both say what to send instead.
    for (const res of [direct, viaAgent]) expect(res.body.hint).to.include('a future ISO 8601 date-time').and.include('leave expires_at out');
    const noAgent = await api.post<ErrorBody>('/api/api-keys', { name: 'k', agent_id: 'agt_nosuchagent0000000' }, asPerson(owner));
    expect(noAgent.status, noAgent.text).to.equal(404);
    expect(noAgent.body.hint).to.include('GET /api/agents');
    const keys = await svc.sequelize.query('SELECT count(*)::int AS n FROM api_keys WHERE agent_id = $1', { bind: [agentId], plain: true });
    expect((keys as { n: number } | null)?.n).to.equal(0);
    const later = await api.post(`/api/agents/${agentId}/keys`, { name: 'k', expires_at: new Date(Date.now() + 86_400_000).toISOString() }, asPerson(owner));
    expect(later.status, later.text).to.equal(201);
  });

  it("refuses the wildcard '*' with 400 listing the valid scopes", async () => {
    const res = await api.post<ErrorBody>('/api/api-keys', { name: 'everything', scopes: ['*'] }, asPerson(owner));
    expectScopeRefusal(res, '*');
  });

  it('accepts the legacy choices read, write and admin, marking the key legacy', async () => {
    for (const legacy of ['read', 'write', 'admin']) {
      const res = await api.post<CreatedKey>('/api/api-keys', { name: `legacy ${legacy}`, scopes: [legacy] }, asPerson(owner));
      expect(res.status, `${legacy}: ${res.text}`).to.equal(201);
      expect(res.body.api_key.legacy).to.equal(true);
      expect(res.body.api_key.scopes).to.deep.equal([legacy]);
      const me = await api.get<MeBody>('/api/me', { 'x-api-key': res.body.api_key.key });
      expect(me.status).to.equal(200);
      expect(me.body.scopes, legacy).not.to.include.members(['commerce:proposal:approve']);
      expect(me.body.scopes).not.to.include('workspace:claim');
      expect(me.body.scopes).not.to.include('team:admin');
    }
  });

  it('gives a key created with no scopes full access except the permissions granted by name only', async () => {
    const res = await api.post<CreatedKey>('/api/api-keys', { name: 'full' }, asPerson(owner));
    expect(res.status).to.equal(201);
    const me = await api.get<MeBody>('/api/me', { 'x-api-key': res.body.api_key.key });
    expect(me.body.scopes).to.have.members(NAMED_SCOPES.filter((s) => s !== 'workspace:claim' && s !== 'team:admin'));
  });

  it('lets owners and admins create workspace:claim and team:admin keys', async () => {
    const admin = await signUp(svc.url);
    await setRole(svc, owner.workspaceId, admin.id, 'admin');
    for (const who of [asPerson(owner), asPerson(admin, owner.workspaceId)]) {
      for (const scope of ['workspace:claim', 'team:admin']) {
        const res = await api.post<CreatedKey>('/api/api-keys', { name: scope, scopes: [scope] }, who);
        expect(res.status, res.text).to.equal(201);
        expect(res.body.api_key.scopes).to.deep.equal([scope]);
      }
    }
  });

  it('refuses a member creating a workspace:claim or team:admin key with 403 and a reason', async () => {
    const member = await signUp(svc.url);
    await setRole(svc, owner.workspaceId, member.id, 'member');
    for (const scope of ['workspace:claim', 'team:admin']) {
      const res = await api.post<ErrorBody>('/api/api-keys', { name: scope, scopes: [scope] }, asPerson(member, owner.workspaceId));
      expect(res.status, res.text).to.equal(403);
      expect(res.body.error).to.contain(scope);
      expect(res.body.reason).to.be.a('string').and.not.be.empty;
    }
    const agentId = await createAgent(svc.url, asPerson(owner));
    const viaAgent = await api.post<ErrorBody>(`/api/agents/${agentId}/keys`, { scopes: ['workspace:claim'] }, asPerson(member, owner.workspaceId));
    expect(viaAgent.status, viaAgent.text).to.equal(403);
    const plain = await api.post('/api/api-keys', { name: 'member key', scopes: ['price:compute'] }, asPerson(member, owner.workspaceId));
    expect(plain.status, 'members still create ordinary keys').to.equal(201);
  });

  it('refuses a workspace:claim or team:admin key in a test workspace (409 naming the parent), where it would be refused on every use; ordinary keys are created there', async () => {
    for (const scope of ['workspace:claim', 'team:admin']) {
      const res = await api.post<ErrorBody>('/api/api-keys', { name: scope, scopes: [scope] }, asPerson(owner, owner.testWorkspaceId));
      expect(res.status, res.text).to.equal(409);
      expect(res.body.code).to.equal('conflict');
      expect(res.body.error).to.contain(scope).and.contain('test workspace');
      expect(res.body).to.include({ reason: 'test workspace', parent_workspace_id: owner.workspaceId });
      expect(res.body.hint).to.contain(owner.workspaceId);
    }
    const plain = await api.post('/api/api-keys', { name: 'test key', scopes: ['price:compute'] }, asPerson(owner, owner.testWorkspaceId));
    expect(plain.status, plain.text).to.equal(201);
  });

  describe('a scoped person token', () => {
    let token: string;

    before(async () => {
      const sessions = svc.container.resolve<Sessions>(ACCOUNTS.Sessions);
      token = await sessions.mintToken(owner.id, owner.sessionId, ['billing:read']);
    });

    const withToken = () => ({ authorization: `Bearer ${token}` });

    it('carries only its scopes', async () => {
      const me = await api.get<MeBody>('/api/me', withToken());
      expect(me.status).to.equal(200);
      expect(me.body.auth_method).to.equal('person_token');
      expect(me.body.scopes).to.deep.equal(['billing:read']);
    });

    it('creates a key within its scopes', async () => {
      const res = await api.post<CreatedKey>('/api/api-keys', { name: 'narrow', scopes: ['billing:read'] }, withToken());
      expect(res.status, res.text).to.equal(201);
    });

    it('cannot create a wider key: 403 insufficient_scope with required_scopes and a hint', async () => {
      const cases: Array<{ scopes?: string[]; missing: string[] }> = [
        { scopes: ['billing:write'], missing: ['billing:write'] },
        { scopes: ['billing:read', 'price:compute'], missing: ['price:compute'] },
        { scopes: ['read'], missing: ['price:compute'] },
        { missing: ['price:compute', 'billing:write', 'commerce:configure', 'commerce:proposal:approve', 'commerce:execute'] },
      ];
      for (const c of cases) {
        const res = await api.post<ErrorBody>('/api/api-keys', { name: 'wider', ...(c.scopes ? { scopes: c.scopes } : {}) }, withToken());
        expect(res.status, `${JSON.stringify(c.scopes)}: ${res.text}`).to.equal(403);
        expect(res.body.code).to.equal('insufficient_scope');
        expect(res.body.required_scopes).to.have.members(c.missing);
        expect(res.body.hint).to.be.a('string').and.not.be.empty;
      }
    });

    it('cannot create a key carrying a permission granted by name only', async () => {
      for (const scope of ['workspace:claim', 'team:admin']) {
        const res = await api.post<ErrorBody>('/api/api-keys', { name: 'wider', scopes: [scope] }, withToken());
        expect(res.status, `${scope}: ${res.text}`).to.equal(403);
        expect(res.body.code).to.equal('insufficient_scope');
        expect(res.body.required_scopes).to.deep.equal([scope]);
      }
    });
  });
});
