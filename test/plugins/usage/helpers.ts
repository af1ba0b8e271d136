import { expect } from 'chai';
import type { ConfigInput } from '../../../config';
import type { Sql } from '../../../core/db/sql';
import { newId } from '../../../core/ids';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import type { TestService } from '../../support/service';
import type { UsageEventInput } from '../../../plugins/usage';

/** Generous limits, no result cache (every call runs), loopback upstreams allowed for owner functions. */
export const usageConfig: ConfigInput = {
  limits: {
    registrations: { perAddressPerDay: 100_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
    demo: { callsPerHour: 100_000 },
  },
  engine: { cacheTtlMs: 0 },
  outbound: { allowList: ['127.0.0.1'] },
};

let seq = 0;
/** A string no other test uses (User-Agents, names). */
export const unique = (label: string): string => `${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

export interface Priced {
  eventId: string;
  receiptUrl: string;
  cost: string;
  body: Record<string, any>;
}

/** One authenticated compute call over HTTP; returns the usage event its receipt names. */
export async function price(svc: TestService, headers: Record<string, string>, body: Record<string, unknown> = { context: { current_price: 10, currency: 'USD' } }, path = '/api/compute/price'): Promise<Priced> {
  const res = await client(svc.url, headers).post<Record<string, any>>(path, body);
  expect(res.status, res.text).to.equal(200);
  return { eventId: res.body.receipt.usage_event_id as string, receiptUrl: res.body.receipt.url as string, cost: res.body.trace.charged.amount as string, body: res.body };
}

/** One keyless demo call with the given User-Agent (and caller address through X-Forwarded-For). */
export async function demo(svc: TestService, userAgent: string, address?: string): Promise<string> {
  const headers: Record<string, string> = { 'user-agent': userAgent, ...(address ? { 'x-forwarded-for': address } : {}) };
  const res = await client(svc.url, headers).post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 7, currency: 'USD' } });
  expect(res.status, res.text).to.equal(200);
  return res.body.receipt.usage_event_id as string;
}

export interface EventFields {
  workspaceId: string;
  cost?: string;
  billable?: boolean;
  paidVia?: 'x402' | 'day_pass' | 'balance' | null;
  channel?: 'api' | 'mcp' | 'demo';
  createdAt?: string;
  status?: 'ok' | 'error';
  outcome?: 'accepted' | 'rejected' | null;
  userAgent?: string | null;
  verified?: boolean;
  keyId?: string | null;
  functionId?: string | null;
  functionName?: string | null;
  classification?: 'mine' | 'testers' | 'others';
}

/**
 * Writes one usage event directly (payments do not exist yet, so paid calls are inserted): an
 * authenticated API call of the workspace unless told otherwise.
 */
export async function insertEvent(svc: TestService, f: EventFields): Promise<string> {
  const id = newId('use');
  await svc.sequelize.query(
    `INSERT INTO usage_events (id, workspace_id, created_at, operation, channel, status, function_id, function_name, price, currency, confidence,
       cost, billable, paid_via, outcome, outcome_at, caller_key_id, caller_user_agent, caller_verified, classification)
     VALUES ($1, $2, COALESCE($3::timestamptz, now()), 'compute', $4, $5, $6, $7, 10.5, 'USD', 0.5, $8, $9, $10, $11, CASE WHEN $11::text IS NULL THEN NULL ELSE now() END, $12, $13, $14, $15)`,
    {
      bind: [
        id,
        f.workspaceId,
        f.createdAt ?? null,
        f.channel ?? 'api',
        f.status ?? 'ok',
        f.functionId === undefined ? 'fn_builtin_anchored' : f.functionId,
        f.functionName === undefined ? 'anchored-adjustment' : f.functionName,
        f.cost ?? '0.001',
        f.billable ?? (f.paidVia ?? null) === null,
        f.paidVia ?? null,
        f.outcome ?? null,
        f.keyId ?? null,
        f.userAgent ?? null,
        f.verified ?? true,
        f.classification ?? 'mine',
      ],
    },
  );
  return id;
}

export interface ListBody {
  object: 'list';
  data: Array<Record<string, any>>;
  has_more: boolean;
  next_cursor: string | null;
  limit: number;
}

/** Every page of GET /api/usage/events with the query, following next_cursor. */
export async function listAll(svc: TestService, headers: Record<string, string>, query = ''): Promise<Array<Record<string, any>>> {
  const out: Array<Record<string, any>> = [];
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const q = new URLSearchParams(query);
    q.set('limit', '100');
    if (cursor) q.set('cursor', cursor);
    const res: HttpResult<ListBody> = await client(svc.url, headers).get<ListBody>(`/api/usage/events?${q.toString()}`);
    expect(res.status, res.text).to.equal(200);
    out.push(...res.body.data);
    cursor = res.body.next_cursor;
    if (!cursor) return out;
  }
  throw new Error('too many pages');
}

export const ids = (items: Array<Record<string, any>>): string[] => items.map((i) => i.id as string);

/** A whole usage event as the writer takes it, for tests of the writer itself. */
export const recorderEvent = (over: Partial<UsageEventInput> = {}): UsageEventInput => ({
  workspaceId: 'ws_recorder_test',
  requestId: 'req_recorder_test',
  operation: 'compute',
  channel: 'api',
  status: 'ok',
  functionId: 'fn_builtin_cost_plus',
  functionName: 'cost-plus',
  strategy: 'explicit',
  price: '19.99',
  currency: 'USD',
  confidence: 0.8125,
  cost: '0.001',
  billable: true,
  paidVia: null,
  callerKeyId: 'key_1',
  callerVerified: true,
  callerAddressHash: 'a'.repeat(32),
  classification: 'mine',
  cached: false,
  fallbackUsed: true,
  latencyMs: 1.234,
  contextKeys: { product_type: 'coffee', currency: 'USD' },
  ...over,
});

/** One answered, unpaid compute call of `workspaceId` recorded today: what a sandbox's daily allowance counts. */
export async function recordSandboxCall(sql: Sql, workspaceId: string): Promise<void> {
  await sql.exec(
    `INSERT INTO usage_events (id, workspace_id, request_id, operation, channel, status, price, currency, cost, billable, classification)
     VALUES ($1, $2, $3, 'compute', 'api', 'ok', '1.00', 'USD', '0.001', true, 'mine')`,
    [newId('use'), workspaceId, newId('req')],
  );
}
