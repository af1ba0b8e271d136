import { dec } from '../../core/money';
import type { KvStore } from '../../core/kv';
import type { CandidateReport } from '../errors';
import { EngineError } from '../errors';
import { effectiveCost, healthCallerOf } from '../functions';
import { mayPrice } from '../builtins/catalogue';
import { hasNetworkReference } from '../builtins/competitive';
import type { MarketEvidence } from '../builtins/types';
import type { CallerScope, FunctionDescriptor } from '../functions';
import type { FunctionRegistry } from '../registry';
import type { Rng } from '../rng';
import type { CircuitBreakers } from '../stats/function-breakers';
import { latencyCeilingDetail, latencyView } from '../stats/latency';
import type { LatencySnapshot, LatencyStats, NO_DATA } from '../stats/latency';
import type { PolicyConfig, Strategy } from './policy';
import { firstMatchingRule } from './rules';
import type { Rule } from './rules';

/** The KV key of a round-robin policy's turn counter (of the workspace's own turns when no policy is named). */
export function roundRobinKey(policyId: string | null | undefined, workspaceId: string): string {
  return `rr:${policyId ?? `ws:${workspaceId}`}`;
}

export interface RouteInput {
  context: Record<string, unknown>;
  scope: CallerScope;
  strategy: Strategy;
  config: PolicyConfig;
  /** Round-robin counters are kept per policy. */
  policyId: string | null;
  /** When the policy was last saved: its names bind only to functions registered by then (FunctionRegistry.resolveForPolicy). */
  policySavedAt?: string | undefined;
  /** The saved policy's own strategy, when a routing_preference routes by another: what names its candidates. */
  policyStrategy?: Strategy | undefined;
  /** The network's observations of the context's product type, when looked up: what a built-in may price from. */
  market?: MarketEvidence | undefined;
}

/** The policy rule that sent a context to its function (`index` -1: none matched, and default_function applied). */
export type AppliedRule = { index: number; name?: string; when: Rule['when']; use: string } | { index: -1; default_function: string };

export interface RouteDecision {
  strategy: Strategy;
  chosen: FunctionDescriptor;
  /** Candidates still eligible after exclusions (savings compare against these). */
  eligible: FunctionDescriptor[];
  candidates: CandidateReport[];
  statistic?: Record<string, unknown>;
  rule?: AppliedRule;
  /** The other eligible functions in the strategy's own order, tried after the choice (see `alternatesAfterFailure`). */
  alternates?: FunctionDescriptor[];
  /**
   * `default` and `priority` try their alternates whether the choice could not price the context or failed. The
   * other strategies try theirs only while every function tried could not price the context: their choice is the
   * first function of their order that can price it, and a failure goes on to the fallback chain.
   */
  alternatesAfterFailure?: boolean;
  /**
   * Alternates still tried after a failure when the others are not: `fastest` exploring a cold
   * function names the fastest warm one (with none warm, the next cold one), so an exploration that
   * fails costs the caller no error.
   */
  afterFailure?: FunctionDescriptor[];
}

const DEFAULT_TIE_BAND_PCT = 10;

/**
 * Ids in code-unit order, never localeCompare: the order (a round-robin cycle, a tie-break) must not depend on the
 * process's locale, as instances sharing one round-robin counter must agree on the cycle.
 */
const byId = (a: FunctionDescriptor, b: FunctionDescriptor): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The order `default` prefers, by what the context carries (and the network's observations of its product type, when found). */
function defaultPreference(ctx: Record<string, unknown>, market: MarketEvidence | undefined): string[] {
  const has = (k: string) => ctx[k] !== undefined && ctx[k] !== null;
  const order: string[] = [];
  // A live price is an anchor: other methods become its target and the move stays bounded.
  if (has('current_price')) order.push('anchored-adjustment');
  if (has('competitor_prices')) order.push('competitive-position');
  if (has('unit_cost') && (has('elasticity') || has('price_history') || (has('demand_intercept') && has('demand_slope')))) order.push('elasticity-optimum');
  // A unit_cost with no margin or markup of the caller's leaves cost-plus a default margin no one chose, and the network's
  // prices of the product type are evidence: positioned on them, the cost a floor (pricing-methods §3; §8's cost-plus first
  // is for a context with no references at all).
  if (market && has('unit_cost') && !has('target_margin') && !has('markup') && hasNetworkReference(ctx, market)) order.push('competitive-position');
  if (has('unit_cost')) order.push('cost-plus');
  if (has('target_price')) order.push('charm-pricing');
  // With no number of its own, a context's likeliest evidence is the network's observations of its product type.
  if (has('product_type') && !has('current_price') && !has('unit_cost') && !has('target_price')) order.push('competitive-position');
  order.push('cost-plus', 'anchored-adjustment', 'competitive-position', 'elasticity-optimum', 'charm-pricing');
  return [...new Set(order)];
}

/**
 * Chooses one function among candidates by strategy, after removing those out of reach, not
 * active, above the cost or latency ceiling, or with an open circuit breaker. Every candidate is
 * reported with why it was kept or excluded; when none is left the answer is a typed error, never
 * a pick that ignores a ceiling.
 */
export class Router {
  constructor(
    private readonly registry: FunctionRegistry,
    private readonly latency: LatencyStats,
    private readonly breakers: CircuitBreakers,
    private readonly kv: KvStore,
    private readonly rng: Rng,
  ) {}

  private latencyLabel(s: LatencySnapshot): number | typeof NO_DATA {
    return latencyView(s).p50_ms;
  }

  /** The candidate refs a strategy chooses among. */
  private candidateRefs(input: RouteInput): string[] {
    // Built-ins and the caller's own active functions; marketplace functions only when named.
    return namedCandidates(input.strategy, input.config) ?? this.registry.ownAndBuiltIn(input.scope).map((f) => f.id);
  }

  async decide(input: RouteInput): Promise<RouteDecision> {
    const reports: CandidateReport[] = [];
    const caller = healthCallerOf(input.scope);
    const eligible: FunctionDescriptor[] = [];
    const ceilingCost = input.config.max_cost_per_unit;
    const ceilingLatency = input.config.max_latency_ms;
    const seen = new Set<string>();
    // Weights by the function they name, whichever keys name it ("cost-plus" and its id add up).
    const weightById = new Map<string, number>();
    if (input.strategy === 'weighted') {
      for (const [ref, w] of Object.entries(input.config.weights ?? {})) {
        const id = this.registry.resolveForPolicy(ref, input.scope, input.policySavedAt)?.id;
        if (id !== undefined && Number.isFinite(w) && w > 0) weightById.set(id, (weightById.get(id) ?? 0) + w);
      }
    }
    for (const ref of this.candidateRefs(input)) {
      const fn = this.registry.resolveForPolicy(ref, input.scope, input.policySavedAt);
      if (!fn) {
        reports.push({ function: ref, id: null, kept: false, reason: 'unreachable' });
        continue;
      }
      if (seen.has(fn.id)) continue;
      seen.add(fn.id);
      const lat = this.latency.snapshot(fn.id);
      const base: CandidateReport = { function: fn.name, id: fn.id, kept: false, cost_per_unit: effectiveCost(fn), latency_p50_ms: this.latencyLabel(lat) };
      if (fn.status !== 'active') reports.push({ ...base, reason: 'not active', detail: fn.status });
      else if (fn.executionType === 'pipeline') reports.push({ ...base, reason: 'pipeline unavailable' });
      else if (ceilingCost !== undefined && dec(effectiveCost(fn)).gt(dec(ceilingCost))) {
        const slow = ceilingLatency !== undefined && lat.p50_ms !== null && lat.p50_ms > ceilingLatency;
        reports.push({ ...base, reason: 'cost ceiling', detail: `${effectiveCost(fn)} > ${ceilingCost}`, ...(slow ? { also: [{ reason: 'latency ceiling' as const, detail: latencyCeilingDetail(lat.p50_ms as number, ceilingLatency, this.latency.failures(fn.id)) }] } : {}) });
      } else if (ceilingLatency !== undefined && lat.p50_ms !== null && lat.p50_ms > ceilingLatency) reports.push({ ...base, reason: 'latency ceiling', detail: latencyCeilingDetail(lat.p50_ms, ceilingLatency, this.latency.failures(fn.id)) });
      // Before the breaker: a candidate reported `breaker open` is one its breaker alone keeps out (a retry may find it).
      else if (input.strategy === 'weighted' && !weightById.has(fn.id)) reports.push({ ...base, reason: 'no weight' });
      else if (this.breakers.state(fn.id, caller) === 'open') {
        const view = this.breakers.view(fn.id, caller);
        const trial = view.retry_at ? `a trial call from ${view.retry_at}` : null;
        const detail = view.applies_to === 'this_workspace' ? `open for this workspace's calls, which kept failing; other workspaces' calls still reach it${trial ? `; ${trial}` : ''}` : trial;
        reports.push({ ...base, reason: 'breaker open', ...(detail ? { detail } : {}) });
      } else {
        reports.push({ ...base, kept: true });
        eligible.push(fn);
      }
    }
    // Under a policy, the rule that sends this context to its function, named in the trace whether or not that function may run.
    const appliedRule = (): AppliedRule | undefined => {
      if (input.strategy !== 'policy') return undefined;
      const rules = input.config.rules ?? [];
      const index = firstMatchingRule(rules, input.context);
      const matched = rules[index];
      if (matched) return { index, ...(matched.name ? { name: matched.name } : {}), when: matched.when, use: matched.use };
      return input.config.default_function ? { index: -1, default_function: input.config.default_function } : undefined;
    };
    /** `decisive`: the reports whose reasons keep this call from a price (all of them unless a policy's rules narrowed them). */
    const fail = (message: string, rule?: AppliedRule, decisive?: CandidateReport[]): never => {
      // Open breakers pass: the first to let a trial through says when the same call may find a candidate.
      const retryAfterS = this.breakers.firstTrialInS((decisive ?? reports).flatMap((r) => (r.reason === 'breaker open' && r.id ? [r.id] : [])), caller);
      throw new EngineError('no_eligible_function', message, {
        candidates: reports,
        ...(decisive ? { decisive } : {}),
        strategy: input.strategy,
        ...(input.policyId ? { policyId: input.policyId } : {}),
        ...(input.policyStrategy ? { policyStrategy: input.policyStrategy } : {}),
        ...(retryAfterS ? { retryAfterS } : {}),
        ...(rule ? { rule } : {}),
        ...(rule && rule.index >= 0 ? { ruleMatched: true } : {}),
      });
    };
    // Under a policy the rules decide first: the policy case says which function the context goes to, and why it cannot run.
    if (eligible.length === 0 && input.strategy !== 'policy') fail(`No candidate function is eligible under strategy ${input.strategy}.`, appliedRule());

    const pick = (fn: FunctionDescriptor, extra: Partial<RouteDecision> = {}): RouteDecision => ({ strategy: input.strategy, chosen: fn, eligible, candidates: reports, ...extra });
    // A reference in a policy means what the registry resolves it to (an fn_… id is never taken as a name), and nothing else.
    const idOf = (ref: string): string | undefined => this.registry.resolveForPolicy(ref, input.scope, input.policySavedAt)?.id;
    const eligibleFor = (ref: string): FunctionDescriptor | undefined => {
      const id = idOf(ref);
      return id === undefined ? undefined : eligible.find((f) => f.id === id);
    };

    switch (input.strategy) {
      case 'policy': {
        const rule = appliedRule();
        const index = rule?.index ?? -1;
        const target = rule ? ('use' in rule ? rule.use : rule.default_function) : undefined;
        const chosen = target ? eligibleFor(target) : undefined;
        const targetId = target ? idOf(target) : undefined;
        for (const r of reports) {
          if (r.kept && chosen && r.id !== chosen.id) {
            r.kept = false;
            r.reason = 'rule miss';
          } else if (!r.kept && r.reason !== 'rule miss' && !(targetId !== undefined && r.id === targetId) && r.function !== target) {
            // Left out already (a ceiling, a breaker), and no rule sends this context to it either: raising its ceiling alone would not let it price.
            r.also = [...(r.also ?? []), { reason: 'rule miss', detail: 'no rule sends this context to it' }];
          }
        }
        if (!chosen) {
          for (const r of reports) if (r.kept) Object.assign(r, { kept: false, reason: 'rule miss' });
          // Why the function the policy sends this context to cannot take it: its own report's reason. Only that reason is a
          // lever: another function's ceiling or breaker is not what keeps this context from a price.
          const targetReport = target ? reports.find((r) => (targetId !== undefined && r.id === targetId) || r.function === target) : undefined;
          const why = target ? (targetReport?.reason ?? 'unreachable') : undefined;
          fail(
            index >= 0
              ? `Rule ${index} matched, but its function ${target as string} is not eligible (${why as string})${input.config.default_function ? '; default_function applies only when no rule matches' : ''}.`
              : target
                ? `No rule matched the context, and the policy's default_function ${target} is not eligible (${why as string}).`
                : 'No rule matched the context and the policy has no default_function.',
            rule,
            targetReport ? [targetReport] : [],
          );
        }
        return pick(chosen as FunctionDescriptor, { ...(rule ? { rule } : {}), eligible: [chosen as FunctionDescriptor] });
      }
      case 'cheapest': {
        // Within a cost tie: a cold function (fewer samples than LATENCY_COLD_BELOW) is tried first, the fewest samples
        // first, so a never-timed one comes before one timed once or twice, as fastest explores: else the one timed first
        // would keep the tie's traffic for good and the others never get a latency to compare. Then p50; then id. A cold
        // one that failed for this caller within the window, or one with no latency to rank by, comes last.
        const tieRank = new Map(
          eligible.map((f) => {
            const snap = this.latency.snapshot(f.id);
            const rank: [number, number] = snap.cold ? (this.latency.failedFor(f.id, caller) ? [2, 0] : [0, snap.samples]) : snap.p50_ms === null ? [2, 0] : [1, snap.p50_ms];
            return [f.id, rank];
          }),
        );
        const rankOf = (f: FunctionDescriptor): [number, number] => tieRank.get(f.id) as [number, number];
        const byRank = (a: FunctionDescriptor, b: FunctionDescriptor): number => rankOf(a)[0] - rankOf(b)[0] || rankOf(a)[1] - rankOf(b)[1];
        const sorted = [...eligible].sort((a, b) => dec(effectiveCost(a)).comparedTo(dec(effectiveCost(b))) || byRank(a, b) || byId(a, b));
        const chosen = sorted[0] as FunctionDescriptor;
        return pick(chosen, { statistic: { cost_per_unit: effectiveCost(chosen), tie_break: cheapestTieBreak(this.latency.coldBelow) }, alternates: sorted.slice(1) });
      }
      case 'fastest': {
        const snaps = eligible.map((f) => ({ f, s: this.latency.snapshot(f.id) }));
        // A cold function that failed for this caller within the window is not explored again for it on every call (its one
        // failure sample keeps it cold): it comes last, until that failure leaves the window. Others still explore it.
        const failedHere = (f: FunctionDescriptor): boolean => this.latency.failedFor(f.id, caller);
        const cold = snaps.filter((x) => x.s.cold && !failedHere(x.f)).map((x) => x.f).sort((a, b) => byId(a, b));
        const coldFailedHere = snaps.filter((x) => x.s.cold && failedHere(x.f)).map((x) => x.f).sort((a, b) => byId(a, b));
        const withP50 = snaps.filter((x) => !x.s.cold && x.s.p50_ms !== null).sort((a, b) => (a.s.p50_ms as number) - (b.s.p50_ms as number) || byId(a.f, b.f));
        // Explored enough, but every recent call to it was declined by its endpoint: no latency to rank it by, so last.
        const declining = snaps.filter((x) => !x.s.cold && x.s.p50_ms === null).map((x) => x.f).sort((a, b) => byId(a, b));
        // After the choice: the other cold functions, then the warm ones fastest first, then the declining ones.
        // Another workspace's function's sample count is its call volume, which this caller reads only as the leaderboard would.
        const samplesOf = (f: FunctionDescriptor): number | null => (this.breakers.showsVolume(f, input.scope.workspaceId) ? this.latency.snapshot(f.id).samples : null);
        const rest = (chosen: FunctionDescriptor) => [...cold, ...withP50.map((x) => x.f), ...declining, ...coldFailedHere].filter((f) => f !== chosen);
        if (cold.length > 0) {
          const chosen = cold[Math.floor(this.rng() * cold.length)] as FunctionDescriptor;
          // An exploration that fails costs the caller no error: the fastest warm function that may price the context answers,
          // or, with none, the next cold one that may (one more function, not the whole list; a built-in without its inputs would
          // only decline, and the call end in an error another warm one could have spared).
          const canPrice = (f: FunctionDescriptor) => f !== chosen && mayPrice(f, input.context, input.market);
          const afterFailure = withP50.map((x) => x.f).find(canPrice) ?? cold.find(canPrice);
          // Which function is explored and among which: a reader of the trace sees why the choice was not by latency.
          return pick(chosen, { statistic: { name: 'exploring cold function', function: chosen.name, samples: samplesOf(chosen), cold: cold.map((f) => f.name) }, alternates: rest(chosen), ...(afterFailure ? { afterFailure: [afterFailure] } : {}) });
        }
        if (withP50.length === 0 && declining.length > 0) {
          const chosen = declining[0] as FunctionDescriptor;
          return pick(chosen, { statistic: { name: 'no latency samples: its endpoint declined every recent call', samples: 0 }, alternates: rest(chosen) });
        }
        if (withP50.length === 0) {
          const chosen = coldFailedHere[0] as FunctionDescriptor;
          return pick(chosen, { statistic: { name: 'cold, and failed for this workspace within the window: no other candidate', samples: samplesOf(chosen) }, alternates: rest(chosen) });
        }
        const best = (withP50[0] as { s: LatencySnapshot }).s.p50_ms as number;
        const band = input.config.tie_band_pct ?? DEFAULT_TIE_BAND_PCT;
        const inBand = withP50.filter((x) => (x.s.p50_ms as number) <= best * (1 + band / 100));
        const choice = inBand[Math.floor(this.rng() * inBand.length)] as { f: FunctionDescriptor; s: LatencySnapshot };
        return pick(choice.f, {
          statistic: { name: 'windowed p50 latency', p50_ms: choice.s.p50_ms, p95_ms: choice.s.p95_ms, samples: samplesOf(choice.f), window_ms: choice.s.window_ms, tie_band_pct: band, in_band: inBand.map((x) => x.f.name) },
          alternates: rest(choice.f),
        });
      }
      case 'round_robin': {
        const sorted = [...eligible].sort((a, b) => byId(a, b));
        const n = await this.kv.incr(roundRobinKey(input.policyId, input.scope.workspaceId), 1, 7 * 86_400_000);
        const at = (n - 1) % sorted.length;
        const chosen = sorted[at] as FunctionDescriptor;
        // After the choice: the rest of the cycle from there.
        // `counter` is the policy's running count (it keeps counting past the number of candidates); `position` is the
        // place in this cycle it lands on, which is what a reader of the trace looks for.
        return pick(chosen, { statistic: { name: 'round-robin turn', counter: n, of: sorted.length, position: at + 1, cycle: sorted.map((f) => f.name) }, alternates: [...sorted.slice(at + 1), ...sorted.slice(0, at)] });
      }
      case 'weighted': {
        const weightOf = (f: FunctionDescriptor) => weightById.get(f.id) ?? 0;
        const total = eligible.reduce((s, f) => s + weightOf(f), 0);
        let r = this.rng() * total;
        let chosen = eligible[eligible.length - 1] as FunctionDescriptor;
        for (const f of eligible) {
          r -= weightOf(f);
          if (r < 0) {
            chosen = f;
            break;
          }
        }
        // After the choice: the others heaviest first (then by id), without spending draws of the seeded source.
        const rest = eligible.filter((f) => f !== chosen).sort((a, b) => weightOf(b) - weightOf(a) || byId(a, b));
        return pick(chosen, { statistic: { weight: weightOf(chosen), total_weight: total }, alternates: rest });
      }
      case 'priority': {
        const order = input.config.order ?? [];
        const ranked = [...new Set(order.map(eligibleFor).filter((f): f is FunctionDescriptor => !!f))];
        const chosen = ranked[0] as FunctionDescriptor;
        return pick(chosen, { statistic: { rank: order.findIndex((r) => idOf(r) === chosen.id) }, alternates: ranked.slice(1), alternatesAfterFailure: true });
      }
      case 'default':
      default: {
        const prefs = defaultPreference(input.context, input.market);
        const ranked = [...prefs.map((name) => eligible.find((f) => f.name === name)).filter((f): f is FunctionDescriptor => !!f), ...eligible.filter((f) => !prefs.includes(f.name))];
        const chosen = ranked[0] as FunctionDescriptor;
        // The whole order, as it is tried: the trace shows what comes after the choice if it cannot price the context.
        return pick(chosen, { statistic: { name: 'context-based choice', order: ranked.map((f) => f.name) }, alternates: ranked.slice(1), alternatesAfterFailure: true });
      }
    }
  }
}

/** How `cheapest` breaks a cost tie, as its trace states it (docs/routing.md, "Strategies"). */
export const cheapestTieBreak = (coldBelow: number): string =>
  `cold first (fewer than ${coldBelow} latency samples), the fewest samples first, so never timed before timed; then latency p50; then id`;

/**
 * The functions a policy's configuration names for its strategy (`order`, the weights' keys, the rules' targets and
 * default function, else `candidates`), or undefined when it names none and the strategy takes the built-ins and the
 * workspace's own. A routing preference keeps these: it changes how the policy chooses, not among what.
 */
export function namedCandidates(strategy: Strategy, c: PolicyConfig): string[] | undefined {
  switch (strategy) {
    case 'weighted':
      return Object.keys(c.weights ?? {});
    case 'priority':
      return c.order ?? [];
    case 'policy':
      return [...new Set([...(c.rules ?? []).map((r) => r.use), ...(c.default_function ? [c.default_function] : [])])];
    default:
      return c.candidates;
  }
}
