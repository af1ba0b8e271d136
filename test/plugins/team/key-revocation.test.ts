import { expect } from 'chai';
import { QueryTypes } from 'sequelize';
import { client } from '../../support/http';
import { claimPath, register } from '../../support/identity';
import type { TestService } from '../../support/service';
import type { Api } from './helpers';
import { as, auditLog, createKey, invite, join, signup, startTeamService, team, uniqueEmail, withKey } from './helpers';

type Body = Record<string, any>;

/**
 * Revoking a key another person made follows the team's rule for touching people: a key acts as its creator and
 * revoking it cancels its invitations, so an admin must not reach an owner's (or another admin's) through it.
 */
describe('team plugin: revoking keys others made', () => {
  let svc: TestService;
  let api: Api;

  before(async () => {
    svc = await startTeamService();
    api = client(svc.url);
  });
  after(async () => {
    await svc.close();
  });

  const invitationStatus = async (id: string) =>
    (await svc.sequelize.query<{ status: string }>('SELECT status FROM invitations WHERE id = $1', { bind: [id], type: QueryTypes.SELECT }))[0]?.status;
  const revokedAt = async (keyId: string) =>
    (await svc.sequelize.query<{ revoked_at: Date | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', { bind: [keyId], type: QueryTypes.SELECT }))[0]?.revoked_at;

  it("an admin may not revoke a key an owner created (403 forbidden, ask an owner): the key keeps working and the admin invitation it made stays pending", async () => {
    const { owner, admin, ws } = await team(api);
    const ownersKey = await createKey(api, owner, ws, ['team:admin']);
    const adminInv = await invite(api, withKey(ownersKey.key), ws, uniqueEmail('new-admin'), 'admin');
    expect(adminInv.status, adminInv.text).to.equal(201);

    const res = await api.delete<Body>(`/api/api-keys/${ownersKey.id}`, as(admin, ws));
    expect(res.status, res.text).to.equal(403);
    expect(res.body).to.include({
      code: 'forbidden',
      reason: 'only owners may revoke a key an owner created',
      creator_role: 'owner',
      hint: 'Ask a workspace owner to revoke it.',
    });
    expect(res.body.error).to.match(/^Only workspace owners can revoke an API key an owner created/);

    expect(await revokedAt(ownersKey.id)).to.equal(null);
    expect((await api.get(`/api/workspaces/${ws}/members`, withKey(ownersKey.key))).status).to.equal(200);
    expect(await invitationStatus(adminInv.body.invitation.id)).to.equal('pending');
    expect((await auditLog(api, owner)).some((e) => e.action === 'team.invitations.cancel')).to.equal(false);
  });

  it("an admin may not revoke a key another admin created; admins revoke their own and members' keys, owners any", async () => {
    const { owner, admin, member, ws } = await team(api);
    const admin2 = await signup(api, 'admin2');
    await join(api, owner, admin2, 'admin');
    const admin2Key = await createKey(api, admin2, ws);
    const adminsOwn = await createKey(api, admin, ws);
    const membersKey = await createKey(api, member, ws);

    const res = await api.delete<Body>(`/api/api-keys/${admin2Key.id}`, as(admin, ws));
    expect(res.status, res.text).to.equal(403);
    expect(res.body).to.include({
      code: 'forbidden',
      reason: 'only owners may revoke a key another admin created',
      creator_role: 'admin',
      hint: 'Ask a workspace owner, or the admin who created it, to revoke it.',
    });
    expect(res.body.error).to.be.a('string').and.not.empty;
    expect(await revokedAt(admin2Key.id)).to.equal(null);
    // A member asking is sent to the same people: an admin other than the creator cannot do it.
    const byMember = await api.delete<Body>(`/api/api-keys/${admin2Key.id}`, as(member, ws));
    expect(byMember.body).to.include({ code: 'forbidden', reason: 'members revoke only their own keys', hint: 'Ask a workspace owner, or the admin who created it, to revoke it.' });

    expect((await api.delete(`/api/api-keys/${adminsOwn.id}`, as(admin, ws))).status).to.equal(200);
    expect((await api.delete(`/api/api-keys/${membersKey.id}`, as(admin, ws))).status).to.equal(200);
    expect((await api.delete(`/api/api-keys/${admin2Key.id}`, as(owner))).status).to.equal(200);
    expect(await revokedAt(admin2Key.id)).to.not.equal(null);
  });

  it("an admin still revokes an agent's own key, which no person made (kept at the claim)", async () => {
    const { admin, ws } = await team(api);
    const reg = await register(svc.url);
    const claimed = await api.post<{ workspace: { id: string } }>(claimPath(reg), { workspace_id: ws, keep_key: true }, as(admin));
    expect(claimed.status, claimed.text).to.equal(200);
    const res = await api.delete(`/api/api-keys/${reg.api_key.id}`, as(admin, claimed.body.workspace.id));
    expect(res.status, res.text).to.equal(200);
    expect((await api.get('/api/me', withKey(reg.api_key.key))).status).to.equal(401);
  });

  it("disabling an agent is refused to an admin while it holds a key an owner minted; the owner disables it, and the entry cancelling that key's invitation names the owner", async () => {
    const { owner, admin, ws } = await team(api);
    const agent = await api.post<{ agent: { id: string } }>('/api/agents', { name: 'owners team bot' }, as(owner));
    const agentKey = await api.post<{ api_key: { id: string; key: string } }>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'k', scopes: ['team:admin'] }, as(owner));
    expect(agentKey.status, agentKey.text).to.equal(201);
    const adminInv = await invite(api, withKey(agentKey.body.api_key.key), ws, uniqueEmail('new-admin'), 'admin');
    expect(adminInv.status, adminInv.text).to.equal(201);

    for (const res of [
      await api.delete<Body>(`/api/agents/${agent.body.agent.id}`, as(admin, ws)),
      await api.patch<Body>(`/api/agents/${agent.body.agent.id}`, { status: 'disabled' }, as(admin, ws)),
    ]) {
      expect(res.status, res.text).to.equal(403);
      expect(res.body).to.include({ code: 'forbidden', reason: 'only owners may revoke a key an owner created', key_id: agentKey.body.api_key.id, agent_id: agent.body.agent.id });
      expect(res.body.error).to.contain(agentKey.body.api_key.id);
      expect(res.body.hint).to.equal('Ask a workspace owner to revoke it. A workspace owner may also disable the agent.');
    }
    expect((await api.get<{ agent: { status: string } }>(`/api/agents/${agent.body.agent.id}`, as(owner))).body.agent.status).to.equal('active');
    expect(await invitationStatus(adminInv.body.invitation.id)).to.equal('pending');

    expect((await api.delete(`/api/agents/${agent.body.agent.id}`, as(owner))).status).to.equal(200);
    expect(await invitationStatus(adminInv.body.invitation.id)).to.equal('cancelled');
    const cancel = (await auditLog(api, owner)).find((e) => e.action === 'team.invitations.cancel' && e.target === adminInv.body.invitation.id);
    expect(cancel?.actor).to.deep.equal({ type: 'person', id: owner.id });
    expect(cancel?.reason).to.equal("the key that made the invitation was revoked: its agent was disabled by the key's creator");
    expect(cancel?.via_key_id).to.equal(agentKey.body.api_key.id);
    expect(cancel?.details).to.include({ key_revoked_reason: 'agent disabled', role: 'owner', invited_role: 'admin' });
  });

  it("an owner revoking an admin's key cancels its invitations with an entry naming the owner (actor and role) and saying who revoked it", async () => {
    const { owner, admin, ws } = await team(api);
    const adminsKey = await createKey(api, admin, ws, ['team:admin']);
    const inv = await invite(api, withKey(adminsKey.key), ws, uniqueEmail('via-admin-key'));
    expect(inv.status, inv.text).to.equal(201);
    expect((await api.delete(`/api/api-keys/${adminsKey.id}`, as(owner))).status).to.equal(200);
    expect(await invitationStatus(inv.body.invitation.id)).to.equal('cancelled');
    const cancel = (await auditLog(api, owner)).find((e) => e.action === 'team.invitations.cancel' && e.target === inv.body.invitation.id);
    expect(cancel?.actor).to.deep.equal({ type: 'person', id: owner.id });
    expect(cancel?.reason).to.equal('the key that made the invitation was revoked by an owner');
    expect(cancel?.via_key_id).to.equal(adminsKey.id);
    expect(cancel?.details).to.include({ key_revoked_reason: 'revoked', role: 'owner', invited_role: 'member' });
  });

  it('rotating an agent key that made an invitation cancels it with an entry naming the key as its actor', async () => {
    const { owner, ws } = await team(api);
    const agent = await api.post<{ agent: { id: string } }>('/api/agents', { name: 'rotating bot' }, as(owner));
    const agentKey = await api.post<{ api_key: { id: string; key: string } }>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'k', scopes: ['team:admin'] }, as(owner));
    const inv = await invite(api, withKey(agentKey.body.api_key.key), ws, uniqueEmail('via-agent'));
    expect(inv.status, inv.text).to.equal(201);
    const rotated = await api.post('/api/api-keys/rotate', {}, withKey(agentKey.body.api_key.key));
    expect(rotated.status, rotated.text).to.equal(201);
    const cancel = (await auditLog(api, owner)).find((e) => e.action === 'team.invitations.cancel' && e.target === inv.body.invitation.id);
    expect(cancel?.actor).to.deep.equal({ type: 'api_key', id: agentKey.body.api_key.id });
    expect(cancel?.reason).to.equal('the key that made the invitation was rotated (a new key replaced it)');
  });
});
