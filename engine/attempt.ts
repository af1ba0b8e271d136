import type { Counter, Histogram } from 'prom-client';
import type { Metrics } from '../core/metrics';
import { dec } from '../core/money';
import type { MarketEvidence, MethodResult } from './builtins/types';
import { ExternalFunctionError } from './external';
import type { ExternalExecutor } from './external';
import type { FunctionDescriptor } from './functions';
import { PoolBusyError, PoolTimeoutError } from './pool';
import type { PricingPool } from './pool';
import type { CallAdmission, CircuitBreakers } from './stats/function-breakers';
import type { LatencyStats } from './stats/latency';
import type { FunctionLabels } from './metric-labels';

/**
 * `notApplicable`: the function could not price this context (`missing` inputs, or with `refused` the values it refuses
 * to read); `declined` names the context values an external endpoint would not price as given (its answer's currency),
 * `message` saying why.
 */
export type NotApplicable = { message: string; missing: string[]; refused?: boolean; declined?: readonly string[] };
/**
 * Why an attempt failed, for machines: `timeout` (its time limit, or the call's budget with cut_by_budget), `threw` (a
 * built-in raised an error), `crashed` (its worker died, out of memory), `unusable_result` (no usable price or
 * confidence), and for an endpoint `http_status`, `redirect`, `not_json`, `too_large`, `connection` (reset, refused, DNS,
 * TLS) or `address_refused` (the outbound guard will not call its address).
 */
export const FAILURE_KINDS = ['timeout', 'threw', 'crashed', 'unusable_result', 'http_status', 'redirect', 'not_json', 'too_large', 'connection', 'address_refused'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export type AttemptResult =
  | { ok: true; result: MethodResult }
  | { ok: false; notApplicable?: NotApplicable; busy?: boolean; permanent?: boolean; cutByBudget?: boolean; retryAfterS?: number; failure?: FailureKind; error: string };

function failureOf(err: unknown): FailureKind {
  if (err instanceof PoolTimeoutError) return 'timeout';
  if (err instanceof ExternalFunctionError) {
    if (err.kind === 'timeout') return 'timeout';
    if (err.kind === 'blocked') return 'address_refused';
    if (err.kind === 'invalid_response') return 'unusable_result';
    return err.upstream ?? 'connection';
  }
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ERR_WORKER_OUT_OF_MEMORY' || code === 'ERR_WORKER_INIT_FAILED' ? 'crashed' : 'threw';
}

/** A result is usable when its price is a positive decimal and its confidence is a number in [0, 1]. */
export function usableResult(r: unknown): r is MethodResult {
  if (!r || typeof r !== 'object') return false;
  const x = r as Partial<MethodResult>;
  return typeof x.price === 'string' && /^\d+(\.\d+)?$/.test(x.price) && dec(x.price).gt(0) && typeof x.confidence === 'number' && Number.isFinite(x.confidence) && x.confidence >= 0 && x.confidence <= 1;
}

/**
 * One run of one function: in the worker pool or at its endpoint, within its time limit (or what the call's budget
 * leaves), its outcome recorded in the latency statistics, its breaker and the metrics.
 */
export class FunctionRunner {
  private readonly calls: Counter<'function' | 'outcome'>;
  private readonly duration: Histogram<'function'>;

  constructor(
    private readonly pool: PricingPool,
    private readonly external: ExternalExecutor,
    private readonly latency: LatencyStats,
    private readonly breakers: CircuitBreakers,
    metrics: Metrics,
    private readonly opts: { functionTimeoutMs: number; callMaxMs: number; labels: FunctionLabels },
  ) {
    this.calls = metrics.counter({ name: 'pricing_function_calls_total', help: 'Attempts to run a pricing function, by function and outcome.', labelNames: ['function', 'outcome'] });
    this.duration = metrics.histogram({
      name: 'pricing_function_duration_seconds',
      help: "Time of a pricing function's attempt, by function, from its start to its answer: a built-in's wait for a free worker included, as callers see it and as fastest ranks it (timeouts count at the timeout).",
      labelNames: ['function'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    });
  }

  /**
   * Runs one function once. `health: false` (test runs) leaves the routing statistics alone: anyone
   * may test a public function for free, and their failures must not open its breaker for everyone.
   */
  async run(
    fn: FunctionDescriptor,
    context: Record<string, unknown>,
    opts: { health?: boolean; market?: MarketEvidence | null | undefined; admission?: CallAdmission; callerWorkspaceId?: string; healthCaller?: string; budgetMs?: number } = {},
  ): Promise<AttemptResult> {
    const started = performance.now();
    let outcome: 'ok' | 'failed' | 'timeout' | 'not_applicable' | 'pool_busy' = 'failed';
    let permanent = false;
    const own = this.timeoutOf(fn);
    // Within a call, no attempt runs longer than the whole budget: that is its time limit, and only less than that is a cut.
    const cap = opts.budgetMs === undefined ? own : Math.min(own, this.opts.callMaxMs);
    // Rounded, not floored: a first attempt's budget is (now + budget) - now, which floating point may leave a hair under it.
    const limit = opts.budgetMs === undefined ? own : Math.max(1, Math.min(cap, Math.round(opts.budgetMs)));
    // A timeout the call's budget imposed before the function's own says nothing of the function: it was not given its time.
    let cut = false;
    // Why it failed, in its owner's words (the endpoint's address included), kept by its breaker for the owner.
    let failure: string | undefined;
    try {
      let result: unknown;
      if (fn.executionType === 'builtin') {
        const answer = await this.pool.run(fn.name, context, limit, opts.market ?? undefined);
        if (!answer.ok) {
          outcome = 'not_applicable';
          return { ok: false, notApplicable: { message: answer.message, missing: answer.missing, refused: answer.refused === true }, error: answer.message };
        }
        result = answer.result;
      } else if (fn.executionType === 'external_api') {
        result = await this.external.run(fn, context, limit);
      } else {
        return { ok: false, error: 'pipeline execution is not available' };
      }
      if (!usableResult(result)) {
        failure = 'the function returned no usable price or confidence';
        return { ok: false, failure: 'unusable_result', error: failure };
      }
      outcome = 'ok';
      return { ok: true, result };
    } catch (err) {
      if (err instanceof PoolBusyError) {
        outcome = 'pool_busy';
        return { ok: false, busy: true, error: err.message };
      }
      // The endpoint refused the context it was sent: whoever sends a context chooses it, so this is never the function's
      // failure (a stranger's contexts must not open its breaker for everyone), and the next function may price it.
      if (err instanceof ExternalFunctionError && err.kind === 'declined') {
        outcome = 'not_applicable';
        if (opts.health !== false) this.latency.recordDeclined(fn.id);
        return { ok: false, notApplicable: { message: err.message, missing: [], declined: err.inputs }, error: err.message };
      }
      if (err instanceof PoolTimeoutError || (err instanceof ExternalFunctionError && err.kind === 'timeout')) outcome = 'timeout';
      permanent = err instanceof ExternalFunctionError && err.kind === 'blocked';
      failure = err instanceof Error ? err.message || err.name : String(err);
      // Another workspace hears the failure without the owner's address.
      const said = err instanceof ExternalFunctionError && opts.callerWorkspaceId !== fn.workspaceId ? err.forOthers : failure;
      cut = outcome === 'timeout' && limit < cap;
      if (cut) return { ok: false, cutByBudget: true, failure: 'timeout', error: `${said} The call's time budget (COMPUTE_CALL_MAX_MS, ${this.opts.callMaxMs} ms) left it ${limit} ms of its ${own} ms.` };
      const retryAfterS = err instanceof ExternalFunctionError ? err.retryAfterS : undefined;
      return { ok: false, failure: failureOf(err), error: said, ...(permanent ? { permanent } : {}), ...(retryAfterS !== undefined ? { retryAfterS } : {}) };
    } finally {
      const ms = performance.now() - started;
      // A timeout lasted at least its limit, whatever the timer's slack (a failure is recorded as slow as that too).
      const slowest = Math.max(ms, cap);
      const recorded = outcome === 'timeout' ? slowest : ms;
      const label = this.opts.labels.of(fn);
      // A function that could not price the context, or never ran because the pool was busy, has no latency or health to
      // record; nor has one whose address the outbound guard refuses: no retry changes that, so its breaker must not open
      // and answer retryable (it is refused as it is, each time, at once).
      if (outcome !== 'not_applicable' && outcome !== 'pool_busy' && !permanent && !cut && opts.health !== false) {
        // For `fastest`, a failure is as slow as a timeout: a function that fails at once must not look like the fastest.
        const caller = opts.healthCaller ?? opts.callerWorkspaceId;
        this.latency.record(fn.id, outcome === 'ok' ? ms : slowest, outcome !== 'ok', caller);
        this.breakers.record(fn.id, caller ?? '', outcome === 'ok', opts.admission, failure);
        this.duration.observe({ function: label }, recorded / 1000);
      } else if (permanent && failure !== undefined && opts.health !== false) {
        // Not counted, but shown to the owner (breaker.recent_failures): how else would it learn its address is refused?
        this.breakers.noteFailure(fn.id, failure);
      }
      this.calls.inc({ function: label, outcome });
    }
  }

  /** A function's own time limit: its endpoint's timeout_ms for an external one, ENGINE_FUNCTION_TIMEOUT_MS otherwise. */
  timeoutOf(fn: FunctionDescriptor): number {
    return fn.executionType === 'external_api' ? (fn.timeoutMs ?? this.opts.functionTimeoutMs) : this.opts.functionTimeoutMs;
  }
}
