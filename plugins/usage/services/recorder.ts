import type { Pool } from 'pg';
import { newId } from '../../../core/ids';
import type { Logger } from '../../../core/logger';

export interface UsageEventInput {
  workspaceId: string;
  requestId?: string | null;
  operation: 'compute' | 'batch_item' | 'router' | 'demo' | 'verify' | 'test';
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
  latencyMs?: number | null;
  contextKeys?: Record<string, unknown>;
}

const COLUMNS = [
  'id',
  'workspace_id',
  'request_id',
  'operation',
  'channel',
  'status',
  'error_code',
  'function_id',
  'function_name',
  'strategy',
  'price',
  'currency',
  'confidence',
  'cost',
  'billable',
  'paid_via',
  'caller_key_id',
  'caller_agent_id',
  'caller_person_id',
  'caller_user_agent',
  'caller_verified',
  'caller_address_hash',
  'classification',
  'cached',
  'fallback_used',
  'latency_ms',
  'context_keys',
] as const;

function row(id: string, e: UsageEventInput): unknown[] {
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
    e.latencyMs ?? null,
    JSON.stringify(e.contextKeys ?? {}),
  ];
}

/** The INSERT statement for `rows` events, built once per batch size. */
const statements = new Map<number, string>();
function insertStatement(rows: number): string {
  let text = statements.get(rows);
  if (text === undefined) {
    const tuples: string[] = [];
    for (let i = 0; i < rows; i++) tuples.push(`(${COLUMNS.map((_, j) => `$${i * COLUMNS.length + j + 1}`).join(', ')})`);
    text = `INSERT INTO usage_events (${COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}`;
    statements.set(rows, text);
  }
  return text;
}

interface Pending {
  id: string;
  event: UsageEventInput;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Writes usage events durably before the response, grouped across concurrent requests: while one
 * insert is in flight, new events wait and go together in the next one (group commit), so a
 * request alone pays one round trip and a crowd shares them. Nothing is acknowledged before the
 * database has committed it.
 */
export class UsageRecorder {
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    private readonly maxBatch = 200,
  ) {}

  /** Resolves with the event id once the event is committed. */
  record(event: UsageEventInput): Promise<string> {
    const id = newId('use');
    return new Promise<string>((resolve, reject) => {
      this.queue.push({ id, event, resolve: () => resolve(id), reject });
      this.flushing ??= this.drain();
    });
  }

  recordMany(events: UsageEventInput[]): Promise<string[]> {
    return Promise.all(events.map((e) => this.record(e)));
  }

  private async drain(): Promise<void> {
    // Let the current tick's events join the first batch.
    await Promise.resolve();
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        const values: unknown[] = [];
        for (const p of batch) values.push(...row(p.id, p.event));
        try {
          // Straight to node-postgres, with the statement prepared once per batch size and connection.
          await this.pool.query({ name: `usage_insert_${batch.length}`, text: insertStatement(batch.length), values });
          for (const p of batch) p.resolve();
        } catch (err) {
          this.log.error({ err, events: batch.length }, 'usage events could not be written');
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.flushing = null;
    }
  }

  /** Waits until every queued event is written (shutdown). */
  async drainAll(): Promise<void> {
    while (this.flushing) await this.flushing;
  }
}
