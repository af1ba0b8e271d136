import { createHmac, randomBytes } from 'node:crypto';
import type { Sql } from '../../../core/db/sql';
import { StartupError } from '../../../core/plugin';

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

/** Where the database keeps the fingerprint of the pepper its keys were made with. */
const PEPPER_FINGERPRINT = 'api_key_pepper_fingerprint';

/**
 * Refuses a start whose API key pepper is not the one the database's keys were made with: keys are
 * stored as peppered hashes, so under another pepper every one of them would answer 401 and nothing
 * would say why. The database keeps a fingerprint of the pepper (an HMAC, not the pepper); with no
 * key made yet, a new pepper simply takes over.
 */
export async function checkPepperUnchanged(sql: Sql, pepper: string): Promise<void> {
  const fingerprint = createHmac('sha256', pepper).update('api-key-pepper-fingerprint').digest('hex');
  await sql.exec('INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [PEPPER_FINGERPRINT, fingerprint]);
  const stored = await sql.one<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [PEPPER_FINGERPRINT]);
  if (!stored || stored.value === fingerprint) return;
  const keys = await sql.one<{ n: string }>('SELECT count(*) AS n FROM api_keys');
  if (Number(keys?.n ?? 0) === 0) {
    await sql.exec('UPDATE service_secrets SET value = $2 WHERE name = $1', [PEPPER_FINGERPRINT, fingerprint]);
    return;
  }
  throw new StartupError(
    `API_KEY_PEPPER is not the pepper the ${keys?.n} API keys in this database were made with: under it every one of them would be refused. ` +
      'Start with the pepper they were made with (when it was generated, it is the value named api_key_pepper in the table service_secrets), or, to give up those keys, delete them from api_keys first.',
  );
}
