import type { Transaction } from 'sequelize';
import type { Principal } from '../../../core/auth';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { decodeTimeCursor, listEnvelope } from '../../../core/pagination';
import type { ListEnvelope } from '../../../core/pagination';
import type { KeyService, Role } from '../../identity';
import { assertOwnWorkspace } from './actors';
import type { ActorResolver } from './actors';
import { lockWorkspace } from '../../identity';
import type { Invitations } from './invitations';
import { assertCanChangeRole, assertCanRemove, assertCanReadAudit, OWNER_STAYS, refuse } from './policy';
import type { Actor } from './policy';
import type { TeamTrail } from './trail';

export interface MemberRow {
  person_id: string;
  role: Role;
  email: string | null;
  display_name: string;
  status: string;
  created_at: Date;
  updated_at: Date;
  sort_key: string;
}

export function memberView(m: MemberRow): Record<string, unknown> {
  return {
    object: 'member',
    person_id: m.person_id,
    email: m.email,
    display_name: m.display_name,
    role: m.role,
    status: m.status,
    joined_at: new Date(m.created_at).toISOString(),
    updated_at: new Date(m.updated_at).toISOString(),
  };
}

const MEMBER_SELECT = `SELECT m.person_id, m.role, m.created_at, m.updated_at, m.created_at::text AS sort_key, p.email, p.display_name, p.status
  FROM memberships m JOIN people p ON p.id = m.person_id`;

function memberNotFound(workspaceId: string): ApiError {
  return new ApiError('not_found', 'No member with this id in the workspace.', { hint: `List members with GET /api/workspaces/${workspaceId}/members.`, fields: { reason: 'member not found' } });
}

interface ClaimedRolesEnded {
  revokedKeys: number;
  ids: string[];
}

const NONE_ENDED: ClaimedRolesEnded = { revokedKeys: 0, ids: [] };

/** Members of a workspace: listing, role changes, removal and leaving, under the team rules. */
export class Members {
  constructor(
    private readonly sql: Sql,
    private readonly actors: ActorResolver,
    private readonly trail: TeamTrail,
    private readonly invitations: Invitations,
    private readonly keys: Pick<KeyService, 'revokeMadeBy' | 'invalidateWorkspace'>,
  ) {}

  private async member(workspaceId: string, personId: string, tx?: Transaction): Promise<MemberRow | null> {
    return this.sql.one<MemberRow>(`${MEMBER_SELECT} WHERE m.workspace_id = $1 AND m.person_id = $2`, [workspaceId, personId], tx);
  }

  /** Every member may read the team; a key needs team:admin. */
  async list(principal: Principal, workspaceId: string, limit: number, cursor: string | undefined): Promise<ListEnvelope<Record<string, unknown>>> {
    return this.trail.attempt(principal, 'team.members.list', null, async () => {
      assertOwnWorkspace(principal, workspaceId);
      await this.actors.resolve(principal);
      const after = cursor ? decodeTimeCursor(cursor) : null;
      const rows = await this.sql.many<MemberRow>(
        `${MEMBER_SELECT} WHERE m.workspace_id = $1 AND ($2::timestamptz IS NULL OR (m.created_at, m.person_id) > ($2::timestamptz, $3::text))
          ORDER BY m.created_at, m.person_id LIMIT $4`,
        [workspaceId, after?.at ?? null, after?.id ?? null, limit + 1],
      );
      return listEnvelope(rows, limit, memberView, (r) => ({ sort: r.sort_key, id: r.person_id }));
    });
  }

  async changeRole(principal: Principal, workspaceId: string, personId: string, role: Role): Promise<MemberRow> {
    return this.trail.attempt(principal, 'team.members.update', personId, async () => {
      assertOwnWorkspace(principal, workspaceId);
      const outcome = await this.sql.tx(async (tx) => {
        await lockWorkspace(this.sql, workspaceId, tx);
        const actor = await this.actors.resolve(principal, tx);
        const target = await this.member(workspaceId, personId, tx);
        if (!target) throw memberNotFound(workspaceId);
        assertCanChangeRole(actor, { personId: target.person_id, role: target.role }, role);
        if (target.role === role) return { member: target, touched: [] };
        await this.sql.exec('UPDATE memberships SET role = $3, updated_at = now() WHERE workspace_id = $1 AND person_id = $2', [workspaceId, personId, role], tx);
        // An admin role in the agent workspaces claimed under this one came with the admin role here (the claim): it ends
        // with it, as it does with leaving. Member roles there did not come from the rank here, so they stay.
        const claimed = target.role === 'admin' && role === 'member' ? await this.endClaimedRoles(actor, workspaceId, personId, ['admin'], 'demoted to member in the workspace this one was claimed under', tx) : NONE_ENDED;
        await this.trail.done(actor, 'team.members.update', personId, { from_role: target.role, to_role: role, revoked_keys: claimed.revokedKeys, claimed_workspaces_left: claimed.ids }, tx);
        await this.invitations.cancelForCreator(workspaceId, personId, role, tx);
        return { member: (await this.member(workspaceId, personId, tx)) as MemberRow, touched: [workspaceId, ...claimed.ids] };
      });
      // Keys carry their creator's role as read (what a response offers them; what they may do is read afresh): once the
      // role changed, not on a refusal or a role unchanged, which anyone could repeat to flush every instance's cache.
      await this.invalidate(outcome.touched);
      return outcome.member;
    });
  }

  async remove(principal: Principal, workspaceId: string, personId: string): Promise<MemberRow> {
    return this.trail.attempt(principal, 'team.members.remove', personId, async () => {
      assertOwnWorkspace(principal, workspaceId);
      const touched = [workspaceId];
      return this.sql.tx(async (tx) => {
        await lockWorkspace(this.sql, workspaceId, tx);
        const actor = await this.actors.resolve(principal, tx);
        const target = await this.member(workspaceId, personId, tx);
        if (!target) throw memberNotFound(workspaceId);
        assertCanRemove(actor, { personId: target.person_id, role: target.role });
        touched.push(...(await this.drop(actor, 'team.members.remove', workspaceId, personId, { removed_role: target.role }, tx)));
        return target;
      }).finally(() => this.invalidate(touched));
    });
  }

  /** The signed-in person leaves the workspace; the last owner cannot. */
  async leave(principal: Principal, workspaceId: string): Promise<MemberRow> {
    return this.trail.attempt(principal, 'team.members.leave', principal.personId ?? null, async () => {
      assertOwnWorkspace(principal, workspaceId);
      const personId = principal.personId;
      if (principal.kind !== 'person' || !personId) throw new ApiError('unauthorized', 'Sign in to leave a workspace.');
      const touched = [workspaceId];
      return this.sql.tx(async (tx) => {
        await lockWorkspace(this.sql, workspaceId, tx);
        const actor = await this.actors.resolve(principal, tx);
        const me = (await this.member(workspaceId, personId, tx)) as MemberRow;
        if (me.role === 'owner') {
          const owners = await this.sql.one<{ n: string }>(`SELECT count(*) AS n FROM memberships WHERE workspace_id = $1 AND role = 'owner'`, [workspaceId], tx);
          if (Number(owners?.n ?? 0) <= 1) {
            // The reason stays as it was (machine-read); the sentence and hint promise no second owner, which no route makes.
            throw refuse('the last owner cannot leave', `A workspace always keeps an owner, and no route makes anyone else one. ${OWNER_STAYS}`, "A workspace's only owner cannot leave it.");
          }
        }
        touched.push(...(await this.drop(actor, 'team.members.leave', workspaceId, personId, { left_role: me.role }, tx)));
        return me;
      }).finally(() => this.invalidate(touched));
    });
  }

  /**
   * Removes a membership (the person is removed, or leaves), and the person's non-owner memberships of the agent
   * workspaces claimed under it (their admin role there came with the claim, through this team). The person's API keys
   * there are revoked (a key must not outlive its maker's access) and the invitations they made (themselves or through
   * those keys) cancelled; a person whose default workspace it was falls back to another of theirs. The change is
   * recorded as `action` before the invitation cancellations it causes, so the log lists cause then effects. Returns the
   * claimed workspaces also left; the caller drops their cached keys once the transaction is over.
   */
  private async drop(actor: Actor, action: 'team.members.remove' | 'team.members.leave', workspaceId: string, personId: string, details: Record<string, unknown>, tx: Transaction): Promise<string[]> {
    const why = action === 'team.members.remove' ? 'removed from the workspace this one was claimed under' : 'left the workspace this one was claimed under';
    const claimed = await this.endClaimedRoles(actor, workspaceId, personId, ['admin', 'member'], why, tx);
    await this.sql.exec('DELETE FROM memberships WHERE workspace_id = $1 AND person_id = $2', [workspaceId, personId], tx);
    const revokedKeys = claimed.revokedKeys + (await this.keys.revokeMadeBy(workspaceId, personId, 'creator left the workspace', tx));
    await this.trail.done(actor, action, personId, { ...details, revoked_keys: revokedKeys, claimed_workspaces_left: claimed.ids }, tx);
    await this.invitations.cancelForCreator(workspaceId, personId, null, tx);
    await this.sql.exec(
      `UPDATE people SET default_workspace_id = (SELECT workspace_id FROM memberships WHERE person_id = $1 ORDER BY created_at LIMIT 1), updated_at = now()
        WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM memberships WHERE person_id = $1 AND workspace_id = people.default_workspace_id)`,
      [personId],
      tx,
    );
    return claimed.ids;
  }

  /**
   * Ends the person's `roles` in the agent workspaces claimed under `workspaceId` (and those claimed under them), where
   * they hold them because of their place in this team: each membership goes with the keys the person made there and
   * the invitations they made there. Each claimed workspace's own log records it (`team.members.role_ended`, naming the
   * team's actor and `why`), since its owner and admins read that log, not the team's.
   */
  private async endClaimedRoles(actor: Actor, workspaceId: string, personId: string, roles: readonly Exclude<Role, 'owner'>[], why: string, tx: Transaction): Promise<ClaimedRolesEnded> {
    const claimed = await this.sql.many<{ id: string; role: Role }>(
      `WITH RECURSIVE under(id) AS (
         SELECT id FROM workspaces WHERE parent_id = $1 AND former_sandbox
         UNION SELECT w.id FROM workspaces w JOIN under u ON w.parent_id = u.id WHERE w.former_sandbox)
       SELECT u.id, m.role FROM under u JOIN memberships m ON m.workspace_id = u.id AND m.person_id = $2 AND m.role = ANY($3::text[]) ORDER BY u.id`,
      [workspaceId, personId, roles],
      tx,
    );
    let revokedKeys = 0;
    for (const c of claimed) {
      await this.sql.exec('DELETE FROM memberships WHERE workspace_id = $1 AND person_id = $2', [c.id, personId], tx);
      const revoked = await this.keys.revokeMadeBy(c.id, personId, 'creator left the workspace', tx);
      revokedKeys += revoked;
      await this.trail.doneIn(c.id, actor, 'team.members.role_ended', personId, why, { ended_role: c.role, revoked_keys: revoked, team_workspace_id: workspaceId }, tx);
      await this.invitations.cancelForCreator(c.id, personId, null, tx);
    }
    return { revokedKeys, ids: claimed.map((c) => c.id) };
  }

  /** Drops the cached keys of the workspaces a removal or departure touched. */
  private async invalidate(workspaceIds: readonly string[]): Promise<void> {
    for (const id of workspaceIds) await this.keys.invalidateWorkspace(id);
  }

  /** The audit log, for owners and admins (people, or team:admin keys whose creator is one). */
  async auditLog(principal: Principal, workspaceId: string, limit: number, cursor: string | undefined, outcome: 'done' | 'refused' | undefined): Promise<ListEnvelope<Record<string, unknown>>> {
    return this.trail.attempt(principal, 'team.audit.list', null, async () => {
      assertOwnWorkspace(principal, workspaceId);
      assertCanReadAudit(await this.actors.resolve(principal));
      return this.trail.list(workspaceId, limit, cursor, outcome);
    });
  }
}
