import type { Pool } from 'pg';
import { ExpiringMap } from '../../../core/bounded-map';
import type { Sql } from '../../../core/db/sql';
import { newId } from '../../../core/ids';
import { decodeTimeCursor, listEnvelope } from '../../../core/pagination';
import type { ListEnvelope } from '../../../core/pagination';
import type { ObservationInput } from '../schemas';
import type { Observation } from './verdict';

export type ObservationOrigin = 'contribution' | 'accepted_outcome';

export interface ObservationRow {
  id: string;
  workspace_id: string;
  product_type: string;
  currency: string;
  amount: string;
  observed_at: Date;
  source: string;
  origin: ObservationOrigin;
  usage_event_id: string | null;
  context: Record<string, string>;
  created_at: Date;
}

export interface ObservationView {
  id: string;
  object: 'price_observation';
  product_type: string;
  currency: string;
  amount: string;
  observed_at: string;
  source: string;
  origin: ObservationOrigin;
  usage_event_id: string | null;
  context: Record<string, string>;
  created_at: string;
}

export function observationView(r: ObservationRow): ObservationView {
  return {
    id: r.id,
    object: 'price_observation',
    product_type: r.product_type,
    currency: r.currency,
    amount: r.amount,
    observed_at: r.observed_at.toISOString(),
    source: r.source,
    origin: r.origin,
    usage_event_id: r.usage_event_id,
    context: r.context,
    created_at: r.created_at.toISOString(),
  };
}

export interface AcceptedOutcome {
  usageEventId: string;
  workspaceId: string;
  productType: string;
  currency: string;
  amount: string;
  functionName: string;
  observedAt: Date;
  context: Record<string, string>;
}

const COLUMNS = 'id, workspace_id, product_type, currency, amount::text AS amount, observed_at, source, origin, usage_event_id, context, created_at';
const INSERT_COLUMNS = ['id', 'workspace_id', 'product_type', 'currency', 'amount', 'observed_at', 'source', 'origin', 'context'] as const;

export interface Evidence {
  observations: Observation[];
  /** Matching observations older than the cut-off (counted only when none is newer). */
  older: number;
}

/** How an ObservationStore keeps its reads (config `verification`). */
export interface EvidenceCacheOptions {
  /** How long one product type and currency's read is reused (0: not cached). */
  ttlMs: number;
  /** Most observations all cached reads hold together: one read holds from none to VERIFY_MAX_OBSERVATIONS_READ (about 270 bytes each). */
  maxObservations: number;
  /** Most callers' workspaces whose account is kept. */
  maxAccounts: number;
}
/** A product type and currency as one key, case folded as JavaScript folds it. */
export const evidenceKey = (productType: string, currency: string): string => `${productType.toLowerCase()}\u0000${currency}`;

/** Printable ASCII: a name the database's lower() folds as JavaScript does (in the C and UTF-8 locales the service creates). */
export const foldsAlike = (productType: string): boolean => /^[\x20-\x7e]*$/.test(productType);

/**
 * Stored price observations: contributions, accepted compute outcomes, and the reads verification
 * makes. Those reads are kept for a few seconds per product type and currency (the verify hot path
 * then needs no round trip); this instance's own writes drop the entry at once, other instances'
 * writes show within the TTL.
 */
/** A workspace's account: itself, or the workspace its test workspace or claimed sandbox belongs under (two levels at most). */
const ACCOUNT_JOINS = 'LEFT JOIN workspaces w ON w.id = o.workspace_id LEFT JOIN workspaces pw ON pw.id = w.parent_id';
const ACCOUNT_OF = 'coalesce(pw.parent_id, w.parent_id, o.workspace_id)';

interface EvidenceRow {
  id: string;
  /** The workspace that posted it. */
  submitted_by: string;
  /** The account it counts for (ACCOUNT_OF). */
  workspace_id: string;
  source: string;
  origin: ObservationOrigin;
  amount: string;
  observed_at: Date;
}

/** The accounts holding more than `cap` of `rows`. */
function accountsOver(rows: readonly EvidenceRow[], cap: number): Set<string> {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.workspace_id, (counts.get(r.workspace_id) ?? 0) + 1);
  return new Set([...counts].filter(([, n]) => n > cap).map(([account]) => account));
}

/** `rows` (newest first) with at most `cap` per account, the newest kept, in their order. */
function newestPerAccount(rows: readonly EvidenceRow[], cap: number): EvidenceRow[] {
  const kept = new Map<string, number>();
  return rows.filter((r) => {
    const n = kept.get(r.workspace_id) ?? 0;
    kept.set(r.workspace_id, n + 1);
    return n < cap;
  });
}

export class ObservationStore {
  /** Weighed by observations (an empty read counts one), since a read holds from none to thousands. */
  private readonly cache: ExpiringMap<string, Evidence>;
  /** Accounts of callers' workspaces (a claim can move a sandbox under another: kept for the evidence cache's time, at least 1 s). */
  private readonly accounts: ExpiringMap<string, string>;
  /** Reads in flight: concurrent callers for the same product type and currency share one. */
  private readonly reading = new Map<string, Promise<Evidence>>();
  /** Bumped by every local write, so a read that raced a write is not cached. */
  private writes = 0;
  private readonly writeListeners: Array<(productType: string, currency: string) => void> = [];

  private readonly cacheTtlMs: number;

  constructor(
    private readonly sql: Sql,
    private readonly pool: Pool,
    cache: EvidenceCacheOptions,
    private readonly now: () => number,
  ) {
    this.cacheTtlMs = cache.ttlMs;
    this.cache = new ExpiringMap(cache.maxObservations, now, { max: cache.maxObservations, of: (e) => e.observations.length + 1 });
    this.accounts = new ExpiringMap(cache.maxAccounts, now);
  }

  private invalidate(productType: string, currency: string): void {
    this.writes++;
    const key = evidenceKey(productType, currency);
    if (!foldsAlike(productType)) {
      // The database's lower() may fold this name differently from JavaScript (final sigma, dotted İ): every name that
      // could match it is dropped, which for a name outside ASCII is simplest as all of them.
      this.cache.clear();
      this.reading.clear();
    } else {
      this.cache.delete(key);
      // A read already under way may have missed this write: later callers start a new one.
      this.reading.delete(key);
    }
    for (const listener of this.writeListeners) listener(productType, currency);
  }

  /** Told of every product type and currency this instance writes observations of. */
  onWrite(listener: (productType: string, currency: string) => void): void {
    this.writeListeners.push(listener);
  }

  /** Stores a workspace's contribution in one statement; all or nothing. */
  async contribute(workspaceId: string, items: readonly ObservationInput[]): Promise<ObservationView[]> {
    const values: unknown[] = [];
    const tuples = items.map((o, i) => {
      values.push(newId('obs'), workspaceId, o.product_type, o.currency, o.amount, o.observed_at, o.source, 'contribution', JSON.stringify(o.context ?? {}));
      const base = i * INSERT_COLUMNS.length;
      return `(${INSERT_COLUMNS.map((_, j) => `$${base + j + 1}`).join(', ')})`;
    });
    const rows = await this.sql.many<ObservationRow>(`INSERT INTO price_observations (${INSERT_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')} RETURNING ${COLUMNS}`, values);
    for (const o of items) this.invalidate(o.product_type, o.currency);
    return rows.map(observationView);
  }

  /** Records the price of an accepted compute outcome once per usage event; true when stored now. */
  async recordAcceptedOutcome(o: AcceptedOutcome): Promise<boolean> {
    const n = await this.sql.exec(
      `INSERT INTO price_observations (id, workspace_id, product_type, currency, amount, observed_at, source, origin, usage_event_id, context)
       SELECT $1, $2, $3, $4, $5, $6, $7, 'accepted_outcome', $8, $9
       WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = $2)
       ON CONFLICT (usage_event_id) DO NOTHING`,
      [newId('obs'), o.workspaceId, o.productType, o.currency, o.amount, o.observedAt, `accepted:${o.functionName}`, o.usageEventId, JSON.stringify(o.context)],
    );
    this.invalidate(o.productType, o.currency);
    return n > 0;
  }

  /** An outcome changed to rejected no longer counts as evidence. */
  async withdrawOutcome(usageEventId: string): Promise<boolean> {
    const gone = await this.sql.many<{ product_type: string; currency: string }>(
      `DELETE FROM price_observations WHERE usage_event_id = $1 AND origin = 'accepted_outcome' RETURNING product_type, currency`,
      [usageEventId],
    );
    for (const g of gone) this.invalidate(g.product_type, g.currency);
    return gone.length > 0;
  }

  async list(workspaceId: string, q: { limit: number; cursor?: string | undefined; product_type?: string | undefined; currency?: string | undefined; origin?: ObservationOrigin | undefined }): Promise<ListEnvelope<ObservationView>> {
    const where = ['workspace_id = $1'];
    const bind: unknown[] = [workspaceId];
    if (q.product_type) {
      bind.push(q.product_type);
      where.push(`lower(product_type) = lower($${bind.length})`);
    }
    if (q.currency) {
      bind.push(q.currency);
      where.push(`currency = $${bind.length}`);
    }
    if (q.origin) {
      bind.push(q.origin);
      where.push(`origin = $${bind.length}`);
    }
    if (q.cursor) {
      const pos = decodeTimeCursor(q.cursor);
      bind.push(pos.at, pos.id);
      where.push(`(created_at, id) < ($${bind.length - 1}::timestamptz, $${bind.length}::text)`);
    }
    bind.push(q.limit + 1);
    const rows = await this.sql.many<ObservationRow & { sort_key: string }>(
      `SELECT ${COLUMNS}, created_at::text AS sort_key FROM price_observations WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${bind.length}`,
      bind,
    );
    return listEnvelope(rows, q.limit, observationView, (r) => ({ sort: r.sort_key, id: r.id }));
  }

  /**
   * The newest observations of a product type (case-insensitive) and currency observed since
   * `since`, at most `limit`; plus how many matching ones are older (reported, not used). Straight
   * to node-postgres with a prepared statement: this is the verify and compute hot path. When the
   * cached read expires under load, the calls arriving meanwhile share one read instead of each
   * sending its own (their `since` differs by the milliseconds between them).
   */
  /** The account a workspace's observations count for (see ACCOUNT_OF), as its evidence is read. */
  async accountOf(workspaceId: string): Promise<string> {
    const hit = this.accounts.get(workspaceId);
    if (hit !== undefined) return hit;
    const row = await this.sql.one<{ account: string }>(`SELECT ${ACCOUNT_OF} AS account FROM (SELECT $1::text AS workspace_id) o ${ACCOUNT_JOINS}`, [workspaceId]);
    const account = row?.account ?? workspaceId;
    this.accounts.set(workspaceId, account, Math.max(this.cacheTtlMs, 1000));
    return account;
  }

  async forVerification(productType: string, currency: string, since: Date, limit: number, perAccount = limit): Promise<Evidence> {
    const key = evidenceKey(productType, currency);
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const inFlight = this.reading.get(key);
    if (inFlight) return inFlight;
    const read = this.read(key, productType, currency, since, limit, perAccount);
    this.reading.set(key, read);
    try {
      return await read;
    } finally {
      if (this.reading.get(key) === read) this.reading.delete(key);
    }
  }

  /**
   * The newest `limit` matching observations, none of the raw workspaces in `without`. Each counts for its submitter's
   * account: a workspace with its test workspace and the agent workspaces claimed into it (and their test workspaces)
   * is one submitter, or one person's free test workspace would make their quotes look independent.
   */
  private async newest(productType: string, currency: string, since: Date, limit: number, without: readonly string[]): Promise<EvidenceRow[]> {
    const res = await this.pool.query<EvidenceRow>(
      without.length === 0
        ? {
            name: 'verification_evidence',
            text: `SELECT o.id, o.workspace_id AS submitted_by, ${ACCOUNT_OF} AS workspace_id, o.source, o.origin, o.amount::text AS amount, o.observed_at FROM price_observations o
                   ${ACCOUNT_JOINS}
                   WHERE lower(o.product_type) = lower($1) AND o.currency = $2 AND o.observed_at >= $3
                   ORDER BY o.observed_at DESC LIMIT $4`,
            values: [productType, currency, since, limit],
          }
        : {
            name: 'verification_evidence_without',
            text: `SELECT o.id, o.workspace_id AS submitted_by, ${ACCOUNT_OF} AS workspace_id, o.source, o.origin, o.amount::text AS amount, o.observed_at FROM price_observations o
                   ${ACCOUNT_JOINS}
                   WHERE lower(o.product_type) = lower($1) AND o.currency = $2 AND o.observed_at >= $3 AND NOT (o.workspace_id = ANY($5::text[]))
                   ORDER BY o.observed_at DESC LIMIT $4`,
            values: [productType, currency, since, limit, [...without]],
          },
    );
    return res.rows;
  }

  private async read(key: string, productType: string, currency: string, since: Date, limit: number, perAccount: number): Promise<Evidence> {
    const writesBefore = this.writes;
    let rows = await this.newest(productType, currency, since, limit, []);
    // One submitter's flood (thousands of fresh quotes) must not push every other submitter's evidence out of the read:
    // each account keeps at most `perAccount` of its newest, and when a full read held more of some account's, the
    // read is made again without that account's workspaces, so the others' older quotes fill the room it left.
    const crowding = accountsOver(rows, perAccount);
    if (crowding.size > 0 && rows.length === limit) {
      const flooders = rows.filter((r) => crowding.has(r.workspace_id));
      const others = await this.newest(productType, currency, since, limit, [...new Set(flooders.map((r) => r.submitted_by))]);
      rows = [...flooders, ...others].sort((a, b) => b.observed_at.getTime() - a.observed_at.getTime());
    }
    rows = newestPerAccount(rows, perAccount).slice(0, limit);
    let older = 0;
    if (rows.length === 0) {
      const r = await this.pool.query<{ n: number }>({
        name: 'verification_evidence_older',
        text: 'SELECT count(*)::int AS n FROM price_observations WHERE lower(product_type) = lower($1) AND currency = $2 AND observed_at < $3',
        values: [productType, currency, since],
      });
      older = r.rows[0]?.n ?? 0;
    }
    const evidence: Evidence = {
      observations: rows.map((r) => ({ id: r.id, workspaceId: r.workspace_id, source: r.source, origin: r.origin, amount: r.amount, observedAt: r.observed_at.getTime() })),
      older,
    };
    if (this.cacheTtlMs > 0 && this.writes === writesBefore) this.cache.set(key, evidence, this.cacheTtlMs);
    return evidence;
  }
}
