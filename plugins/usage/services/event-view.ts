import { formatMoney, isDecimalString } from '../../../core/money';
import { minorUnits } from '../../../engine';
import type { Channel, Classification, Outcome, PaidVia } from '../schemas';
import type { RecordedEvent, UsageEventInput } from './recorder';

/** The columns the usage API reads from usage_events, plus the viewer-relative classification. */
export interface EventRow {
  id: string;
  workspace_id: string;
  created_at: Date;
  /** created_at with microseconds (ISO, UTC): the cursor position, exact where a Date is not. */
  created_key: string;
  request_id: string | null;
  operation: string;
  channel: Channel;
  status: 'ok' | 'error';
  error_code: string | null;
  function_id: string | null;
  function_name: string | null;
  strategy: string | null;
  price: string | null;
  currency: string | null;
  confidence: number | null;
  cost: string;
  billable: boolean;
  paid_via: PaidVia | null;
  outcome: Outcome | null;
  quality_score: number | null;
  outcome_at: Date | null;
  caller_key_id: string | null;
  caller_agent_id: string | null;
  caller_person_id: string | null;
  caller_user_agent: string | null;
  caller_verified: boolean;
  cached: boolean;
  fallback_used: boolean;
  network_evidence: boolean;
  latency_ms: number | null;
  context_keys: Record<string, unknown>;
  viewer_class: Classification;
  tester_label: string | null;
}

/**
 * The select list shared by every query of the usage API (alias `e`); with `functionShown` (an SQL
 * condition), the function the event names reads as null where it is false.
 */
export const eventColumns = (functionShown?: string): string => `e.id, e.workspace_id, e.created_at,
  to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_key,
  e.request_id, e.operation, e.channel, e.status, e.error_code,
  ${functionShown ? `CASE WHEN ${functionShown} THEN e.function_id END AS function_id, CASE WHEN ${functionShown} THEN e.function_name END AS function_name` : 'e.function_id, e.function_name'}, e.strategy,
  e.price::text AS price, e.currency, e.confidence, e.cost::text AS cost, e.billable, e.paid_via,
  e.outcome, e.quality_score, e.outcome_at, e.caller_key_id, e.caller_agent_id, e.caller_person_id,
  e.caller_user_agent, e.caller_verified, e.cached, e.fallback_used, e.network_evidence, e.latency_ms, e.context_keys`;

export const EVENT_COLUMNS = eventColumns();

export type CallerType = 'agent' | 'api_key' | 'person' | 'anonymous';

function callerType(r: EventRow): CallerType {
  if (r.caller_agent_id) return 'agent';
  if (r.caller_key_id) return 'api_key';
  if (r.caller_person_id) return 'person';
  return 'anonymous';
}

/** NUMERIC text as a decimal string without float rounding (values beyond decimal.js's pattern pass unchanged). */
export const decimalText = (v: string | null): string | null => (v === null ? null : isDecimalString(v) ? formatMoney(v, 8) : v);

/**
 * A price as the call answered it: with its currency's minor units (JPY "1500", KWD "1.500", USD
 * "12.50"), never fewer, and every further digit it was stored with kept (a proposed price may
 * carry 18 decimals).
 */
export const priceText = (v: string | null, currency: string | null): string | null =>
  v === null || !isDecimalString(v) ? v : formatMoney(v, 18, currency === null ? 2 : minorUnits(currency));

/**
 * One usage event as a workspace sees it. Key, agent and person ids and the request id are shown
 * only for Mine; for Testers and Others the caller is what it sent (its User-Agent), unverified.
 */
export function eventView(r: EventRow): Record<string, unknown> {
  const mine = r.viewer_class === 'mine';
  return {
    object: 'usage_event',
    id: r.id,
    created_at: r.created_at.toISOString(),
    classification: r.viewer_class,
    ...(r.viewer_class === 'testers' ? { tester_tag: r.tester_label } : {}),
    channel: r.channel,
    operation: r.operation,
    status: r.status,
    error_code: r.error_code,
    caller: {
      type: callerType(r),
      agent_id: mine ? r.caller_agent_id : null,
      key_id: mine ? r.caller_key_id : null,
      person_id: mine ? r.caller_person_id : null,
      user_agent: r.caller_user_agent,
      verified: mine && r.caller_verified,
    },
    function: r.function_id || r.function_name ? { id: r.function_id, name: r.function_name } : null,
    strategy: r.strategy,
    price: priceText(r.price, r.currency),
    currency: r.currency,
    confidence: r.confidence,
    cost: decimalText(r.cost),
    cost_currency: 'USDC',
    billable: r.billable,
    paid_via: r.paid_via,
    outcome: r.outcome,
    quality_score: r.quality_score,
    outcome_at: r.outcome_at ? r.outcome_at.toISOString() : null,
    cached: r.cached,
    fallback_used: r.fallback_used,
    network_evidence: r.network_evidence,
    latency_ms: r.latency_ms,
    ...(mine
      ? {
          request_id: r.request_id,
          context: r.context_keys,
          links: { self: `/api/usage/events/${r.id}`, outcome: `/api/usage/events/${r.id}/outcome` },
        }
      : {}),
  };
}

/**
 * The row a just-written event reads back as, without reading it: for the receipt of the call. The
 * caller sees it as the API shows it to the calling workspace: Mine for its own key; otherwise (the
 * keyless demo) as Others, so no tester tag of the demo tenant shows.
 */
export function recordedEventRow(recorded: RecordedEvent, e: UsageEventInput): EventRow {
  return {
    id: recorded.id,
    workspace_id: e.workspaceId,
    created_at: recorded.createdAt,
    created_key: recorded.createdAt.toISOString(),
    request_id: e.requestId ?? null,
    operation: e.operation,
    channel: e.channel,
    status: e.status,
    error_code: e.errorCode ?? null,
    function_id: e.functionId ?? null,
    function_name: e.functionName ?? null,
    strategy: e.strategy ?? null,
    price: e.price ?? null,
    currency: e.currency ?? null,
    confidence: e.confidence ?? null,
    cost: e.cost,
    billable: e.billable,
    paid_via: e.paidVia,
    outcome: null,
    quality_score: null,
    outcome_at: null,
    caller_key_id: e.callerKeyId ?? null,
    caller_agent_id: e.callerAgentId ?? null,
    caller_person_id: e.callerPersonId ?? null,
    caller_user_agent: e.callerUserAgent?.slice(0, 300) ?? null,
    caller_verified: e.callerVerified,
    cached: e.cached ?? false,
    fallback_used: e.fallbackUsed ?? false,
    network_evidence: e.networkEvidence ?? false,
    latency_ms: e.latencyMs ?? null,
    context_keys: e.contextKeys ?? {},
    viewer_class: e.classification === 'mine' ? 'mine' : 'others',
    tester_label: null,
  };
}
