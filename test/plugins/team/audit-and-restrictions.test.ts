import { expect } from 'chai';
import { client } from '../../support/http';
import type { TestService } from '../../support/service';
import type { Api, AuditItem } from './helpers';
import { accept, as, auditLog, createKey, expectForbidden, expectRestricted, invite, join, refusedEntry, signup, startTeamService, team, uniqueEmail, withKey } from './helpers';

describe('team plugin: audit log and restricted accounts', () => {
  let svc: TestService;
  let api: Api;

  before(async () => {
    svc = await startTeamService();
    api = client(svc.url);
  });
  after(async () => {
    await svc.close();
  });

  const setWorkspaceStatus = (id: string, status: string) => svc.sequelize.query('UPDATE workspaces SET status = $2 WHERE id = $1', { bind: [id, status] });
  const setPersonStatus = (id: string, status: string) => svc.sequelize.query('UPDATE people SET status = $2 WHERE id = $1', { bind: [id, status] });

  describe('audit log', () => {
    it('is visible to owners and admins; members get 403 and their attempt is recorded', async () => {
      const { owner, admin, member, ws } = await team(api);
      expect((await api.get(`/api/workspaces/${ws}/audit-log`, as(admin, ws))).status).to.equal(200);
      const res = await api.get(`/api/workspaces/${ws}/audit-log`, as(member, ws));
      expectForbidden(res, 'the audit log is visible only to owners and admins');
      expect(res.body.data).to.equal(undefined);
      const entry = refusedEntry(await auditLog(api, owner), 'team.audit.list', 'the audit log is visible only to owners and admins');
      expect(entry?.actor).to.deep.equal({ type: 'person', id: member.id });
      expect(entry?.details.code).to.equal('forbidden');
    });

    it('does not record a malformed request (400: a cursor it never issued), as the README says of 400s', async () => {
      const { owner, ws } = await team(api);
      const before = (await auditLog(api, owner)).length;
      const res = await api.get<Record<string, any>>(`/api/workspaces/${ws}/audit-log?cursor=garbage`, as(owner));
      expect(res.status, res.text).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: 'cursor', reason: 'not a valid cursor' }]);
      const after = await auditLog(api, owner);
      expect(after.length).to.equal(before);
      expect(after.some((e) => e.action === 'team.audit.list' && e.outcome === 'refused')).to.equal(false);
    });

    it('a team:admin key reads it only while its creator is an owner or admin', async () => {
      const { owner, admin, ws } = await team(api);
      const { key } = await createKey(api, admin, ws, ['team:admin']);
      expect((await api.get(`/api/workspaces/${ws}/audit-log`, withKey(key))).status).to.equal(200);
      await api.patch(`/api/workspaces/${ws}/members/${admin.id}`, { role: 'member' }, as(owner));
      const res = await api.get(`/api/workspaces/${ws}/audit-log`, withKey(key));
      expect(res.status).to.equal(403);
      expect(res.body.code).to.equal('insufficient_scope');
      expect(res.body.required_scopes).to.deep.equal(['team:admin']);
      expect(res.body.hint).to.match(/creator/);
    });

    it('lists changes and refused attempts newest first, with the list envelope, an outcome filter and a cursor', async () => {
      const { owner, member, ws } = await team(api);
      await invite(api, as(owner), ws, uniqueEmail('one'));
      await invite(api, as(member, ws), ws, uniqueEmail('two'));
      await invite(api, as(owner), ws, uniqueEmail('three'));
      const res = await api.get<{ object: string; data: AuditItem[]; has_more: boolean; next_cursor: string | null; limit: number }>(`/api/workspaces/${ws}/audit-log?limit=100`, as(owner));
      expect(res.status).to.equal(200);
      expect(res.body.object).to.equal('list');
      expect(res.body.has_more).to.equal(false);
      const actions = res.body.data.map((e) => `${e.action}:${e.outcome}`);
      expect(actions.slice(0, 3)).to.deep.equal(['team.invitations.create:done', 'team.invitations.create:refused', 'team.invitations.create:done']);
      const times = res.body.data.map((e) => Date.parse(e.created_at));
      expect([...times].sort((a, b) => b - a)).to.deep.equal(times);

      const refused = await api.get<{ data: AuditItem[] }>(`/api/workspaces/${ws}/audit-log?outcome=refused`, as(owner));
      expect(refused.body.data.length).to.be.greaterThan(0);
      expect(refused.body.data.every((e) => e.outcome === 'refused')).to.equal(true);

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { data: Array<AuditItem & { id: string }>; next_cursor: string | null } } = await api.get<{ data: Array<AuditItem & { id: string }>; next_cursor: string | null }>(
          `/api/workspaces/${ws}/audit-log?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
          as(owner),
        );
        seen.push(...page.body.data.map((e) => e.id));
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(seen).to.deep.equal(res.body.data.map((e) => (e as AuditItem & { id: string }).id));
    });

    it('lists the entries one change writes in the order written, a role change or removal before the cancellations it causes, and pages through them', async () => {
      const { owner, admin, ws } = await team(api);
      const admin2 = await signup(api, 'admin2');
      await join(api, owner, admin2, 'admin');
      for (let i = 0; i < 4; i++) {
        expect((await invite(api, as(admin, ws), ws, uniqueEmail(`a${i}`))).status).to.equal(201);
        expect((await invite(api, as(admin2, ws), ws, uniqueEmail(`b${i}`))).status).to.equal(201);
      }
      expect((await api.patch(`/api/workspaces/${ws}/members/${admin.id}`, { role: 'member' }, as(owner))).status).to.equal(200);
      expect((await api.delete(`/api/workspaces/${ws}/members/${admin2.id}`, as(owner))).status).to.equal(200);

      // Newest first: the removal's four cancellations, the removal, the demotion's four cancellations, the demotion.
      const log = (await auditLog(api, owner)) as Array<AuditItem & { id: string }>;
      const cancel = ['team.invitations.cancel', 'team.invitations.cancel', 'team.invitations.cancel', 'team.invitations.cancel'];
      expect(log.slice(0, 10).map((e) => e.action)).to.deep.equal([...cancel, 'team.members.remove', ...cancel, 'team.members.update']);
      expect(log[4]?.target).to.equal(admin2.id);
      expect(log[9]?.target).to.equal(admin.id);
      expect(log.slice(0, 4).every((e) => e.reason === 'the inviter can no longer invite at role member' && e.details.invited_role === 'member')).to.equal(true);

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { data: Array<{ id: string }>; next_cursor: string | null } } = await api.get<{ data: Array<{ id: string }>; next_cursor: string | null }>(
          `/api/workspaces/${ws}/audit-log?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
          as(owner),
        );
        seen.push(...page.body.data.map((e) => e.id));
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(seen).to.deep.equal(log.map((e) => e.id));
    });
  });

  describe('restricted accounts cannot change team membership, including leaving', () => {
    it('a member whose account is restricted cannot leave (403 account_restricted, recorded) and stays a member', async () => {
      const { owner, member, ws } = await team(api);
      await setPersonStatus(member.id, 'restricted');
      const res = await api.post(`/api/workspaces/${ws}/leave`, {}, as(member, ws));
      expectRestricted(res, 'your account is restricted');
      const members = await api.get<{ data: Array<{ person_id: string }> }>(`/api/workspaces/${ws}/members`, as(owner));
      expect(members.body.data.map((m) => m.person_id)).to.include(member.id);
      const entry = refusedEntry(await auditLog(api, owner), 'team.members.leave', 'your account is restricted');
      expect(entry?.actor.id).to.equal(member.id);
      expect(entry?.details.code).to.equal('account_restricted');
    });

    it('a restricted workspace cannot invite, change roles, remove or leave, but can still read its team', async () => {
      const { owner, admin, member, ws } = await team(api);
      await setWorkspaceStatus(ws, 'restricted');
      expectRestricted(await invite(api, as(owner), ws, uniqueEmail('x')), 'the workspace is restricted');
      expectRestricted(await api.patch(`/api/workspaces/${ws}/members/${member.id}`, { role: 'admin' }, as(owner)), 'the workspace is restricted');
      expectRestricted(await api.delete(`/api/workspaces/${ws}/members/${member.id}`, as(admin, ws)), 'the workspace is restricted');
      expectRestricted(await api.post(`/api/workspaces/${ws}/leave`, {}, as(member, ws)), 'the workspace is restricted');
      expect((await api.get(`/api/workspaces/${ws}/members`, as(member, ws))).status).to.equal(200);
      const log = await auditLog(api, owner);
      expect(refusedEntry(log, 'team.members.update', 'the workspace is restricted')?.target).to.equal(member.id);
      expect(refusedEntry(log, 'team.invitations.create', 'the workspace is restricted')).to.exist;
    });

    it('a suspended workspace gets 403 account_restricted on leaving, recorded in the audit log', async () => {
      const { owner, member, ws } = await team(api);
      await setWorkspaceStatus(ws, 'suspended');
      expectRestricted(await api.post(`/api/workspaces/${ws}/leave`, {}, as(member, ws)), 'the workspace is suspended');
      expect(refusedEntry(await auditLog(api, owner), 'team.members.leave', 'the workspace is suspended')?.actor.id).to.equal(member.id);
    });

    it('a rejected person cannot accept an invitation', async () => {
      const owner = await signup(api, 'owner');
      const p = await signup(api, 'rejected');
      const inv = await invite(api, as(owner), owner.workspaceId, p.email);
      await setPersonStatus(p.id, 'rejected');
      expectRestricted(await accept(api, p, inv.body.accept.token), 'your account is rejected');
      const members = await api.get<{ data: Array<{ person_id: string }> }>(`/api/workspaces/${owner.workspaceId}/members`, as(owner));
      expect(members.body.data.map((m) => m.person_id)).to.not.include(p.id);
    });

    it('an invitation into a workspace that became restricted cannot be accepted', async () => {
      const owner = await signup(api, 'owner');
      const p = await signup(api, 'p');
      const inv = await invite(api, as(owner), owner.workspaceId, p.email);
      await setWorkspaceStatus(owner.workspaceId, 'restricted');
      expectRestricted(await accept(api, p, inv.body.accept.token), 'the workspace is restricted');
      expect(refusedEntry(await auditLog(api, owner), 'team.invitations.accept', 'the workspace is restricted')?.actor.id).to.equal(p.id);
    });

    it("a team:admin key whose creator's account is restricted or suspended cannot change the team", async () => {
      const { owner, admin, member, ws } = await team(api);
      const { key } = await createKey(api, admin, ws, ['team:admin']);
      await setPersonStatus(admin.id, 'restricted');
      expectRestricted(await api.delete(`/api/workspaces/${ws}/members/${member.id}`, withKey(key)), "the key creator's account is restricted");
      await setPersonStatus(admin.id, 'suspended');
      expectRestricted(await invite(api, withKey(key), ws, uniqueEmail('x')), "the key creator's account is suspended");
      expect(refusedEntry(await auditLog(api, owner), 'team.members.remove', "the key creator's account is restricted")?.actor.type).to.equal('api_key');
    });
  });
});
