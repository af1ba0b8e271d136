import { createHash } from 'node:crypto';
import type { Config } from '../../../config';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { INSTEAD_OF_REGISTERING, invalidCredentials, revokedKey, unknownClaimLink } from '../errors';
import type { EventBus } from '../../../core/events';
import { addressDigests, limitAddress } from '../../../core/address';
import { newId, randomToken } from '../../../core/ids';
import { countDaily, secondsUntilUtcMidnight, utcDay, utcDayStart } from '../../../core/daily-quota';
import { incrFromRecord, uncount } from '../../../core/kv';
import type { KvStore } from '../../../core/kv';
import type { ApiKeyRow, KeyKind, WorkspaceOrigin, WorkspaceRow } from '../domain';
import type { AuditLog } from './audit';
import type { KeyService } from './key-service';
import type { SpentRegistrations } from './spent-registrations';
import type { Workspaces } from './workspaces';

/** The agent's key as a claim link's reader sees it: what keep_key would keep (an expired key is not kept). */
export interface AgentKeyState {
  state: 'live' | 'expired' | 'none';
  expires_at: string | null;
}

declare module '../../../core/events' {
  interface DomainEvents {
    /** A sandbox became an ordinary workspace under `targetWorkspaceId`. */
    'workspace.claimed': { workspaceId: string; targetWorkspaceId: string; claimedBy: { type: 'person' | 'api_key'; id: string }; keptKey: boolean; at: string };
    'workspace.registered': { workspaceId: string; agentId: string; origin: WorkspaceOrigin };
    /** `by`: who revoked it (a person, or the key itself when rotated), so what the revocation cancels names them, not the system. */
    'api_key.revoked': { workspaceId: string; keyId: string; reason: string; by: { type: 'person' | 'api_key'; id: string } | null };
  }
}

export const SANDBOX_SCOPES = ['price:compute'];
const DAY_MS = 86_400_000;

export interface Registration {
  workspace: WorkspaceRow;
  agentId: string;
  agentName: string;
  key: ApiKeyRow;
  secret: string;
  claimToken: string;
  claimExpiresAt: Date;
  remainingForAddress: number;
}

/** What a claim did: the claimed workspace, its new test workspace, its agent, and the agent keys revoked or kept. */
export interface ClaimOutcome {
  workspace: WorkspaceRow;
  testWorkspace: WorkspaceRow;
  agentId: string | null;
  revokedKeys: string[];
  keptKeys: string[];
}

export type Claimer = { type: 'person'; personId: string } | { type: 'api_key'; keyId: string; workspaceId: string };

/** Who an audit entry of a claim names: the person, or the key (also as the key it came through, as every entry by a key). */
function auditActor(claimer: Claimer): { actorType: Claimer['type']; actorId: string; viaKeyId?: string } {
  return claimer.type === 'person' ? { actorType: 'person', actorId: claimer.personId } : { actorType: 'api_key', actorId: claimer.keyId, viaKeyId: claimer.keyId };
}

export function hashClaimToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Agent self-registration, sandbox key rotation and claims (SPEC: Agent onboarding, state table). */
export class Onboarding {
  constructor(
    private readonly sql: Sql,
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly keys: KeyService,
    private readonly workspaces: Workspaces,
    private readonly audit: AuditLog,
    private readonly events: EventBus,
    private readonly spentRegistrations?: SpentRegistrations,
  ) {}

  assertRegistrationOpen(): void {
    const { selfRegistrationOpen, selfRegistrationRetryAfterS } = this.config.identity;
    if (selfRegistrationOpen) return;
    throw new ApiError('self_registration_closed', 'Self-registration is paused.', {
      retry_after: selfRegistrationRetryAfterS,
      hint: `Try again in ${selfRegistrationRetryAfterS} s. Meanwhile the keyless demo (POST /api/public/compute/demo) still answers.`,
    });
  }

  /**
   * What the database recorded since a time: where a daily counter starts when the store lost it
   * (a restart without Redis).
   */
  private async countSince(query: string, params: unknown[]): Promise<number> {
    return (await this.sql.one<{ n: number }>(query, params))?.n ?? 0;
  }

  /** Counts a registration against the per-address and overall daily limits, or refuses it. `ip`: the address the limits count under (limitAddress). */
  private async countRegistration(ip: string): Promise<number> {
    const { perAddressPerDay, overallPerDay } = this.config.limits.registrations;
    const counted = await countDaily(this.kv, this.clock.now(), {
      what: 'registration',
      counter: 'reg',
      address: ip,
      perAddressPerDay,
      overallPerDay,
      recordedForAddress: (since) => this.countSince('SELECT count(*)::int AS n FROM agents WHERE registered_from_hash = ANY($1) AND created_at >= $2', [addressDigests(ip), since]),
      recordedOverall: (since) => this.countSince('SELECT count(*)::int AS n FROM workspaces WHERE created_by_agent AND created_at >= $1', [since]),
      // The caller may hold no key (registrations from one address are often many programs'): a key is reused only if
      // there is one, and what works without one is offered, as the other 429s do in next.
      addressHint: (retryAfter) =>
        `The quota resets at 00:00 UTC, in ${retryAfter} s. A sandbox key registered earlier keeps working: reuse it. Without one, the keyless demo prices meanwhile, or a person signs up (POST /api/auth/signup) for a workspace of their own; see next.`,
      overallHint: (retryAfter) =>
        `The whole service's quota resets at 00:00 UTC, in ${retryAfter} s. The keyless demo prices meanwhile, or a person signs up (POST /api/auth/signup) for a workspace of their own; see next.`,
      next: INSTEAD_OF_REGISTERING,
      onSpent: async (scope) => this.spentRegistrations?.mark(scope === 'overall' ? { overall: true } : { address: ip }),
    });
    return counted.remainingForAddress;
  }

  /** Creates an Agent Starter sandbox: workspace, agent, key shown once, one-time claim link. */
  async registerSandbox(input: { name: string; ip: string; userAgent?: string | undefined; origin: WorkspaceOrigin; keyKind: KeyKind }): Promise<Registration> {
    this.assertRegistrationOpen();
    // The agent row keeps the address the limit counts under (an IPv6 caller's network), so a restart counts that network again.
    const address = limitAddress(input.ip, this.config.limits.rateLimit.ipv6Prefix);
    const remainingForAddress = await this.countRegistration(address);
    const claimToken = `pcs_clm_${randomToken(32)}`;
    const claimExpiresAt = new Date(this.clock.now() + this.config.identity.claimLinkTtlDays * DAY_MS);
    const keyExpiresAt = new Date(this.clock.now() + this.config.limits.sandbox.keyLifetimeDays * DAY_MS);
    const result = await this.sql.tx(async (tx) => {
      const workspace = await this.workspaces.create({ name: input.name, plan: 'agent_starter', origin: input.origin, isSandbox: true, createdByAgent: true }, tx);
      const agentId = newId('agt');
      await this.sql.exec('INSERT INTO agents (id, workspace_id, name, user_agent, registered_from_hash) VALUES ($1, $2, $3, $4, $5)', [agentId, workspace.id, input.name, input.userAgent?.slice(0, 300) ?? null, addressDigests(address)[0] ?? null], tx);
      const { row, secret } = await this.keys.create(
        { workspaceId: workspace.id, name: `${input.name} sandbox key`, kind: input.keyKind, scopes: SANDBOX_SCOPES, agentId, expiresAt: keyExpiresAt },
        tx,
      );
      await this.sql.exec('INSERT INTO claim_tokens (token_hash, workspace_id, expires_at) VALUES ($1, $2, $3)', [hashClaimToken(claimToken), workspace.id, claimExpiresAt], tx);
      return { workspace, agentId, key: row, secret };
    });
    await this.events.emit('workspace.registered', { workspaceId: result.workspace.id, agentId: result.agentId, origin: input.origin });
    return { ...result, agentName: input.name, claimToken, claimExpiresAt, remainingForAddress };
  }

  /**
   * A new claim link for an unclaimed sandbox, for an agent that lost the one its registration gave: the links not used
   * yet end, so only the newest works. A claimed workspace has none to give (409).
   */
  async reissueClaimLink(workspaceId: string): Promise<{ claimToken: string; claimExpiresAt: Date; ended: number }> {
    const claimToken = `pcs_clm_${randomToken(32)}`;
    const claimExpiresAt = new Date(this.clock.now() + this.config.identity.claimLinkTtlDays * DAY_MS);
    const ended = await this.sql.tx(async (tx) => {
      const ws = await this.sql.one<{ is_sandbox: boolean }>('SELECT is_sandbox FROM workspaces WHERE id = $1 FOR UPDATE', [workspaceId], tx);
      if (!ws?.is_sandbox) {
        throw new ApiError('conflict', 'This workspace is not an unclaimed sandbox: it has no claim link to give.', {
          hint: 'Claim links belong to agent sandboxes until a person or a trusted agent claims them; this workspace was claimed already, or was never a sandbox.',
        });
      }
      const gone = await this.sql.many<{ token_hash: string }>('DELETE FROM claim_tokens WHERE workspace_id = $1 AND used_at IS NULL RETURNING token_hash', [workspaceId], tx);
      await this.sql.exec('INSERT INTO claim_tokens (token_hash, workspace_id, expires_at) VALUES ($1, $2, $3)', [hashClaimToken(claimToken), workspaceId, claimExpiresAt], tx);
      return gone.length;
    });
    return { claimToken, claimExpiresAt, ended };
  }

  /** New key with identical workspace, scopes, agent and expiry; the old key stops at once. */
  async rotate(keyId: string, workspaceId: string): Promise<{ row: ApiKeyRow; secret: string; rotationsLeftToday: number }> {
    const old = await this.keys.get(workspaceId, keyId);
    // As authentication answers a revoked key (why, and what to do): a rotation racing this one got here first.
    if (!old || old.revoked_at) throw old ? revokedKey(old) : invalidCredentials('This key can no longer be rotated.');
    if (old.kind !== 'sandbox' && old.kind !== 'agent' && old.kind !== 'oauth_client') {
      throw new ApiError('forbidden', 'Only sandbox and agent keys rotate themselves.', { hint: 'People replace their keys in Settings: create a new key (POST /api/api-keys), then delete the old one.' });
    }
    const perDay = this.config.limits.sandbox.keyRotationsPerDay;
    const now = this.clock.now();
    // Counted per agent (a sandbox is its agent's): one agent's rotations never leave another agent of the workspace
    // unable to rotate a leaked key. A key of no agent counts for its workspace.
    const agentId = old.agent_id;
    const counter = agentId ? `rot:${workspaceId}:${agentId}:${utcDay(now)}` : `rot:${workspaceId}:${utcDay(now)}`;
    const used = await incrFromRecord(this.kv, counter, 1, 2 * DAY_MS, () =>
      this.countSince(
        `SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = $2 AND revoked_reason = 'rotated' AND revoked_at >= $1 AND agent_id IS NOT DISTINCT FROM $3`,
        [utcDayStart(now), workspaceId, agentId],
      ),
    );
    if (used > perDay) {
      // Refused ones are taken back too: the counter holds the rotations let through, as its record does.
      await uncount(this.kv, counter, 1);
      const retryAfter = secondsUntilUtcMidnight(now);
      // A leaked key cannot wait for midnight: a person of a claimed workspace replaces it at once.
      const replace = old.kind === 'agent' && agentId ? ` If it leaked, a person of the workspace revokes it (DELETE /api/api-keys/${old.id}) and mints the agent a new one (POST /api/agents/${agentId}/keys).` : '';
      throw new ApiError('daily_quota_exceeded', `Daily key rotation quota reached (${perDay} per day${agentId ? ' for this agent' : ''}).`, {
        retry_after: retryAfter,
        limit: { key_rotations_per_day: perDay },
        hint: `Keep using the current key; rotations reset at 00:00 UTC, in ${retryAfter} s.${replace}`,
      });
    }
    const created = await this.sql.tx(async (tx) => {
      const revokedMeanwhile = () => invalidCredentials('This key was revoked while rotating.');
      // The workspace before the key, in a claim's order: the new key's reference to its workspace waits on a claim
      // holding it, which then updates this key; taken after the key's lock, that wait was a deadlock (a 500).
      await this.sql.one('SELECT id FROM workspaces WHERE id = $1 FOR KEY SHARE', [workspaceId], tx);
      // The maker's membership before the key (a removal's order), or the removal could miss the new key.
      const maker = (await this.sql.one<{ created_by_person_id: string | null }>('SELECT created_by_person_id FROM api_keys WHERE id = $1', [keyId], tx))?.created_by_person_id;
      if (maker && !(await this.keys.holdMembership(workspaceId, maker, tx))) throw revokedMeanwhile();
      const locked = await this.sql.one<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1 FOR UPDATE', [keyId], tx);
      if (!locked) throw revokedMeanwhile();
      if (locked.revoked_at) throw revokedKey(locked);
      const fresh = await this.keys.create(
        {
          workspaceId,
          name: locked.name,
          kind: locked.kind,
          scopes: locked.scopes,
          legacy: locked.legacy,
          createdByPersonId: locked.created_by_person_id,
          agentId: locked.agent_id,
          expiresAt: locked.expires_at,
          rotatedFromId: locked.id,
        },
        tx,
      );
      await this.sql.exec(`UPDATE api_keys SET revoked_at = now(), revoked_reason = 'rotated' WHERE id = $1`, [keyId], tx);
      await this.sql.exec('UPDATE oauth_clients SET key_id = $2 WHERE key_id = $1', [keyId, fresh.row.id], tx);
      return fresh;
    }).catch(async (err: unknown) => {
      // A rotation that made no key (the key revoked meanwhile, a failure) does not count. Best effort, as for sign-ups.
      await uncount(this.kv, counter, 1).catch(() => undefined);
      throw err;
    });
    await this.keys.invalidateKey(keyId);
    await this.events.emit('api_key.revoked', { workspaceId, keyId, reason: 'rotated', by: { type: 'api_key', id: keyId } });
    return { ...created, rotationsLeftToday: Math.max(0, perDay - used) };
  }

  /** The sandbox a claim token points at, if the token is still usable. */
  async findClaimable(token: string): Promise<{ workspace: WorkspaceRow; expiresAt: Date; agentKey: AgentKeyState } | null> {
    const row = await this.sql.one<{ workspace_id: string; expires_at: Date; used_at: Date | null }>('SELECT workspace_id, expires_at, used_at FROM claim_tokens WHERE token_hash = $1', [
      hashClaimToken(token),
    ]);
    if (!row || row.used_at || new Date(row.expires_at).getTime() <= this.clock.now()) return null;
    const workspace = await this.workspaces.get(row.workspace_id);
    if (!workspace?.is_sandbox) return null;
    // What keep_key would keep: the agent's unrevoked key (a rotation leaves one), live or expired.
    const key = await this.sql.one<{ expires_at: Date | null }>(
      `SELECT expires_at FROM api_keys WHERE workspace_id = $1 AND revoked_at IS NULL AND kind IN ('sandbox', 'oauth_client') ORDER BY expires_at DESC NULLS FIRST LIMIT 1`,
      [workspace.id],
    );
    const agentKey: AgentKeyState = !key
      ? { state: 'none', expires_at: null }
      : { state: key.expires_at && key.expires_at.getTime() <= this.clock.now() ? 'expired' : 'live', expires_at: key.expires_at ? key.expires_at.toISOString() : null };
    return { workspace, expiresAt: new Date(row.expires_at), agentKey };
  }

  /**
   * SPEC's claim transition: conditions (claimer owns or administers the target; the target is not
   * a test workspace or an unclaimed agent workspace; the target holds fewer than the claimed-agent
   * limit) and effects (moves under the target, free plan, limits lift, test workspace, agent key
   * revoked unless kept, event for other plugins), atomically.
   */
  async claim(input: { token: string; targetWorkspaceId: string; claimer: Claimer; keepKey: boolean }): Promise<ClaimOutcome> {
    const notFound = unknownClaimLink;
    const result = await this.sql.tx(async (tx) => {
      const tokenRow = await this.sql.one<{ workspace_id: string; expires_at: Date; used_at: Date | null }>(
        'SELECT workspace_id, expires_at, used_at FROM claim_tokens WHERE token_hash = $1 FOR UPDATE',
        [hashClaimToken(input.token)],
        tx,
      );
      if (!tokenRow || tokenRow.used_at || new Date(tokenRow.expires_at).getTime() <= this.clock.now()) throw notFound();
      const sandbox = await this.workspaces.get(tokenRow.workspace_id, tx, true);
      if (!sandbox?.is_sandbox) throw notFound();
      const target = await this.workspaces.get(input.targetWorkspaceId, tx, true);
      // A refusal is recorded in the target's audit log only when the claimer belongs to it: outsiders neither learn
      // whether a workspace id exists (one 404 for missing and foreign, as for any record of another workspace) nor
      // write into its log.
      let member = input.claimer.type === 'api_key' ? input.claimer.workspaceId === target?.id : false;
      // A test workspace keeps no audit log of its own (its team's is its parent's), so its refusals go there.
      const logOf = (w: WorkspaceRow) => (w.is_test && w.parent_id ? w.parent_id : w.id);
      const refuse = (reason: string, hint: string) => ({ refused: { reason, hint, targetId: member && target ? logOf(target) : null, sandboxId: sandbox.id } }) as const;
      if (input.claimer.type === 'person') {
        const role = target ? await this.workspaces.roleOf(target.id, input.claimer.personId, tx) : null;
        member = role !== null;
        if (!target || !member) throw notYours(input.targetWorkspaceId);
        if (role !== 'owner' && role !== 'admin') return refuse('the claimer does not own or administer the target workspace', 'Choose a workspace where you are owner or admin.');
      } else if (!target || !member) {
        return refuse('a workspace:claim key claims into its own workspace only', 'Use a key of the target workspace.');
      }
      if (target.id === sandbox.id) return refuse('a sandbox cannot claim itself', 'Claim into a workspace you own or administer.');
      if (target.is_test) return refuse('the target is a test workspace', 'Claim into the production workspace, not its test workspace.');
      if (target.is_sandbox) return refuse('the target is an unclaimed agent workspace', 'An unclaimed sandbox cannot hold other agents; claim it first.');
      const limit = this.config.limits.claimedAgentsPerWorkspace;
      if ((await this.workspaces.countClaimedAgentsInTree(target.id, tx)) >= limit) {
        return refuse(
          `the target's workspace already holds ${limit} claimed agents (counted with the agents claimed into them, at any depth)`,
          `A workspace holds at most ${limit} claimed agents, those claimed into its claimed agents included (CLAIMED_AGENTS_PER_WORKSPACE).`,
        );
      }

      await this.sql.exec(
        `UPDATE workspaces SET plan = 'free', is_sandbox = false, former_sandbox = true, created_by_agent = true, parent_id = $2, claimed_at = now(), updated_at = now() WHERE id = $1`,
        [sandbox.id, target.id],
        tx,
      );
      await this.sql.exec('UPDATE claim_tokens SET used_at = now() WHERE workspace_id = $1 AND used_at IS NULL', [sandbox.id], tx);
      const claimed = (await this.workspaces.get(sandbox.id, tx)) as WorkspaceRow;
      const testWorkspace = await this.workspaces.createTestWorkspace(claimed, tx);
      const ownerId = await this.workspaces.ownerOf(target.id, tx);
      if (ownerId) await this.workspaces.addMember(sandbox.id, ownerId, 'owner', tx);
      if (input.claimer.type === 'person' && input.claimer.personId !== ownerId) await this.workspaces.addMember(sandbox.id, input.claimer.personId, 'admin', tx);

      const agentKeys = await this.sql.many<{ id: string; live: boolean }>(
        `SELECT id, (expires_at IS NULL OR expires_at > $2) AS live FROM api_keys WHERE workspace_id = $1 AND revoked_at IS NULL AND kind IN ('sandbox', 'oauth_client')`,
        [sandbox.id, new Date(this.clock.now())],
        tx,
      );
      // An expired key is not brought back by keep_key: whoever held it may have dropped or leaked it long ago, and the
      // person confirming sees no sign of it. It is revoked as the keys not kept are.
      const kept = input.keepKey ? agentKeys.filter((k) => k.live).map((k) => k.id) : [];
      const revoked = agentKeys.filter((k) => !kept.includes(k.id)).map((k) => k.id);
      if (kept.length) {
        // A kept key has the full access of an API key in the workspace until revoked: no longer a sandbox key (SPEC
        // calls it the agent key), so the name registration gave it stops saying so. Only that suffix is replaced.
        await this.sql.exec(`UPDATE api_keys SET expires_at = NULL, scopes = NULL, name = regexp_replace(name, ' sandbox key$', ' agent key') WHERE id = ANY($1::text[])`, [kept], tx);
      }
      if (revoked.length) await this.sql.exec(`UPDATE api_keys SET revoked_at = now(), revoked_reason = 'claimed' WHERE id = ANY($1::text[])`, [revoked], tx);
      await this.audit.record(
        {
          workspaceId: target.id,
          ...auditActor(input.claimer),
          action: 'agent.claim',
          target: sandbox.id,
          outcome: 'done',
          details: { kept_key: kept.length > 0, test_workspace_id: testWorkspace.id },
        },
        tx,
      );
      // The claimed workspace's own log says how it came to be managed and by whom its first people joined: its Team
      // page would otherwise show an owner and an admin with no entry.
      const joined = [
        ...(ownerId ? [{ person_id: ownerId, role: 'owner' }] : []),
        ...(input.claimer.type === 'person' && input.claimer.personId !== ownerId ? [{ person_id: input.claimer.personId, role: 'admin' }] : []),
      ];
      await this.audit.record(
        {
          workspaceId: sandbox.id,
          ...auditActor(input.claimer),
          action: 'workspace.claimed',
          target: target.id,
          outcome: 'done',
          details: { claimed_into: target.id, members_joined: joined, kept_key: kept.length > 0, revoked_keys: revoked.length, test_workspace_id: testWorkspace.id },
        },
        tx,
      );
      // The agent registration made with the sandbox (a sandbox makes no other): the claim's answer names it, for its new key.
      const agent = await this.sql.one<{ id: string }>('SELECT id FROM agents WHERE workspace_id = $1 ORDER BY created_at, id LIMIT 1', [sandbox.id], tx);
      return { workspace: { ...claimed, test_workspace_id: testWorkspace.id }, testWorkspace, agentId: agent?.id ?? null, revokedKeys: revoked, keptKeys: kept };
    });
    if ('refused' in result) {
      // Recorded outside the transaction, which had nothing to keep.
      const { reason, hint, targetId, sandboxId } = result.refused;
      if (targetId) {
        await this.audit.record({
          workspaceId: targetId,
          ...auditActor(input.claimer),
          action: 'agent.claim',
          target: sandboxId,
          outcome: 'refused',
          reason,
        });
      }
      throw new ApiError('forbidden', `Claim refused: ${reason}.`, { hint, fields: { reason } });
    }
    const outcome = result;
    await this.keys.invalidateWorkspace(outcome.workspace.id);
    await this.events.emit('workspace.claimed', {
      workspaceId: outcome.workspace.id,
      targetWorkspaceId: input.targetWorkspaceId,
      claimedBy: { type: input.claimer.type, id: input.claimer.type === 'person' ? input.claimer.personId : input.claimer.keyId },
      keptKey: outcome.keptKeys.length > 0,
      at: new Date(this.clock.now()).toISOString(),
    });
    return outcome;
  }
}

function notYours(workspaceId: string): ApiError {
  return new ApiError('not_found', `No workspace ${workspaceId} of yours: it does not exist, or you are not a member of it.`, {
    hint: 'Leave workspace_id out to claim into your current workspace (tenant_id in GET /api/me), or send the id of a workspace where you are owner or admin.',
  });
}
