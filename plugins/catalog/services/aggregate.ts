import type { Counter, Gauge } from 'prom-client';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import type { KvStore } from '../../../core/kv';
import type { Logger } from '../../../core/logger';
import type { Metrics } from '../../../core/metrics';
import type { FunctionAggregate } from './scoring';
import { SCORING_METHOD_VERSION } from './scoring';

/** The leaderboard aggregate: raw counts per function over the window, and when they were computed. */
export interface LeaderboardSnapshot {
  methodVersion: number;
  /** Epoch ms. */
  computedAt: number;
  windowDays: number;
  /** Epoch ms of the window's start. */
  windowFrom: number;
  byFunction: Record<string, FunctionAggregate>;
}

export interface AggregatorOptions {
  refreshMs: number;
  windowDays: number;
  /** Calls made in this workspace (the keyless demo tenant) are left out. */
  demoWorkspaceId: string;
}

// The snapshot's shape is part of the key: an instance still running an earlier shape (during a
// rolling deploy) neither adopts nor serves a snapshot it cannot read.
const SNAPSHOT_SHAPE = 2;
const KV_KEY = `catalog:leaderboard:v${SCORING_METHOD_VERSION}:s${SNAPSHOT_SHAPE}`;
const KV_LOCK = `${KV_KEY}:refreshing`;
const DAY_MS = 86_400_000;

interface AggregateRow {
  function_id: string;
  calls: string | number;
  consumer_calls: string | number;
  ok: string | number;
  accepted: string | number;
  rejected: string | number;
  outcome_consumers: string | number;
  acceptance_sum: string | number;
  quality_consumers: string | number;
  quality_sum: string | number;
  confidence_n: string | number;
  confidence_sum: string | number;
  consumers: string | number;
}

/**
 * The error codes of failed calls whose event names the function that refused them, not one that failed (the pricing
 * plugin's failedCallFunction): counted nowhere, as docs/leaderboard.md says of a function unable to price the context.
 */
const REFUSED_BY_FUNCTION = ['insufficient_context', 'function_draft', 'function_inactive', 'pipeline_execution_unavailable'].map((c) => `'${c}'`).join(', ');

/**
 * One pass over the window's usage events, grouped first per function and workspace, then per
 * function with each workspace mapped to its consumer: the owner of the workspace, else the owner
 * of its parent (claimed agent and test workspaces), else the workspace itself. So a person counts
 * once however many workspaces they call from; then per function, where each consumer's outcomes
 * and quality scores make one view (its accepted share, its mean score), so many reports from one
 * consumer weigh as one. Keyless demo calls and test runs are left out, and the function's publisher
 * (its workspace mapped the same way, and every person of its workspace: an admin or member who
 * calls it from a workspace of their own) is no consumer of its own function: its calls count towards
 * `calls` (total invocations) only, never towards the consumers, outcomes, quality, success share
 * or confidence, so an author cannot raise its own function. Answers that never reached
 * their caller (`not_delivered`: the caller left, or the service's own store failed) say nothing
 * of the function and are left out too. A function tried and failed during a call whose event names
 * another (`failed_function_ids`: a fallback answered) counts a failed call of its own.
 */
const AGGREGATE_SQL = `
  WITH counted AS (
    SELECT function_id, workspace_id, status, error_code, outcome, quality_score, confidence, failed_function_ids, cached
      FROM usage_events
     WHERE created_at >= $1
       AND workspace_id <> $2
       AND channel <> 'demo'
       AND operation IN ('compute', 'batch_item', 'router')
       AND error_code IS DISTINCT FROM 'not_delivered'
  ),
  calls AS (
    -- A failed call's event also names a function that refused it without failing (the context it could not price, a
    -- draft or inactive function pinned): the context's or the caller's doing, no call of the function's to count.
    SELECT function_id, workspace_id, status, outcome, quality_score, confidence, cached
      FROM counted WHERE function_id IS NOT NULL AND coalesce(error_code, '') NOT IN (${REFUSED_BY_FUNCTION})
    UNION ALL
    -- A function tried and failed during a call its event does not name (a fallback answered, or it
    -- was not the chosen one of a call where all failed): a failed call of that function.
    SELECT f.id, c.workspace_id, 'error', NULL, NULL, NULL, false
      FROM counted c CROSS JOIN LATERAL jsonb_array_elements_text(c.failed_function_ids) AS f(id)
     WHERE c.failed_function_ids <> '[]'::jsonb
  ),
  per_ws AS (
    SELECT function_id, workspace_id,
           count(*) AS calls,
           -- Reliability reads the calls the function itself answered or failed: an answer from the result cache says
           -- nothing of its health now (served while its endpoint is down, it would count as a success).
           count(*) FILTER (WHERE NOT cached) AS fresh_calls,
           count(*) FILTER (WHERE status = 'ok' AND NOT cached) AS ok,
           -- Outcomes judge a price: only answered calls had one (an outcome on a failed call says nothing of the function).
           count(*) FILTER (WHERE outcome = 'accepted' AND status = 'ok') AS accepted,
           count(*) FILTER (WHERE outcome = 'rejected' AND status = 'ok') AS rejected,
           count(quality_score) FILTER (WHERE status = 'ok') AS quality_n,
           coalesce(sum(quality_score) FILTER (WHERE status = 'ok'), 0) AS quality_sum,
           count(confidence) FILTER (WHERE status = 'ok') AS confidence_n,
           coalesce(sum(confidence) FILTER (WHERE status = 'ok'), 0) AS confidence_sum
      FROM calls
     GROUP BY function_id, workspace_id
  ),
  owners AS (
    SELECT DISTINCT ON (m.workspace_id) m.workspace_id, m.person_id
      FROM memberships m
     WHERE m.role = 'owner'
     ORDER BY m.workspace_id, m.created_at, m.person_id
  ),
  consumers AS (
    SELECT p.*, coalesce('person:' || o.person_id, 'person:' || po.person_id, 'workspace:' || p.workspace_id) AS consumer,
           CASE WHEN f.workspace_id IS NULL THEN NULL
                ELSE coalesce('person:' || fo.person_id, 'person:' || fpo.person_id, 'workspace:' || f.workspace_id) END AS publisher,
           -- A person of the publishing workspace (an admin or member as much as its owner) calling from a workspace of
           -- their own is on the author's side: no consumer of the function.
           f.workspace_id IS NOT NULL AND EXISTS (
             SELECT 1 FROM memberships m
              WHERE m.workspace_id IN (f.workspace_id, fw.parent_id) AND m.person_id = coalesce(o.person_id, po.person_id)
           ) AS insider
      FROM per_ws p
      LEFT JOIN workspaces w ON w.id = p.workspace_id
      LEFT JOIN owners o ON o.workspace_id = p.workspace_id
      LEFT JOIN owners po ON po.workspace_id = w.parent_id
      LEFT JOIN pricing_functions f ON f.id = p.function_id
      LEFT JOIN workspaces fw ON fw.id = f.workspace_id
      LEFT JOIN owners fo ON fo.workspace_id = f.workspace_id
      LEFT JOIN owners fpo ON fpo.workspace_id = fw.parent_id
  ),
  per_consumer AS (
    SELECT function_id, consumer, consumer IS NOT DISTINCT FROM publisher OR bool_or(insider) AS is_publisher,
           sum(calls) AS calls, sum(fresh_calls) AS fresh_calls, sum(ok) AS ok, sum(accepted) AS accepted, sum(rejected) AS rejected,
           sum(quality_n) AS quality_n, sum(quality_sum) AS quality_sum,
           sum(confidence_n) AS confidence_n, sum(confidence_sum) AS confidence_sum
      FROM consumers
     GROUP BY function_id, consumer, publisher
  )
  SELECT function_id,
         sum(calls) AS calls,
         coalesce(sum(fresh_calls) FILTER (WHERE NOT is_publisher), 0) AS consumer_calls,
         coalesce(sum(ok) FILTER (WHERE NOT is_publisher), 0) AS ok,
         coalesce(sum(accepted) FILTER (WHERE NOT is_publisher), 0) AS accepted,
         coalesce(sum(rejected) FILTER (WHERE NOT is_publisher), 0) AS rejected,
         count(*) FILTER (WHERE NOT is_publisher AND accepted + rejected > 0) AS outcome_consumers,
         coalesce(sum(accepted::float8 / (accepted + rejected)) FILTER (WHERE NOT is_publisher AND accepted + rejected > 0), 0) AS acceptance_sum,
         count(*) FILTER (WHERE NOT is_publisher AND quality_n > 0) AS quality_consumers,
         coalesce(sum(quality_sum::float8 / quality_n) FILTER (WHERE NOT is_publisher AND quality_n > 0), 0) AS quality_sum,
         coalesce(sum(confidence_n) FILTER (WHERE NOT is_publisher), 0) AS confidence_n,
         coalesce(sum(confidence_sum) FILTER (WHERE NOT is_publisher), 0)::float8 AS confidence_sum,
         count(*) FILTER (WHERE NOT is_publisher) AS consumers
    FROM per_consumer
   GROUP BY function_id`;

function isSnapshot(v: unknown): v is LeaderboardSnapshot {
  if (typeof v !== 'object' || v === null) return false;
  const s = v as Partial<LeaderboardSnapshot>;
  return s.methodVersion === SCORING_METHOD_VERSION && typeof s.computedAt === 'number' && typeof s.byFunction === 'object' && s.byFunction !== null;
}

/**
 * Keeps the leaderboard aggregate: computed once at start, then in the background every
 * `refreshMs`. Requests only read the snapshot in memory. With a shared store (Redis), the newest
 * snapshot is kept there and one instance per interval recomputes it; the others adopt it.
 */
export class LeaderboardAggregator {
  private snapshot: LeaderboardSnapshot | null = null;
  private running: Promise<LeaderboardSnapshot> | null = null;
  private initial: Promise<unknown> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly refreshes: Counter<'result'>;
  private readonly computedGauge: Gauge;

  constructor(
    private readonly sql: Sql,
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    metrics: Metrics,
    private readonly opts: AggregatorOptions,
  ) {
    this.refreshes = metrics.counter({ name: 'leaderboard_refresh_total', help: 'Leaderboard aggregate refreshes by result (computed, adopted from the shared store, failed).', labelNames: ['result'] });
    this.computedGauge = metrics.gauge({ name: 'leaderboard_computed_timestamp_seconds', help: 'When the leaderboard aggregate served by this instance was computed.' });
  }

  /** The snapshot in memory (null before the first computation finished). */
  current(): LeaderboardSnapshot | null {
    return this.snapshot;
  }

  /** The snapshot, waiting for the start-up computation when a request arrives before it ended. */
  async ready(): Promise<LeaderboardSnapshot | null> {
    if (!this.snapshot && this.initial) await this.initial;
    return this.snapshot;
  }

  /** Computes the aggregate now (one computation at a time), keeps it and shares it on the store. */
  refresh(): Promise<LeaderboardSnapshot> {
    this.running ??= this.compute().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async compute(): Promise<LeaderboardSnapshot> {
    const now = this.clock.now();
    const windowFrom = now - this.opts.windowDays * DAY_MS;
    try {
      const rows = await this.sql.many<AggregateRow>(AGGREGATE_SQL, [new Date(windowFrom).toISOString(), this.opts.demoWorkspaceId]);
      const byFunction: Record<string, FunctionAggregate> = {};
      for (const r of rows) {
        byFunction[r.function_id] = {
          calls: Number(r.calls),
          consumerCalls: Number(r.consumer_calls),
          ok: Number(r.ok),
          accepted: Number(r.accepted),
          rejected: Number(r.rejected),
          outcomeConsumers: Number(r.outcome_consumers),
          acceptanceSum: Number(r.acceptance_sum),
          qualityConsumers: Number(r.quality_consumers),
          qualitySum: Number(r.quality_sum),
          confidenceN: Number(r.confidence_n),
          confidenceSum: Number(r.confidence_sum),
          consumers: Number(r.consumers),
        };
      }
      const snap: LeaderboardSnapshot = { methodVersion: SCORING_METHOD_VERSION, computedAt: now, windowDays: this.opts.windowDays, windowFrom, byFunction };
      this.adopt(snap);
      this.refreshes.inc({ result: 'computed' });
      await this.kv.set(KV_KEY, JSON.stringify(snap), this.opts.refreshMs * 10).catch((err: unknown) => this.log.warn({ err }, 'leaderboard aggregate could not be shared'));
      return snap;
    } catch (err) {
      this.refreshes.inc({ result: 'failed' });
      throw err;
    }
  }

  private adopt(snap: LeaderboardSnapshot): void {
    if (this.snapshot && this.snapshot.computedAt > snap.computedAt) return;
    this.snapshot = snap;
    this.computedGauge.set(snap.computedAt / 1000);
  }

  private async shared(): Promise<LeaderboardSnapshot | null> {
    const raw = await this.kv.get(KV_KEY);
    if (!raw) return null;
    try {
      const parsed: unknown = JSON.parse(raw);
      return isSnapshot(parsed) ? parsed : null;
    } catch {
      return null;
    }
  }

  /**
   * One background step: adopt a fresh enough snapshot another instance shared, otherwise
   * recompute, with a lock on the store so instances sharing it do not all recompute at once.
   */
  async tick(): Promise<void> {
    const fresh = this.clock.now() - this.opts.refreshMs * 0.9;
    const shared = await this.shared();
    if (shared && shared.computedAt >= fresh) {
      if (!this.snapshot || shared.computedAt > this.snapshot.computedAt) this.refreshes.inc({ result: 'adopted' });
      this.adopt(shared);
      return;
    }
    if (await this.kv.setIfAbsent(KV_LOCK, String(this.clock.now()), Math.max(1000, Math.floor(this.opts.refreshMs / 2)))) {
      await this.refresh();
    } else if (shared) {
      this.adopt(shared);
    }
  }

  /** Computes once, then keeps refreshing in the background (the timer does not hold the process). */
  start(): Promise<void> {
    const first = this.refresh().catch((err: unknown) => this.log.error({ err }, 'leaderboard aggregate could not be computed at start'));
    this.initial = first;
    this.timer = setInterval(() => {
      this.tick().catch((err: unknown) => this.log.error({ err }, 'leaderboard aggregate refresh failed'));
    }, this.opts.refreshMs);
    this.timer.unref();
    return first.then(() => undefined);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }
}
