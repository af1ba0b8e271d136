import { expect } from 'chai';
import { client } from '../../support/http';
import { claimPath, register } from '../../support/identity';
import type { TestService } from '../../support/service';
import type { Api } from './helpers';
import { as, auditLog, createKey, expectForbidden, expectNotFound, invite, join, refusedEntry, signup, startTeamService, team, uniqueEmail, withKey } from './helpers';

type MemberBody = { member: { person_id: string; role: string } } & Record<string, unknown>;

describe('team plugin: members, roles and leaving', () => {
  let svc: TestService;
  let api: Api;

  before(async () => {
    svc = await startTeamService();
    api = client(svc.url);
  });
  after(async () => {
    await svc.close();
  });

  const patch = (headers: Record<string, string>, ws: string, personId: string, role: string) => api.patch<MemberBody>(`/api/workspaces/${ws}/members/${personId}`, { role }, headers);
  const remove = (headers: Record<string, string>, ws: string, personId: string) => api.delete(`/api/workspaces/${ws}/members/${personId}`, headers);

  it('lists members in joining order with roles, for every member', async () => {
    const { owner, admin, member, ws } = await team(api);
    const res = await api.get<{ object: string; data: Array<{ person_id: string; role: string; email: string }>; has_more: boolean }>(`/api/workspaces/${ws}/members`, as(member, ws));
    expect(res.status, res.text).to.equal(200);
    expect(res.body.object).to.equal('list');
    expect(res.body.has_more).to.equal(false);
    expect(res.body.data.map((m) => [m.person_id, m.role, m.email])).to.deep.equal([
      [owner.id, 'owner', owner.email],
      [admin.id, 'admin', admin.email],
      [member.id, 'member', member.email],
    ]);
    const page = await api.get<{ data: Array<{ person_id: string }>; next_cursor: string }>(`/api/workspaces/${ws}/members?limit=2`, as(owner));
    const rest = await api.get<{ data: Array<{ person_id: string }> }>(`/api/workspaces/${ws}/members?limit=2&cursor=${page.body.next_cursor}`, as(owner));
    expect(rest.body.data.map((m) => m.person_id)).to.deep.equal([member.id]);
  });

  it('refuses a forged members cursor whose sort value is not a time PostgreSQL reads with 400 validation_error naming cursor', async () => {
    const owner = await signup(api, 'owner');
    const cursorOf = (pos: unknown[]) => Buffer.from(JSON.stringify(pos)).toString('base64url');
    for (const pos of [['garbage', 'x'], [12345, 'x'], ['0000-01-01 00:00:00Z', 'x'], ['2026-01-01 00:00:00+23', 'x']]) {
      const res = await api.get<{ code: string; issues: Array<{ path: string }> }>(`/api/workspaces/${owner.workspaceId}/members?cursor=${cursorOf(pos)}`, as(owner));
      expect(res.status, `${JSON.stringify(pos)}: ${res.text}`).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues.map((i) => i.path)).to.deep.equal(['cursor']);
    }
    // The edges PostgreSQL still reads are taken, not refused with them.
    const edge = await api.get<{ data: unknown[] }>(`/api/workspaces/${owner.workspaceId}/members?cursor=${cursorOf(['0001-01-01 00:00:00-15:59', 'x'])}`, as(owner));
    expect(edge.status, edge.text).to.equal(200);
    expect(edge.body.data).to.have.length(1);
  });

  it('an owner promotes a member to admin and demotes an admin to member; each change is recorded', async () => {
    const { owner, admin, member, ws } = await team(api);
    const up = await patch(as(owner), ws, member.id, 'admin');
    expect(up.status, up.text).to.equal(200);
    expect(up.body.member).to.deep.include({ person_id: member.id, role: 'admin' });
    const down = await patch(as(owner), ws, admin.id, 'member');
    expect(down.status, down.text).to.equal(200);
    expect(down.body.member.role).to.equal('member');
    const log = await auditLog(api, owner);
    const changes = log.filter((e) => e.action === 'team.members.update' && e.outcome === 'done');
    expect(changes.map((e) => [e.target, e.details.from_role, e.details.to_role])).to.deep.equal([
      [admin.id, 'admin', 'member'],
      [member.id, 'member', 'admin'],
    ]);
  });

  it('nobody is made an owner, and the owner is never changed or removed, even by an owner', async () => {
    const { owner, admin, member, ws } = await team(api);
    expectForbidden(await patch(as(owner), ws, member.id, 'owner'), 'nobody can be made an owner through the team routes');
    expectForbidden(await patch(as(admin, ws), ws, owner.id, 'member'), 'the workspace owner cannot be changed');
    expectForbidden(await remove(as(admin, ws), ws, owner.id), 'the workspace owner cannot be removed');
    expectForbidden(await patch(as(owner), ws, owner.id, 'admin'), 'you cannot change your own role');
    const second = await signup(api, 'co-owner');
    await join(api, owner, second);
    await svc.sequelize.query(`UPDATE memberships SET role = 'owner' WHERE workspace_id = $1 AND person_id = $2`, { bind: [ws, second.id] });
    expectForbidden(await remove(as(owner), ws, second.id), 'the workspace owner cannot be removed');
    expectForbidden(await patch(as(owner), ws, second.id, 'member'), 'the workspace owner cannot be changed');

    const roles = await api.get<{ data: Array<{ person_id: string; role: string }> }>(`/api/workspaces/${ws}/members`, as(owner));
    expect(roles.body.data.find((m) => m.person_id === member.id)?.role).to.equal('member');
    const log = await auditLog(api, owner);
    expect(refusedEntry(log, 'team.members.update', 'nobody can be made an owner through the team routes')?.target).to.equal(member.id);
    expect(refusedEntry(log, 'team.members.remove', 'the workspace owner cannot be removed')).to.exist;
  });

  it('admins manage members but may not demote, promote to or remove admins; owners may', async () => {
    const { owner, admin, member, ws } = await team(api);
    const admin2 = await signup(api, 'admin2');
    await join(api, owner, admin2, 'admin');
    expectForbidden(await patch(as(admin, ws), ws, admin2.id, 'member'), 'only owners may demote an admin');
    expectForbidden(await remove(as(admin, ws), ws, admin2.id), 'only owners may remove an admin');
    expectForbidden(await patch(as(admin, ws), ws, member.id, 'admin'), 'only owners may make someone an admin');
    expectForbidden(await patch(as(admin, ws), ws, admin.id, 'member'), 'you cannot change your own role');
    expectForbidden(await remove(as(admin, ws), ws, admin.id), 'you cannot remove yourself');

    const removed = await remove(as(admin, ws), ws, member.id);
    expect(removed.status, removed.text).to.equal(200);
    expect(removed.body.removed).to.equal(true);
    expect((removed.body.member as { person_id: string }).person_id).to.equal(member.id);
    expect((await remove(as(owner), ws, admin2.id)).status).to.equal(200);

    const log = await auditLog(api, owner);
    expect(refusedEntry(log, 'team.members.update', 'only owners may demote an admin')?.actor.id).to.equal(admin.id);
    expect(log.find((e) => e.action === 'team.members.remove' && e.outcome === 'done' && e.target === member.id)?.actor.id).to.equal(admin.id);
  });

  it('a person refused a change of their own role or their own removal is told who can: an owner for an admin, nobody for an owner; leaving names this workspace', async () => {
    const { owner, admin, ws } = await team(api);
    const adminSelf = await patch(as(admin, ws), ws, admin.id, 'member');
    expectForbidden(adminSelf, 'you cannot change your own role');
    expect(adminSelf.body.hint).to.equal('Ask an owner to change your role.');
    const ownerSelf = await patch(as(owner), ws, owner.id, 'admin');
    expectForbidden(ownerSelf, 'you cannot change your own role');
    expect(ownerSelf.body.hint).to.equal('Owners are never changed through the team routes.');
    const adminOut = await remove(as(admin, ws), ws, admin.id);
    expectForbidden(adminOut, 'you cannot remove yourself');
    expect(adminOut.body.hint).to.equal(`Leave the workspace with POST /api/workspaces/${ws}/leave, or ask a workspace owner to remove you.`);
  });

  it('an owner removing themselves is not told to leave while another owner remains (no route makes one): the workspace stays theirs, and what they can do instead', async () => {
    const { owner, ws } = await team(api);
    const ownerOut = await remove(as(owner), ws, owner.id);
    expectForbidden(ownerOut, 'you cannot remove yourself');
    expect(ownerOut.body.hint).to.equal(
      "Owners are never removed through the team routes, and you cannot leave either (no route makes anyone else an owner). The workspace stays its owner's: to stop its use, revoke its keys (DELETE /api/api-keys/{keyId}) and remove its other members (DELETE /api/workspaces/{workspace_id}/members/{person_id}); to work elsewhere, act in another workspace of theirs with x-workspace-id (GET /api/user lists them).",
    );
    expect(ownerOut.body.hint).not.to.match(/another owner remains/);
    // The leave it would have pointed at is refused the same way, promising no other owner either.
    const leave = await api.post<Record<string, string>>(`/api/workspaces/${ws}/leave`, {}, as(owner));
    expectForbidden(leave, 'the last owner cannot leave');
    expect(leave.body.error).to.equal("A workspace's only owner cannot leave it.");
    expect(leave.body.hint).to.match(/^A workspace always keeps an owner, and no route makes anyone else one\. The workspace stays its owner's: /);
  });

  it('members cannot manage the team', async () => {
    const { owner, admin, member, ws } = await team(api);
    const other = await signup(api, 'other');
    await join(api, owner, other);
    expectForbidden(await patch(as(member, ws), ws, other.id, 'admin'), 'members cannot manage the team');
    expectForbidden(await remove(as(member, ws), ws, other.id), 'members cannot manage the team');
    expectForbidden(await remove(as(member, ws), ws, admin.id), 'members cannot manage the team');
    expect(refusedEntry(await auditLog(api, owner), 'team.members.remove', 'members cannot manage the team')?.actor.id).to.equal(member.id);
  });

  it('an unknown member id answers 404 (and is recorded)', async () => {
    const owner = await signup(api, 'owner');
    const res = await patch(as(owner), owner.workspaceId, 'per_doesnotexist', 'member');
    expect(res.status).to.equal(404);
    expect(res.body.code).to.equal('not_found');
    expect(res.body.reason).to.equal('member not found');
    expect(refusedEntry(await auditLog(api, owner), 'team.members.update', 'member not found')).to.exist;
  });

  it('a member leaves; afterwards they cannot act in that workspace', async () => {
    const { owner, member, ws } = await team(api);
    const res = await api.post(`/api/workspaces/${ws}/leave`, {}, as(member, ws));
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.include({ left: true, workspace_id: ws, role: 'member' });
    const after = await api.get(`/api/workspaces/${ws}/members`, as(member, ws));
    expect(after.status).to.equal(404);
    const list = await api.get<{ data: Array<{ person_id: string }> }>(`/api/workspaces/${ws}/members`, as(owner));
    expect(list.body.data.map((m) => m.person_id)).to.not.include(member.id);
    expect((await auditLog(api, owner)).find((e) => e.action === 'team.members.leave' && e.outcome === 'done')?.actor.id).to.equal(member.id);
  });

  it('a removed member\'s API keys in that workspace are revoked at once; the keys of those who stay keep working', async () => {
    const { owner, admin, member, ws } = await team(api);
    const memberKey = await createKey(api, member, ws);
    const ownerKey = await createKey(api, owner, ws);
    expect((await api.get('/api/me', withKey(memberKey.key))).status).to.equal(200);
    expect((await remove(as(admin, ws), ws, member.id)).status).to.equal(200);
    const refused = await api.get<Record<string, any>>('/api/me', withKey(memberKey.key));
    expect(refused.status).to.equal(401);
    expect(refused.body.code).to.equal('invalid_credentials');
    expect(refused.body.error).to.match(/revoked/);
    expect((await api.get('/api/me', withKey(ownerKey.key))).status).to.equal(200);
    const removal = (await auditLog(api, owner)).find((e) => e.action === 'team.members.remove' && e.outcome === 'done' && e.target === member.id);
    expect(removal?.details).to.deep.include({ removed_role: 'member', revoked_keys: 1 });
  });

  it("a member revokes only the API keys they created; admins revoke members' keys; owners revoke any key of the workspace", async () => {
    const { owner, admin, member, ws } = await team(api);
    const ownerKey = await createKey(api, owner, ws);
    const memberKey = await createKey(api, member, ws);
    const otherMemberKey = await createKey(api, member, ws);
    const refused = await api.delete<Record<string, any>>(`/api/api-keys/${ownerKey.id}`, as(member, ws));
    expect(refused.status).to.equal(403);
    // An admin may not revoke an owner's key either: the hint names who can.
    expect(refused.body).to.include({ code: 'forbidden', reason: 'members revoke only their own keys', hint: 'Ask a workspace owner to revoke it.' });
    expect((await api.get('/api/me', withKey(ownerKey.key))).status).to.equal(200);
    expect((await api.delete(`/api/api-keys/${memberKey.id}`, as(member, ws))).status).to.equal(200);
    expect((await api.delete(`/api/api-keys/${otherMemberKey.id}`, as(admin, ws))).status).to.equal(200);
    expect((await api.get('/api/me', withKey(otherMemberKey.key))).status).to.equal(401);
    expect((await api.delete(`/api/api-keys/${ownerKey.id}`, as(owner))).status).to.equal(200);
  });

  it("a member changes, disables and mints keys only for agents they created; another person's agent answers 403 and keeps its keys", async () => {
    const { owner, admin, member, ws } = await team(api);
    const ownersAgent = await api.post<{ agent: { id: string } }>('/api/agents', { name: 'owner bot' }, as(owner));
    const ownersKey = await api.post<{ api_key: { key: string } }>(`/api/agents/${ownersAgent.body.agent.id}/keys`, { name: 'k' }, as(owner));
    expect(ownersKey.status).to.equal(201);
    const path = `/api/agents/${ownersAgent.body.agent.id}`;
    for (const res of [
      await api.patch<Record<string, any>>(path, { status: 'disabled' }, as(member, ws)),
      await api.patch<Record<string, any>>(path, { name: 'renamed' }, as(member, ws)),
      await api.delete<Record<string, any>>(path, as(member, ws)),
      await api.post<Record<string, any>>(`${path}/keys`, { name: 'mine now' }, as(member, ws)),
      // The general key route names the agent too: the same rule holds there.
      await api.post<Record<string, any>>('/api/api-keys', { name: 'mine now', agent_id: ownersAgent.body.agent.id }, as(member, ws)),
    ]) {
      expect(res.status, res.text).to.equal(403);
      expect(res.body).to.include({ code: 'forbidden', reason: 'members manage only their own agents' });
    }
    expect((await api.get('/api/me', withKey(ownersKey.body.api_key.key))).status).to.equal(200);
    expect((await api.get<{ agent: { name: string } }>(path, as(member, ws))).body.agent.name).to.equal('owner bot');
    // Their own agent, and an admin on anyone's.
    const membersAgent = await api.post<{ agent: { id: string } }>('/api/agents', { name: 'member bot' }, as(member, ws));
    expect((await api.post(`/api/agents/${membersAgent.body.agent.id}/keys`, { name: 'k' }, as(member, ws))).status).to.equal(201);
    expect((await api.post('/api/api-keys', { name: 'k2', agent_id: membersAgent.body.agent.id }, as(member, ws))).status).to.equal(201);
    expect((await api.patch(`/api/agents/${membersAgent.body.agent.id}`, { name: 'renamed' }, as(member, ws))).status).to.equal(200);
    expect((await api.delete(`/api/agents/${membersAgent.body.agent.id}`, as(admin, ws))).status).to.equal(200);
    // Disabling the owner's agent would revoke the key the owner minted, which an admin may not revoke; the owner may.
    expect((await api.delete(path, as(admin, ws))).status).to.equal(403);
    expect((await api.delete(path, as(owner))).status).to.equal(200);
    expect((await api.get('/api/me', withKey(ownersKey.body.api_key.key))).status).to.equal(401);
  });

  it("the workspace's team acts in its test workspace with the roles it holds there; removal ends that too, keys made there included", async () => {
    const { owner, member, ws } = await team(api);
    const user = await api.get<{ workspaces: Array<{ workspace_id: string; role: string; is_test: boolean }> }>('/api/user', as(member, ws));
    // Listed right after the workspace it belongs to.
    const at = user.body.workspaces.findIndex((w) => w.workspace_id === ws);
    const test = user.body.workspaces[at + 1];
    expect(test, JSON.stringify(user.body.workspaces)).to.include({ role: 'member', is_test: true });
    const testWs = (test as { workspace_id: string }).workspace_id;
    const me = await api.get<Record<string, any>>('/api/me', as(member, testWs));
    expect(me.status, me.text).to.equal(200);
    expect(me.body.tenant_id).to.equal(testWs);
    const key = await createKey(api, member, testWs);
    expect((await api.get<Record<string, any>>('/api/me', withKey(key.key))).body.tenant_id).to.equal(testWs);
    // Its team is its parent's: the team routes on the test workspace send the caller there, by name, for every role.
    for (const [who, path, method] of [
      [owner, `/api/workspaces/${testWs}/members`, 'get'],
      [member, `/api/workspaces/${testWs}/members`, 'get'],
      [owner, `/api/workspaces/${testWs}/invitations`, 'post'],
    ] as const) {
      const res = method === 'get' ? await api.get<Record<string, any>>(path, as(who, testWs)) : await api.post<Record<string, any>>(path, { email: uniqueEmail('invitee'), role: 'member' }, as(who, testWs));
      expect(res.status, res.text).to.equal(409);
      expect(res.body).to.include({ code: 'conflict', reason: 'test workspace', parent_workspace_id: ws });
      expect(res.body.hint).to.include(`/api/workspaces/${ws}/`).and.include(`x-workspace-id: ${ws}`);
    }
    // A team:admin key is not made in it at all: the refusal names the parent, where one manages the team.
    const adminKey = await api.post<Record<string, any>>('/api/api-keys', { name: 'team admin', scopes: ['team:admin'] }, as(owner, testWs));
    expect(adminKey.status, adminKey.text).to.equal(409);
    expect(adminKey.body).to.include({ code: 'conflict', reason: 'test workspace', parent_workspace_id: ws });
    // A person outside the team cannot act there.
    const outsider = await signup(api, 'outsider');
    expect((await api.get('/api/me', as(outsider, testWs))).status).to.equal(404);
    expect((await remove(as(owner, ws), ws, member.id)).status).to.equal(200);
    expect((await api.get('/api/me', as(member, testWs))).status).to.equal(404);
    expect((await api.get('/api/me', withKey(key.key))).status, 'the key made in the test workspace').to.equal(401);
  });

  it('no API key a member creates while being removed outlives the removal (each is refused or revoked)', async () => {
    for (let round = 0; round < 3; round++) {
      const { admin, member, ws } = await team(api);
      const creating = Array.from({ length: 24 }, (_, i) => api.post<{ api_key?: { key: string } }>('/api/api-keys', { name: `race ${i}` }, as(member, ws)));
      const removed = await remove(as(admin, ws), ws, member.id);
      expect(removed.status).to.equal(200);
      const results = await Promise.all(creating);
      for (const r of results) expect([201, 404], r.text).to.include(r.status);
      const made = results.filter((r) => r.status === 201).length;
      // Read from the database: presenting revoked keys would trip the failed-credential guard.
      const [[live]] = (await svc.sequelize.query('SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = $1 AND created_by_person_id = $2 AND revoked_at IS NULL', { bind: [ws, member.id] })) as [Array<{ n: number }>, unknown];
      expect(live?.n, `round ${round}: ${made} keys made`).to.equal(0);
    }
  });

  it('a member who leaves loses the API keys they made in that workspace', async () => {
    const { member, ws } = await team(api);
    const memberKey = await createKey(api, member, ws);
    expect((await api.post(`/api/workspaces/${ws}/leave`, {}, as(member, ws))).status).to.equal(200);
    expect((await api.get('/api/me', withKey(memberKey.key))).status).to.equal(401);
  });

  it('the only owner cannot leave (403, recorded); an owner may leave while another owner (one set in the database: no route makes one) remains', async () => {
    const owner = await signup(api, 'owner');
    const res = await api.post(`/api/workspaces/${owner.workspaceId}/leave`, {}, as(owner));
    expectForbidden(res, 'the last owner cannot leave');
    expect(refusedEntry(await auditLog(api, owner), 'team.members.leave', 'the last owner cannot leave')?.actor.id).to.equal(owner.id);

    const co = await signup(api, 'co');
    await join(api, owner, co);
    await svc.sequelize.query(`UPDATE memberships SET role = 'owner' WHERE workspace_id = $1 AND person_id = $2`, { bind: [owner.workspaceId, co.id] });
    const left = await api.post(`/api/workspaces/${owner.workspaceId}/leave`, {}, as(co, owner.workspaceId));
    expect(left.status, left.text).to.equal(200);
    expect(left.body.role).to.equal('owner');
  });

  it('leaving takes person credentials only', async () => {
    const owner = await signup(api, 'owner');
    const { key } = await createKey(api, owner, owner.workspaceId, ['team:admin']);
    const res = await api.post(`/api/workspaces/${owner.workspaceId}/leave`, {}, withKey(key));
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('unauthorized');
    expect(res.body.hint).to.match(/session|person token/);
  });

  it("another workspace's id answers 404 on every team route, whether it exists or not, and the attempt is recorded", async () => {
    const { owner, admin, member, ws } = await team(api);
    const stranger = await signup(api, 'stranger');
    const { key } = await createKey(api, owner, ws, ['team:admin']);
    for (const target of [stranger.workspaceId, 'ws_doesnotexist0000000000']) {
      for (const headers of [as(owner), as(admin, ws), withKey(key)]) {
        expectNotFound(await api.get(`/api/workspaces/${target}/members`, headers));
        expectNotFound(await api.get(`/api/workspaces/${target}/invitations`, headers));
        expectNotFound(await api.get(`/api/workspaces/${target}/audit-log`, headers));
        expectNotFound(await invite(api, headers, target, uniqueEmail('x')));
        expectNotFound(await api.delete(`/api/workspaces/${target}/invitations/inv_x00`, headers));
        expectNotFound(await patch(headers, target, stranger.id, 'member'));
        expectNotFound(await remove(headers, target, stranger.id));
      }
      expectNotFound(await api.post(`/api/workspaces/${target}/leave`, {}, as(member, ws)));
    }
    const theirs = await api.get<{ data: Array<{ person_id: string }> }>(`/api/workspaces/${stranger.workspaceId}/members`, as(stranger));
    expect(theirs.body.data.map((m) => m.person_id)).to.deep.equal([stranger.id]);
    const mine = await auditLog(api, owner);
    const refusal = refusedEntry(mine, 'team.members.remove', 'not your workspace');
    expect(refusal).to.exist;
    expect((await auditLog(api, stranger)).filter((e) => e.outcome === 'refused')).to.have.length(0);
  });

  it('a person acts by their role in the workspace chosen with x-workspace-id', async () => {
    const { owner, member, ws } = await team(api);
    // In their own workspace the member is the owner and may invite there …
    expect((await invite(api, as(member), member.workspaceId, uniqueEmail('own'))).status).to.equal(201);
    // … but in the team workspace they are a member.
    expectForbidden(await invite(api, as(member, ws), ws, uniqueEmail('nope')), 'members cannot manage the team');
    expect(owner.workspaceId).to.equal(ws);
  });

  it("removal and leaving also end the person's admin role in agent workspaces claimed under the team (keys made there revoked); owners keep theirs", async () => {
    for (const how of ['removed', 'left'] as const) {
      const { owner, admin, ws } = await team(api);
      const reg = await register(svc.url);
      const claimed = await api.post<{ workspace: { id: string; parent_id: string } }>(claimPath(reg), { workspace_id: ws }, as(admin));
      expect(claimed.status, claimed.text).to.equal(200);
      const sandboxWs = claimed.body.workspace.id;
      const key = await createKey(api, admin, sandboxWs);
      expect((await api.get('/api/me', as(admin, sandboxWs))).status).to.equal(200);
      const gone = how === 'removed' ? await remove(as(owner, ws), ws, admin.id) : await api.post(`/api/workspaces/${ws}/leave`, {}, as(admin, ws));
      expect(gone.status, gone.text).to.equal(200);
      expect((await api.get('/api/me', as(admin, sandboxWs))).status, `${how}: no longer acts in the claimed workspace`).to.equal(404);
      const byKey = await api.get<{ code: string; error: string }>('/api/me', withKey(key.key));
      expect([byKey.status, byKey.body.code], byKey.text).to.deep.equal([401, 'invalid_credentials']);
      expect(byKey.body.error).to.contain('left the workspace or was removed from it');
      const entry = (await auditLog(api, owner)).find((e) => e.action === (how === 'removed' ? 'team.members.remove' : 'team.members.leave') && e.outcome === 'done');
      expect(entry?.details.claimed_workspaces_left).to.deep.equal([sandboxWs]);
      // The claimed workspace's own log says so too, naming who made the change in the team.
      const ended = (await auditLog(api, owner, sandboxWs)).find((e) => e.action === 'team.members.role_ended');
      expect(ended?.actor, how).to.deep.equal({ type: 'person', id: how === 'removed' ? owner.id : admin.id });
      expect(ended?.target).to.equal(admin.id);
      expect(ended?.reason).to.equal(`${how === 'removed' ? 'removed from' : 'left'} the workspace this one was claimed under`);
      expect(ended?.details).to.deep.include({ ended_role: 'admin', revoked_keys: 1, team_workspace_id: ws });
      // The owner of the team still owns the claimed workspace.
      expect((await api.get('/api/me', as(owner, sandboxWs))).status).to.equal(200);
    }
  });

  it("demoting an admin to member ends their admin role in the agent workspaces claimed under the team: keys made there revoked, invitations made there cancelled, recorded in both logs", async () => {
    const { owner, admin, ws } = await team(api);
    const reg = await register(svc.url);
    const claimed = await api.post<{ workspace: { id: string } }>(claimPath(reg), { workspace_id: ws }, as(admin));
    expect(claimed.status, claimed.text).to.equal(200);
    const sandboxWs = claimed.body.workspace.id;
    const keyThere = await createKey(api, admin, sandboxWs);
    const keyHere = await createKey(api, admin, ws);
    const invThere = await invite(api, as(admin, sandboxWs), sandboxWs, uniqueEmail('there'));
    expect(invThere.status, invThere.text).to.equal(201);

    const down = await patch(as(owner), ws, admin.id, 'member');
    expect(down.status, down.text).to.equal(200);
    expect(down.body.member.role).to.equal('member');
    const there = await api.get<{ code: string }>('/api/me', as(admin, sandboxWs));
    expect([there.status, there.body.code], 'no longer acts in the claimed workspace').to.deep.equal([404, 'not_found']);
    const byKey = await api.get<{ code: string; error: string }>('/api/me', withKey(keyThere.key));
    expect([byKey.status, byKey.body.code], byKey.text).to.deep.equal([401, 'invalid_credentials']);
    // Demotion here only narrows: the key made in the team workspace still works.
    expect((await api.get('/api/me', withKey(keyHere.key))).status).to.equal(200);
    const invitations = await api.get<{ data: Array<{ id: string; status: string }> }>(`/api/workspaces/${sandboxWs}/invitations`, as(owner, sandboxWs));
    expect(invitations.body.data.find((i) => i.id === invThere.body.invitation.id)?.status).to.equal('cancelled');

    const update = (await auditLog(api, owner)).find((e) => e.action === 'team.members.update' && e.outcome === 'done' && e.target === admin.id);
    expect(update?.details).to.deep.include({ from_role: 'admin', to_role: 'member', revoked_keys: 1, claimed_workspaces_left: [sandboxWs] });
    const claimedLog = await auditLog(api, owner, sandboxWs);
    const ended = claimedLog.find((e) => e.action === 'team.members.role_ended');
    expect(ended?.actor).to.deep.equal({ type: 'person', id: owner.id });
    expect(ended?.target).to.equal(admin.id);
    expect(ended?.reason).to.equal('demoted to member in the workspace this one was claimed under');
    expect(ended?.details).to.deep.include({ ended_role: 'admin', revoked_keys: 1, team_workspace_id: ws, role: 'owner' });
    // The cause lists before its effect (newest first: the cancellation above it).
    expect(claimedLog.map((e) => e.action).slice(0, 2)).to.deep.equal(['team.invitations.cancel', 'team.members.role_ended']);
    // The owner of the team still owns the claimed workspace; promoting again does not bring the role back.
    expect((await api.get('/api/me', as(owner, sandboxWs))).status).to.equal(200);
    expect((await patch(as(owner), ws, admin.id, 'admin')).status).to.equal(200);
    expect((await api.get('/api/me', as(admin, sandboxWs))).status).to.equal(404);
  });

  it('a member role held in a claimed workspace is not the admin rank of the team: demoting its holder there leaves it', async () => {
    const { owner, admin, ws } = await team(api);
    const reg = await register(svc.url);
    const claimed = await api.post<{ workspace: { id: string } }>(claimPath(reg), { workspace_id: ws }, as(owner));
    expect(claimed.status, claimed.text).to.equal(200);
    const sandboxWs = claimed.body.workspace.id;
    const inv = await invite(api, as(owner, sandboxWs), sandboxWs, admin.email);
    expect((await api.post('/api/invitations/accept', { token: inv.body.accept.token }, as(admin))).status).to.equal(200);
    const down = await patch(as(owner), ws, admin.id, 'member');
    expect(down.status, down.text).to.equal(200);
    expect((await api.get('/api/me', as(admin, sandboxWs))).status).to.equal(200);
    const update = (await auditLog(api, owner)).find((e) => e.action === 'team.members.update' && e.outcome === 'done' && e.target === admin.id);
    expect(update?.details.claimed_workspaces_left).to.deep.equal([]);
  });

  it('on the team routes the path names the workspace: a member acts there without x-workspace-id, by their role there', async () => {
    const { admin, member, ws } = await team(api);
    // Their default workspace is their own; the path names the team's.
    const listed = await api.get<{ data: Array<{ person_id: string }> }>(`/api/workspaces/${ws}/members`, as(admin));
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.data.map((m) => m.person_id)).to.include(member.id);
    expectForbidden(await invite(api, as(member), ws, uniqueEmail('nope')), 'members cannot manage the team');
    const left = await api.post<{ left: boolean }>(`/api/workspaces/${ws}/leave`, {}, as(member));
    expect([left.status, left.body.left], left.text).to.deep.equal([200, true]);
    // A header naming another workspace still decides, and the path then answers 404.
    expectNotFound(await api.get(`/api/workspaces/${ws}/members`, as(admin, admin.workspaceId)));
  });
});
