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
import { assertCanChangeRole, assertCanRemove, assertCanReadAudit, refuse } from './policy';
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

function memberNotFound(): ApiError {
  return new ApiError('not_found', 'No member with this id in the workspace.', { hint: 'List members with GET /api/workspaces/{workspace_id}/members.', fields: { reason: 'member not found' } });
}

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
        if (!target) throw memberNotFound();
        assertCanChangeRole(actor, { personId: target.person_id, role: target.role }, role);
        if (target.role === role) return { member: target, changed: false };
        await this.sql.exec('UPDATE memberships SET role = $3, updated_at = now() WHERE workspace_id = $1 AND person_id = $2', [workspaceId, personId, role], tx);
        await this.trail.done(actor, 'team.members.update', personId, { from_role: target.role, to_role: role }, tx);
        await this.invitations.cancelForCreator(workspaceId, personId, role, tx);
        return { member: (await this.member(workspaceId, personId, tx)) as MemberRow, changed: true };
      });
      // Keys carry their creator's role as read (what a response offers them; what they may do is read afresh): once the
      // role changed, not on a refusal or a role unchanged, which anyone could repeat to flush every instance's cache.
      if (outcome.changed) await this.invalidate([workspaceId]);
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
        if (!target) throw memberNotFound();
        assertCanRemove(actor, { personId: target.person_id, role: target.role });
        const { revokedKeys, claimedLeft } = await this.drop(workspaceId, personId, tx);
        touched.push(...claimedLeft);
        await this.trail.done(actor, 'team.members.remove', personId, { removed_role: target.role, revoked_keys: revokedKeys, claimed_workspaces_left: claimedLeft }, tx);
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
            throw refuse('the last owner cannot leave', 'A workspace always keeps an owner; the last owner stays.', 'The last owner of a workspace cannot leave it.');
          }
        }
        const { revokedKeys, claimedLeft } = await this.drop(workspaceId, personId, tx);
        touched.push(...claimedLeft);
        await this.trail.done(actor, 'team.members.leave', personId, { left_role: me.role, revoked_keys: revokedKeys, claimed_workspaces_left: claimedLeft }, tx);
        return me;
      }).finally(() => this.invalidate(touched));
    });
  }

  /**
   * Removes a membership, and the person's non-owner memberships of the agent workspaces claimed under
   * it (their admin role there came with the claim, through this team): in each, the API keys the
   * person made are revoked (a key must not outlive its maker's access), the invitations they
   * made (themselves or through those keys) are cancelled, and a person whose default workspace it was falls back to another of theirs. Returns how
   * many keys were revoked and the claimed workspaces also left; the caller drops their cached keys
   * once the transaction is over.
   */
  private async drop(workspaceId: string, personId: string, tx: Transaction): Promise<{ revokedKeys: number; claimedLeft: string[] }> {
    const claimed = await this.sql.many<{ id: string }>(
      `WITH RECURSIVE under(id) AS (
         SELECT id FROM workspaces WHERE parent_id = $1 AND former_sandbox
         UNION SELECT w.id FROM workspaces w JOIN under u ON w.parent_id = u.id WHERE w.former_sandbox)
       SELECT u.id FROM under u JOIN memberships m ON m.workspace_id = u.id AND m.person_id = $2 AND m.role <> 'owner' ORDER BY u.id`,
      [workspaceId, personId],
      tx,
    );
    let revokedKeys = 0;
    for (const id of [workspaceId, ...claimed.map((c) => c.id)]) {
      await this.sql.exec('DELETE FROM memberships WHERE workspace_id = $1 AND person_id = $2', [id, personId], tx);
      revokedKeys += await this.keys.revokeMadeBy(id, personId, 'creator left the workspace', tx);
      await this.invitations.cancelForCreator(id, personId, null, tx);
    }
    await this.sql.exec(
      `UPDATE people SET default_workspace_id = (SELECT workspace_id FROM memberships WHERE person_id = $1 ORDER BY created_at LIMIT 1), updated_at = now()
        WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM memberships WHERE person_id = $1 AND workspace_id = people.default_workspace_id)`,
      [personId],
      tx,
    );
    return { revokedKeys, claimedLeft: claimed.map((c) => c.id) };
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
