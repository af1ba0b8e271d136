import type { Sql } from '../../../core/db/sql';
import { formatMoney, money } from '../../../core/money';
import { AI_FEATURES, AI_FEATURES_OFFERED, CHANNELS, KEY_SOURCES, OUTCOMES, PAID_VIA } from '../schemas';

interface EventTotals {
  requests: number;
  succeeded: number;
  failed: number;
  prepaid_requests: number;
  prepaid_cost: string;
  billable_requests: number;
  billable_cost: string;
  free_requests: number;
  [count: string]: number | string;
}

interface AiRow {
  feature: string;
  key_source: string;
  calls: string;
  tokens: string;
  cost: string;
}

interface AiTotals {
  calls: number;
  tokens: number;
  cost: string;
}

const usdc = (v: string): string => formatMoney(v, 8);

/** Counts by a column's values, as SQL select items named `<prefix>_<value>`. */
const countsBy = (column: string, prefix: string, values: readonly string[]) =>
  values.map((v) => `count(*) FILTER (WHERE ${column} = '${v}')::int AS ${prefix}_${v}`).join(',\n  ');

/**
 * The events aggregate of one workspace over [from, to). Paid means paid for at call time
 * (paid_via set: x402, day pass, balance); billable means billable and not paid — calls under a
 * free daily allowance included. Sums are NUMERIC in SQL, never floats.
 */
const TOTALS = `SELECT
  count(*)::int AS requests,
  count(*) FILTER (WHERE status = 'ok')::int AS succeeded,
  count(*) FILTER (WHERE status = 'error')::int AS failed,
  count(*) FILTER (WHERE paid_via IS NOT NULL)::int AS prepaid_requests,
  COALESCE(sum(cost) FILTER (WHERE paid_via IS NOT NULL), 0)::text AS prepaid_cost,
  count(*) FILTER (WHERE paid_via IS NULL AND billable)::int AS billable_requests,
  COALESCE(sum(cost) FILTER (WHERE paid_via IS NULL AND billable), 0)::text AS billable_cost,
  count(*) FILTER (WHERE paid_via IS NULL AND NOT billable)::int AS free_requests,
  ${countsBy('channel', 'channel', CHANNELS)},
  ${countsBy('outcome', 'outcome', OUTCOMES)},
  count(*) FILTER (WHERE outcome IS NULL)::int AS outcome_none,
  ${countsBy('paid_via', 'paid', PAID_VIA)},
  count(*) FILTER (WHERE paid_via IS NULL)::int AS paid_none
FROM usage_events WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3`;

function pick(row: EventTotals, prefix: string, values: readonly string[]): Record<string, number> {
  return Object.fromEntries(values.map((v) => [v, Number(row[`${prefix}_${v}`] ?? 0)]));
}

/** The start of the calendar month (UTC) holding `ms`, and of the next one. */
export function monthOf(ms: number): { from: Date; to: Date } {
  const d = new Date(ms);
  return { from: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)), to: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)) };
}

/** SPEC's usage summary of one workspace (its own calls: Mine). */
export class UsageSummary {
  constructor(private readonly sql: Sql) {}

  async summarize(workspaceId: string, from: Date, to: Date, now: number): Promise<Record<string, unknown>> {
    const month = monthOf(now);
    const [totals, current, ai] = await Promise.all([
      this.sql.one<EventTotals>(TOTALS, [workspaceId, from, to]),
      this.sql.one<{ cost: string }>(
        'SELECT COALESCE(sum(cost), 0)::text AS cost FROM usage_events WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3 AND paid_via IS NULL AND billable',
        [workspaceId, month.from, month.to],
      ),
      this.sql.many<AiRow>(
        `SELECT feature, key_source, sum(calls)::text AS calls, sum(tokens)::text AS tokens, sum(cost)::text AS cost
         FROM ai_feature_usage WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY feature, key_source`,
        [workspaceId, from, to],
      ),
    ]);
    const t = totals as EventTotals;
    return {
      object: 'usage_summary',
      period: { from: from.toISOString(), to: to.toISOString() },
      currency: 'USDC',
      requests: t.requests,
      succeeded_requests: t.succeeded,
      failed_requests: t.failed,
      prepaid_requests: t.prepaid_requests,
      prepaid_cost: usdc(t.prepaid_cost),
      billable_requests: t.billable_requests,
      billable_cost: usdc(t.billable_cost),
      free_requests: t.free_requests,
      total_cost: money.sum([t.prepaid_cost, t.billable_cost], 8),
      current_period: { from: month.from.toISOString(), to: month.to.toISOString() },
      current_period_cost: usdc(current?.cost ?? '0'),
      by_channel: pick(t, 'channel', CHANNELS),
      by_outcome: { ...pick(t, 'outcome', OUTCOMES), none: t.outcome_none },
      by_paid_via: { ...pick(t, 'paid', PAID_VIA), none: t.paid_none },
      ai_features: aiFeatures(ai),
    };
  }
}

function aiFeatures(rows: AiRow[]): Record<string, unknown> {
  const zero = (): AiTotals => ({ calls: 0, tokens: 0, cost: '0.00' });
  const add = (into: AiTotals, r: AiRow) => {
    into.calls += Number(r.calls);
    into.tokens += Number(r.tokens);
    into.cost = money.add(into.cost, r.cost, 8);
  };
  const all = zero();
  const byKey = Object.fromEntries(KEY_SOURCES.map((k) => [k, zero()])) as Record<string, AiTotals>;
  const byFeature = Object.fromEntries(AI_FEATURES.map((f) => [f, zero()])) as Record<string, AiTotals>;
  for (const r of rows) {
    add(all, r);
    const k = byKey[r.key_source];
    if (k) add(k, r);
    const f = byFeature[r.feature];
    if (f) add(f, r);
  }
  return { ...all, by_key: byKey, by_feature: byFeature, offered_features: [...AI_FEATURES_OFFERED] };
}
