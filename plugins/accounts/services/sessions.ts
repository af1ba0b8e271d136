import { createHash, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Transaction } from 'sequelize';
import type { Config } from '../../../config';
import { ExpiringMap } from '../../../core/bounded-map';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { randomToken } from '../../../core/ids';
import type { KvStore, Unsubscribe } from '../../../core/kv';

export const PERSON_TOKEN_AUDIENCE = 'pcs:person';
export const SESSION_COOKIE = 'pcs_session';

/** Whether session cookies carry Secure: SECURE_COOKIES when set, else whether PUBLIC_URL is https (browsers reach it so). */
export function secureSessionCookies(config: Config): boolean {
  return config.identity.secureCookies ?? /^https:/i.test(config.server.publicUrl ?? '');
}

/** The session cookie's Set-Cookie value; an empty value with Max-Age 0 clears it. */
export function sessionCookie(value: string, maxAgeS: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${encodeURIComponent(value)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}

/** The session cookie cleared (signing out, a session found ended, the caller's own session ended). */
export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', 0, secure);
}
const CHANNEL = 'accounts:session-invalidation';
const CACHE_TTL_MS = 30_000;

export interface SessionRow {
  id: string;
  person_id: string;
  method: string;
  user_agent: string | null;
  ip: string | null;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

export interface NewSession {
  session: SessionRow;
  /** Opaque cookie value, shown once. */
  cookie: string;
  /** Person bearer token (JWT) bound to the session. */
  token: string;
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Person sessions: an http-only cookie and a JWT bound to the same revocable session. */
export class Sessions {
  /** By cookie hash (`c:`) and by session id; misses too, for the cache's lifetime, bounded: callers make cookies up. */
  private readonly cache: ExpiringMap<string, SessionRow | null>;
  /** Bumped by every sign-out heard and every clear: a read begun before one is not cached after it. */
  private changes = 0;
  private unsubscribe: Unsubscribe | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly secret: Uint8Array,
    private readonly ttlHours: number,
    private readonly tokenTtlS: number,
    maxCached: number,
  ) {
    this.cache = new ExpiringMap(maxCached, () => this.clock.now());
  }

  async start(): Promise<void> {
    // A sign-out announced while the subscription was down was missed: every cached session is read again.
    this.unsubscribe = await this.kv.subscribe(
      CHANNEL,
      (id) => this.dropCached(id),
      () => {
        this.changes++;
        this.cache.clear();
      },
    );
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  private dropCached(sessionId: string): void {
    this.changes++;
    this.cache.deleteWhere((k, row) => k === sessionId || row?.id === sessionId);
  }

  /** With `tx`, the session is the transaction's (a sign-up's person and its first session land together or not at all). */
  async create(personId: string, method: string, meta: { ip: string; userAgent?: string | undefined }, tx?: Transaction): Promise<NewSession> {
    const cookie = `pcs_ses_${randomToken(32)}`;
    const expires = new Date(this.clock.now() + this.ttlHours * 3_600_000);
    const session = await this.sql.one<SessionRow>(
      `INSERT INTO person_sessions (id, person_id, token_hash, method, user_agent, ip, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [randomUUID(), personId, hashSessionToken(cookie), method, meta.userAgent?.slice(0, 300) ?? null, meta.ip, expires],
      tx,
    );
    if (!session) throw new Error('session insert returned nothing');
    const token = await this.mintToken(personId, session.id, null);
    return { session, cookie, token };
  }

  /** Seconds a person token is valid for (PERSON_TOKEN_TTL_S). */
  get tokenLifetimeS(): number {
    return this.tokenTtlS;
  }

  async mintToken(personId: string, sessionId: string, scopes: readonly string[] | null): Promise<string> {
    const now = Math.floor(this.clock.now() / 1000);
    return new SignJWT({ sid: sessionId, ...(scopes ? { scope: scopes.join(' ') } : {}) })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(personId)
      .setAudience(PERSON_TOKEN_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + this.tokenTtlS)
      .sign(this.secret);
  }

  private usable(row: SessionRow | null): SessionRow | null {
    if (!row || row.revoked_at || new Date(row.expires_at).getTime() <= this.clock.now()) return null;
    return row;
  }

  async byCookie(cookie: string): Promise<SessionRow | null> {
    const key = `c:${hashSessionToken(cookie)}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return this.usable(hit);
    const readAt = this.changes;
    const row = await this.sql.one<SessionRow>('SELECT * FROM person_sessions WHERE token_hash = $1', [hashSessionToken(cookie)]);
    if (readAt === this.changes) this.cache.set(key, row, CACHE_TTL_MS);
    return this.usable(row);
  }

  async byId(id: string): Promise<SessionRow | null> {
    const hit = this.cache.get(id);
    if (hit !== undefined) return this.usable(hit);
    const readAt = this.changes;
    const row = await this.sql.one<SessionRow>('SELECT * FROM person_sessions WHERE id = $1', [id]);
    if (readAt === this.changes) this.cache.set(id, row, CACHE_TTL_MS);
    return this.usable(row);
  }

  /**
   * One page of the person's open sessions, newest first: `limit + 1` rows after `after` (the page's last row), the
   * extra one only telling that there is more. Every sign-in is a session, so a person may have thousands.
   */
  async list(personId: string, limit: number, after?: { at: string; id: string }): Promise<Array<SessionRow & { sort_key: string }>> {
    const bind: unknown[] = [personId, limit + 1];
    let page = '';
    if (after) {
      bind.push(after.at, after.id);
      page = 'AND (created_at, id) < ($3::timestamptz, $4::uuid)';
    }
    return this.sql.many<SessionRow & { sort_key: string }>(
      `SELECT *, created_at::text AS sort_key FROM person_sessions WHERE person_id = $1 AND revoked_at IS NULL AND expires_at > now() ${page} ORDER BY created_at DESC, id DESC LIMIT $2`,
      bind,
    );
  }

  /** Revokes one session of the person; false when it is not theirs or already gone. */
  async revoke(personId: string, sessionId: string): Promise<boolean> {
    const n = await this.sql.exec('UPDATE person_sessions SET revoked_at = now() WHERE id = $1 AND person_id = $2 AND revoked_at IS NULL', [sessionId, personId]);
    this.dropCached(sessionId);
    await this.kv.publish(CHANNEL, sessionId);
    return n > 0;
  }

  /**
   * Revokes every session of the person except `keep`; returns how many ended, or null (nothing
   * ended) when `keep` names no open session of theirs. One statement, so a `keep` ended meanwhile
   * cannot turn "all but this one" into "all".
   */
  async revokeAll(personId: string, keep?: string): Promise<number | null> {
    const result = await this.sql.one<{ kept: boolean; ended: string[] }>(
      `WITH kept AS (SELECT id FROM person_sessions WHERE id = $2::uuid AND person_id = $1 AND revoked_at IS NULL AND expires_at > now()),
            ended AS (UPDATE person_sessions SET revoked_at = now()
                       WHERE person_id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR (id <> $2::uuid AND EXISTS (SELECT 1 FROM kept)))
                       RETURNING id)
       SELECT EXISTS (SELECT 1 FROM kept) AS kept, COALESCE((SELECT array_agg(id::text) FROM ended), '{}') AS ended`,
      [personId, keep ?? null],
    );
    if (keep !== undefined && !result?.kept) return null;
    const ended = result?.ended ?? [];
    for (const id of ended) {
      this.dropCached(id);
      await this.kv.publish(CHANNEL, id);
    }
    return ended.length;
  }
}
