import type { Transaction } from 'sequelize';
import type { Sql } from '../../../core/db/sql';
import { newId } from '../../../core/ids';

export interface AuditEntry {
  workspaceId: string;
  actorType: 'person' | 'api_key' | 'access_token' | 'system';
  actorId: string;
  viaKeyId?: string | null;
  action: string;
  target?: string | null;
  outcome: 'done' | 'refused';
  reason?: string | null;
  details?: Record<string, unknown>;
}

/** The audit log of team changes, claims and refused attempts. */
export class AuditLog {
  constructor(private readonly sql: Sql) {}

  async record(e: AuditEntry, tx?: Transaction): Promise<void> {
    // The time of this write, not the column's default (the transaction's start, shared by every entry it writes, which
    // the random id then ordered): a change and the effects it causes list in the order they were written.
    await this.sql.exec(
      `INSERT INTO audit_log (id, workspace_id, actor_type, actor_id, via_key_id, action, target, outcome, reason, details, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, clock_timestamp())`,
      [newId('aud'), e.workspaceId, e.actorType, e.actorId, e.viaKeyId ?? null, e.action, e.target ?? null, e.outcome, e.reason ?? null, JSON.stringify(e.details ?? {})],
      tx,
    );
  }
}
