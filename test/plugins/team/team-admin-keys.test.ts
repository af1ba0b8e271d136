import { expect } from 'chai';
import { QueryTypes } from 'sequelize';
import { client } from '../../support/http';
import type { TestService } from '../../support/service';
import type { Api } from './helpers';
import { accept, as, auditLog, createKey, expectForbidden, expectInsufficientScope, expectNotFound, invite, join, refusedEntry, signup, startTeamService, team, uniqueEmail, withKey } from './helpers';

describe('team plugin: team:admin keys', () => {
  let svc: TestService;
  let api: Api;

  before(async () => {
    svc = await startTeamService();
    api = client(svc.url);
  });
  after(async () => {
    await svc.close();
  });

  const patch = (key: string, ws: string, personId: string, role: string) => api.patch<{ member: { role: string } }>(`/api/workspaces/${ws}/members/${personId}`, { role }, withKey(key));
  const remove = (key: string, ws: string, personId: string) => api.delete(`/api/workspaces/${ws}/members/${personId}`, withKey(key));

  it('a key acts only when it names team:admin: unscoped, other-scoped and legacy admin keys get 403 insufficient_scope (recorded)', async () => {
    const owner = await signup(api, 'owner');
    const ws = owner.workspaceId;
    for (const scopes of [undefined, ['price:compute'], ['admin'], ['price:compute', 'billing:write']]) {
      const { key, id } = await createKey(api, owner, ws, scopes);
      expectInsufficientScope(await api.get(`/api/workspaces/${ws}/members`, withKey(key)), /granted by name only/);
      expectInsufficientScope(await invite(api, withKey(key), ws, uniqueEmail('x')), /granted by name only/);
      const entry = (await auditLog(api, owner)).find((e) => e.outcome === 'refused' && e.actor.id === id && e.action === 'team.invitations.create');
      expect(entry?.actor.type).to.equal('api_key');
      expect(entry?.reason).to.match(/team:admin/);
    }
  });

  it('refuses a key without team:admin before reading the body: 403 insufficient_scope (recorded once), never a 400 about the body', async () => {
    const owner = await signup(api, 'owner');
    const ws = owner.workspaceId;
    const { key, id } = await createKey(api, owner, ws, ['price:compute']);
    const member = await signup(api, 'body-after-scope');
    await join(api, owner, member);
    for (const [what, send] of [
      ['empty body', () => api.post(`/api/workspaces/${ws}/invitations`, {}, withKey(key))],
      ['not JSON', () => api.raw('POST', `/api/workspaces/${ws}/invitations`, { rawBody: 'notjson', headers: { 'content-type': 'application/json', ...withKey(key) } })],
      ['a role that does not exist', () => api.patch(`/api/workspaces/${ws}/members/${member.id}`, { role: 'emperor' }, withKey(key))],
    ] as const) {
      const res = await send();
      expect(res.status, `${what}: ${res.text}`).to.equal(403);
      expectInsufficientScope(res, /granted by name only/);
    }
    const refused = (await auditLog(api, owner)).filter((e) => e.outcome === 'refused' && e.actor.id === id);
    expect(refused.map((e) => e.action).sort()).to.deep.equal(['team.invitations.create', 'team.invitations.create', 'team.members.update']);
    // A person acts by role and is told about the body as before.
    const bad = await api.post(`/api/workspaces/${ws}/invitations`, {}, as(owner));
    expect(bad.status, bad.text).to.equal(400);
  });

  it('a person token narrowed with POST /api/user/tokens manages nothing: team routes, key revocation, agents, claims and sessions answer 403 insufficient_scope (recorded), its session does them', async () => {
    const { owner, member, ws } = await team(api);
    const minted = await api.post<{ token: { access_token: string } }>('/api/user/tokens', { scopes: ['price:compute'] }, as(owner));
    expect(minted.status, minted.text).to.equal(201);
    const narrow = { authorization: `Bearer ${minted.body.token.access_token}` };
    const victim = await createKey(api, owner, ws);
    const bot = await api.post<{ agent: { id: string } }>('/api/agents', { name: 'narrow-target-bot' }, as(owner));
    expect(bot.status, bot.text).to.equal(201);
    const attempts = [
      // An agent's key by either route: a lasting credential acting as the agent, beyond what the token was made for.
      await api.post(`/api/agents/${bot.body.agent.id}/keys`, { name: 'x', scopes: ['price:compute'] }, narrow),
      await api.post('/api/api-keys', { name: 'via agent_id', scopes: ['price:compute'], agent_id: bot.body.agent.id }, narrow),
      await api.get(`/api/workspaces/${ws}/members`, narrow),
      await invite(api, narrow, ws, uniqueEmail('narrow'), 'admin'),
      await api.patch(`/api/workspaces/${ws}/members/${member.id}`, { role: 'admin' }, narrow),
      await api.delete(`/api/workspaces/${ws}/members/${member.id}`, narrow),
      await api.get(`/api/workspaces/${ws}/audit-log`, narrow),
      await api.delete(`/api/api-keys/${victim.id}`, narrow),
      await api.post('/api/agents', { name: 'narrow-bot' }, narrow),
      await api.delete('/api/user/sessions', narrow),
    ];
    for (const res of attempts) {
      expect([res.status, (res.body as { code?: string }).code], res.text).to.deep.equal([403, 'insufficient_scope']);
      expect((res.body as { hint?: string }).hint).to.match(/narrowed with POST \/api\/user\/tokens/);
    }
    const refused = (await auditLog(api, owner)).find((e) => e.outcome === 'refused' && e.action === 'team.invitations.create');
    expect(refused?.actor).to.deep.equal({ type: 'person', id: owner.id });
    // Nothing changed: the member is still a member, the key still works; the session itself may do it all.
    const members = await api.get<{ data: Array<{ person_id: string; role: string }> }>(`/api/workspaces/${ws}/members`, as(owner));
    expect(members.body.data.find((m) => m.person_id === member.id)?.role).to.equal('member');
    expect((await api.get('/api/me', withKey(victim.key))).status).to.equal(200);
    expect((await api.get('/api/me', narrow)).status, 'the narrowed token still works within its scopes').to.equal(200);
    expect((await api.patch(`/api/workspaces/${ws}/members/${member.id}`, { role: 'admin' }, as(owner))).status).to.equal(200);
  });

  it('a member is refused a team:admin key (403 role too low) with what to do instead', async () => {
    const { member, ws } = await team(api);
    const res = await api.post<{ reason: string; hint: string }>('/api/api-keys', { name: 'mine', scopes: ['team:admin'] }, as(member, ws));
    expectForbidden(res, 'role too low');
    expect(res.body.hint).to.equal('Ask an owner or admin of this workspace to create it, or create the key without team:admin.');
  });

  it('a token made from a team:admin key is refused: the key itself must be sent', async () => {
    const owner = await signup(api, 'owner');
    const agent = await api.post<{ agent: { id: string } }>('/api/agents', { name: 'team-bot' }, as(owner));
    expect(agent.status, agent.text).to.equal(201);
    // A key of team:admin alone gets no token at all: one that carries none of its permissions could do nothing.
    const alone = await api.post<{ api_key: { key: string } }>(`/api/agents/${agent.body.agent.id}/keys`, { scopes: ['team:admin'] }, as(owner));
    const none = await api.post<{ error: string }>('/api/oauth/token', { grant_type: 'client_credentials' }, withKey(alone.body.api_key.key));
    expect([none.status, none.body.error], none.text).to.deep.equal([400, 'invalid_scope']);
    // With an ordinary scope beside it, the token carries that one only, and the team routes refuse it.
    const agentKey = await api.post<{ api_key: { key: string } }>(`/api/agents/${agent.body.agent.id}/keys`, { scopes: ['team:admin', 'price:compute'] }, as(owner));
    expect(agentKey.status, agentKey.text).to.equal(201);
    const key = agentKey.body.api_key.key;
    const tok = await api.post<{ access_token: string; scope: string }>('/api/oauth/token', { grant_type: 'client_credentials' }, withKey(key));
    expect(tok.status, tok.text).to.equal(200);
    expect(tok.body.scope).to.equal('price:compute');
    const res = await api.get(`/api/workspaces/${owner.workspaceId}/members`, { authorization: `Bearer ${tok.body.access_token}` });
    expectInsufficientScope(res, /key itself/);
    // The agent key itself, naming team:admin, acts as its creator.
    expect((await api.get(`/api/workspaces/${owner.workspaceId}/members`, withKey(key))).status).to.equal(200);
    expect(refusedEntry(await auditLog(api, owner), 'team.members.list')?.actor.type).to.equal('access_token');
  });

  it("a key created by an owner lists the team, lists and revokes invitations, invites members and admins as its creator, and reads the audit log", async () => {
    const { owner, member, ws } = await team(api);
    const { key, id } = await createKey(api, owner, ws, ['team:admin']);
    const members = await api.get<{ data: unknown[] }>(`/api/workspaces/${ws}/members`, withKey(key));
    expect(members.status).to.equal(200);
    expect(members.body.data).to.have.length(3);
    const inv = await invite(api, withKey(key), ws, uniqueEmail('viakey'));
    expect(inv.status, inv.text).to.equal(201);
    expect(inv.body.invitation.via_key_id).to.equal(id);
    expect(inv.body.invitation.invited_by).to.equal(owner.id);
    const adminInv = await invite(api, withKey(key), ws, uniqueEmail('adm'), 'admin');
    expect(adminInv.status, adminInv.text).to.equal(201);
    expect((await api.get(`/api/workspaces/${ws}/invitations`, withKey(key))).status).to.equal(200);
    expect((await api.delete(`/api/workspaces/${ws}/invitations/${adminInv.body.invitation.id}`, withKey(key))).status).to.equal(200);
    const promoted = await patch(key, ws, member.id, 'admin');
    expect(promoted.status, promoted.text).to.equal(200);
    expect(promoted.body.member.role).to.equal('admin');

    const log = await api.get<{ data: Array<{ action: string; outcome: string; actor: { type: string; id: string }; via_key_id: string; details: Record<string, unknown> }> }>(
      `/api/workspaces/${ws}/audit-log`,
      withKey(key),
    );
    expect(log.status).to.equal(200);
    const made = log.body.data.find((e) => e.action === 'team.invitations.create' && e.outcome === 'done');
    expect(made?.actor).to.deep.equal({ type: 'api_key', id });
    expect(made?.via_key_id).to.equal(id);
    expect(made?.details.acting_as).to.equal(owner.id);
    expect(made?.details.acting_role).to.equal('owner');
  });

  it('an invitation made by a key is accepted while the key is valid and its creator can still invite', async () => {
    const owner = await signup(api, 'owner');
    const { key } = await createKey(api, owner, owner.workspaceId, ['team:admin']);
    const p = await signup(api, 'p');
    const inv = await invite(api, withKey(key), owner.workspaceId, p.email);
    const res = await accept(api, p, inv.body.accept.token);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.membership).to.deep.include({ workspace_id: owner.workspaceId, role: 'member' });
  });

  it('never makes anyone an owner', async () => {
    const { owner, member, ws } = await team(api);
    const { key } = await createKey(api, owner, ws, ['team:admin']);
    expectForbidden(await patch(key, ws, member.id, 'owner'), 'nobody can be made an owner through the team routes');
    expectForbidden(await invite(api, withKey(key), ws, uniqueEmail('o'), 'owner'), 'nobody can be made an owner through the team routes');
    const entry = refusedEntry(await auditLog(api, owner), 'team.members.update', 'nobody can be made an owner through the team routes');
    expect(entry?.actor.type).to.equal('api_key');
  });

  it("a key created by an admin grants nothing above member: no admin invitations, no promotions to admin", async () => {
    const { owner, admin, member, ws } = await team(api);
    const { key } = await createKey(api, admin, ws, ['team:admin']);
    expectForbidden(await invite(api, withKey(key), ws, uniqueEmail('a'), 'admin'), "the key's creator (admin) cannot invite at role admin");
    expectForbidden(await patch(key, ws, member.id, 'admin'), 'only a key created by an owner may make someone an admin');
    const ok = await invite(api, withKey(key), ws, uniqueEmail('m'));
    expect(ok.status, ok.text).to.equal(201);
    expect(ok.body.invitation.invited_by).to.equal(admin.id);
    expect(refusedEntry(await auditLog(api, owner), 'team.invitations.create', "the key's creator (admin) cannot invite at role admin")).to.exist;
  });

  it('only a key created by an owner may demote or remove an admin', async () => {
    const { owner, admin, member, ws } = await team(api);
    const admin2 = await signup(api, 'admin2');
    await join(api, owner, admin2, 'admin');
    const byAdmin = (await createKey(api, admin, ws, ['team:admin'])).key;
    const byOwner = (await createKey(api, owner, ws, ['team:admin'])).key;
    expectForbidden(await patch(byAdmin, ws, admin2.id, 'member'), 'only a key created by an owner may demote an admin');
    expectForbidden(await remove(byAdmin, ws, admin2.id), 'only a key created by an owner may remove an admin');
    // The admin's key still manages members.
    expect((await remove(byAdmin, ws, member.id)).status).to.equal(200);
    const demoted = await patch(byOwner, ws, admin2.id, 'member');
    expect(demoted.status, demoted.text).to.equal(200);
    expect(demoted.body.member.role).to.equal('member');
    await patch(byOwner, ws, admin2.id, 'admin');
    const removed = await remove(byOwner, ws, admin2.id);
    expect(removed.status, removed.text).to.equal(200);
    const log = await auditLog(api, owner);
    expect(refusedEntry(log, 'team.members.remove', 'only a key created by an owner may remove an admin')?.actor.type).to.equal('api_key');
  });

  it('never changes or removes the workspace owner or its own creator', async () => {
    const { owner, admin, ws } = await team(api);
    const byAdmin = (await createKey(api, admin, ws, ['team:admin'])).key;
    const byOwner = (await createKey(api, owner, ws, ['team:admin'])).key;
    expectForbidden(await patch(byAdmin, ws, owner.id, 'member'), 'the workspace owner cannot be changed');
    expectForbidden(await remove(byAdmin, ws, owner.id), 'the workspace owner cannot be removed');
    expectForbidden(await patch(byAdmin, ws, admin.id, 'member'), 'a team:admin key never changes its creator');
    expectForbidden(await remove(byAdmin, ws, admin.id), 'a team:admin key never removes its creator');
    expectForbidden(await patch(byOwner, ws, owner.id, 'admin'), 'a team:admin key never changes its creator');
    expectForbidden(await remove(byOwner, ws, owner.id), 'a team:admin key never removes its creator');
    const roles = await api.get<{ data: Array<{ person_id: string; role: string }> }>(`/api/workspaces/${ws}/members`, as(owner));
    expect(roles.body.data.map((m) => m.role)).to.deep.equal(['owner', 'admin', 'member']);
    expect(refusedEntry(await auditLog(api, owner), 'team.members.remove', 'a team:admin key never removes its creator')).to.exist;
  });

  it('refused on its own creator, a key is told who can do it: an owner changes an admin creator, the creator leaves signed in; an owner creator is changed by no one here', async () => {
    const { owner, admin, ws } = await team(api);
    const byAdmin = (await createKey(api, admin, ws, ['team:admin'])).key;
    const byOwner = (await createKey(api, owner, ws, ['team:admin'])).key;
    const changeAdmin = await patch(byAdmin, ws, admin.id, 'member');
    expectForbidden(changeAdmin, 'a team:admin key never changes its creator');
    expect((changeAdmin.body as Record<string, unknown>).hint).to.equal("Only an owner (or a key an owner created) changes an admin's role: ask a workspace owner.");
    const removeAdmin = await remove(byAdmin, ws, admin.id);
    expectForbidden(removeAdmin, 'a team:admin key never removes its creator');
    expect(removeAdmin.body.hint).to.equal(`The creator may leave, signed in as themselves (POST /api/workspaces/${ws}/leave), or a workspace owner may remove them.`);
    const changeOwner = await patch(byOwner, ws, owner.id, 'admin');
    expectForbidden(changeOwner, 'a team:admin key never changes its creator');
    expect((changeOwner.body as Record<string, unknown>).hint).to.equal("The key's creator is an owner, and owners are never changed through the team routes.");
    const removeOwner = await remove(byOwner, ws, owner.id);
    expect(removeOwner.body.hint).to.match(
      /^The key's creator is an owner: owners are never removed through the team routes, and the owner cannot leave either \(no route makes anyone else an owner\)\. The workspace stays its owner's: /,
    );
    // The hint is true: an owner changes the admin's role, which the admin signed in could not.
    expectForbidden(await api.patch(`/api/workspaces/${ws}/members/${admin.id}`, { role: 'member' }, as(admin, ws)), 'you cannot change your own role');
    expect((await api.patch(`/api/workspaces/${ws}/members/${admin.id}`, { role: 'member' }, as(owner))).status).to.equal(200);
  });

  it("acts with its creator's current role: once the creator is demoted the key is refused, once removed it is revoked", async () => {
    const { owner, admin, member, ws } = await team(api);
    const { key, id } = await createKey(api, admin, ws, ['team:admin']);
    expect((await api.get(`/api/workspaces/${ws}/audit-log`, withKey(key))).status).to.equal(200);
    expect((await api.patch(`/api/workspaces/${ws}/members/${admin.id}`, { role: 'member' }, as(owner))).status).to.equal(200);
    expectInsufficientScope(await api.get(`/api/workspaces/${ws}/audit-log`, withKey(key)), /no longer the case/);
    expectInsufficientScope(await remove(key, ws, member.id), /no longer the case/);
    expect(refusedEntry(await auditLog(api, owner), 'team.members.remove')?.actor.id).to.equal(id);

    const admin3 = await signup(api, 'admin3');
    await join(api, owner, admin3, 'admin');
    const k3 = (await createKey(api, admin3, ws, ['team:admin'])).key;
    expect((await invite(api, withKey(k3), ws, uniqueEmail('ok'))).status).to.equal(201);
    expect((await api.delete(`/api/workspaces/${ws}/members/${admin3.id}`, as(owner))).status).to.equal(200);
    // Removal goes further than demotion: the keys the person made in the workspace are revoked.
    const afterRemoval = await invite(api, withKey(k3), ws, uniqueEmail('no'));
    expect(afterRemoval.status).to.equal(401);
    expect(afterRemoval.text).to.match(/revoked/);
  });

  it('acts in its own workspace only', async () => {
    const owner = await signup(api, 'owner');
    const other = await signup(api, 'other');
    const { key } = await createKey(api, owner, owner.workspaceId, ['team:admin']);
    expectNotFound(await api.get(`/api/workspaces/${other.workspaceId}/members`, withKey(key)));
    expectNotFound(await invite(api, withKey(key), other.workspaceId, uniqueEmail('x')));
    expectNotFound(await remove(key, other.workspaceId, other.id));
    const theirs = await api.get<{ data: unknown[] }>(`/api/workspaces/${other.workspaceId}/members`, as(other));
    expect(theirs.body.data).to.have.length(1);
  });

  it("revoking the key cancels its pending invitations; they can no longer be accepted", async () => {
    const owner = await signup(api, 'owner');
    const ws = owner.workspaceId;
    const { key, id } = await createKey(api, owner, ws, ['team:admin']);
    const p = await signup(api, 'p');
    const inv = await invite(api, withKey(key), ws, p.email);
    const personInv = await invite(api, as(owner), ws, uniqueEmail('kept'));
    const revoked = await api.delete(`/api/api-keys/${id}`, as(owner));
    expect(revoked.status, revoked.text).to.equal(200);

    const list = await api.get<{ data: Array<{ id: string; status: string }> }>(`/api/workspaces/${ws}/invitations`, as(owner));
    expect(list.body.data.find((i) => i.id === inv.body.invitation.id)?.status).to.equal('cancelled');
    expect(list.body.data.find((i) => i.id === personInv.body.invitation.id)?.status).to.equal('pending');
    const res = await accept(api, p, inv.body.accept.token);
    expect(res.status).to.equal(410);
    expect(res.body.code).to.equal('gone');
    expect(res.body.reason).to.equal('invitation cancelled');
    expect(res.body.hint).to.be.a('string');
    const log = await auditLog(api, owner);
    const cancel = log.find((e) => e.action === 'team.invitations.cancel');
    expect(cancel?.actor).to.deep.equal({ type: 'person', id: owner.id });
    expect(cancel?.reason).to.equal('the key that made the invitation was revoked by its creator');
    expect(cancel?.via_key_id).to.equal(id);
    expect(cancel?.target).to.equal(inv.body.invitation.id);
    expect(refusedEntry(log, 'team.invitations.accept', 'invitation cancelled')?.actor.id).to.equal(p.id);
  });

  it("demoting an inviter cancels the pending invitations they made, through their key or themselves, at once; they cannot be accepted", async () => {
    const { owner, admin, ws } = await team(api);
    const { key, id } = await createKey(api, admin, ws, ['team:admin']);
    const p = await signup(api, 'p');
    const inv = await invite(api, withKey(key), ws, p.email);
    expect(inv.status).to.equal(201);
    const byPerson = await invite(api, as(admin, ws), ws, uniqueEmail('person-made'));
    expect((await api.patch(`/api/workspaces/${ws}/members/${admin.id}`, { role: 'member' }, as(owner))).status).to.equal(200);

    const list = await api.get<{ data: Array<{ id: string; status: string }> }>(`/api/workspaces/${ws}/invitations`, as(owner));
    expect(list.body.data.find((i) => i.id === inv.body.invitation.id)?.status).to.equal('cancelled');
    expect(list.body.data.find((i) => i.id === byPerson.body.invitation.id)?.status).to.equal('cancelled');
    const res = await accept(api, p, inv.body.accept.token);
    expect(res.status, res.text).to.equal(410);
    expect(res.body.code).to.equal('gone');
    expect(res.body.reason).to.equal('invitation cancelled');
    expect(res.body.invitation_status).to.equal('cancelled');
    const log = await auditLog(api, owner);
    const cancel = log.find((e) => e.action === 'team.invitations.cancel' && e.target === inv.body.invitation.id);
    expect(cancel?.reason).to.equal("the key's creator can no longer invite at role member");
    expect(cancel?.via_key_id).to.equal(id);
    const cancelPerson = log.find((e) => e.action === 'team.invitations.cancel' && e.target === byPerson.body.invitation.id);
    expect(cancelPerson?.actor.type).to.equal('system');
    expect(cancelPerson?.reason).to.equal('the inviter can no longer invite at role member');
    expect(cancelPerson?.via_key_id).to.equal(null);

    // Restoring the creator's role does not revive a cancelled invitation.
    expect((await api.patch(`/api/workspaces/${ws}/members/${admin.id}`, { role: 'admin' }, as(owner))).status).to.equal(200);
    const again = await accept(api, p, inv.body.accept.token);
    expect(again.status).to.equal(410);
    expect(again.body.reason).to.equal('invitation cancelled');
    const members = await api.get<{ data: Array<{ person_id: string }> }>(`/api/workspaces/${ws}/members`, as(owner));
    expect(members.body.data.map((m) => m.person_id)).to.not.include(p.id);
  });

  it("removing an admin cancels the pending invitations they made, through their key or themselves: a removed admin cannot come back through one sent to another address of theirs", async () => {
    const { owner, admin, ws } = await team(api);
    const { key } = await createKey(api, admin, ws, ['team:admin']);
    const inv = await invite(api, withKey(key), ws, uniqueEmail('gone'));
    const alt = await signup(api, 'admin-alt');
    const byPerson = await invite(api, as(admin, ws), ws, alt.email);
    expect(byPerson.status, byPerson.text).to.equal(201);
    const ownersOwn = await invite(api, as(owner), ws, uniqueEmail('owners-own'));
    expect((await api.delete(`/api/workspaces/${ws}/members/${admin.id}`, as(owner))).status).to.equal(200);
    const list = await api.get<{ data: Array<{ id: string; status: string }> }>(`/api/workspaces/${ws}/invitations`, as(owner));
    expect(list.body.data.find((i) => i.id === inv.body.invitation.id)?.status).to.equal('cancelled');
    expect(list.body.data.find((i) => i.id === byPerson.body.invitation.id)?.status).to.equal('cancelled');
    expect(list.body.data.find((i) => i.id === ownersOwn.body.invitation.id)?.status).to.equal('pending');
    const back = await accept(api, alt, byPerson.body.accept.token);
    expect(back.status, back.text).to.equal(410);
    expect(back.body.reason).to.equal('invitation cancelled');
  });

  it("accepting checks the inviter again: a role lost outside the team routes makes a person's invitation unacceptable and cancels it", async () => {
    const { owner, admin, ws } = await team(api);
    const p = await signup(api, 'p');
    const inv = await invite(api, as(admin, ws), ws, p.email);
    await svc.sequelize.query(`UPDATE memberships SET role = 'member' WHERE workspace_id = $1 AND person_id = $2`, { bind: [ws, admin.id] });
    const res = await accept(api, p, inv.body.accept.token);
    expect(res.status, res.text).to.equal(410);
    expect(res.body.reason).to.equal('the inviter can no longer invite at role member');
    expect(res.body.invitation_status).to.equal('cancelled');
    const cancel = (await auditLog(api, owner)).find((e) => e.action === 'team.invitations.cancel' && e.target === inv.body.invitation.id);
    expect(cancel?.reason).to.equal('the inviter can no longer invite at role member');
    expect(cancel?.via_key_id).to.equal(null);
  });

  it("accepting checks the creator again: a role lost outside the team routes makes the key's invitation unacceptable and cancels it", async () => {
    const { owner, admin, ws } = await team(api);
    const { key } = await createKey(api, admin, ws, ['team:admin']);
    const p = await signup(api, 'p');
    const inv = await invite(api, withKey(key), ws, p.email);
    await svc.sequelize.query(`UPDATE memberships SET role = 'member' WHERE workspace_id = $1 AND person_id = $2`, { bind: [ws, admin.id] });
    const res = await accept(api, p, inv.body.accept.token);
    expect(res.status, res.text).to.equal(410);
    expect(res.body.code).to.equal('gone');
    expect(res.body.reason).to.equal("the key's creator can no longer invite at role member");
    expect(res.body.invitation_status).to.equal('cancelled');
    expect(res.body.hint).to.be.a('string');
    const rows = await svc.sequelize.query<{ status: string }>('SELECT status FROM invitations WHERE id = $1', { bind: [inv.body.invitation.id], type: QueryTypes.SELECT });
    expect(rows[0]?.status).to.equal('cancelled');
    expect(refusedEntry(await auditLog(api, owner), 'team.invitations.accept', "the key's creator can no longer invite at role member")?.actor.id).to.equal(p.id);
  });

  it('an invitation made by a key that has since expired cannot be accepted', async () => {
    const owner = await signup(api, 'owner');
    const { key, id } = await createKey(api, owner, owner.workspaceId, ['team:admin']);
    const p = await signup(api, 'p');
    const inv = await invite(api, withKey(key), owner.workspaceId, p.email);
    await svc.sequelize.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, { bind: [id] });
    const res = await accept(api, p, inv.body.accept.token);
    expect(res.status, res.text).to.equal(410);
    expect(res.body.reason).to.equal('the key that made the invitation has expired');
    expect(res.body.invitation_status).to.equal('cancelled');
  });

  it('an invitation made by a key that has since expired is over before anyone tries it: listed cancelled, not revocable, blocking no new invitation to that email', async () => {
    const owner = await signup(api, 'owner');
    const ws = owner.workspaceId;
    const { key, id } = await createKey(api, owner, ws, ['team:admin']);
    const p = await signup(api, 'p');
    const inv = await invite(api, withKey(key), ws, p.email);
    expect(inv.status, inv.text).to.equal(201);
    await svc.sequelize.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, { bind: [id] });
    const listed = await api.get<Record<string, any>>(`/api/workspaces/${ws}/invitations`, as(owner));
    expect(listed.status, listed.text).to.equal(200);
    expect((listed.body.data as Array<{ id: string; status: string }>).find((i) => i.id === inv.body.invitation.id)?.status).to.equal('cancelled');
    const revoked = await api.delete<Record<string, any>>(`/api/workspaces/${ws}/invitations/${inv.body.invitation.id}`, as(owner));
    expect(revoked.status, revoked.text).to.equal(409);
    expect(revoked.body).to.include({ code: 'conflict', error: 'The invitation is already cancelled.', reason: 'invitation cancelled' });
    const again = await invite(api, as(owner), ws, p.email);
    expect(again.status, again.text).to.equal(201);
    expect((await accept(api, p, again.body.accept.token)).status).to.equal(200);
  });

  it('an invitation past its time cannot be revoked: it is already expired, as the list shows it', async () => {
    const owner = await signup(api, 'owner');
    const inv = await invite(api, as(owner), owner.workspaceId, uniqueEmail('late'));
    await svc.sequelize.query(`UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = $1`, { bind: [inv.body.invitation.id] });
    const revoked = await api.delete<Record<string, any>>(`/api/workspaces/${owner.workspaceId}/invitations/${inv.body.invitation.id}`, as(owner));
    expect(revoked.status, revoked.text).to.equal(409);
    expect(revoked.body.error).to.equal('The invitation is already expired.');
  });

  it("an admin invitation made by an owner's key stops being acceptable once the creator is no longer an owner", async () => {
    const owner = await signup(api, 'owner');
    const ws = owner.workspaceId;
    const { key } = await createKey(api, owner, ws, ['team:admin']);
    const p = await signup(api, 'p');
    const inv = await invite(api, withKey(key), ws, p.email, 'admin');
    expect(inv.status, inv.text).to.equal(201);
    // Ownership changes outside the team routes (no route demotes an owner).
    const heir = await signup(api, 'heir');
    await join(api, owner, heir);
    await svc.sequelize.query(`UPDATE memberships SET role = CASE WHEN person_id = $2 THEN 'admin' ELSE 'owner' END WHERE workspace_id = $1 AND person_id IN ($2, $3)`, {
      bind: [ws, owner.id, heir.id],
    });
    const res = await accept(api, p, inv.body.accept.token);
    expect(res.status, res.text).to.equal(410);
    expect(res.body.reason).to.equal("the key's creator can no longer invite at role admin");
  });
});
