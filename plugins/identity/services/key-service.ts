import { createHmac } from 'node:crypto';
import type { Transaction } from 'sequelize';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { newId, randomToken } from '../../../core/ids';
import type { Logger } from '../../../core/logger';
import type { ApiKeyRow, KeyKind, Role, WorkspaceRow, WorkspaceStatus } from '../domain';
import { notAMember } from '../errors';
import type { CachedKey, KeyCache } from './key-cache';
import type { TakeClaim } from './idempotency';
import { MEMBERSHIP_WORKSPACE } from './workspaces';
import { assertWorkspaceRoom } from './workspace-limits';
import type { WorkspaceLimit } from './workspace-limits';

const KIND_TAG: Record<KeyKind, string> = { sandbox: 'sbx', agent: 'agt', person: 'usr', oauth_client: 'oac' };
export const API_KEY_PATTERN = /^pcs_(sbx|agt|usr|oac)_[1-9A-HJ-NP-Za-km-z0]{32}$/;
const LAST_USED_FLUSH_MS = 15_000;

export interface NewKey {
  workspaceId: string;
  name: string;
  kind: KeyKind;
  /** Named scopes (and legacy names); null = created with no scopes. */
  scopes: string[] | null;
  legacy?: boolean;
  createdByPersonId?: string | null;
  agentId?: string | null;
  expiresAt?: Date | null;
  rotatedFromId?: string | null;
}

export interface CreatedKey {
  row: ApiKeyRow;
  /** The secret, shown once. */
  secret: string;
}

function toDate(v: unknown): Date | null {
  return v === null || v === undefined ? null : new Date(v as string);
}

function keyFromJson(k: Record<string, unknown>): ApiKeyRow {
  return {
    ...(k as unknown as ApiKeyRow),
    expires_at: toDate(k.expires_at),
    revoked_at: toDate(k.revoked_at),
    last_used_at: toDate(k.last_used_at),
    created_at: toDate(k.created_at) as Date,
  };
}

function workspaceFromJson(w: Record<string, unknown>): WorkspaceRow {
  return { ...(w as unknown as WorkspaceRow), claimed_at: toDate(w.claimed_at), created_at: toDate(w.created_at) as Date };
}

/**
 * API keys: random secrets with a readable prefix, stored only as a peppered SHA-256 (HMAC),
 * looked up by that digest on a unique index, cached in process with cross-instance invalidation.
 */
export class KeyService {
  private readonly touched = new Map<string, Date>();
  private flusher: NodeJS.Timeout | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly cache: KeyCache,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly pepper: string,
    /** API_KEYS_PER_WORKSPACE. */
    private readonly perWorkspace: number,
  ) {}

  start(): void {
    this.flusher = setInterval(() => void this.flushLastUsed(), LAST_USED_FLUSH_MS);
    this.flusher.unref();
  }

  async stop(): Promise<void> {
    if (this.flusher) clearInterval(this.flusher);
    await this.flushLastUsed();
  }

  hash(secret: string): string {
    return createHmac('sha256', this.pepper).update(secret).digest('hex');
  }

  looksLikeKey(value: string): boolean {
    return value.startsWith('pcs_');
  }

  isWellFormed(value: string): boolean {
    return API_KEY_PATTERN.test(value);
  }

  /**
   * A key a person makes is inserted only while they are a member of the workspace, with their
   * membership held until the insert commits: a removal running meanwhile waits, then revokes the
   * new key with the others; one that ran first leaves no membership, and the key is refused. So no
   * key outlives its maker's access, however the two requests interleave.
   */
  /** `take`: an Idempotency-Key claim, taken first in the same transaction (IdempotencyKeys). */
  async create(input: NewKey, tx?: Transaction, take?: TakeClaim): Promise<CreatedKey> {
    const maker = input.createdByPersonId;
    const id = newId('key');
    const work = async (t: Transaction): Promise<CreatedKey> => {
      await take?.(t, id);
      // A rotation revokes the key it replaces in the same transaction: it adds none. The workspace is held before the
      // membership, in the order team changes take them (lockWorkspace, then the membership row).
      if (!input.rotatedFromId) await assertWorkspaceRoom(this.sql, t, input.workspaceId, this.keysLimit());
      if (maker && !(await this.holdMembership(input.workspaceId, maker, t))) {
        throw notAMember();
      }
      return this.insert(id, input, t);
    };
    return tx ? work(tx) : this.sql.tx(work);
  }

  private keysLimit(): WorkspaceLimit {
    return {
      setting: 'API_KEYS_PER_WORKSPACE',
      value: this.perWorkspace,
      what: 'live API keys',
      count: 'SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
      hint: 'Revoke a key no longer in use (DELETE /api/api-keys/{keyId}; GET /api/api-keys lists them with last_used_at); revoked and expired keys do not count.',
    };
  }

  /**
   * Holds a person's membership of a workspace for the rest of the transaction (FOR KEY SHARE, which
   * a removal's DELETE waits for); false when they are not a member. Take it before locking any key:
   * a removal deletes the membership first and revokes the keys after.
   */
  async holdMembership(workspaceId: string, personId: string, tx: Transaction): Promise<boolean> {
    const held = await this.sql.one(
      `SELECT 1 AS held FROM workspaces w JOIN memberships m ON m.workspace_id = ${MEMBERSHIP_WORKSPACE} WHERE w.id = $1 AND m.person_id = $2 FOR KEY SHARE OF m`,
      [workspaceId, personId],
      tx,
    );
    return held !== null;
  }

  private async insert(id: string, input: NewKey, tx?: Transaction): Promise<CreatedKey> {
    const secret = `pcs_${KIND_TAG[input.kind]}_${randomToken(32)}`;
    const row = await this.sql.one<ApiKeyRow>(
      `INSERT INTO api_keys (id, workspace_id, key_hash, display_prefix, last4, name, kind, scopes, legacy, created_by_person_id, agent_id, expires_at, rotated_from_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING *`,
      [
        id,
        input.workspaceId,
        this.hash(secret),
        secret.slice(0, 12),
        secret.slice(-4),
        input.name,
        input.kind,
        input.scopes,
        input.legacy ?? false,
        input.createdByPersonId ?? null,
        input.agentId ?? null,
        input.expiresAt ?? null,
        input.rotatedFromId ?? null,
      ],
      tx,
    );
    if (!row) throw new Error('key insert returned nothing');
    return { row, secret };
  }

  /** Hot path: the key and its workspace, from the cache when possible. Null when unknown. */
  async lookup(secret: string): Promise<CachedKey | null> {
    const hash = this.hash(secret);
    const cached = this.cache.get(hash);
    if (cached !== undefined) return cached;
    const readAt = this.cache.generation;
    const found = await this.lookupByHash(hash);
    this.cache.set(hash, found, readAt);
    return found;
  }

  async lookupByHash(hash: string): Promise<CachedKey | null> {
    const row = await this.sql.one<{ k: Record<string, unknown>; w: Record<string, unknown>; agent_name: string | null; creator_status: WorkspaceStatus | null; creator_role: Role | null }>(
      `SELECT to_jsonb(k) AS k, to_jsonb(w) AS w, a.name AS agent_name, p.status AS creator_status, m.role AS creator_role
         FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id LEFT JOIN agents a ON a.id = k.agent_id
         LEFT JOIN people p ON p.id = k.created_by_person_id
         LEFT JOIN memberships m ON m.workspace_id = ${MEMBERSHIP_WORKSPACE} AND m.person_id = k.created_by_person_id
        WHERE k.key_hash = $1`,
      [hash],
    );
    if (!row) return null;
    return { key: keyFromJson(row.k), workspace: workspaceFromJson(row.w), agentName: row.agent_name, creatorStatus: row.creator_status ?? 'active', creatorRole: row.creator_role };
  }

  /** The key record behind an access token (tokens stop when their key is revoked). */
  async lookupById(keyId: string): Promise<CachedKey | null> {
    const cacheKey = `id:${keyId}`;
    const cached = this.cache.get(cacheKey);
    if (cached !== undefined) return cached;
    const readAt = this.cache.generation;
    const row = await this.sql.one<{ key_hash: string }>('SELECT key_hash FROM api_keys WHERE id = $1', [keyId]);
    const found = row ? await this.lookupByHash(row.key_hash) : null;
    this.cache.set(cacheKey, found, readAt);
    return found;
  }

  /** Remembers the use; written to the database in batches, never on the request path. */
  touch(keyId: string): void {
    this.touched.set(keyId, new Date(this.clock.now()));
  }

  async flushLastUsed(): Promise<void> {
    if (this.touched.size === 0) return;
    const ids = [...this.touched.keys()];
    const times = ids.map((id) => (this.touched.get(id) as Date).toISOString());
    this.touched.clear();
    try {
      await this.sql.exec(
        `UPDATE api_keys SET last_used_at = v.t FROM (SELECT unnest($1::text[]) AS id, unnest($2::timestamptz[]) AS t) v
          WHERE api_keys.id = v.id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < v.t)`,
        [ids, times],
      );
    } catch (err) {
      this.log.warn({ err }, 'could not record key last use');
    }
  }

  async revoke(keyId: string, reason: string, tx?: Transaction): Promise<boolean> {
    const n = await this.sql.exec('UPDATE api_keys SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL', [keyId, reason], tx);
    await this.invalidateKey(keyId);
    return n > 0;
  }

  /**
   * Revokes every live key one person made in a workspace (they left it); returns how many. Inside
   * the caller's transaction, so the caller drops the workspace's cached keys once it has committed.
   */
  async revokeMadeBy(workspaceId: string, personId: string, reason: string, tx: Transaction): Promise<number> {
    // The keys made in the workspace's test workspace too: access there followed the membership.
    return this.sql.exec(
      `UPDATE api_keys SET revoked_at = now(), revoked_reason = $3
        WHERE (workspace_id = $1 OR workspace_id IN (SELECT id FROM workspaces WHERE is_test AND parent_id = $1)) AND created_by_person_id = $2 AND revoked_at IS NULL`,
      [workspaceId, personId, reason],
      tx,
    );
  }

  async invalidateKey(keyId: string): Promise<void> {
    await this.cache.invalidate({ keyId });
    await this.cache.invalidate({ hash: `id:${keyId}` });
  }

  /** Drops the cached keys of a workspace and of its test workspace, whose keys follow the same team. */
  async invalidateWorkspace(workspaceId: string): Promise<void> {
    await this.cache.invalidate({ workspaceId });
    const test = await this.sql.one<{ id: string }>('SELECT id FROM workspaces WHERE is_test AND parent_id = $1', [workspaceId]);
    if (test) await this.cache.invalidate({ workspaceId: test.id });
  }

  async get(workspaceId: string, keyId: string): Promise<ApiKeyRow | null> {
    return this.sql.one<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1 AND workspace_id = $2', [keyId, workspaceId]);
  }

  /** Newest first; `sort_key` is the exact creation time (microseconds) the next page's cursor holds. */
  async list(workspaceId: string, limit: number, after?: { at: string; id: string }): Promise<Array<ApiKeyRow & { sort_key: string }>> {
    return this.sql.many<ApiKeyRow & { sort_key: string }>(
      `SELECT *, created_at::text AS sort_key FROM api_keys
        WHERE workspace_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::text))
        ORDER BY created_at DESC, id DESC LIMIT $4`,
      [workspaceId, after?.at ?? null, after?.id ?? null, limit + 1],
    );
  }
}

/** The public view of a key record: never the hash. */
export function keyView(row: ApiKeyRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    // A person may make a key in any workspace of theirs (x-workspace-id): the view says which one it was made in.
    workspace_id: row.workspace_id,
    kind: row.kind,
    prefix: row.display_prefix,
    last4: row.last4,
    scopes: row.scopes ?? [],
    // A key created without scopes holds every ordinary one: `scopes: []` alone read as "none".
    full_access: row.scopes === null,
    legacy: row.legacy,
    agent_id: row.agent_id,
    created_by: row.created_by_person_id,
    expires_at: row.expires_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
    last_used_at: row.last_used_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}
