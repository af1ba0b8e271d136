import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { QueryTypes } from 'sequelize';
import { client } from '../../support/http';
import type { TestService } from '../../support/service';
import type { Api } from './helpers';
import { accept, as, auditLog, createKey, expectForbidden, invite, join, refusedEntry, signup, startTeamService, team, uniqueEmail, withKey } from './helpers';

describe('team plugin: invitations', () => {
  let svc: TestService;
  let api: Api;

  before(async () => {
    svc = await startTeamService();
    api = client(svc.url);
  });
  after(async () => {
    await svc.close();
  });

  it('an owner invites a member: 201 with the invitation and a one-time token whose hash only is stored', async () => {
    const owner = await signup(api, 'owner');
    const email = uniqueEmail('grace').toUpperCase();
    const res = await invite(api, as(owner), owner.workspaceId, email);
    expect(res.status, res.text).to.equal(201);
    const { invitation, accept: how } = res.body;
    expect(invitation.email).to.equal(email.toLowerCase());
    expect(invitation.role).to.equal('member');
    expect(invitation.status).to.equal('pending');
    expect(invitation.invited_by).to.equal(owner.id);
    expect(invitation.via_key_id).to.equal(null);
    const ttl = new Date(invitation.expires_at).getTime() - Date.now();
    expect(ttl).to.be.within(7 * 86_400_000 - 120_000, 7 * 86_400_000 + 1000);
    expect(how.token).to.match(/^pcs_inv_/);
    expect(how.method).to.equal('POST');
    expect(how.url).to.match(/\/api\/invitations\/accept$/);
    expect(how.body).to.deep.equal({ token: how.token });
    expect(res.body.shown_once).to.equal(true);

    const rows = await svc.sequelize.query<{ token_hash: string }>('SELECT token_hash FROM invitations WHERE id = $1', { bind: [invitation.id], type: QueryTypes.SELECT });
    expect(rows[0]?.token_hash).to.equal(createHash('sha256').update(how.token).digest('hex'));
    const plain = await svc.sequelize.query('SELECT id FROM invitations WHERE token_hash = $1', { bind: [how.token], type: QueryTypes.SELECT });
    expect(plain).to.have.length(0);

    const log = await auditLog(api, owner);
    const entry = log.find((e) => e.action === 'team.invitations.create' && e.outcome === 'done');
    expect(entry?.target).to.equal(invitation.id);
    expect(entry?.actor).to.deep.equal({ type: 'person', id: owner.id });
  });

  it('the invited person accepts (email compared case-insensitively), joins at the role, and the token works once', async () => {
    const owner = await signup(api, 'owner');
    const grace = await signup(api, 'grace');
    await svc.sequelize.query('UPDATE people SET email = upper(email) WHERE id = $1', { bind: [grace.id] });
    const inv = await invite(api, as(owner), owner.workspaceId, grace.email);
    expect(inv.status).to.equal(201);

    const ok = await accept(api, grace, inv.body.accept.token);
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.membership).to.deep.include({ workspace_id: owner.workspaceId, role: 'member' });
    expect((ok.body.invitation as { status: string }).status).to.equal('accepted');
    expect(ok.body.hint).to.include(owner.workspaceId);

    const members = await api.get<{ data: Array<{ person_id: string; role: string }> }>(`/api/workspaces/${owner.workspaceId}/members`, as(grace, owner.workspaceId));
    expect(members.status, members.text).to.equal(200);
    expect(members.body.data.map((m) => [m.person_id, m.role])).to.deep.include.members([
      [owner.id, 'owner'],
      [grace.id, 'member'],
    ]);

    const again = await accept(api, grace, inv.body.accept.token);
    expect(again.status).to.equal(410);
    expect(again.body.code).to.equal('gone');
    expect(again.body.reason).to.equal('invitation accepted');
    expect(again.body.hint).to.be.a('string');
  });

  it('refuses a person whose email is not the invited one, and records the refused attempt', async () => {
    const owner = await signup(api, 'owner');
    const other = await signup(api, 'other');
    const inv = await invite(api, as(owner), owner.workspaceId, uniqueEmail('someone'));
    const res = await accept(api, other, inv.body.accept.token);
    expectForbidden(res, 'email does not match the invitation');
    const entry = refusedEntry(await auditLog(api, owner), 'team.invitations.accept', 'email does not match the invitation');
    expect(entry?.actor).to.deep.equal({ type: 'person', id: other.id });
    expect(entry?.target).to.equal(inv.body.invitation.id);
    // The outsider holds no role in this workspace; its role in its own stays out of this log.
    expect((entry as { details: Record<string, unknown> }).details.role).to.equal(null);
    const status = await svc.sequelize.query<{ status: string }>('SELECT status FROM invitations WHERE id = $1', { bind: [inv.body.invitation.id], type: QueryTypes.SELECT });
    expect(status[0]?.status).to.equal('pending');
  });

  it('answers anyone but the invitee alike, whatever became of the invitation, and a stranger changes nothing (a timed-out one is not marked expired)', async () => {
    const owner = await signup(api, 'owner');
    const invitee = await signup(api, 'invitee');
    const stranger = await signup(api, 'stranger');
    const late = await invite(api, as(owner), owner.workspaceId, uniqueEmail('late'));
    await svc.sequelize.query(`UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = $1`, { bind: [late.body.invitation.id] });
    expectForbidden(await accept(api, stranger, late.body.accept.token), 'email does not match the invitation');
    const rows = await svc.sequelize.query<{ status: string }>('SELECT status FROM invitations WHERE id = $1', { bind: [late.body.invitation.id], type: QueryTypes.SELECT });
    expect(rows[0]?.status).to.equal('pending');
    const taken = await invite(api, as(owner), owner.workspaceId, invitee.email);
    expect((await accept(api, invitee, taken.body.accept.token)).status).to.equal(200);
    const after = await accept(api, stranger, taken.body.accept.token);
    expectForbidden(after, 'email does not match the invitation');
    expect(after.body).to.not.have.property('invitation_status');
  });

  it('accepting takes person credentials only (an API key gets 401) and an unknown token gets 404', async () => {
    const owner = await signup(api, 'owner');
    const { key } = await createKey(api, owner, owner.workspaceId, ['team:admin']);
    const inv = await invite(api, as(owner), owner.workspaceId, uniqueEmail('x'));
    const byKey = await api.post('/api/invitations/accept', { token: inv.body.accept.token }, withKey(key));
    expect(byKey.status).to.equal(401);
    expect(byKey.body.code).to.equal('unauthorized');
    expect(byKey.body.hint).to.match(/session|person token/);

    const unknown = await accept(api, owner, 'pcs_inv_doesnotexist000000000000000');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.code).to.equal('not_found');
    expect(unknown.body.reason).to.equal('unknown invitation token');
    expect(unknown.body.hint).to.be.a('string');
  });

  it('an expired invitation is refused with 410 and stays expired', async () => {
    const owner = await signup(api, 'owner');
    const late = await signup(api, 'late');
    const inv = await invite(api, as(owner), owner.workspaceId, late.email);
    await svc.sequelize.query(`UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = $1`, { bind: [inv.body.invitation.id] });
    const res = await accept(api, late, inv.body.accept.token);
    expect(res.status).to.equal(410);
    expect(res.body.code).to.equal('gone');
    expect(res.body.reason).to.equal('invitation expired');
    expect(res.body.invitation_status).to.equal('expired');
    const rows = await svc.sequelize.query<{ status: string }>('SELECT status FROM invitations WHERE id = $1', { bind: [inv.body.invitation.id], type: QueryTypes.SELECT });
    expect(rows[0]?.status).to.equal('expired');
    expect(refusedEntry(await auditLog(api, owner), 'team.invitations.accept', 'invitation expired')).to.exist;
  });

  it('lists invitations newest first with the list envelope, and revokes one (then it cannot be accepted or revoked again)', async () => {
    const owner = await signup(api, 'owner');
    const first = await invite(api, as(owner), owner.workspaceId, uniqueEmail('a'));
    const second = await invite(api, as(owner), owner.workspaceId, uniqueEmail('b'));
    const third = await invite(api, as(owner), owner.workspaceId, uniqueEmail('c'));
    const page = await api.get<{ object: string; data: Array<{ id: string }>; has_more: boolean; next_cursor: string | null; limit: number }>(
      `/api/workspaces/${owner.workspaceId}/invitations?limit=2`,
      as(owner),
    );
    expect(page.status).to.equal(200);
    expect(page.body.object).to.equal('list');
    expect(page.body.limit).to.equal(2);
    expect(page.body.has_more).to.equal(true);
    expect(page.body.data.map((i) => i.id)).to.deep.equal([third.body.invitation.id, second.body.invitation.id]);
    const next = await api.get<{ data: Array<{ id: string }>; has_more: boolean }>(`/api/workspaces/${owner.workspaceId}/invitations?limit=2&cursor=${page.body.next_cursor ?? ''}`, as(owner));
    expect(next.body.data.map((i) => i.id)).to.deep.equal([first.body.invitation.id]);
    expect(next.body.has_more).to.equal(false);

    const revoked = await api.delete<{ invitation: { status: string } }>(`/api/workspaces/${owner.workspaceId}/invitations/${second.body.invitation.id}`, as(owner));
    expect(revoked.status, revoked.text).to.equal(200);
    expect(revoked.body.invitation.status).to.equal('revoked');
    const invitee = await signup(api, 'b2');
    await svc.sequelize.query('UPDATE invitations SET email = $2 WHERE id = $1', { bind: [second.body.invitation.id, invitee.email] });
    const acc = await accept(api, invitee, second.body.accept.token);
    expect(acc.status).to.equal(410);
    expect(acc.body.reason).to.equal('invitation revoked');

    const twice = await api.delete(`/api/workspaces/${owner.workspaceId}/invitations/${second.body.invitation.id}`, as(owner));
    expect(twice.status).to.equal(409);
    expect(twice.body.code).to.equal('conflict');
    expect(twice.body.reason).to.equal('invitation revoked');
    expect(twice.body.hint).to.be.a('string');

    const missing = await api.delete(`/api/workspaces/${owner.workspaceId}/invitations/inv_doesnotexist`, as(owner));
    expect(missing.status).to.equal(404);
    expect(missing.body.reason).to.equal('invitation not found');
    expect(missing.body.hint).to.equal(`GET /api/workspaces/${owner.workspaceId}/invitations lists this workspace's invitations with their ids.`);
  });

  it('refuses a second pending invitation for the same email and inviting someone already in the team (409)', async () => {
    const { owner, member, ws } = await team(api);
    const email = uniqueEmail('dup');
    expect((await invite(api, as(owner), ws, email)).status).to.equal(201);
    const dup = await invite(api, as(owner), ws, email.toUpperCase());
    expect(dup.status).to.equal(409);
    expect(dup.body.code).to.equal('conflict');
    expect(dup.body.reason).to.equal('pending invitation exists');
    expect(dup.body.hint).to.match(/Revoke/);
    const existing = await invite(api, as(owner), ws, member.email);
    expect(existing.status).to.equal(409);
    expect(existing.body.reason).to.equal('already a member');
    expect(existing.body.person_id).to.equal(member.id);
    expect(refusedEntry(await auditLog(api, owner), 'team.invitations.create', 'already a member')).to.exist;
  });

  it('the 409 hints name the real ids: the pending invitation to revoke, and the member whose role to change', async () => {
    const { owner, member, ws } = await team(api);
    const email = uniqueEmail('dup');
    const first = await invite(api, as(owner), ws, email);
    expect(first.status, first.text).to.equal(201);
    const dup = await invite(api, as(owner), ws, email);
    expect([dup.status, dup.body.code, dup.body.reason, dup.body.invitation_id]).to.deep.equal([409, 'conflict', 'pending invitation exists', first.body.invitation.id]);
    expect(dup.body.error).to.be.a('string').and.not.empty;
    expect(dup.body.hint).to.equal(`Revoke it (DELETE /api/workspaces/${ws}/invitations/${first.body.invitation.id}) before inviting again.`);
    const existing = await invite(api, as(owner), ws, member.email);
    expect([existing.status, existing.body.code, existing.body.reason]).to.deep.equal([409, 'conflict', 'already a member']);
    expect(existing.body.hint).to.equal(`Change their role with PATCH /api/workspaces/${ws}/members/${member.id} instead.`);
    // The hint's request works as written.
    const revoked = await api.delete(`/api/workspaces/${ws}/invitations/${first.body.invitation.id}`, as(owner));
    expect(revoked.status, revoked.text).to.equal(200);
  });

  it('nobody is invited as owner (403, recorded)', async () => {
    const owner = await signup(api, 'owner');
    const res = await invite(api, as(owner), owner.workspaceId, uniqueEmail('boss'), 'owner');
    expectForbidden(res, 'nobody can be made an owner through the team routes');
    const entry = refusedEntry(await auditLog(api, owner), 'team.invitations.create', 'nobody can be made an owner through the team routes');
    expect(entry?.actor.id).to.equal(owner.id);
    const count = await svc.sequelize.query('SELECT id FROM invitations WHERE workspace_id = $1', { bind: [owner.workspaceId], type: QueryTypes.SELECT });
    expect(count).to.have.length(0);
  });

  it('owners invite admins; admins invite members but not admins; members invite no one and cannot list invitations', async () => {
    const { owner, admin, member, ws } = await team(api);
    expect((await invite(api, as(owner), ws, uniqueEmail('newadmin'), 'admin')).status).to.equal(201);
    const byAdmin = await invite(api, as(admin, ws), ws, uniqueEmail('m'));
    expect(byAdmin.status, byAdmin.text).to.equal(201);
    expect(byAdmin.body.invitation.invited_by).to.equal(admin.id);
    expectForbidden(await invite(api, as(admin, ws), ws, uniqueEmail('a2'), 'admin'), 'you (admin) cannot invite at role admin');
    expectForbidden(await invite(api, as(member, ws), ws, uniqueEmail('m2')), 'members cannot manage the team');
    expectForbidden(await api.get(`/api/workspaces/${ws}/invitations`, as(member, ws)), 'members cannot manage the team');
    expect((await api.get(`/api/workspaces/${ws}/invitations`, as(admin, ws))).status).to.equal(200);

    const log = await auditLog(api, owner);
    expect(refusedEntry(log, 'team.invitations.create', 'you (admin) cannot invite at role admin')?.actor.id).to.equal(admin.id);
    expect(refusedEntry(log, 'team.invitations.create', 'members cannot manage the team')?.actor.id).to.equal(member.id);
    expect(refusedEntry(log, 'team.invitations.list', 'members cannot manage the team')).to.exist;
  });

  it('an admin may revoke member invitations but not an admin invitation; an owner may', async () => {
    const { owner, admin, ws } = await team(api);
    const memberInv = await invite(api, as(owner), ws, uniqueEmail('m'));
    const adminInv = await invite(api, as(owner), ws, uniqueEmail('a'), 'admin');
    expect((await api.delete(`/api/workspaces/${ws}/invitations/${memberInv.body.invitation.id}`, as(admin, ws))).status).to.equal(200);
    expectForbidden(await api.delete(`/api/workspaces/${ws}/invitations/${adminInv.body.invitation.id}`, as(admin, ws)), 'only owners may revoke an admin invitation');
    expect((await api.delete(`/api/workspaces/${ws}/invitations/${adminInv.body.invitation.id}`, as(owner))).status).to.equal(200);
  });

  it('works with the pcs_session cookie as well as the person token', async () => {
    const owner = await signup(api, 'cookie');
    const res = await invite(api, { cookie: owner.cookie }, owner.workspaceId, uniqueEmail('c'));
    expect(res.status, res.text).to.equal(201);
    const friend = await signup(api, 'friend');
    await join(api, owner, friend);
  });
});
