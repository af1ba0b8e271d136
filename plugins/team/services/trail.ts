import type { Transaction } from 'sequelize';
import type { Principal } from '../../../core/auth';
import type { Sql } from '../../../core/db/sql';
import { isApiError } from '../../../core/errors';
import type { ApiError } from '../../../core/errors';
import type { Logger } from '../../../core/logger';
import { decodeTimeCursor, listEnvelope } from '../../../core/pagination';
import type { ListEnvelope } from '../../../core/pagination';
import { identityOf } from '../../identity';
import type { AuditLog, Role } from '../../identity';
import { auditActor } from './actors';
import type { Actor } from './policy';

/** Who did what caused an entry: a person (with their role in the workspace, null once they hold none) or a key. */
export type Cause = { type: 'person'; id: string; role: Role | null } | { type: 'api_key'; id: string };

/** Where a refused attempt is recorded; an operation may point it at another workspace (accepting an invitation). */
export interface AttemptScope {
  workspaceId: string;
  target: string | null;
}

interface AuditRow {
  id: string;
  workspace_id: string;
  actor_type: string;
  actor_id: string;
  via_key_id: string | null;
  action: string;
  target: string | null;
  outcome: 'done' | 'refused';
  reason: string | null;
  details: Record<string, unknown>;
  created_at: Date;
  /** Exact sort key (microseconds survive, unlike a JavaScript Date). */
  sort_key: string;
}

function auditView(r: AuditRow): Record<string, unknown> {
  return {
    id: r.id,
    object: 'audit_entry',
    action: r.action,
    outcome: r.outcome,
    actor: { type: r.actor_type, id: r.actor_id },
    via_key_id: r.via_key_id,
    target: r.target,
    reason: r.reason,
    details: r.details,
    created_at: new Date(r.created_at).toISOString(),
  };
}

/**
 * The team's use of the identity audit log: changes are recorded inside the transaction that makes
 * them; refused attempts are recorded after any transaction has rolled back, so they always stay.
 */
export class TeamTrail {
  constructor(
    private readonly audit: AuditLog,
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  async done(actor: Actor, action: string, target: string | null, details: Record<string, unknown>, tx?: Transaction): Promise<void> {
    await this.doneIn(actor.workspaceId, actor, action, target, null, details, tx);
  }

  /**
   * `done` in another workspace's log: a change in a team reaches the agent workspaces claimed under it, whose own logs
   * must show it too (the actor's role is the one they hold where they acted).
   */
  async doneIn(workspaceId: string, actor: Actor, action: string, target: string | null, reason: string | null, details: Record<string, unknown>, tx?: Transaction): Promise<void> {
    await this.audit.record(
      {
        workspaceId,
        actorType: actor.kind,
        actorId: actor.kind === 'api_key' && actor.keyId ? actor.keyId : actor.personId,
        viaKeyId: actor.keyId,
        action,
        target,
        outcome: 'done',
        reason,
        details: { ...details, ...(actor.kind === 'api_key' ? { acting_as: actor.personId, acting_role: actor.role } : { role: actor.role }) },
      },
      tx,
    );
  }

  async system(workspaceId: string, action: string, target: string | null, reason: string, details: Record<string, unknown>, viaKeyId: string | null, tx?: Transaction): Promise<void> {
    await this.audit.record({ workspaceId, actorType: 'system', actorId: 'team', viaKeyId, action, target, outcome: 'done', reason, details }, tx);
  }

  /**
   * An effect of something done outside the team routes (a key revoked, an agent disabled): the one who did it is its
   * actor, so the log says who ended an invitation; `system` only when nobody is known.
   */
  async causedBy(cause: Cause | null, workspaceId: string, action: string, target: string | null, reason: string, details: Record<string, unknown>, viaKeyId: string | null, tx?: Transaction): Promise<void> {
    if (!cause) return this.system(workspaceId, action, target, reason, details, viaKeyId, tx);
    await this.audit.record(
      { workspaceId, actorType: cause.type, actorId: cause.id, viaKeyId, action, target, outcome: 'done', reason, details: cause.type === 'person' ? { ...details, role: cause.role } : details },
      tx,
    );
  }

  /** Records a refused attempt (never inside a transaction). A failure to record is logged, never hides the refusal. */
  async refused(principal: Principal, scope: AttemptScope, action: string, err: ApiError): Promise<void> {
    const reason = typeof err.extras.fields?.reason === 'string' ? err.extras.fields.reason : err.message;
    const actor = auditActor(principal);
    try {
      await this.audit.record({
        workspaceId: scope.workspaceId,
        ...actor,
        action,
        target: scope.target,
        outcome: 'refused',
        reason,
        details: {
          code: err.code,
          status: err.status,
          ...(principal.kind === 'api_key' ? { acting_as: identityOf(principal).creatorPersonId ?? null } : {}),
          // The role the principal holds where it acts; in another workspace's log (an invitation to it) it has none there.
          ...(principal.kind === 'person' ? { role: scope.workspaceId === principal.workspaceId ? (identityOf(principal).role ?? null) : null } : {}),
        },
      });
    } catch (recordErr) {
      this.log.error({ err: recordErr, action }, 'could not record a refused team attempt');
    }
  }

  /**
   * Runs one team operation for `principal`; when it is refused (an ApiError, after any transaction
   * inside `work` has rolled back), the refusal is recorded and rethrown.
   */
  async attempt<T>(principal: Principal, action: string, target: string | null, work: (scope: AttemptScope) => Promise<T>): Promise<T> {
    const scope: AttemptScope = { workspaceId: principal.workspaceId, target };
    try {
      return await work(scope);
    } catch (err) {
      // A malformed request (400: a bad cursor, say) is no attempt at the change: not recorded (README, Audit log).
      if (isApiError(err) && err.status !== 400) await this.refused(principal, scope, action, err);
      throw err;
    }
  }

  /** The workspace's audit log, newest first. */
  async list(workspaceId: string, limit: number, cursor: string | undefined, outcome: 'done' | 'refused' | undefined): Promise<ListEnvelope<Record<string, unknown>>> {
    const after = cursor ? decodeTimeCursor(cursor) : null;
    const rows = await this.sql.many<AuditRow>(
      `SELECT *, created_at::text AS sort_key FROM audit_log
        WHERE workspace_id = $1 AND ($2::text IS NULL OR outcome = $2)
          AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::text))
        ORDER BY created_at DESC, id DESC LIMIT $5`,
      [workspaceId, outcome ?? null, after?.at ?? null, after?.id ?? null, limit + 1],
    );
    return listEnvelope(rows, limit, auditView, (r) => ({ sort: r.sort_key, id: r.id }));
  }
}
