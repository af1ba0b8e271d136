import type { Counter } from 'prom-client';
import type { Metrics } from '../core/metrics';
import { dec } from '../core/money';
import { FunctionRunner } from './attempt';
import type { FailureKind } from './attempt';
import type { MarketEvidence, MethodResult } from './builtins/types';
import type { ResultCache } from './cache';
import { CallAttempts } from './call-attempts';
import type { AttemptReport } from './errors';
import { EngineError } from './errors';
import { excludedAnswer } from './excluded';
import type { ExternalExecutor } from './external';
import { failedCallAnswer } from './failed-call';
import { effectiveCost, healthCallerOf } from './functions';
import type { CallerScope, FunctionDescriptor } from './functions';
import type { FunctionLabels } from './metric-labels';
import { resolvePinned } from './pinned';
import type { PinnedRef } from './pinned';
import type { PricingPool } from './pool';
import type { FunctionRegistry } from './registry';
import { BUILTIN_DESCRIPTORS } from './registry';
import type { RoutingPolicy, Preference, Strategy, PolicyConfig } from './routing/policy';
import { savingsOf } from './routing/comparisons';
import type { Savings } from './routing/comparisons';
import type { RouteDecision, Router } from './routing/router';
import { namedCandidates } from './routing/router';
import type { CircuitBreakers } from './stats/function-breakers';
import { latencyCeilingDetail } from './stats/latency';
import type { LatencyStats } from './stats/latency';

export interface PriceRequest {
  context: Record<string, unknown>;
  scope: CallerScope;
  /** The workspace's default routing policy, when it has one. */
  policy: RoutingPolicy | null;
  preference?: Preference | undefined;
  /** Explicit routing: a function by id or by name. */
  pin?: { id?: string | undefined; name?: string | undefined };
  /** Network price observations of the context's product type, for built-in methods only. */
  market?: MarketEvidence | null | undefined;
}

export interface TraceStage {
  stage: string;
  ms: number;
  [detail: string]: unknown;
}

export interface PriceOutcome {
  result: MethodResult;
  fn: FunctionDescriptor;
  strategy: Strategy | 'explicit';
  decision: RouteDecision | null;
  attempts: AttemptReport[];
  fallbackUsed: boolean;
  cached: boolean;
  savings: Savings | null;
  /** Cost of the call: the answering function's cost per unit × multiplier (USDC). */
  cost: string;
  stages: TraceStage[];
}

export interface EngineOptions {
  functionTimeoutMs: number;
  /** Time budget of one call's attempts (COMPUTE_CALL_MAX_MS). */
  callMaxMs: number;
  /** The metrics' function labels (METRICS_MAX_FUNCTION_LABELS). */
  labels: FunctionLabels;
}

/** One function of a call's attempt order, null when the reference is out of the caller's reach. */
interface OrderStep {
  fn: FunctionDescriptor | null;
  ref: string;
  role: AttemptReport['role'];
}

const since = (t: number) => Math.round((performance.now() - t) * 1000) / 1000;

/**
 * The compute path without HTTP: resolve or route, check the cache, run the function in the pool
 * (or call its endpoint), walk the fallbacks on failure, keep latency and breaker statistics.
 * REST, batch, MCP and the demo all call `price`.
 */
export class PricingEngine {
  private readonly runner: FunctionRunner;
  private readonly requests: Counter<'function' | 'outcome'>;
  private readonly fallbacks: Counter<'function'>;
  private readonly cacheHits: Counter<'function'>;

  constructor(
    private readonly registry: FunctionRegistry,
    private readonly router: Router,
    pool: PricingPool,
    external: ExternalExecutor,
    private readonly latency: LatencyStats,
    private readonly breakers: CircuitBreakers,
    private readonly cache: ResultCache,
    metrics: Metrics,
    private readonly opts: EngineOptions,
  ) {
    this.requests = metrics.counter({ name: 'pricing_compute_requests_total', help: 'Compute requests by answering function and outcome.', labelNames: ['function', 'outcome'] });
    this.runner = new FunctionRunner(pool, external, latency, breakers, metrics, opts);
    this.fallbacks = metrics.counter({ name: 'pricing_fallbacks_total', help: 'Compute requests answered by a fallback, by the function that answered.', labelNames: ['function'] });
    this.cacheHits = metrics.counter({ name: 'pricing_cache_hits_total', help: 'Compute requests answered from the result cache, by function.', labelNames: ['function'] });
    // The built-ins' series exist from the start (a rate reads 0, not no data); other functions' appear with their first event.
    for (const fn of BUILTIN_DESCRIPTORS) {
      this.fallbacks.inc({ function: fn.name }, 0);
      this.cacheHits.inc({ function: fn.name }, 0);
    }
  }

  /**
   * Throws (and counts, as a pricing refused so would be) the plan's refusal of a pinned function the caller's plan does
   * not reach; any other refusal of the pin is left to the pricing. Lets a caller be refused before its allowance is touched.
   */
  assertWithinPlan(ref: PinnedRef, scope: CallerScope): void {
    try {
      resolvePinned(this.registry, ref, scope);
    } catch (err) {
      if (!(err instanceof EngineError && err.code === 'outside_plan')) return;
      this.requests.inc({ function: 'none', outcome: err.code });
      throw err;
    }
  }

  /**
   * A fallback is used when an earlier attempt failed or the policy's fallbacks answered; moving to an alternate past a
   * function that could not price the context is routing, not failure.
   */
  private usedFallback(role: AttemptReport['role'], attempts: AttemptReport[]): boolean {
    return role === 'fallback_chain' || role === 'fallback_function' || attempts.some((a) => a.outcome === 'failed' || a.outcome === 'pool_busy' || (a.outcome === 'skipped' && a.role === 'chosen'));
  }

  private noteFallback(stages: TraceStage[], first: FunctionDescriptor | null, fn: FunctionDescriptor, attempts: AttemptReport[]): void {
    this.fallbacks.inc({ function: this.opts.labels.of(fn) });
    // from: null when routing chose nothing (every candidate excluded) and the policy's fallbacks answered.
    stages.push({ stage: 'fallback', ms: 0, used: true, from: first?.name ?? null, to: fn.name, after: attempts.filter((a) => a.outcome !== 'ok').map((a) => `${a.function}: ${a.error ?? a.outcome}`) });
  }

  /** The attempt order; with no chosen function (routing excluded every candidate), the policy's fallbacks alone. */
  private fallbackOrder(policy: RoutingPolicy | null, decision: RouteDecision | null, first: FunctionDescriptor | null, scope: CallerScope): OrderStep[] {
    const out: OrderStep[] = first ? [{ fn: first, ref: first.id, role: 'chosen' }] : [];
    // A strategy's own order comes before the policy's chain (whether after a failure too: RouteDecision.alternatesAfterFailure).
    for (const alt of decision?.alternates ?? []) out.push({ fn: alt, ref: alt.id, role: 'alternate' });
    const chain = [...(policy?.fallback_chain ?? [])];
    for (const ref of chain) out.push({ fn: this.registry.resolveForPolicy(ref, scope, policy?.updated_at) ?? null, ref, role: 'fallback_chain' });
    if (policy?.fallback_function) out.push({ fn: this.registry.resolveForPolicy(policy.fallback_function, scope, policy.updated_at) ?? null, ref: policy.fallback_function, role: 'fallback_function' });
    return out;
  }

  /**
   * Counts a priced outcome in pricing_compute_requests_total once its caller's fate is known: `ok` when it was answered,
   * `not_answered` when the answer was withheld (its usage record could not be written: a 503, nothing charged),
   * `not_delivered` when its caller left while it was recorded. The engine counts its refusals and failures itself; a
   * price it leaves to the caller, who writes the record.
   */
  countPriced(outcome: PriceOutcome, fate: 'ok' | 'not_answered' | 'not_delivered'): void {
    this.requests.inc({ function: this.opts.labels.of(outcome.fn), outcome: fate });
  }

  /**
   * The function to try first: the pinned one, or routing's choice. Routing that excluded every candidate gives none, with
   * its refusal: the policy's fallbacks are tried, and excludedAnswer makes the answer if none may run.
   */
  private async choose(req: PriceRequest, pinned: string | undefined, stages: TraceStage[], t: number): Promise<{ strategy: Strategy | 'explicit'; decision: RouteDecision | null; first: FunctionDescriptor | null; excluded: EngineError | null }> {
    if (pinned) {
      const first = resolvePinned(this.registry, req.pin ?? {}, req.scope);
      stages.push({ stage: 'resolve', ms: since(t), function: first.name, function_id: first.id, explicit: true });
      return { strategy: 'explicit', decision: null, first, excluded: null };
    }
    const policy = req.policy;
    const policyStrategy = policy?.strategy ?? 'default';
    const strategy = req.preference && req.preference !== 'explicit' ? req.preference : policyStrategy;
    // A preference changes how the policy chooses, not among what: its order, weights' keys or rule targets stay the
    // candidates (docs/routing.md), with its ceilings and fallbacks.
    const named = strategy !== policyStrategy ? namedCandidates(policyStrategy, policy?.config ?? {}) : undefined;
    const config: PolicyConfig = named ? { ...policy?.config, candidates: named } : (policy?.config ?? {});
    // A weighted preference on a policy without weights spreads evenly over the policy's candidates. Weights a policy of
    // another strategy still holds (left from a PATCH of its strategy) are not its weights: they choose nothing.
    const evenOver = () => config.candidates ?? this.registry.ownAndBuiltIn(req.scope).map((f) => f.id);
    const weighted = policyStrategy === 'weighted' && Object.values(config.weights ?? {}).some((w) => w > 0);
    const routeConfig: PolicyConfig = strategy === 'weighted' && !weighted ? { ...config, weights: Object.fromEntries(evenOver().map((id) => [id, 1])) } : config;
    const route = { stage: 'route', strategy, policy_id: policy?.id ?? null };
    try {
      const decision = await this.router.decide({ context: req.context, scope: req.scope, strategy, config: routeConfig, policyId: policy?.id ?? null, policySavedAt: policy?.updated_at, ...(policy ? { policyStrategy } : {}), market: req.market ?? undefined });
      const first = decision.chosen;
      stages.push({ ...route, ms: since(t), chosen: first.name, chosen_id: first.id, candidates: decision.candidates, ...(decision.statistic ? { statistic: decision.statistic } : {}), ...(decision.rule ? { rule: decision.rule } : {}) });
      return { strategy, decision, first, excluded: null };
    } catch (err) {
      // The policy's fallbacks are its safety net for every candidate out of the running too (breakers open, functions
      // withdrawn), each still held to the ceilings, its breaker and reach: nothing is picked in spite of a ceiling.
      // Without fallbacks nothing runs, and excludedAnswer says whether the exclusion is the answer or a breaker's wait.
      if (!(err instanceof EngineError && err.code === 'no_eligible_function')) throw err;
      stages.push({ ...route, ms: since(t), chosen: null, chosen_id: null, candidates: err.details.candidates ?? [], every_candidate_excluded: true, ...(err.details.rule ? { rule: err.details.rule } : {}) });
      return { strategy, decision: null, first: null, excluded: err };
    }
  }

  /**
   * The step's function when it may run now, or null, having recorded why not in `calls` (skipped with its reason, or an
   * alternate passed over).
   */
  private runnable(step: OrderStep, calls: CallAttempts, decision: RouteDecision | null, policy: RoutingPolicy | null): FunctionDescriptor | null {
    const attempts = calls.list;
    if (!step.fn) {
      // Its id is not told: a reference out of reach names nothing the caller may see (candidates say id null alike).
      calls.skip({ name: step.ref, id: null }, step.role, 'out of reach');
      return null;
    }
    // Past a failure, strategies other than default and priority go on to the fallback chain (RouteDecision), but for the
    // alternates they name as still worth a try (fastest's warm function, or next cold one, after a failed exploration). A function that
    // could not price the context, or that a busy pool never ran, has not failed: the strategy's order goes on.
    if (step.role === 'alternate' && !decision?.alternatesAfterFailure && !decision?.afterFailure?.includes(step.fn) && attempts.some((a) => a.outcome === 'failed')) {
      calls.passedOver = true;
      return null;
    }
    const fn = step.fn;
    if (calls.tried.has(fn.id)) {
      // A fallback the policy names that this call already met (the chosen function in its own chain, a name twice) is
      // shown, not run or judged again: its configuration then reads as it is. A function skipped before (not active,
      // over a ceiling) or that a busy pool never ran is not said to have been tried.
      const ran = attempts.some((a) => a.id === fn.id && a.outcome !== 'skipped' && a.outcome !== 'pool_busy');
      if (step.role === 'fallback_chain' || step.role === 'fallback_function') calls.skip(fn, step.role, ran ? 'already tried in this call' : 'already skipped in this call');
      return null;
    }
    calls.tried.add(fn.id);
    if (step.role !== 'chosen' && (fn.status !== 'active' || fn.executionType === 'pipeline')) {
      calls.skip(fn, step.role, fn.executionType === 'pipeline' ? 'pipeline unavailable' : `not active (${fn.status})`);
      return null;
    }
    // The ceilings bound every function the policy runs: a fallback above one is skipped too, never silently paid for
    // or waited on.
    const over = step.role === 'chosen' ? null : this.overCeiling(fn, policy);
    if (over) {
      calls.skip(fn, step.role, `${over.reason} (${over.detail})`);
      calls.overCeiling.push({ function: fn.name, id: fn.id, kept: false, ...over, cost_per_unit: effectiveCost(fn) });
      return null;
    }
    return fn;
  }

  async price(req: PriceRequest): Promise<PriceOutcome> {
    const stages: TraceStage[] = [];
    let t = performance.now();
    const pinned = req.pin?.id ?? req.pin?.name;
    if (req.preference === 'explicit' && !pinned) throw new EngineError('explicit_without_function', 'routing_preference "explicit" needs function_id (or function_name on the price router).');
    let chosen: Awaited<ReturnType<PricingEngine['choose']>>;
    try {
      chosen = await this.choose(req, pinned, stages, t);
    } catch (err) {
      this.requests.inc({ function: 'none', outcome: err instanceof EngineError ? err.code : 'error' });
      throw err;
    }
    const { strategy, decision, first, excluded } = chosen;
    // One call's attempts share COMPUTE_CALL_MAX_MS from the first attempt on: a chain of hanging functions must not hold
    // a caller for minutes, and the first attempt gets the whole budget (routing's milliseconds before it are not taken
    // from it, or a function whose own limit is the budget would always look cut short and never count as failing).
    let deadline: number | undefined;
    const calls = new CallAttempts();
    const attempts = calls.list;
    // Whose breaker a failure counts in, and which keeps this caller out: the network's, or its own workspace's.
    const caller = healthCallerOf(req.scope);
    // Only built-ins read the network's observations (an external function gets the caller's context alone), so only their cached results depend on them.
    const marketFor = (fn: FunctionDescriptor): MarketEvidence | undefined => (fn.executionType === 'builtin' ? (req.market ?? undefined) : undefined);
    for (const step of this.fallbackOrder(req.policy, decision, first, req.scope)) {
      t = performance.now();
      const fn = this.runnable(step, calls, decision, req.policy);
      if (!fn) continue;
      const now = performance.now();
      deadline ??= now + this.opts.callMaxMs;
      const budgetMs = deadline - now;
      // An attempt the budget cut short has used it up, whatever the timer's slack left of it (a fraction of a ms).
      if (budgetMs <= 0 || attempts.some((a) => a.cut_by_budget)) {
        calls.skip(fn, step.role, 'call time budget spent');
        continue;
      }
      // Every function's answer is cached under its own key, so one that answered after the chosen function could not
      // price the context (or failed) is looked up too; the trace shows the chosen function's lookup, and a later one that hit.
      const hit = await this.cache.get(req.scope.workspaceId, fn, req.context, marketFor(fn));
      if (step.role === 'chosen' || hit) stages.push({ stage: 'cache', ms: since(t), hit: !!hit, ...(step.role === 'chosen' ? {} : { function: fn.name }), ...(this.cache.enabled ? {} : { disabled: true }) });
      if (hit) {
        // Listed as the attempt that answered, so a fallback's cached answer reads after the failures before it.
        attempts.push({ function: fn.name, id: fn.id, role: step.role, outcome: 'ok', cached: true, ms: 0 });
        this.cacheHits.inc({ function: this.opts.labels.of(fn) });
        const fallbackUsed = this.usedFallback(step.role, attempts);
        if (fallbackUsed) this.noteFallback(stages, first, fn, attempts);
        return { result: hit, fn, strategy, decision, attempts, fallbackUsed, cached: true, savings: null, cost: effectiveCost(fn), stages };
      }
      t = performance.now();
      // Built-ins share the pool that just could not run a call: another would wait the same way.
      if (fn.executionType === 'builtin' && calls.poolBusy()) {
        calls.skip(fn, step.role, 'pricing pool busy');
        continue;
      }
      const admission = this.breakers.allow(fn.id, caller);
      if (!admission) {
        // Open, or half-open with its one trial call in flight: that trial answers within the function's time limit.
        const trialEndsMs = this.breakers.trialEndsInMs(fn.id, caller, this.runner.timeoutOf(fn));
        // Only the workspace's own breaker keeps it out while the function's is closed: the caller's calls failed, not everyone's.
        calls.behind.set(fn.id, { waitMs: this.breakers.retryInMs(fn.id, caller) ?? trialEndsMs, trial: trialEndsMs !== null, own: this.breakers.state(fn.id) === 'closed' });
        calls.skip(fn, step.role, 'breaker open');
        continue;
      }
      const r = await this.runner.run(fn, req.context, { market: marketFor(fn), admission, callerWorkspaceId: req.scope.workspaceId, healthCaller: caller, budgetMs });
      // Not being able to price this context, not getting a worker, or being stopped by the call's budget before its own
      // timeout says nothing about the function's health: a half-open trial slot is freed.
      if (!r.ok && (r.notApplicable || r.busy || r.permanent || r.cutByBudget)) this.breakers.release(fn.id, caller, admission);
      const ms = since(t);
      if (r.ok) {
        attempts.push({ function: fn.name, id: fn.id, role: step.role, outcome: 'ok', ms });
        stages.push({ stage: 'execute', ms, function: fn.name, function_id: fn.id, role: step.role, execution: fn.executionType, outcome: 'ok' });
        const fallbackUsed = this.usedFallback(step.role, attempts);
        if (fallbackUsed) this.noteFallback(stages, first, fn, attempts);
        await this.cache.set(req.scope.workspaceId, fn, req.context, r.result, marketFor(fn));
        return { result: r.result, fn, strategy, decision, attempts, fallbackUsed, cached: false, savings: fallbackUsed ? null : savingsOf(decision, fn, attempts, req.context, marketFor), cost: effectiveCost(fn), stages };
      }
      const outcome = r.notApplicable ? 'not_applicable' : r.busy ? 'pool_busy' : 'failed';
      attempts.push({ function: fn.name, id: fn.id, role: step.role, outcome, error: r.error, ...(outcome === 'failed' && r.failure ? { failure: r.failure } : {}), ...(r.permanent ? { retryable: false as const } : {}), ...(r.cutByBudget ? { cut_by_budget: true as const } : {}), ...(r.retryAfterS !== undefined ? { retry_after: r.retryAfterS } : {}), ms });
      // Its time is in a stage of its own, so a slow failure is not read as the service's overhead.
      stages.push({ stage: 'execute', ms, function: fn.name, function_id: fn.id, role: step.role, execution: fn.executionType, outcome });
      if (r.notApplicable && calls.unpriced(fn.name, step.role, r.notApplicable)) break;
    }
    stages.push({ stage: 'execute', ms: 0, attempts });
    // Every candidate excluded and no fallback allowed to run either: the exclusion is the answer, with why each fallback
    // was skipped, unless an open breaker alone keeps out something that would run (then a wait, as for a pinned call).
    if (excluded && attempts.every((a) => a.outcome === 'skipped')) {
      const answer = excludedAnswer(excluded, attempts, calls.behind, this.breakers, caller);
      this.requests.inc({ function: 'none', outcome: answer.code });
      throw answer;
    }
    // The function the call's outcome is counted under: the chosen one, else the first fallback that ran.
    const lead = first ?? (this.registry.find(attempts.find((a) => a.outcome !== 'skipped')?.id ?? '') as FunctionDescriptor);
    const failed = failedCallAnswer({ calls, pinned: Boolean(pinned), decision, policy: req.policy, context: req.context, workspaceId: req.scope.workspaceId, caller, marketFor }, this.registry, this.breakers);
    // With the strategy the call ran under, which its usage event records beside the function it names.
    const answer = new EngineError(failed.code, failed.message, { ...failed.details, strategy });
    this.requests.inc({ function: this.opts.labels.of(lead), outcome: answer.code });
    throw answer;
  }

  /** The policy ceiling a function is above, as the router reports a candidate's: cost first, then the latency it has shown. */
  private overCeiling(fn: FunctionDescriptor, policy: RoutingPolicy | null | undefined): { reason: 'cost ceiling' | 'latency ceiling'; detail: string } | null {
    const maxCost = policy?.config.max_cost_per_unit;
    if (maxCost !== undefined && dec(effectiveCost(fn)).gt(dec(maxCost))) return { reason: 'cost ceiling', detail: `${effectiveCost(fn)} > ${maxCost}` };
    const maxLatency = policy?.config.max_latency_ms;
    const p50 = maxLatency === undefined ? null : this.latency.snapshot(fn.id).p50_ms;
    if (maxLatency !== undefined && p50 !== null && p50 > maxLatency) return { reason: 'latency ceiling', detail: latencyCeilingDetail(p50, maxLatency, this.latency.failures(fn.id)) };
    return null;
  }

  /** Runs one function directly (POST /api/functions/{id}/test): no routing, fallback or cache, and no effect on its breaker or latency statistics. */
  async test(fn: FunctionDescriptor, context: Record<string, unknown>, market: MarketEvidence | null | undefined, callerWorkspaceId: string): Promise<{ ok: true; result: MethodResult; ms: number } | { ok: false; error: string; missing?: string[]; refused?: string[]; busy?: true; failure?: FailureKind; retryAfterS?: number; ms: number }> {
    const t = performance.now();
    const r = await this.runner.run(fn, context, { health: false, market, callerWorkspaceId });
    if (r.ok) return { ok: true, result: r.result, ms: since(t) };
    // As a compute names them: a value refused (refused, a built-in's or the one an endpoint declined), or inputs missing (missing).
    const na = r.notApplicable;
    let inputs: { refused?: string[]; missing?: string[] } = {};
    if (na?.refused) inputs = { refused: na.missing };
    else if (na?.declined) inputs = na.declined.length ? { refused: [...na.declined] } : {};
    else if (na) inputs = { missing: na.missing };
    // A failure reads as in a compute's attempts: why, for machines, and the wait its endpoint asked for.
    const failed = !na && !r.busy && r.failure ? { failure: r.failure, ...(r.retryAfterS !== undefined ? { retryAfterS: r.retryAfterS } : {}) } : {};
    return { ok: false, error: r.error, ...inputs, ...(r.busy ? { busy: true as const } : {}), ...failed, ms: since(t) };
  }
}
