import { randomBytes } from 'node:crypto';
import type { Sql } from '../../../core/db/sql';

/**
 * Server-side secrets (API key pepper, token signing secret). Taken from configuration when set;
 * otherwise generated once and stored in the database, so every instance sharing the database uses
 * the same value and `npm start` needs no setup.
 */
export async function loadOrCreateSecret(sql: Sql, name: string, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  await sql.exec('INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, randomBytes(32).toString('base64url')]);
  const row = await sql.one<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [name]);
  if (!row) throw new Error(`service secret ${name} could not be stored`);
  return row.value;
}
