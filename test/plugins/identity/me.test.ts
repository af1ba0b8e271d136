import { expect } from 'chai';
import { client } from '../../support/http';
import { accessToken, asPerson, claimPath, createKey, identityConfig, register, signUp } from '../../support/identity';
import type { MeBody, Person, RegistrationBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

const ORIGIN_FIELDS = ['origin', 'created_by_agent', 'claimed_at'];

describe('identity: GET /api/me', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let person: Person;
  let reg: RegistrationBody;

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
    person = await signUp(svc.url);
    reg = await register(svc.url);
  });
  after(() => svc.close());

  it('reports tenant_id, auth_method api_key and the scopes of a key', async () => {
    const res = await api.get<MeBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(res.status).to.equal(200);
    expect(res.body.tenant_id).to.equal(reg.workspace.id);
    expect(res.body.auth_method).to.equal('api_key');
    expect(res.body.scopes).to.deep.equal(['price:compute']);
  });

  it('accepts an API key sent as Authorization: Bearer too', async () => {
    const res = await api.get<MeBody>('/api/me', { authorization: `Bearer ${reg.api_key.key}` });
    expect(res.status).to.equal(200);
    expect(res.body.auth_method).to.equal('api_key');
    expect(res.body.tenant_id).to.equal(reg.workspace.id);
  });

  it('reports auth_method access_token for an OAuth access token, with the token’s scopes', async () => {
    const token = await accessToken(svc.url, reg.api_key.key);
    const res = await api.get<MeBody>('/api/me', { authorization: `Bearer ${token}` });
    expect(res.status).to.equal(200);
    expect(res.body.tenant_id).to.equal(reg.workspace.id);
    expect(res.body.auth_method).to.equal('access_token');
    expect(res.body.scopes).to.deep.equal(['price:compute']);
  });

  it('reports auth_method session for a dashboard session cookie', async () => {
    const res = await api.get<MeBody>('/api/me', asPerson(person));
    expect(res.status).to.equal(200);
    expect(res.body.tenant_id).to.equal(person.workspaceId);
    expect(res.body.auth_method).to.equal('session');
    expect(res.body.scopes).to.include('price:compute');
  });

  it('reports auth_method person_token for a person token', async () => {
    const res = await api.get<MeBody>('/api/me', { authorization: `Bearer ${person.token}` });
    expect(res.status).to.equal(200);
    expect(res.body.tenant_id).to.equal(person.workspaceId);
    expect(res.body.auth_method).to.equal('person_token');
  });

  it('reports the scopes named on a scoped key', async () => {
    const key = await createKey(svc.url, asPerson(person), { name: 'billing reader', scopes: ['billing:read'] });
    const res = await api.get<MeBody>('/api/me', { 'x-api-key': key.key });
    expect(res.body.scopes).to.deep.equal(['billing:read']);
    expect(res.body.tenant_id).to.equal(person.workspaceId);
  });

  it('leaves out origin, created_by_agent and claimed_at for workspaces that were never claimed', async () => {
    const sandbox = await api.get('/api/me', { 'x-api-key': reg.api_key.key });
    const own = await api.get('/api/me', asPerson(person));
    for (const field of ORIGIN_FIELDS) {
      expect(sandbox.body, `sandbox: ${field}`).not.to.have.property(field);
      expect(own.body, `person workspace: ${field}`).not.to.have.property(field);
    }
  });

  it('reports origin, created_by_agent and claimed_at for a claimed workspace', async () => {
    const claimer = await signUp(svc.url);
    const agent = await register(svc.url, 'to-be-claimed');
    const claimed = await api.post<{ workspace: { claimed_at: string } }>(claimPath(agent), { keep_key: true }, asPerson(claimer));
    expect(claimed.status, claimed.text).to.equal(200);
    for (const headers of [{ 'x-api-key': agent.api_key.key }, asPerson(claimer, agent.workspace.id)]) {
      const res = await api.get<MeBody>('/api/me', headers);
      expect(res.status).to.equal(200);
      expect(res.body.tenant_id).to.equal(agent.workspace.id);
      expect(res.body.origin).to.equal('agent_self_registration');
      expect(res.body.created_by_agent).to.equal(true);
      expect(res.body.claimed_at).to.equal(claimed.body.workspace.claimed_at);
    }
  });
});
