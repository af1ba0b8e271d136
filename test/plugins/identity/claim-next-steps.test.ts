import { expect } from 'chai';
import { client } from '../../support/http';
import { asPerson, claimPath, createKey, identityConfig, register, signUp } from '../../support/identity';
import type { ClaimBody, ErrorBody, KeyView, MeBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

/**
 * After a claim a person acts in their default workspace unless x-workspace-id names the claimed one: the claim's answer,
 * the revoked key's 401 and the key a person then creates each say which workspace is meant, so the agent's new key does
 * not land, silently, in the person's own workspace.
 */
describe('identity: what a claim tells the person about acting in the claimed workspace', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig(), enabled: ['health', 'identity', 'accounts'] });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('answers the confirmation with a hint naming x-workspace-id and next steps that mint the agent a key in the claimed workspace', async () => {
    const owner = await signUp(svc.url);
    const reg = await register(svc.url, 'pricing-agent/next-steps');
    const res = await api.post<ClaimBody>(claimPath(reg), {}, asPerson(owner));
    expect(res.status, res.text).to.equal(200);
    const id = reg.workspace.id;
    expect(res.body.hint).to.include(`x-workspace-id: ${id}`);
    const mint = res.body.next.find((n) => n.action === 'create_agent_key');
    expect(mint, res.text).to.deep.include({ method: 'POST', path: `/api/agents/${reg.agent.id}/keys`, headers: { 'x-workspace-id': id } });
    expect(res.body.next.find((n) => n.action === 'create_api_key')).to.deep.include({ method: 'POST', path: '/api/api-keys', headers: { 'x-workspace-id': id } });

    // The step works as given, and the key it makes acts in the claimed workspace.
    const made = await api.post<{ api_key: KeyView & { key: string } }>(mint?.path ?? '', mint?.body ?? {}, { cookie: owner.cookie, ...mint?.headers });
    expect(made.status, made.text).to.equal(201);
    expect(made.body.api_key.workspace_id).to.equal(id);
    const me = await api.get<MeBody>('/api/me', { 'x-api-key': made.body.api_key.key });
    expect([me.status, me.body.tenant_id]).to.deep.equal([200, id]);
  });

  it("tells the holder of the key the claim revoked which workspace header its new key is made with, and its agent's key route", async () => {
    const owner = await signUp(svc.url);
    const reg = await register(svc.url, 'pricing-agent/revoked-hint');
    expect((await api.post(claimPath(reg), {}, asPerson(owner))).status).to.equal(200);
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(res.status).to.equal(401);
    expect(res.body.hint).to.include(`x-workspace-id: ${reg.workspace.id}`);
    expect(res.body.hint).to.include(`POST /api/agents/${reg.agent.id}/keys`);
  });

  it('names the workspace a created key belongs to: the default one without x-workspace-id, the claimed one with it', async () => {
    const owner = await signUp(svc.url);
    const reg = await register(svc.url, 'pricing-agent/key-workspace');
    expect((await api.post(claimPath(reg), {}, asPerson(owner))).status).to.equal(200);
    expect((await createKey(svc.url, asPerson(owner), { name: 'for my agent' })).workspace_id).to.equal(owner.workspaceId);
    expect((await createKey(svc.url, asPerson(owner, reg.workspace.id), { name: 'for my agent' })).workspace_id).to.equal(reg.workspace.id);
  });

  it('says a kept key keeps working, and offers the workspace header for what the person does next', async () => {
    const owner = await signUp(svc.url);
    const reg = await register(svc.url, 'pricing-agent/kept-hint');
    const res = await api.post<ClaimBody>(claimPath(reg), { keep_key: true }, asPerson(owner));
    expect([res.status, res.body.agent_key]).to.deep.equal([200, 'kept']);
    expect(res.body.hint).to.include(`x-workspace-id: ${reg.workspace.id}`).and.to.match(/keeps working/);
    expect(res.body.next.map((n) => n.action)).to.deep.equal(['check_workspace', 'list_api_keys']);
    for (const n of res.body.next) expect(n.headers).to.deep.equal({ 'x-workspace-id': reg.workspace.id });
  });

  it('answers a claim by a workspace:claim key with the same hint and steps', async () => {
    const owner = await signUp(svc.url);
    const claimer = await createKey(svc.url, asPerson(owner), { name: 'claims agents', scopes: ['workspace:claim'] });
    const reg = await register(svc.url, 'pricing-agent/by-key');
    const res = await api.post<ClaimBody>('/api/agents/claim', { token: reg.claim.token }, { 'x-api-key': claimer.key });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.hint).to.include(`x-workspace-id: ${reg.workspace.id}`);
    expect(res.body.next.map((n) => n.action)).to.include('create_agent_key');
  });
});
