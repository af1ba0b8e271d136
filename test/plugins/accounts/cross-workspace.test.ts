import { expect } from 'chai';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { accessToken, asPerson, claimPath, createAgent, createAgentKey, createKey, identityConfig, register, signUp } from '../../support/identity';
import type { ErrorBody, KeyView, Person } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

const B_AGENT_NAME = 'workspace-b/secret-agent';

describe('accounts: one workspace never reaches another’s records', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let a: Person;
  let b: Person;
  let bKey: KeyView & { key: string };
  let bAgent: string;
  let bAgentKey: KeyView & { key: string };
  let aAgentKey: KeyView & { key: string };

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
    a = await signUp(svc.url);
    b = await signUp(svc.url);
    bKey = await createKey(svc.url, asPerson(b), { name: 'b key' });
    bAgent = await createAgent(svc.url, asPerson(b), B_AGENT_NAME);
    bAgentKey = await createAgentKey(svc.url, asPerson(b), bAgent, { scopes: ['price:compute'] });
    const aAgent = await createAgent(svc.url, asPerson(a), 'workspace-a/agent');
    aAgentKey = await createAgentKey(svc.url, asPerson(a), aAgent, { scopes: ['price:compute'] });
  });
  after(() => svc.close());

  /** 404 (or 403), and nothing of B's in the answer. */
  function expectNoData(res: HttpResult<ErrorBody>, what: string, allowed: number[] = [404]): void {
    expect(allowed, `${what}: ${res.status} ${res.text}`).to.include(res.status);
    expect(res.text, what).not.to.contain(B_AGENT_NAME);
    expect(res.text, what).not.to.contain(bKey.key);
    expect(res.text, what).not.to.contain(bKey.prefix);
  }

  async function bStillIntact(): Promise<void> {
    const agent = await api.get<{ agent: { name: string; status: string } }>(`/api/agents/${bAgent}`, asPerson(b));
    expect(agent.status).to.equal(200);
    expect(agent.body.agent).to.deep.include({ name: B_AGENT_NAME, status: 'active' });
    expect((await api.get('/api/me', { 'x-api-key': bKey.key })).status).to.equal(200);
    expect((await api.get('/api/me', { 'x-api-key': bAgentKey.key })).status).to.equal(200);
  }

  it("answers a person reading, changing or deleting another workspace's agent with 404", async () => {
    expectNoData(await api.get<ErrorBody>(`/api/agents/${bAgent}`, asPerson(a)), 'read');
    expectNoData(await api.patch<ErrorBody>(`/api/agents/${bAgent}`, { name: 'hijacked', status: 'disabled' }, asPerson(a)), 'change');
    expectNoData(await api.delete<ErrorBody>(`/api/agents/${bAgent}`, asPerson(a)), 'delete');
    await bStillIntact();
  });

  it("answers a person minting a key for another workspace's agent with 404", async () => {
    const res = await api.post<ErrorBody>(`/api/agents/${bAgent}/keys`, { name: 'stolen' }, asPerson(a));
    expectNoData(res, 'agent key');
    // The hint, the same for a missing agent, tells a person how to reach an agent of another of their workspaces.
    expect(res.body.hint).to.contain('send x-workspace-id with that workspace');
    expect((await api.post<ErrorBody>('/api/agents/agt_missing/keys', { name: 'x' }, asPerson(a))).body.hint).to.equal(res.body.hint);
    expectNoData(await api.post<ErrorBody>('/api/api-keys', { name: 'stolen', agent_id: bAgent }, asPerson(a)), 'key bound to the agent');
    const keys = await api.get<{ data: KeyView[] }>('/api/api-keys', asPerson(b));
    expect(keys.body.data.filter((k) => k.agent_id === bAgent).map((k) => k.id)).to.deep.equal([bAgentKey.id]);
  });

  it("answers a person deleting another workspace's key with 404, and the key keeps working", async () => {
    const foreign = await api.delete<ErrorBody>(`/api/api-keys/${bKey.id}`, asPerson(a));
    expectNoData(foreign, 'delete key');
    // The same body as for a key that does not exist, with a hint to the workspace a person's other key is in.
    const missing = await api.delete<ErrorBody>('/api/api-keys/key_missing', asPerson(a));
    expect(missing.body).to.deep.equal({ ...foreign.body, request_id: missing.body.request_id });
    expect(foreign.body.hint).to.contain('send x-workspace-id with that workspace');
    expectNoData(await api.delete<ErrorBody>(`/api/api-keys/${bAgentKey.id}`, { authorization: `Bearer ${a.token}` }), 'delete agent key by person token');
    await bStillIntact();
  });

  it("never lists another workspace's keys or agents", async () => {
    const keys = await api.get<{ data: KeyView[] }>('/api/api-keys', asPerson(a));
    expect(keys.status).to.equal(200);
    const ids = keys.body.data.map((k) => k.id);
    expect(ids).not.to.include(bKey.id);
    expect(ids).not.to.include(bAgentKey.id);
    const agents = await api.get<{ data: Array<{ id: string }> }>('/api/agents', asPerson(a));
    expect(agents.body.data.map((x) => x.id)).not.to.include(bAgent);
    expect(agents.text).not.to.contain(B_AGENT_NAME);
  });

  it("answers a person naming another workspace in x-workspace-id with 404 and no data", async () => {
    for (const path of ['/api/me', '/api/api-keys', '/api/agents', `/api/agents/${bAgent}`]) {
      expectNoData(await api.get<ErrorBody>(path, asPerson(a, b.workspaceId)), path);
    }
    expectNoData(await api.post<ErrorBody>('/api/api-keys', { name: 'planted' }, asPerson(a, b.workspaceId)), 'create key in B');
    const keys = await api.get<{ data: KeyView[] }>('/api/api-keys', asPerson(b));
    expect(keys.body.data.map((k) => k.name)).not.to.include('planted');
  });

  it('refuses a person\'s empty or blank x-workspace-id with 400 (an empty variable), creating nothing in the default workspace', async () => {
    for (const blank of ['', '  ']) {
      for (const headers of [{ cookie: a.cookie }, { authorization: `Bearer ${a.token}` }] as Array<Record<string, string>>) {
        const res = await api.post<ErrorBody>('/api/api-keys', { name: 'blank-header' }, { ...headers, 'x-workspace-id': blank });
        expect(res.status, res.text).to.equal(400);
        expect(res.body).to.include({ code: 'bad_request', error: 'The x-workspace-id header is empty (an empty variable?).' });
        expect(res.body.hint).to.include('GET /api/user');
      }
    }
    const keys = await api.get<{ data: KeyView[] }>('/api/api-keys', asPerson(a));
    expect(keys.body.data.map((k) => k.name)).not.to.include('blank-header');
  });

  it('refuses a key\'s, or its token\'s, empty or blank x-workspace-id with the same 400 a person gets, instead of ignoring it', async () => {
    const aKey = await createKey(svc.url, asPerson(a), { name: 'a key for a blank header' });
    const token = await accessToken(svc.url, aAgentKey.key);
    for (const blank of ['', '  ']) {
      for (const [who, headers] of [['key', { 'x-api-key': aKey.key }], ['token', { authorization: `Bearer ${token}` }]] as const) {
        const res = await api.get<ErrorBody>('/api/me', { ...headers, 'x-workspace-id': blank });
        expect(res.status, `${who} ${JSON.stringify(blank)}: ${res.text}`).to.equal(400);
        expect(res.body).to.include({ code: 'bad_request', error: 'The x-workspace-id header is empty (an empty variable?).' });
        expect(res.body.hint).to.contain(a.workspaceId);
      }
    }
  });

  it("answers a key, or a token made from it, naming another workspace in x-workspace-id with the same 404, instead of acting in its own; its own id passes", async () => {
    const aKey = await createKey(svc.url, asPerson(a), { name: 'a key' });
    const token = await accessToken(svc.url, aAgentKey.key);
    for (const [who, headers] of [['key', { 'x-api-key': aKey.key }], ['token', { authorization: `Bearer ${token}` }]] as const) {
      const res = await api.get<ErrorBody>('/api/me', { ...headers, 'x-workspace-id': b.workspaceId });
      expectNoData(res, who);
      expect([res.body.code, res.body.error]).to.deep.equal(['not_found', 'You are not a member of that workspace.']);
      expect(res.body.hint).to.contain(a.workspaceId);
      expect((await api.get('/api/me', { ...headers, 'x-workspace-id': a.workspaceId })).status, `${who}: its own workspace`).to.equal(200);
    }
  });

  it("keeps another workspace's agent capabilities out of reach: 404 for a person, 401 for another agent's key or token", async () => {
    expectNoData(await api.get<ErrorBody>(`/api/agents/${bAgent}/capabilities`, asPerson(a)), 'person');
    expectNoData(await api.get<ErrorBody>(`/api/agents/${bAgent}/capabilities`, { 'x-api-key': aAgentKey.key }), 'agent key', [401]);
    const token = await accessToken(svc.url, aAgentKey.key);
    expectNoData(await api.get<ErrorBody>(`/api/agents/${bAgent}/capabilities`, { authorization: `Bearer ${token}` }), 'agent token', [401]);
    const own = await api.get(`/api/agents/${bAgent}/capabilities`, { 'x-api-key': bAgentKey.key });
    expect(own.status).to.equal(200);
  });

  it("answers a person ending another person's session with 404, and that session keeps working", async () => {
    const res = await api.delete<ErrorBody>(`/api/user/sessions/${b.sessionId}`, asPerson(a));
    expect(res.status).to.equal(404);
    // The same answer as for a session id nobody holds, with where to find one's own.
    const unknown = await api.delete<ErrorBody>('/api/user/sessions/00000000-0000-4000-8000-000000000000', asPerson(a));
    for (const r of [res, unknown]) {
      expect(r.body).to.include({ code: 'not_found', error: 'No open session of yours has this id.' });
      expect(r.body.hint).to.match(/^GET \/api\/user\/sessions lists your open sessions/);
      expect(r.body.issues).to.deep.equal([{ path: 'sessionId', reason: 'names no open session of yours' }]);
    }
    expect((await api.get('/api/me', asPerson(b))).status).to.equal(200);
    expect((await api.get('/api/me', { authorization: `Bearer ${b.token}` })).status).to.equal(200);
  });

  it('answers a person claiming an agent into a workspace they do not belong to with 404, as for a workspace that does not exist', async () => {
    const reg = await register(svc.url);
    const res = await api.post<ErrorBody>(claimPath(reg), { workspace_id: b.workspaceId }, asPerson(a));
    expect(res.status).to.equal(404);
    expect(res.body.error).to.equal(`No workspace ${b.workspaceId} of yours: it does not exist, or you are not a member of it.`);
    expect((await api.get(claimPath(reg))).status, 'the sandbox stays claimable').to.equal(200);
  });
});
