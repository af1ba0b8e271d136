import type { Transaction } from 'sequelize';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';

/** A count limit of one kind of record per workspace, named by its setting. */
export interface WorkspaceLimit {
  /** The setting's environment variable (FUNCTIONS_PER_WORKSPACE). */
  setting: string;
  value: number;
  /** What is counted, plural (functions, live API keys). */
  what: string;
  /** SELECT count(*)::int AS n … with the workspace id as $1 (and `params` after it): the records that count. */
  count: string;
  /** Values of $2… in `count` (the service clock's now, where the count compares times). */
  params?: readonly unknown[];
  /** What to delete, revoke or disable to make room. */
  hint: string;
}

/**
 * Serialises changes of one workspace's members, agents and counted records until the transaction ends: holds its row
 * FOR NO KEY UPDATE, which rows merely referencing the workspace do not wait for.
 */
export async function lockWorkspace(sql: Sql, workspaceId: string, tx: Transaction): Promise<void> {
  await sql.one('SELECT id FROM workspaces WHERE id = $1 FOR NO KEY UPDATE', [workspaceId], tx);
}

/**
 * Refuses a create that would put the workspace past a count limit. Call it inside the transaction that inserts: it
 * holds the workspace row (FOR NO KEY UPDATE, which rows merely referencing the workspace do not wait for) until the
 * commit, so two creates of one workspace count one after the other and cannot both take the last place.
 */
export async function assertWorkspaceRoom(sql: Sql, tx: Transaction, workspaceId: string, limit: WorkspaceLimit): Promise<void> {
  await lockWorkspace(sql, workspaceId, tx);
  const n = (await sql.one<{ n: number }>(limit.count, [workspaceId, ...(limit.params ?? [])], tx))?.n ?? 0;
  if (n >= limit.value) throw workspaceLimitReached(limit);
}

/** 409 conflict: the workspace holds as many of these as it may; limit names the setting and its value. */
export function workspaceLimitReached(limit: WorkspaceLimit): ApiError {
  const key = limit.setting.toLowerCase();
  return new ApiError('conflict', `This workspace already holds ${limit.value} ${limit.what}, the most it may (${limit.setting}).`, {
    hint: limit.hint,
    limit: { [key]: limit.value, setting: limit.setting },
    fields: { reason: `${limit.what} limit reached` },
  });
}
