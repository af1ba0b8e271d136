import { expect } from 'chai';
import type { DomainEvents } from '../../../core/events';
import { client } from '../../support/http';
import {
  accessToken,
  asPerson,
  claimPath,
  createAgent,
  createAgentKey,
  createKey,
  exec,
  identityConfig,
  register,
  rows,
  setRole,
  signUp,
  unknownKey,
} from '../../support/identity';
import type { ClaimBody, ErrorBody, KeyView, MeBody, Person, RegistrationBody } from '../../support/identity';
import { claimExample } from '../../../plugins/identity/schemas';
import { probePlugin } from '../../support/probe-plugin';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

const FULL_ACCESS = ['price:compute', 'billing:read', 'billing:write', 'commerce:configure', 'commerce:proposal:approve', 'commerce:execute'];

describe('identity: claiming an agent sandbox', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    // One claimed agent per workspace makes the claimed-agent limit reachable; every test that
    // claims successfully signs up its own person.
    svc = await startTestService({ config: identityConfig({ claimedAgentsPerWorkspace: 1 }), extraPlugins: [probePlugin()], enabled: ['health', 'identity', 'accounts', 'probe'] });
    api = client(svc.url);
  });
  after(() => svc.close());

  async function expectStillUnclaimed(reg: RegistrationBody): Promise<void> {
    const link = await api.get(claimPath(reg));
    expect(link.status, 'the claim link is still usable').to.equal(200);
    const me = await api.get<MeBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(me.status).to.equal(200);
    expect(me.body.workspace.sandbox).to.equal(true);
  }

  function expectRefusal(res: { status: number; text: string; body: ErrorBody }, reason: RegExp): void {
    expect(res.status, res.text).to.equal(403);
    expect(res.body.code).to.equal('forbidden');
    expect(res.body.reason).to.be.a('string').and.match(reason);
    expect(res.body.error).to.match(/Claim refused/);
    expect(res.body.hint).to.be.a('string');
  }

  describe('effects of a claim link confirmed by the owner', () => {
    let owner: Person;
    let reg: RegistrationBody;
    let res: { status: number; text: string; body: ClaimBody };
    let tokenBefore: string;
    const events: Array<DomainEvents['workspace.claimed']> = [];
    let unsubscribe: () => void = () => undefined;

    before(async () => {
      owner = await signUp(svc.url);
      reg = await register(svc.url, 'pricing-agent/claimed');
      tokenBefore = await accessToken(svc.url, reg.api_key.key);
      unsubscribe = svc.events.on('workspace.claimed', 'claim-test', (e) => {
        events.push(e);
      });
      res = await api.post<ClaimBody>(claimPath(reg), {}, asPerson(owner));
    });
    after(() => unsubscribe());

    it('answers 200 with the claimed workspace, its test workspace and the agent key revoked', () => {
      expect(res.status, res.text).to.equal(200);
      expect(res.body.claimed).to.equal(true);
      expect(res.body.agent_key).to.equal('revoked');
    });

    it('keeps the workspace id and moves it under the target workspace (parent_id)', async () => {
      expect(res.body.workspace.id).to.equal(reg.workspace.id);
      expect(res.body.workspace.parent_id).to.equal(owner.workspaceId);
      const [row] = await rows<{ parent_id: string }>(svc, 'SELECT parent_id FROM workspaces WHERE id = $1', [reg.workspace.id]);
      expect(row?.parent_id).to.equal(owner.workspaceId);
    });

    it('puts the workspace on the free plan and ends its sandbox state', async () => {
      expect(res.body.workspace.plan).to.equal('free');
      expect(res.body.workspace.sandbox).to.equal(false);
      const me = await api.get<MeBody & { limits?: unknown }>('/api/me', asPerson(owner, reg.workspace.id));
      expect(me.status, me.text).to.equal(200);
      expect(me.body.workspace.plan).to.equal('free');
      expect(me.body.workspace.sandbox).to.equal(false);
      expect(me.body).not.to.have.property('limits');
    });

    it('keeps it marked as started by an agent and as a former agent sandbox', () => {
      expect(res.body.workspace.former_sandbox).to.equal(true);
      expect(res.body.workspace.created_by_agent).to.equal(true);
      expect(res.body.workspace.origin).to.equal('agent_self_registration');
    });

    it('sets claimed_at', () => {
      const at = Date.parse(res.body.workspace.claimed_at ?? '');
      expect(at).to.be.a('number').and.not.be.NaN;
      expect(Math.abs(Date.now() - at)).to.be.lessThan(60_000);
    });

    it('creates the workspace its own test workspace', async () => {
      const test = res.body.test_workspace;
      expect(test.is_test).to.equal(true);
      expect(test.parent_id).to.equal(reg.workspace.id);
      expect(test.id).not.to.equal(reg.workspace.id);
      expect(res.body.workspace.test_workspace_id).to.equal(test.id);
      const [row] = await rows<{ is_test: boolean; parent_id: string }>(svc, 'SELECT is_test, parent_id FROM workspaces WHERE id = $1', [test.id]);
      expect(row).to.deep.equal({ is_test: true, parent_id: reg.workspace.id });
    });

    it('revokes the agent key by default, and tokens minted from it', async () => {
      const key = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
      expect(key.status).to.equal(401);
      expect(key.body.code).to.equal('invalid_credentials');
      const token = await api.get<ErrorBody>('/api/me', { authorization: `Bearer ${tokenBefore}` });
      expect(token.status).to.equal(401);
      const [row] = await rows<{ revoked_reason: string }>(svc, 'SELECT revoked_reason FROM api_keys WHERE id = $1', [reg.api_key.id]);
      expect(row?.revoked_reason).to.equal('claimed');
    });

    it('tells the holder of a key revoked by the claim why, and that the new owner issues keys', async () => {
      const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('invalid_credentials');
      expect(res.body.error).to.equal('This API key has been revoked: its sandbox workspace was claimed (by a person, or a key with workspace:claim), and the claim revokes the agent key unless the claimer keeps it.');
      expect(res.body.hint).to.match(/^The claimed workspace is now managed by its new owner: ask its owner or an admin for a key/);
      expect(res.body.hint).not.to.match(/rotated/);
    });

    it("emits 'workspace.claimed' naming the workspace, the target and the claimer", () => {
      const mine = events.filter((e) => e.workspaceId === reg.workspace.id);
      expect(mine).to.have.length(1);
      expect(mine[0]).to.deep.include({ workspaceId: reg.workspace.id, targetWorkspaceId: owner.workspaceId, keptKey: false });
      expect(mine[0]?.claimedBy).to.deep.equal({ type: 'person', id: owner.id });
      expect(Date.parse(mine[0]?.at ?? '')).not.to.be.NaN;
    });

    it('makes the owner of the target workspace owner of the claimed workspace', async () => {
      const members = await rows<{ person_id: string; role: string }>(svc, 'SELECT person_id, role FROM memberships WHERE workspace_id = $1', [reg.workspace.id]);
      expect(members).to.deep.equal([{ person_id: owner.id, role: 'owner' }]);
      const me = await api.get<MeBody>('/api/me', asPerson(owner, reg.workspace.id));
      expect(me.body.person?.role).to.equal('owner');
    });

    it('uses the claim link once: a second confirmation and a look both answer 404', async () => {
      const again = await api.post<ErrorBody>(claimPath(reg), {}, asPerson(owner));
      expect(again.status).to.equal(404);
      expect(again.body.code).to.equal('not_found');
      expect(again.body.hint).to.be.a('string');
      const look = await api.get(claimPath(reg));
      expect(look.status).to.equal(404);
    });
  });

  describe('a new claim link for a sandbox that lost its own (POST /api/agents/claim-link)', () => {
    it("answers a new one-time link to the sandbox's key; the registration's link ends; the new one claims", async () => {
      const reg = await register(svc.url);
      const res = await api.post<{ claim: { url: string; token: string; expires_at: string; one_time: boolean; how: string }; ended_links: number }>('/api/agents/claim-link', {}, { 'x-api-key': reg.api_key.key });
      expect(res.status, res.text).to.equal(201);
      expect(res.headers.get('cache-control')).to.match(/no-store/);
      expect(res.body.claim.token).to.match(/^pcs_clm_/).and.not.equal(reg.claim.token);
      expect(res.body.claim).to.include({ one_time: true });
      expect(res.body.claim.url).to.equal(`${svc.url}/api/agents/claim/${res.body.claim.token}`);
      expect(res.body.ended_links).to.equal(1);
      const ended = await api.get<ErrorBody>(claimPath(reg));
      expect(ended.status, 'the lost link ended').to.equal(404);
      // Replaced, not used: its 404 sends the agent to a fresh link, not to register again.
      expect(ended.body.error).to.equal('This claim link is unknown, already used, replaced or expired.');
      expect(ended.body.hint).to.include('POST /api/agents/claim-link').and.not.include('registers again');
      const fresh = new URL(res.body.claim.url).pathname;
      expect((await api.get(fresh)).status).to.equal(200);
      const owner = await signUp(svc.url);
      const claimed = await api.post<ClaimBody>(fresh, {}, asPerson(owner));
      expect(claimed.status, claimed.text).to.equal(200);
    });

    it('refuses a token made from the sandbox key with 403: only the key itself may end the link its agent gave out', async () => {
      const reg = await register(svc.url);
      const token = await accessToken(svc.url, reg.api_key.key);
      const refused = await api.post<ErrorBody>('/api/agents/claim-link', {}, { authorization: `Bearer ${token}` });
      expect(refused.status, refused.text).to.equal(403);
      expect(refused.body).to.deep.include({
        code: 'forbidden',
        error: 'A claim link is issued to the sandbox key itself; a token made from the key cannot end the link its agent gave out.',
        hint: 'Send the sandbox key (or the OAuth client secret) in x-api-key.',
        reason: 'the key itself',
      });
      expect((await api.get(claimPath(reg))).status, 'the link given out still works').to.equal(200);
    });

    it('refuses a workspace that is no unclaimed sandbox (409), and a request without its credential (401)', async () => {
      const person = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(person), { name: 'not a sandbox' });
      const refused = await api.post<ErrorBody>('/api/agents/claim-link', {}, { 'x-api-key': key.key });
      expect(refused.status, refused.text).to.equal(409);
      expect(refused.body.code).to.equal('conflict');
      expect(refused.body.error).to.match(/not an unclaimed sandbox/);
      expect((await api.post<ErrorBody>('/api/agents/claim-link', {})).status).to.equal(401);
    });
  });

  it('makes the target owner the owner when an admin of the target confirms (the admin joins as admin)', async () => {
    const owner = await signUp(svc.url);
    const admin = await signUp(svc.url);
    await setRole(svc, owner.workspaceId, admin.id, 'admin');
    const reg = await register(svc.url);
    const res = await api.post<ClaimBody>(claimPath(reg), { workspace_id: owner.workspaceId }, asPerson(admin));
    expect(res.status, res.text).to.equal(200);
    expect(res.body.workspace.parent_id).to.equal(owner.workspaceId);
    const members = await rows<{ person_id: string; role: string }>(svc, 'SELECT person_id, role FROM memberships WHERE workspace_id = $1 ORDER BY role DESC', [reg.workspace.id]);
    expect(members).to.deep.include.members([
      { person_id: owner.id, role: 'owner' },
      { person_id: admin.id, role: 'admin' },
    ]);
    expect(members.filter((m) => m.role === 'owner')).to.have.length(1);
  });

  it('keeps the agent key with keep_key true: full access of an API key, no expiry, secret never listed', async () => {
    const owner = await signUp(svc.url);
    const reg = await register(svc.url);
    const before = await api.get<ErrorBody>('/probe/private', { 'x-api-key': reg.api_key.key });
    expect(before.status).to.equal(403);
    const res = await api.post<ClaimBody>(claimPath(reg), { keep_key: true }, asPerson(owner));
    expect(res.status, res.text).to.equal(200);
    expect(res.body.agent_key).to.equal('kept');
    const me = await api.get<MeBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(me.status).to.equal(200);
    expect(me.body.scopes).to.have.members(FULL_ACCESS);
    expect(me.body.key?.expires_at).to.equal(null);
    expect(me.body.workspace.sandbox).to.equal(false);
    const after = await api.get('/probe/private', { 'x-api-key': reg.api_key.key });
    expect(after.status, after.text).to.equal(200);
    const list = await api.get<{ data: KeyView[] }>('/api/api-keys', asPerson(owner, reg.workspace.id));
    expect(list.status).to.equal(200);
    expect(list.body.data.map((k) => k.id)).to.include(reg.api_key.id);
    expect(list.text).not.to.contain(reg.api_key.key);
  });

  it('renames a key kept by the claim from "… sandbox key" to "… agent key": it is no longer a sandbox key', async () => {
    const owner = await signUp(svc.url);
    const reg = await register(svc.url, 'pricing-agent/kept');
    expect(reg.api_key.name).to.equal('pricing-agent/kept sandbox key');
    const res = await api.post<ClaimBody>(claimPath(reg), { keep_key: true }, asPerson(owner));
    expect(res.status, res.text).to.equal(200);
    const me = await api.get<MeBody & { key?: { name: string } }>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(me.status, me.text).to.equal(200);
    expect(me.body.key?.name).to.equal('pricing-agent/kept agent key');
    const list = await api.get<{ data: KeyView[] }>('/api/api-keys', asPerson(owner, reg.workspace.id));
    expect(list.body.data.find((k) => k.id === reg.api_key.id)?.name).to.equal('pricing-agent/kept agent key');
  });

  it('shows on the claim link whether the agent key is live, and never revives an expired one: keep_key true then revokes it, and the claim answers revoked', async () => {
    const owner = await signUp(svc.url);
    const live = await register(svc.url, 'pricing-agent/live-key');
    const shown = await api.get<{ agent_key: { state: string; expires_at: string | null } }>(claimPath(live));
    expect(shown.status, shown.text).to.equal(200);
    expect(shown.body.agent_key).to.deep.equal({ state: 'live', expires_at: live.api_key.expires_at });

    const reg = await register(svc.url, 'pricing-agent/expired-key');
    await exec(svc, "UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1", [reg.api_key.id]);
    const expired = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(expired.status, expired.text).to.equal(401);
    // Its holder is told a claim now would not help it, and what would.
    expect(expired.body.hint).to.include('a later claim does not revive it').and.include('POST /api/agents/register');
    const preview = await api.get<{ agent_key: { state: string; expires_at: string | null }; confirm: { fields: { keep_key: string } } }>(claimPath(reg));
    expect(preview.body.agent_key.state).to.equal('expired');
    expect(preview.body.confirm.fields.keep_key).to.include('an expired key is revoked, never revived');

    const res = await api.post<ClaimBody>(claimPath(reg), { keep_key: true }, asPerson(owner));
    expect(res.status, res.text).to.equal(200);
    expect(res.body.agent_key).to.equal('revoked');
    const after = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(after.status, after.text).to.equal(401);
    const [key] = await rows<{ revoked_reason: string | null; expires_at: Date | null }>(svc, 'SELECT revoked_reason, expires_at FROM api_keys WHERE id = $1', [reg.api_key.id]);
    expect(key?.revoked_reason).to.equal('claimed');
    expect(key?.expires_at).to.not.equal(null);
    const [audit] = await rows<{ details: { kept_key: boolean } }>(svc, "SELECT details FROM audit_log WHERE action = 'agent.claim' AND target = $1 AND outcome = 'done'", [reg.workspace.id]);
    expect(audit?.details.kept_key).to.equal(false);
    // The claimed workspace's own log says it too, with who joined it by the claim.
    const own = await rows<{ actor_type: string; actor_id: string; target: string; details: Record<string, unknown> }>(svc, "SELECT actor_type, actor_id, target, details FROM audit_log WHERE workspace_id = $1 AND action = 'workspace.claimed'", [reg.workspace.id]);
    expect(own).to.have.length(1);
    expect(own[0]).to.deep.include({ actor_type: 'person', actor_id: owner.id, target: owner.workspaceId });
    expect(own[0]?.details).to.deep.include({ claimed_into: owner.workspaceId, members_joined: [{ person_id: owner.id, role: 'owner' }], kept_key: false, revoked_keys: 1 });
  });

  describe('refusals (403 with a reason; nothing changes)', () => {
    it('refuses a claimer who is only a member of the target workspace', async () => {
      const owner = await signUp(svc.url);
      const member = await signUp(svc.url);
      await setRole(svc, owner.workspaceId, member.id, 'member');
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>(claimPath(reg), { workspace_id: owner.workspaceId }, asPerson(member));
      expectRefusal(res, /own or administer/);
      await expectStillUnclaimed(reg);
    });

    it('records a refused attempt in the audit log of the target workspace', async () => {
      const owner = await signUp(svc.url);
      const member = await signUp(svc.url);
      await setRole(svc, owner.workspaceId, member.id, 'member');
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>(claimPath(reg), { workspace_id: owner.workspaceId }, asPerson(member));
      expect(res.status).to.equal(403);
      const audit = await rows<{ actor_type: string; actor_id: string; action: string; target: string; outcome: string; reason: string }>(
        svc,
        'SELECT actor_type, actor_id, action, target, outcome, reason FROM audit_log WHERE workspace_id = $1',
        [owner.workspaceId],
      );
      expect(audit).to.have.length(1);
      expect(audit[0]).to.deep.include({ actor_type: 'person', actor_id: member.id, action: 'agent.claim', target: reg.workspace.id, outcome: 'refused' });
      expect(audit[0]?.reason).to.equal(res.body.reason);
    });

    it('answers an outsider the same 404 for a missing and a foreign workspace id, and writes nothing into the foreign log', async () => {
      const owner = await signUp(svc.url);
      const outsider = await signUp(svc.url);
      const reg = await register(svc.url);
      const foreign = await api.post<ErrorBody>(claimPath(reg), { workspace_id: owner.workspaceId }, asPerson(outsider));
      const missing = await api.post<ErrorBody>(claimPath(reg), { workspace_id: owner.workspaceId.replace(/^ws_./, 'ws_0') }, asPerson(outsider));
      expect(foreign.status, foreign.text).to.equal(404);
      expect(foreign.body.code).to.equal('not_found');
      expect({ ...missing.body, request_id: null, error: null, message: null }).to.deep.equal({ ...foreign.body, request_id: null, error: null, message: null });
      expect(missing.status).to.equal(foreign.status);
      const audit = await rows<{ id: string }>(svc, "SELECT id FROM audit_log WHERE workspace_id = $1 AND action = 'agent.claim'", [owner.workspaceId]);
      expect(audit, 'no entry in a log the outsider has no part in').to.have.length(0);
      await expectStillUnclaimed(reg);
    });

    it('answers a workspace_id naming no workspace with 404 saying so, and the claim link offers a body that claims as given', async () => {
      const owner = await signUp(svc.url);
      const reg = await register(svc.url);
      const placeholder = await api.post<ErrorBody>(claimPath(reg), { workspace_id: 'ws_<workspace_id>', keep_key: false }, asPerson(owner));
      expect(placeholder.status, placeholder.text).to.equal(404);
      expect(placeholder.body.code).to.equal('not_found');
      expect(placeholder.body.error).to.equal('No workspace ws_<workspace_id> of yours: it does not exist, or you are not a member of it.');
      expect(placeholder.body.hint).to.equal('Leave workspace_id out to claim into your current workspace (tenant_id in GET /api/me), or send the id of a workspace where you are owner or admin.');
      await expectStillUnclaimed(reg);

      const link = await api.get<{ confirm: { method: string; body: Record<string, unknown>; fields: Record<string, string> } }>(claimPath(reg));
      expect(link.body.confirm.body).to.deep.equal({ keep_key: false });
      expect(link.body.confirm.fields.workspace_id).to.match(/^Optional/);
      const res = await api.post<ClaimBody>(claimPath(reg), link.body.confirm.body, asPerson(owner));
      expect(res.status, res.text).to.equal(200);
      expect(res.body.workspace.parent_id).to.equal(owner.workspaceId);
    });

    it('refuses a target that is a test workspace with 403, recorded in its parent\'s audit log, which its owners read (a test workspace keeps none)', async () => {
      const owner = await signUp(svc.url);
      expect(owner.testWorkspaceId).to.match(/^ws_/);
      // As signed up: the test workspace shares its parent's team, so its owner administers it and only the test-workspace rule can refuse.
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>(claimPath(reg), { workspace_id: owner.testWorkspaceId }, asPerson(owner));
      expectRefusal(res, /test workspace/);
      await expectStillUnclaimed(reg);
      const audit = await rows<{ action: string; outcome: string; reason: string }>(svc, "SELECT action, outcome, reason FROM audit_log WHERE workspace_id = $1 AND action = 'agent.claim'", [owner.workspaceId]);
      expect(audit).to.deep.equal([{ action: 'agent.claim', outcome: 'refused', reason: res.body.reason }]);
      expect(await rows(svc, 'SELECT id FROM audit_log WHERE workspace_id = $1', [owner.testWorkspaceId])).to.deep.equal([]);
    });

    it('refuses a target that is an unclaimed agent sandbox', async () => {
      const person = await signUp(svc.url);
      const target = await register(svc.url, 'target-sandbox');
      await setRole(svc, target.workspace.id, person.id, 'owner');
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>(claimPath(reg), { workspace_id: target.workspace.id }, asPerson(person));
      expectRefusal(res, /unclaimed agent workspace/);
      await expectStillUnclaimed(reg);
      await expectStillUnclaimed(target);
    });

    it('refuses a target that already holds the claimed-agent limit (limits.claimedAgentsPerWorkspace)', async () => {
      const owner = await signUp(svc.url);
      const first = await register(svc.url, 'first');
      const ok = await api.post(claimPath(first), {}, asPerson(owner));
      expect(ok.status, ok.text).to.equal(200);
      const second = await register(svc.url, 'second');
      const res = await api.post<ErrorBody>(claimPath(second), {}, asPerson(owner));
      expectRefusal(res, /already holds 1 claimed agents/);
      await expectStillUnclaimed(second);
    });

    it('counts the agents claimed into a claimed agent toward the limit: a claim nested one level deeper does not pass it', async () => {
      const owner = await signUp(svc.url);
      const first = await register(svc.url, 'first');
      expect((await api.post(claimPath(first), {}, asPerson(owner))).status).to.equal(200);
      const nested = await register(svc.url, 'nested');
      const res = await api.post<ErrorBody>(claimPath(nested), { workspace_id: first.workspace.id }, asPerson(owner));
      expectRefusal(res, /already holds 1 claimed agents \(counted with the agents claimed into them, at any depth\)/);
      expect(res.body.hint).to.include('CLAIMED_AGENTS_PER_WORKSPACE');
      await expectStillUnclaimed(nested);
    });

    it('answers 404 for an unknown claim token', async () => {
      const owner = await signUp(svc.url);
      const res = await api.post<ErrorBody>(`/api/agents/claim/${unknownKey().replace('pcs_usr_', 'pcs_clm_')}`, {}, asPerson(owner));
      expect(res.status).to.equal(404);
      expect(res.body.code).to.equal('not_found');
      expect(res.body.hint).to.be.a('string');
    });

    it('answers 404 for an expired claim token', async () => {
      const owner = await signUp(svc.url);
      const reg = await register(svc.url);
      await exec(svc, `UPDATE claim_tokens SET expires_at = now() - interval '1 minute' WHERE workspace_id = $1`, [reg.workspace.id]);
      const res = await api.post<ErrorBody>(claimPath(reg), {}, asPerson(owner));
      expect(res.status).to.equal(404);
      expect(res.body.code).to.equal('not_found');
      const [row] = await rows<{ is_sandbox: boolean }>(svc, 'SELECT is_sandbox FROM workspaces WHERE id = $1', [reg.workspace.id]);
      expect(row?.is_sandbox).to.equal(true);
    });

    it('answers a claim link confirmed with an API key with 401 and its own message', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'not a person', scopes: ['workspace:claim'] });
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>(claimPath(reg), {}, { 'x-api-key': key.key });
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('unauthorized');
      expect(res.body.error).to.match(/signed-in person/);
      expect(res.body.hint).to.match(/\/api\/agents\/claim/);
      expect(res.body.next).to.deep.equal([]);
      await expectStillUnclaimed(reg);
    });
  });

  describe('claim by key (POST /api/agents/claim)', () => {
    it('takes the claim link sent whole, or the token with spaces around it, for the token (not 404 as a link unknown or spent)', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'claimer-link', scopes: ['workspace:claim'] });
      const byLink = await register(svc.url, 'by-link');
      const linked = await api.post<ClaimBody>('/api/agents/claim', { token: byLink.claim.url }, { 'x-api-key': key.key });
      expect(linked.status, linked.text).to.equal(200);
      expect(linked.body.workspace.id).to.equal(byLink.workspace.id);
      const spaced = await register(svc.url, 'spaced');
      const trimmed = await api.post<ErrorBody>('/api/agents/claim', { token: ` ${spaced.claim.token}\n` }, { 'x-api-key': key.key });
      // The limit here is 1 claimed agent: reaching the limit check means the token was read and found.
      expectRefusal(trimmed, /already holds 1 claimed agents/);
      await expectStillUnclaimed(spaced);
    });

    it('claims into the key’s own workspace with a workspace:claim key created by an owner; the owner owns the claimed workspace', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'claimer', scopes: ['workspace:claim'] });
      const reg = await register(svc.url);
      const res = await api.post<ClaimBody>('/api/agents/claim', { token: reg.claim.token }, { 'x-api-key': key.key });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.workspace.parent_id).to.equal(owner.workspaceId);
      expect(res.body.workspace.plan).to.equal('free');
      expect(res.body.agent_key).to.equal('revoked');
      const members = await rows<{ person_id: string; role: string }>(svc, 'SELECT person_id, role FROM memberships WHERE workspace_id = $1', [reg.workspace.id]);
      expect(members).to.deep.equal([{ person_id: owner.id, role: 'owner' }]);
      const audit = await rows<{ actor_type: string; via_key_id: string; outcome: string }>(svc, `SELECT actor_type, via_key_id, outcome FROM audit_log WHERE workspace_id = $1`, [owner.workspaceId]);
      expect(audit).to.deep.equal([{ actor_type: 'api_key', via_key_id: key.id, outcome: 'done' }]);
    });

    it('answers a person\'s session with the full 401 of a credential of the wrong kind (hint, next, retryable, WWW-Authenticate)', async () => {
      const owner = await signUp(svc.url);
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody & { next: unknown[]; retryable: boolean }>('/api/agents/claim', { token: reg.claim.token }, asPerson(owner));
      expect(res.status, res.text).to.equal(401);
      expect(res.body.code).to.equal('unauthorized');
      expect(res.body.error).to.match(/workspace:claim key is required/);
      expect(res.body.hint).to.match(/POST \/api\/agents\/claim\/\{token\}/);
      // SPEC: `next` lists where to get a credential (only person-only routes answer it empty): for a person, already
      // signed in, the claim link's own route, then the key this route takes; both work as given.
      const next = res.body.next as Array<{ action: string; method: string; path: string; body: Record<string, unknown> }>;
      expect(next.map((n) => [n.action, n.method, n.path])).to.deep.equal([
        ['confirm_claim_link', 'POST', '/api/agents/claim/<CLAIM_TOKEN>'],
        ['create_claim_key', 'POST', '/api/api-keys'],
      ]);
      const made = await api.post<{ api_key: { key: string; scopes: string[] } }>(next[1]?.path as string, next[1]?.body, asPerson(owner));
      expect(made.status, made.text).to.equal(201);
      expect(made.body.api_key.scopes).to.deep.equal(['workspace:claim']);
      await expectStillUnclaimed(reg);
      const confirmed = await api.post<ClaimBody>((next[0]?.path as string).replace('<CLAIM_TOKEN>', reg.claim.token), next[0]?.body, asPerson(owner));
      expect(confirmed.status, confirmed.text).to.equal(200);
      expect(confirmed.body.agent_key).to.equal('revoked');
      expect(res.body.retryable).to.equal(false);
      expect(res.headers.get('www-authenticate')).to.match(/^Bearer /);
    });

    it('claims with the documented example filled in with claim.token as given, and answers a token with its prefix doubled 404 with a hint to send it as given', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'claimer', scopes: ['workspace:claim'] });
      const reg = await register(svc.url);
      const example = JSON.stringify(claimExample);
      expect(example, 'the placeholder stands for the whole token').not.to.contain('pcs_clm_');
      const doubled = await api.post<ErrorBody>('/api/agents/claim', JSON.parse(example.replace('<CLAIM_TOKEN>', `pcs_clm_${reg.claim.token}`)), { 'x-api-key': key.key });
      expect(doubled.status, doubled.text).to.equal(404);
      expect(doubled.body.hint).to.contain('exactly as registration returned it (claim.token, which already begins pcs_clm_)');
      const res = await api.post<ClaimBody>('/api/agents/claim', JSON.parse(example.replace('<CLAIM_TOKEN>', reg.claim.token)), { 'x-api-key': key.key });
      expect(res.status, res.text).to.equal(200);
    });

    it('answers an unknown claim token with 404', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'claimer', scopes: ['workspace:claim'] });
      const res = await api.post<ErrorBody>('/api/agents/claim', { token: unknownKey().replace('pcs_usr_', 'pcs_clm_') }, { 'x-api-key': key.key });
      expect(res.status, res.text).to.equal(404);
      expect(res.body.code).to.equal('not_found');
    });

    function expectInsufficientScope(res: { status: number; text: string; body: ErrorBody }): void {
      expect(res.status, res.text).to.equal(403);
      expect(res.body.code).to.equal('insufficient_scope');
      expect(res.body.required_scopes).to.deep.equal(['workspace:claim']);
      expect(res.body.hint).to.be.a('string').and.not.be.empty;
    }

    it('refuses a key created with no scopes: 403 insufficient_scope', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'full access' });
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>('/api/agents/claim', { token: reg.claim.token }, { 'x-api-key': key.key });
      expectInsufficientScope(res);
      expect(res.body.hint).to.match(/by name only/);
      await expectStillUnclaimed(reg);
    });

    it("refuses a legacy 'admin' key: 403 insufficient_scope", async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'legacy', scopes: ['admin'] });
      expect(key.legacy).to.equal(true);
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>('/api/agents/claim', { token: reg.claim.token }, { 'x-api-key': key.key });
      expectInsufficientScope(res);
      await expectStillUnclaimed(reg);
    });

    it('refuses an access token, even one minted from an agent key naming workspace:claim: 403 insufficient_scope', async () => {
      const owner = await signUp(svc.url);
      const agentId = await createAgent(svc.url, asPerson(owner));
      const key = await createAgentKey(svc.url, asPerson(owner), agentId, { scopes: ['workspace:claim', 'price:compute'] });
      const token = await accessToken(svc.url, key.key);
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>('/api/agents/claim', { token: reg.claim.token }, { authorization: `Bearer ${token}` });
      expectInsufficientScope(res);
      expect(res.body.hint).to.match(/key itself/);
      await expectStillUnclaimed(reg);
    });

    it('records a refused claim by a key with the key it came through (via_key_id), as a completed one', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'claimer', scopes: ['workspace:claim'] });
      const first = await register(svc.url, 'first');
      expect((await api.post('/api/agents/claim', { token: first.claim.token }, { 'x-api-key': key.key })).status).to.equal(200);
      const second = await register(svc.url, 'second');
      const res = await api.post<ErrorBody>('/api/agents/claim', { token: second.claim.token }, { 'x-api-key': key.key });
      expectRefusal(res, /already holds 1 claimed agents/);
      const audit = await rows<{ actor_type: string; actor_id: string; via_key_id: string; outcome: string }>(
        svc,
        `SELECT actor_type, actor_id, via_key_id, outcome FROM audit_log WHERE workspace_id = $1 AND action = 'agent.claim' ORDER BY created_at`,
        [owner.workspaceId],
      );
      expect(audit).to.deep.equal([
        { actor_type: 'api_key', actor_id: key.id, via_key_id: key.id, outcome: 'done' },
        { actor_type: 'api_key', actor_id: key.id, via_key_id: key.id, outcome: 'refused' },
      ]);
    });

    it('refuses a workspace:claim key whose creator is no longer owner or admin; it works again once they are', async () => {
      const owner = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(owner), { name: 'claimer', scopes: ['workspace:claim'] });
      await setRole(svc, owner.workspaceId, owner.id, 'member');
      const reg = await register(svc.url);
      const res = await api.post<ErrorBody>('/api/agents/claim', { token: reg.claim.token }, { 'x-api-key': key.key });
      expectInsufficientScope(res);
      await expectStillUnclaimed(reg);
      await setRole(svc, owner.workspaceId, owner.id, 'admin');
      const ok = await api.post('/api/agents/claim', { token: reg.claim.token }, { 'x-api-key': key.key });
      expect(ok.status, ok.text).to.equal(200);
    });
  });
});
