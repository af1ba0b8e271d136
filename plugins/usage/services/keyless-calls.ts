import type { Sql } from '../../../core/db/sql';
import { addressDigests } from '../../../core/address';

/**
 * The keyless calls an address made on a workspace since a time, as usage events recorded them:
 * where the demo budget's hourly counter starts when the store lost it (a restart without Redis).
 * Calls refused before pricing leave no event, so this is the least the address spent.
 */
export async function keylessCallsSince(sql: Sql, ip: string, workspaceId: string, since: Date): Promise<number> {
  const hashes = addressDigests(ip);
  const row = await sql.one<{ n: number }>(
    `SELECT count(*)::int AS n FROM usage_events
      WHERE caller_address_hash = ANY($1) AND NOT caller_verified AND workspace_id = $2 AND created_at >= $3`,
    [hashes, workspaceId, since],
  );
  return row?.n ?? 0;
}
