import { createHmac, randomBytes } from 'node:crypto';
import type { Sql } from '../../../core/db/sql';
import type { Logger } from '../../../core/logger';
import { StartupError } from '../../../core/plugin';

/**
 * Server-side secrets (API key pepper, token signing secret). Taken from configuration when set;
 * otherwise generated once and stored in the database, so every instance sharing the database uses
 * the same value and `npm start` needs no setup.
 */
export async function loadOrCreateSecret(sql: Sql, name: string, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  return (await keepFirst(sql, name, randomBytes(32).toString('base64url'))).value;
}

/** Stores `value` under `name` unless a value is there already (every instance keeps the first); the value kept, and whether it is this one. */
async function keepFirst(sql: Sql, name: string, value: string): Promise<{ value: string; first: boolean }> {
  const inserted = await sql.many<{ name: string }>('INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING name', [name, value]);
  if (inserted.length > 0) return { value, first: true };
  const row = await sql.one<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [name]);
  if (!row) throw new Error(`service secret ${name} could not be stored`);
  return { value: row.value, first: false };
}

/** What the database keeps of a secret to tell a changed one: an HMAC under it, never the secret. */
function fingerprintOf(secret: string, label: string): string {
  return createHmac('sha256', secret).update(label).digest('hex');
}

/** Where the database keeps the fingerprint of the pepper its keys were made with. */
const PEPPER_FINGERPRINT = 'api_key_pepper_fingerprint';

/**
 * Refuses a start whose API key pepper is not the one the database's keys were made with: keys are
 * stored as peppered hashes, so under another pepper every one of them would answer 401 and nothing
 * would say why. The database keeps a fingerprint of the pepper (an HMAC, not the pepper); with no
 * key made yet, a new pepper simply takes over.
 */
export async function checkPepperUnchanged(sql: Sql, pepper: string, log: Logger): Promise<void> {
  if (pepper.length < 16) log.warn({ setting: 'API_KEY_PEPPER', length: pepper.length }, 'API_KEY_PEPPER is shorter than 16 characters; a longer random one protects stored key hashes better (it can only be changed while no key is live)');
  const fingerprint = fingerprintOf(pepper, 'api-key-pepper-fingerprint');
  const stored = await keepFirst(sql, PEPPER_FINGERPRINT, fingerprint);
  // Only keys that still work would be lost: revoked and expired ones do not hold a pepper change back.
  const live = async () => Number((await sql.one<{ n: string }>('SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())'))?.n ?? 0);
  if (stored.first) {
    // Recorded now: keys made before the fingerprint existed were made with a pepper nobody can check.
    const n = await live();
    if (n > 0) log.warn({ liveKeys: n }, 'the API key pepper in use is recorded for the first time; if it is not the one the existing keys were made with, they answer 401');
    return;
  }
  if (stored.value === fingerprint) return;
  const n = await live();
  if (n === 0) {
    await sql.exec('UPDATE service_secrets SET value = $2 WHERE name = $1', [PEPPER_FINGERPRINT, fingerprint]);
    return;
  }
  throw new StartupError(
    `API_KEY_PEPPER is not the pepper the ${n} live API keys in this database were made with: under it every one of them would be refused. ` +
      'Start with the pepper they were made with (if API_KEY_PEPPER was never set, the service generated one: the value named api_key_pepper in the table service_secrets), ' +
      'or, to give up those keys, revoke them first (DELETE /api/api-keys/{id}, or set revoked_at in api_keys).',
  );
}

/** Where the database keeps the fingerprint of the secret its tokens were last signed with. */
const TOKEN_SECRET_FINGERPRINT = 'token_secret_fingerprint';

/**
 * Warns when this start signs tokens with another secret than the last start did: every person and
 * access token signed before, or by instances still on the other secret, answers 401 here, which no
 * one would otherwise explain. Not refused: changing the secret is how an operator ends every token
 * at once. The fingerprint (an HMAC, not the secret) then follows the newest start.
 */
export async function checkTokenSecretUnchanged(sql: Sql, secret: string, log: Logger): Promise<void> {
  const fingerprint = fingerprintOf(secret, 'token-secret-fingerprint');
  const stored = await keepFirst(sql, TOKEN_SECRET_FINGERPRINT, fingerprint);
  if (stored.value === fingerprint) return;
  await sql.exec('UPDATE service_secrets SET value = $2 WHERE name = $1', [TOKEN_SECRET_FINGERPRINT, fingerprint]);
  log.warn(
    { setting: 'AUTH_TOKEN_SECRET' },
    'AUTH_TOKEN_SECRET is not the secret this database\'s tokens were last signed with: person and access tokens signed before, or by instances started with the other secret, answer 401 here. ' +
      'Give every instance the same AUTH_TOKEN_SECRET, or leave it unset on all of them (they then share the one generated in service_secrets).',
  );
}
