/**
 * The usage_events row of an event and the statements that write it (see UsageRecorder): a group
 * of events travels as one JSON array, and the calls' Idempotency-Keys are claimed by the same
 * statement.
 */
import { NOT_REPLAYED, lockingKeysOf } from './undelivered-marks';
import { UNSTORABLE_ESCAPE, storableText } from '../../../core/storable-text';
import type { Operation } from '../schemas';

export interface UsageEventInput {
  workspaceId: string;
  requestId?: string | null;
  operation: Operation;
  channel: 'api' | 'mcp' | 'demo';
  status: 'ok' | 'error';
  errorCode?: string | null;
  functionId?: string | null;
  functionName?: string | null;
  strategy?: string | null;
  price?: string | null;
  currency?: string | null;
  confidence?: number | null;
  /** Decimal string, USDC. */
  cost: string;
  billable: boolean;
  paidVia: 'x402' | 'day_pass' | 'balance' | null;
  callerKeyId?: string | null;
  callerAgentId?: string | null;
  callerPersonId?: string | null;
  callerUserAgent?: string | null;
  callerVerified: boolean;
  callerAddressHash?: string | null;
  classification: 'mine' | 'testers' | 'others';
  cached?: boolean;
  fallbackUsed?: boolean;
  /** The price was positioned on the network's price observations. */
  networkEvidence?: boolean;
  latencyMs?: number | null;
  contextKeys?: Record<string, unknown>;
  /** Functions tried during the call that failed, other than `functionId` (a fallback answered, or every function failed). */
  failedFunctionIds?: string[];
}

/** Columns written for each event, with the type each JSON value is cast to. */
export const COLUMNS: ReadonlyArray<readonly [string, 'text' | 'numeric' | 'double precision' | 'boolean' | 'jsonb']> = [
  ['id', 'text'],
  ['workspace_id', 'text'],
  ['request_id', 'text'],
  ['operation', 'text'],
  ['channel', 'text'],
  ['status', 'text'],
  ['error_code', 'text'],
  ['function_id', 'text'],
  ['function_name', 'text'],
  ['strategy', 'text'],
  ['price', 'numeric'],
  ['currency', 'text'],
  ['confidence', 'double precision'],
  ['cost', 'numeric'],
  ['billable', 'boolean'],
  ['paid_via', 'text'],
  ['caller_key_id', 'text'],
  ['caller_agent_id', 'text'],
  ['caller_person_id', 'text'],
  ['caller_user_agent', 'text'],
  ['caller_verified', 'boolean'],
  ['caller_address_hash', 'text'],
  ['classification', 'text'],
  ['cached', 'boolean'],
  ['fallback_used', 'boolean'],
  ['network_evidence', 'boolean'],
  ['latency_ms', 'double precision'],
  ['context_keys', 'jsonb'],
  ['failed_function_ids', 'jsonb'],
];

export function row(id: string, e: UsageEventInput): unknown[] {
  return [
    id,
    e.workspaceId,
    e.requestId ?? null,
    e.operation,
    e.channel,
    e.status,
    e.errorCode ?? null,
    e.functionId ?? null,
    e.functionName ?? null,
    e.strategy ?? null,
    e.price ?? null,
    e.currency ?? null,
    e.confidence ?? null,
    e.cost,
    e.billable,
    e.paidVia,
    e.callerKeyId ?? null,
    e.callerAgentId ?? null,
    e.callerPersonId ?? null,
    e.callerUserAgent?.slice(0, 300) ?? null,
    e.callerVerified,
    e.callerAddressHash ?? null,
    e.classification,
    e.cached ?? false,
    e.fallbackUsed ?? false,
    e.networkEvidence ?? false,
    e.latencyMs ?? null,
    e.contextKeys ?? {},
    e.failedFunctionIds ?? [],
  ];
}

/**
 * One statement for any batch: the events travel as a single JSON array of rows (one parameter,
 * serialised natively) and PostgreSQL unpacks and casts them. Binding 27 parameters per event cost
 * the event loop far more than JSON.stringify does.
 */
export function insertOf(columns: ReadonlyArray<readonly [string, string]>): string {
  return `INSERT INTO usage_events (${columns.map(([name]) => name).join(', ')}) SELECT ${columns
    .map(([, type], i) => (type === 'jsonb' ? `r->${i}` : type === 'text' ? `r->>${i}` : `(r->>${i})::${type}`))
    .join(', ')} FROM jsonb_array_elements($1::jsonb) AS r`;
}

export const INSERT = insertOf(COLUMNS);

/** The database's own time of each row (the transaction's), so a receipt shows what the usage API will. */
export const RETURNING = ' RETURNING id, created_at';

/**
 * A group holding calls with an Idempotency-Key: their keys ($2, rows [workspace, key, fingerprint,
 * event id, answer, batch key]) are claimed by the same statement, and the event of a call whose key another
 * call holds (the ids in $4) is not written. A key past its TTL ($3 hours) is taken over. Keys are
 * taken in one order (workspace, key), so two such statements in flight together (concurrent
 * inserts, two instances) wait on each other instead of deadlocking.
 */
export const CLAIM_KEYS = `WITH claims AS (
  INSERT INTO compute_idempotency_keys (workspace_id, key, fingerprint, usage_event_id, response, batch_key)
  SELECT c->>0, c->>1, c->>2, c->>3, c->4, c->>5 FROM jsonb_array_elements($2::jsonb) AS c ORDER BY c->>0, c->>1
  ON CONFLICT (workspace_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, usage_event_id = EXCLUDED.usage_event_id, response = EXCLUDED.response, batch_key = EXCLUDED.batch_key, created_at = now(), replayed_at = NULL
    WHERE compute_idempotency_keys.created_at < now() - make_interval(hours => $3::int)
  RETURNING usage_event_id
) `;
export const CLAIMED_ONLY = ' WHERE NOT (r->>0 = ANY($4::text[])) OR (r->>0) IN (SELECT usage_event_id FROM claims)';

/**
 * Written when an insert's outcome is unknown: the same rows as not delivered, turning a row that
 * did commit into one (see UndeliveredMarks). A row written this way carries the time its insert
 * failed, so it lands in its call's day and not in the day the database came back. Its keys are
 * locked first, as for MARK_NOT_DELIVERED (lockingKeysOf).
 */
export const UPSERT_UNDELIVERED = `${lockingKeysOf('usage_event_id IN (SELECT r->>0 FROM jsonb_array_elements($1::jsonb) AS r)')}${insertOf([...COLUMNS, ['created_at', 'timestamptz']])}
  ON CONFLICT (id) DO UPDATE SET status = 'error', error_code = 'not_delivered', billable = false, cost = 0 WHERE usage_events.id ${NOT_REPLAYED}`;

/**
 * The same with synchronous_commit off for this statement's own transaction only (set_config with
 * is_local, the SET LOCAL of a single statement): its commit does not wait for the WAL flush.
 */
export const ASYNC_COMMIT = " CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit";
export const INSERT_ASYNC_COMMIT = `${INSERT}${ASYNC_COMMIT}${RETURNING}`;

/**
 * PostgreSQL refuses NUL and unpaired surrogates in JSON text. Unpaired surrogates become U+FFFD,
 * as they did when sent as text parameters; NUL, which PostgreSQL stores in no text, too (it used
 * to fail the whole batch).
 */
function storable(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storable);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [storable(k) as string, storable(v)]));
  return value;
}

/** The batch as the JSON parameter of INSERT. */
export function batchJson(rows: unknown[][]): string {
  const json = JSON.stringify(rows);
  // Rare: only when something in the batch needs replacing is it walked again.
  return UNSTORABLE_ESCAPE.test(json) ? JSON.stringify(storable(rows)) : json;
}
