import { createHash } from 'node:crypto';
import type { Transaction } from 'sequelize';
import type { Config } from '../../../config';
import type { Principal } from '../../../core/auth';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { newId, randomToken } from '../../../core/ids';
import { decodeTimeCursor, listEnvelope } from '../../../core/pagination';
import type { ListEnvelope } from '../../../core/pagination';
import { assertWorkspaceRoom, lockWorkspace } from '../../identity';
import type { Role } from '../../identity';
import { assertOwnWorkspace } from './actors';
import type { ActorResolver } from './actors';
import { assertCanInvite, assertCanManage, assertCanRevokeInvitation, canInviteAt } from './policy';
import { accountRestricted, restrictionOf } from './restrictions';
import type { Cause, TeamTrail } from './trail';

export type InvitationStatus = 'pending' | 'accepted' | 'revoked' | 'cancelled' | 'expired';

export interface InvitationRow {
  id: string;
  workspace_id: string;
  email: string;
  role: Exclude<Role, 'owner'>;
  token_hash: string;
  invited_by_person_id: string | null;
  via_key_id: string | null;
  status: InvitationStatus;
  expires_at: Date;
  accepted_by_person_id: string | null;
  accepted_at: Date | null;
  created_at: Date;
}

/** `via_key_expires_at`: when the key that made it expires, read beside it (an expired key's invitations are over). */
type ListedInvitation = InvitationRow & { sort_key: string; via_key_expires_at?: Date | null };

/**
 * A pending invitation's key has not expired (SQL over `invitations`, `nowParam` the service clock's now): one whose key
 * expired is cancelled (SPEC: the key's creator can no longer invite through it), whether or not anyone has tried to
 * accept it yet, so it neither blocks a new invitation to the same email nor counts against the workspace's limit.
 */
const keyNotExpired = (nowParam: string): string =>
  `(invitations.via_key_id IS NULL OR NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = invitations.via_key_id AND k.expires_at IS NOT NULL AND k.expires_at <= ${nowParam}))`;

/** What an invitation is now: a pending one past its time is expired, and one whose key expired is cancelled. */
function statusNow(r: InvitationRow & { via_key_expires_at?: Date | null }, now: number): InvitationStatus {
  if (r.status !== 'pending') return r.status;
  if (new Date(r.expires_at).getTime() <= now) return 'expired';
  if (r.via_key_expires_at && new Date(r.via_key_expires_at).getTime() <= now) return 'cancelled';
  return 'pending';
}

const DAY_MS = 86_400_000;

export function hashInvitationToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The public view of an invitation: never its token or hash. Its status is what it is now (statusNow). */
export function invitationView(r: InvitationRow & { via_key_expires_at?: Date | null }, now: number): Record<string, unknown> {
  return {
    id: r.id,
    object: 'invitation',
    workspace_id: r.workspace_id,
    email: r.email,
    role: r.role,
    status: statusNow(r, now),
    invited_by: r.invited_by_person_id,
    via_key_id: r.via_key_id,
    expires_at: new Date(r.expires_at).toISOString(),
    accepted_by: r.accepted_by_person_id,
    accepted_at: r.accepted_at ? new Date(r.accepted_at).toISOString() : null,
    created_at: new Date(r.created_at).toISOString(),
  };
}

/** Why a revoked key's invitations were cancelled, saying by whom in words (the entry's actor names them exactly). */
function keyRevokedReason(why: string, cause: Cause | null, creatorId: string | null): string {
  const own = cause?.type === 'person' && cause.id === creatorId;
  const role = cause?.type === 'person' ? cause.role : null;
  const who = (creator: string) => (own ? creator : role === 'owner' || role === 'admin' ? `an ${role}` : 'a person of the workspace');
  switch (why) {
    case 'revoked':
      return `the key that made the invitation was revoked by ${who('its creator')}`;
    case 'agent disabled':
      return `the key that made the invitation was revoked: its agent was disabled by ${who("the key's creator")}`;
    case 'rotated':
      return 'the key that made the invitation was rotated (a new key replaced it)';
    default:
      return `the key that made the invitation was revoked: ${why}`;
  }
}

function notAcceptable(reason: string, status: InvitationStatus): ApiError {
  return new ApiError('gone', 'This invitation can no longer be accepted.', {
    hint: 'Ask a workspace owner or admin for a new invitation.',
    fields: { reason, invitation_status: status },
  });
}

/**
 * Team invitations: made by owners and admins (or a team:admin key acting as its creator), accepted
 * once by the person the email names, with a one-time token stored only as a hash.
 */
export class Invitations {
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly actors: ActorResolver,
    private readonly trail: TeamTrail,
  ) {}

  async create(principal: Principal, workspaceId: string, email: string, role: Role): Promise<{ invitation: InvitationRow; token: string }> {
    return this.trail.attempt(principal, 'team.invitations.create', email, async () => {
      assertOwnWorkspace(principal, workspaceId);
      return this.sql.tx(async (tx) => {
        await lockWorkspace(this.sql, workspaceId, tx);
        const actor = await this.actors.resolve(principal, tx);
        assertCanInvite(actor, role);
        const member = await this.sql.one<{ person_id: string }>(
          'SELECT m.person_id FROM memberships m JOIN people p ON p.id = m.person_id WHERE m.workspace_id = $1 AND lower(p.email) = lower($2)',
          [workspaceId, email],
          tx,
        );
        if (member) {
          throw new ApiError('conflict', 'This person is already a member of the workspace.', {
            hint: `Change their role with PATCH /api/workspaces/${workspaceId}/members/${member.person_id} instead.`,
            fields: { reason: 'already a member', person_id: member.person_id },
          });
        }
        const pending = await this.sql.one<{ id: string }>(`SELECT id FROM invitations WHERE workspace_id = $1 AND lower(email) = lower($2) AND status = 'pending' AND expires_at > $3 AND ${keyNotExpired('$3')}`, [
          workspaceId,
          email,
          new Date(this.clock.now()),
        ], tx);
        if (pending) {
          throw new ApiError('conflict', 'A pending invitation for this email already exists.', {
            hint: `Revoke it (DELETE /api/workspaces/${workspaceId}/invitations/${pending.id}) before inviting again.`,
            fields: { reason: 'pending invitation exists', invitation_id: pending.id },
          });
        }
        await assertWorkspaceRoom(this.sql, tx, workspaceId, {
          setting: 'PENDING_INVITATIONS_PER_WORKSPACE',
          value: this.config.limits.perWorkspace.pendingInvitations,
          what: 'pending invitations',
          // Expiry against the service clock, as the duplicate check above and expires_at itself.
          count: `SELECT count(*)::int AS n FROM invitations WHERE workspace_id = $1 AND status = 'pending' AND expires_at > $2 AND ${keyNotExpired('$2')}`,
          params: [new Date(this.clock.now())],
          hint: `Revoke an invitation no longer wanted (DELETE /api/workspaces/${workspaceId}/invitations/{invitation_id}; GET /api/workspaces/${workspaceId}/invitations lists them); accepted, revoked and expired invitations do not count.`,
        });
        const token = `pcs_inv_${randomToken(32)}`;
        const expiresAt = new Date(this.clock.now() + this.config.identity.invitationTtlDays * DAY_MS);
        const invitation = (await this.sql.one<InvitationRow>(
          `INSERT INTO invitations (id, workspace_id, email, role, token_hash, invited_by_person_id, via_key_id, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
          [newId('inv'), workspaceId, email, role, hashInvitationToken(token), actor.personId, actor.keyId, expiresAt],
          tx,
        )) as InvitationRow;
        await this.trail.done(actor, 'team.invitations.create', invitation.id, { email, invited_role: role, expires_at: expiresAt.toISOString() }, tx);
        return { invitation, token };
      });
    });
  }

  async list(principal: Principal, workspaceId: string, limit: number, cursor: string | undefined): Promise<ListEnvelope<Record<string, unknown>>> {
    return this.trail.attempt(principal, 'team.invitations.list', null, async () => {
      assertOwnWorkspace(principal, workspaceId);
      assertCanManage(await this.actors.resolve(principal));
      const after = cursor ? decodeTimeCursor(cursor) : null;
      const rows = await this.sql.many<ListedInvitation>(
        `SELECT invitations.*, invitations.created_at::text AS sort_key, k.expires_at AS via_key_expires_at
           FROM invitations LEFT JOIN api_keys k ON k.id = invitations.via_key_id
          WHERE invitations.workspace_id = $1 AND ($2::timestamptz IS NULL OR (invitations.created_at, invitations.id) < ($2::timestamptz, $3::text))
          ORDER BY invitations.created_at DESC, invitations.id DESC LIMIT $4`,
        [workspaceId, after?.at ?? null, after?.id ?? null, limit + 1],
      );
      const now = this.clock.now();
      return listEnvelope(rows, limit, (r) => invitationView(r, now), (r) => ({ sort: r.sort_key, id: r.id }));
    });
  }

  async revoke(principal: Principal, workspaceId: string, invitationId: string): Promise<InvitationRow> {
    return this.trail.attempt(principal, 'team.invitations.revoke', invitationId, async () => {
      assertOwnWorkspace(principal, workspaceId);
      return this.sql.tx(async (tx) => {
        await lockWorkspace(this.sql, workspaceId, tx);
        const actor = await this.actors.resolve(principal, tx);
        assertCanManage(actor);
        const inv = await this.sql.one<InvitationRow>('SELECT * FROM invitations WHERE id = $1 AND workspace_id = $2 FOR UPDATE', [invitationId, workspaceId], tx);
        if (!inv) {
          throw new ApiError('not_found', 'No invitation with this id in the workspace.', {
            hint: `GET /api/workspaces/${workspaceId}/invitations lists this workspace's invitations with their ids.`,
            fields: { reason: 'invitation not found' },
          });
        }
        assertCanRevokeInvitation(actor, inv.role);
        // As the list shows it: one past its time, or whose key expired, is over already.
        const key = inv.via_key_id ? await this.sql.one<{ expires_at: Date | null }>('SELECT expires_at FROM api_keys WHERE id = $1', [inv.via_key_id], tx) : null;
        const status = statusNow({ ...inv, via_key_expires_at: key?.expires_at ?? null }, this.clock.now());
        if (status !== 'pending') {
          throw new ApiError('conflict', `The invitation is already ${status}.`, { hint: 'Only pending invitations can be revoked.', fields: { reason: `invitation ${status}` } });
        }
        const row = (await this.sql.one<InvitationRow>(`UPDATE invitations SET status = 'revoked' WHERE id = $1 RETURNING *`, [inv.id], tx)) as InvitationRow;
        await this.trail.done(actor, 'team.invitations.revoke', inv.id, { email: inv.email, invited_role: inv.role }, tx);
        return row;
      });
    });
  }

  /**
   * The signed-in person accepts with the one-time token. Refused when the invitation is not
   * pending or has expired, when the person's email differs, when either account is restricted,
   * and (cancelling it) when it came from a key that has been revoked or has expired, or whose
   * creator can no longer invite at that role.
   */
  async accept(principal: Principal, token: string): Promise<{ invitation: InvitationRow; workspace: { id: string; name: string } }> {
    return this.trail.attempt(principal, 'team.invitations.accept', null, async (scope) => {
      const personId = principal.personId;
      if (principal.kind !== 'person' || !personId) throw new ApiError('unauthorized', 'Sign in to accept an invitation.');
      const found = await this.sql.one<{ id: string; workspace_id: string }>('SELECT id, workspace_id FROM invitations WHERE token_hash = $1', [hashInvitationToken(token)]);
      if (!found) {
        throw new ApiError('not_found', 'This invitation token is unknown.', { hint: 'Use the token exactly as it was given; ask for a new invitation if it is lost.', fields: { reason: 'unknown invitation token' } });
      }
      scope.workspaceId = found.workspace_id;
      scope.target = found.id;

      const outcome = await this.sql.tx(async (tx) => {
        await lockWorkspace(this.sql, found.workspace_id, tx);
        const inv = (await this.sql.one<InvitationRow>('SELECT * FROM invitations WHERE id = $1 FOR UPDATE', [found.id], tx)) as InvitationRow;
        // The invitee first: anyone else holding the token is answered alike whatever became of the invitation, and
        // changes nothing (a timed-out one is not marked expired by a stranger).
        const person = await this.sql.one<{ email: string | null }>('SELECT email FROM people WHERE id = $1', [personId], tx);
        if (!person?.email || person.email.toLowerCase() !== inv.email.toLowerCase()) {
          return {
            refused: new ApiError('forbidden', 'This invitation is for another email address.', {
              hint: 'Sign in with the account whose email the invitation names.',
              fields: { reason: 'email does not match the invitation' },
            }),
          };
        }
        const restriction = await restrictionOf(this.sql, inv.workspace_id, personId, 'your', tx);
        if (restriction) return { refused: accountRestricted(restriction) };
        if (inv.status !== 'pending') return { refused: notAcceptable(`invitation ${inv.status}`, inv.status) };
        if (new Date(inv.expires_at).getTime() <= this.clock.now()) {
          await this.sql.exec(`UPDATE invitations SET status = 'expired' WHERE id = $1`, [inv.id], tx);
          return { refused: notAcceptable('invitation expired', 'expired') };
        }
        const inviterProblem = await this.inviterProblem(inv, tx);
        if (inviterProblem) {
          await this.sql.exec(`UPDATE invitations SET status = 'cancelled' WHERE id = $1`, [inv.id], tx);
          await this.trail.system(inv.workspace_id, 'team.invitations.cancel', inv.id, inviterProblem, { email: inv.email, invited_role: inv.role }, inv.via_key_id, tx);
          return { refused: notAcceptable(inviterProblem, 'cancelled') };
        }
        const already = await this.actors.roleOf(inv.workspace_id, personId, tx);
        if (already) {
          return { refused: new ApiError('conflict', 'You are already a member of this workspace.', { hint: 'Ask an owner or admin to change your role instead.', fields: { reason: 'already a member', role: already } }) };
        }
        await this.sql.exec('INSERT INTO memberships (workspace_id, person_id, role) VALUES ($1, $2, $3)', [inv.workspace_id, personId, inv.role], tx);
        const accepted = (await this.sql.one<InvitationRow>(
          `UPDATE invitations SET status = 'accepted', accepted_by_person_id = $2, accepted_at = now() WHERE id = $1 RETURNING *`,
          [inv.id, personId],
          tx,
        )) as InvitationRow;
        await this.trail.done({ kind: 'person', workspaceId: inv.workspace_id, personId, role: inv.role, keyId: null }, 'team.invitations.accept', inv.id, { email: inv.email, invited_role: inv.role, via_key_id: inv.via_key_id }, tx);
        const ws = (await this.sql.one<{ id: string; name: string }>('SELECT id, name FROM workspaces WHERE id = $1', [inv.workspace_id], tx)) as { id: string; name: string };
        return { invitation: accepted, workspace: ws };
      });
      // Refusals are thrown after the transaction committed what must stay (expired, cancelled).
      if ('refused' in outcome) throw outcome.refused;
      return outcome;
    });
  }

  /**
   * Why an invitation is no longer acceptable because of who made it, or null when it still is. An
   * invitation carries its maker's authority: the key that made it must still be valid, and the
   * person (the key's creator, or the inviter) must still be able to invite at its role.
   */
  private async inviterProblem(inv: InvitationRow, tx: Transaction): Promise<string | null> {
    let inviter = inv.invited_by_person_id;
    let who = 'the inviter';
    if (inv.via_key_id) {
      const key = await this.sql.one<{ revoked_at: Date | null; expires_at: Date | null; created_by_person_id: string | null }>(
        'SELECT revoked_at, expires_at, created_by_person_id FROM api_keys WHERE id = $1',
        [inv.via_key_id],
        tx,
      );
      if (!key || key.revoked_at) return 'the key that made the invitation was revoked';
      if (key.expires_at && new Date(key.expires_at).getTime() <= this.clock.now()) return 'the key that made the invitation has expired';
      inviter = key.created_by_person_id;
      who = "the key's creator";
    }
    const role = inviter ? await this.actors.roleOf(inv.workspace_id, inviter, tx) : null;
    if (!canInviteAt(role, inv.role)) return `${who} can no longer invite at role ${inv.role}`;
    if (inviter && (await restrictionOf(this.sql, inv.workspace_id, inviter, inv.via_key_id ? "the key creator's" : "the inviter's", tx))) {
      return `${who} can no longer invite at role ${inv.role} (account restricted)`;
    }
    return null;
  }

  /**
   * After a person's role changed (or they left or were removed: `role` null), cancels the pending
   * invitations they made (themselves or through their keys) that they can no longer make.
   * Accepting checks the same again.
   */
  async cancelForCreator(workspaceId: string, personId: string, role: Role | null, tx: Transaction): Promise<number> {
    const lost = (['member', 'admin'] as const).filter((r) => !canInviteAt(role, r));
    if (lost.length === 0) return 0;
    const rows = await this.sql.many<{ id: string; email: string; role: Role; via_key_id: string | null }>(
      `UPDATE invitations SET status = 'cancelled'
        WHERE workspace_id = $1 AND status = 'pending' AND role = ANY($3::text[])
          AND (invited_by_person_id = $2 OR via_key_id IN (SELECT id FROM api_keys WHERE created_by_person_id = $2))
        RETURNING id, email, role, via_key_id`,
      [workspaceId, personId, lost],
      tx,
    );
    for (const r of rows) {
      const who = r.via_key_id ? "the key's creator" : 'the inviter';
      await this.trail.system(workspaceId, 'team.invitations.cancel', r.id, `${who} can no longer invite at role ${r.role}`, { email: r.email, invited_role: r.role }, r.via_key_id, tx);
    }
    return rows.length;
  }

  /**
   * Revoking a key cancels its pending invitations (subscribed to `api_key.revoked`); each cancellation names who revoked
   * the key as its actor. `why` is the event's reason (`revoked`, `agent disabled`, `rotated`).
   */
  async cancelForKey(keyId: string, why: string, by: { type: 'person' | 'api_key'; id: string } | null): Promise<number> {
    return this.sql.tx(async (tx) => {
      const rows = await this.sql.many<{ id: string; workspace_id: string; email: string; role: string }>(
        `UPDATE invitations SET status = 'cancelled' WHERE via_key_id = $1 AND status = 'pending' RETURNING id, workspace_id, email, role`,
        [keyId],
        tx,
      );
      const first = rows[0];
      if (!first) return 0;
      const key = await this.sql.one<{ created_by_person_id: string | null }>('SELECT created_by_person_id FROM api_keys WHERE id = $1', [keyId], tx);
      // A key's invitations are all in its own workspace.
      const cause: Cause | null = by?.type === 'person' ? { ...by, type: 'person', role: await this.actors.roleOf(first.workspace_id, by.id, tx) } : by ? { type: 'api_key', id: by.id } : null;
      const reason = keyRevokedReason(why, cause, key?.created_by_person_id ?? null);
      for (const r of rows) {
        await this.trail.causedBy(cause, r.workspace_id, 'team.invitations.cancel', r.id, reason, { email: r.email, invited_role: r.role, key_revoked_reason: why }, keyId, tx);
      }
      return rows.length;
    });
  }
}
