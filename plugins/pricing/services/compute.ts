import type { Request } from 'express';
import { callerScopeOf } from './caller-scope';
import type { Config } from '../../../config';
import type { AdmissionRequest, Reservation } from '../../../core/admission';
import { freeReservation } from '../../../core/admission';
import { clientIp } from '../../../core/address';
import { ApiError } from '../../../core/errors';
import type { Principal } from '../../../core/auth';
import type { Hooks } from '../../../core/hooks';
import type { RouteTable } from '../../../core/http/pipeline';
import type { RouteSpec } from '../../../core/http/route';
import type { KvStore } from '../../../core/kv';
import type { CallerScope, MarketEvidence, PricingEngine, PriceOutcome, TraceStage } from '../../../engine';
import { EngineError } from '../../../engine';
import { IDEMPOTENCY_HEADER, REPLAYED_HEADER, claimOffered, seemsToManageWorkspace } from '../../identity';
import { isCallerGoneError, receipt, receiptOfRow, remaining } from '../../usage';
import type { CallReplays, RecordedCall, RecordedEvent, UsageRecorder } from '../../usage';
import { DEMO_WORKSPACE_ID } from '../migrations/0001-pricing-schema';
import { callerGone, callerLeftSignal } from '../../../core/http/caller-gone';
import { idempotencyKeyReused } from './compute-call';
import type { ComputeCall, ComputeResult } from './compute-call';
import { failedCallFunction, failedOthers, usageEventOf } from './compute-usage-event';
import { toApiError } from './engine-errors';
import type { ErrorAudience } from './engine-errors';
import type { MarketEvidenceSlot } from './market-evidence';
import { KeyedTurns } from './keyed-turns';
import { mayCall, nextActions } from './next-actions';
import type { PolicyStore } from './policy-store';

/** What admission knows a call as: a batch item is paid as part of its batch. */
const admissionOperation = (call: ComputeCall): AdmissionRequest['operation'] => (call.operation === 'batch_item' ? 'batch' : call.operation);

/**
 * How a failed call's hint may speak of routing policies to this caller: one who manages the workspace but whose credential
 * was narrowed is told which credential may change them, not to ask an owner (it may be one).
 */
function policyAccessOf(p: Principal | null, create: RouteSpec | undefined): 'manages' | 'ask_manager' | 'needs_full_access' | undefined {
  if (p === null) return undefined;
  if (!seemsToManageWorkspace(p) || !create) return 'ask_manager';
  return mayCall(p, create) ? 'manages' : 'needs_full_access';
}

const toMs = (x: number) => Math.round(x * 1000) / 1000;
const ms = (from: number) => toMs(performance.now() - from);

/**
 * One priced call, the same for REST, batch items, the price router, the demo and MCP:
 * admission (reserve) → engine → commit or release → usage event written → response body with
 * trace, savings, next actions, remaining allowance and receipt.
 */
export class ComputeService {
  /** One call at a time per Idempotency-Key, on this instance and, with Redis, across instances. */
  private readonly turns: KeyedTurns;

  constructor(
    private readonly engine: PricingEngine,
    private readonly policies: PolicyStore,
    private readonly hooks: Hooks,
    private readonly recorder: UsageRecorder,
    private readonly routes: RouteTable,
    private readonly config: Config,
    private readonly publicUrl: () => string,
    private readonly market: MarketEvidenceSlot,
    private readonly replays: CallReplays,
    kv: KvStore,
  ) {
    this.turns = new KeyedTurns(kv);
  }

  /**
   * Marks recorded calls whose answer reached nobody: not delivered, not charged, and what they
   * committed given back (a reply's notDelivered, which the pipeline runs when the caller has gone;
   * for a batch, every item).
   */
  notDelivered(usageEventIds: string[], reservations: ReadonlyArray<Reservation | null> = []): Promise<void> {
    return this.recorder.undeliver(usageEventIds, reservations);
  }

  /**
   * Runs a batch sent with an Idempotency-Key (`run` prices its items, each under the batch's key and
   * its index): the key's turn is taken first, as a single call's, so a single call or another batch
   * under the key waits for this one. A key that holds a charged call made with another request (a
   * single call's, or this batch's with another body) refuses the whole batch with 422
   * idempotency_key_reused before any item runs.
   */
  async keyedBatch<T>(principal: Principal, req: Request, idempotency: { key: string; fingerprint: string }, run: () => Promise<T>): Promise<T> {
    const done = await this.turns.take(`${principal.workspaceId}\n${idempotency.key}`, this.config.limits.idempotencyWaitMs, () => callerLeftSignal(req));
    try {
      const held = await this.replays.heldByAnother(principal.workspaceId, idempotency.key, idempotency.fingerprint);
      if (held !== null) throw idempotencyKeyReused(held, this.replays.ttlHours);
      return await run();
    } finally {
      done();
    }
  }

  /**
   * A call with an Idempotency-Key takes its key's turn first: one with the same key in flight (a
   * retry racing it, on this instance or another sharing Redis) ends before this one looks the key up.
   */
  async compute(call: ComputeCall): Promise<ComputeResult> {
    const p = call.principal;
    if (!p || !call.idempotency) return this.computeOnce(call);
    const waitFrom = performance.now();
    const done = await this.turns.take(`${p.workspaceId}\n${call.idempotency.key}`, this.config.limits.idempotencyWaitMs, () => callerLeftSignal(call.req));
    const waitedMs = performance.now() - waitFrom;
    let held = false;
    try {
      const r = await this.computeOnce(call, waitedMs);
      // A replay has nothing that could still be marked: its turn ends here.
      if (call.holdTurn && !r.body.idempotent_replay) {
        held = true;
        return { ...r, releaseTurn: done };
      }
      return r;
    } finally {
      if (!held) done();
    }
  }

  /** Throws the plan's refusal when the pinned function is a marketplace one the caller's plan does not reach; any other refusal of the pin is the pricing's to give. */
  private refuseOutsidePlan(call: ComputeCall, scope: CallerScope, audience: () => ErrorAudience): void {
    try {
      this.engine.assertWithinPlan({ id: call.functionId, name: call.functionName }, scope);
    } catch (err) {
      throw toApiError(err, audience());
    }
  }

  /** `step`, counting `priced` when it fails: not delivered when its caller left, else not answered. */
  private countedIfFailing<T>(priced: PriceOutcome, step: Promise<T>): Promise<T> {
    return step.catch((err: unknown) => {
      this.engine.countPriced(priced, isCallerGoneError(err) ? 'not_delivered' : 'not_answered');
      throw err;
    });
  }

  /**
   * `waitedMs`: how long the call waited for its Idempotency-Key's turn, a stage of its own (up to IDEMPOTENCY_WAIT_MS).
   * `earlier`: this call's pricing whose key was claimed by a concurrent call that was then not delivered; the call is
   * counted once, under it unless it is priced again (that pricing then counts).
   */
  private async computeOnce(call: ComputeCall, waitedMs?: number, earlier?: PriceOutcome): Promise<ComputeResult> {
    const t0 = performance.now();
    const stages: TraceStage[] = [];
    if (call.startedAt !== undefined) stages.push({ stage: 'authenticate_and_validate', ms: toMs(t0 - call.startedAt - (waitedMs ?? 0)) });
    if (waitedMs !== undefined) stages.push({ stage: 'idempotency_wait', ms: toMs(waitedMs) });
    const p = call.principal;
    const demo = p === null;
    const scope = p ? callerScopeOf(p) : { workspaceId: DEMO_WORKSPACE_ID, builtInsOnly: true };
    // Keys belong to a workspace: the keyless demo, which charges nothing, keeps none.
    const keyed = p && call.idempotency ? { ...call.idempotency, workspaceId: p.workspaceId } : null;
    // Refused or answered before pricing again: the earlier pricing is the one this call is counted under.
    // The step itself when there is no earlier pricing: the hot path gets no extra promise.
    const countEarlier = <T>(step: Promise<T>): Promise<T> => (earlier ? this.countedIfFailing(earlier, step) : step);
    if (keyed) {
      const first = await countEarlier(this.replays.find(keyed.workspaceId, keyed.key));
      const replayed = first ? await countEarlier(this.replay(call, first, stages, t0)) : null;
      if (replayed) {
        // Answered with the price of a call under the same key, as a lost claim is (below).
        if (earlier) this.engine.countPriced(earlier, 'ok');
        return replayed;
      }
    }

    const errorAudience = (market: MarketEvidence | null, hasPolicy: boolean) => ({ keyless: p === null, sandbox: scope.builtInsOnly && p !== null, claimOffered: claimOffered(this.config), context: call.context, market, hasPolicy, policyAccess: policyAccessOf(p, this.routes.find('policies.create')), observationsServed: this.routes.offers('post', '/api/data/observations'), ...(call.functionName ? { pinnedBy: 'function_name' as const } : call.functionId ? { pinnedBy: 'function_id' as const } : {}) });
    // A marketplace function named by a sandbox is refused for its plan (403, no call) whatever is left of its day's calls:
    // told at once that the function is outside its plan, not to wait for a reset that changes nothing. (The keyless demo
    // answers it with a 404 that is a call of its budget, recorded as such.)
    if (p && scope.builtInsOnly && (call.functionId || call.functionName)) this.refuseOutsidePlan(call, scope, () => errorAudience(null, false));

    let t = performance.now();
    const reservation = call.reservation ?? (await countEarlier(this.hooks.admit({ operation: admissionOperation(call), principal: p, units: 1, req: call.req, channel: call.channel })));
    if (!call.reservation) stages.push({ stage: 'admission', ms: ms(t), admitter: reservation.admitter, paid_via: reservation.paidVia });

    let outcome: PriceOutcome;
    let hasDefaultPolicy = false;
    let market: MarketEvidence | null = null;
    try {
      const policy = p ? await this.policies.defaultFor(p.workspaceId) : null;
      hasDefaultPolicy = policy !== null;
      t = performance.now();
      const lookup = await this.market.forContext(call.context);
      market = lookup?.evidence ?? null;
      if (lookup) {
        stages.push({
          stage: 'market_evidence',
          ms: ms(t),
          found: market !== null,
          ...(lookup.outcome === 'timeout' || lookup.outcome === 'error' ? { unavailable: lookup.outcome } : {}),
          ...(market ? { product_type: market.product_type, currency: market.currency, observations: market.observations, ...(market.withheld ? { withheld: market.withheld } : { sources: market.source_prices.length }) } : {}),
        });
      }
      outcome = await this.engine.price({
        context: call.context,
        scope,
        policy,
        market,
        preference: call.preference,
        ...(call.functionId || call.functionName ? { pin: { id: call.functionId, name: call.functionName } } : {}),
      });
    } catch (err) {
      if (!call.reservation) await reservation.release();
      const mapped = toApiError(err, errorAudience(market, hasDefaultPolicy));
      // A call refused for its body (400) or its plan (403) was refused before pricing and is no call (docs/routing.md); the
      // others are recorded with the code their caller was given.
      if (err instanceof EngineError && mapped instanceof ApiError && mapped.status !== 400 && mapped.status !== 403) {
        // A call where every function failed names the chosen one, so its failure counts against it (leaderboard reliability);
        // a call a function it reached refused names that one, so the caller finds it by function (counted against nothing).
        const named = failedCallFunction(err, Boolean(call.functionId || call.functionName));
        // The failed functions but the chosen one the event names: one that refused the context did not fail.
        const failedFunctionIds = failedOthers(err.details.attempts ?? [], err.code === 'functions_failed' ? (named.functionId ?? undefined) : undefined);
        const usageEventId = await this.recorder.record(usageEventOf(call, { ...named, failedFunctionIds, status: 'error', errorCode: mapped.code, cost: '0', billable: false, paidVia: null, latencyMs: ms(t0) }));
        // The failed call's record, named as a priced call's receipt names its own: a batch's items share one request id,
        // so this is how a failed item's event is found. A keyless demo call's record is nobody's to open (its receipt names no id).
        throw demo ? mapped : mapped.with({ fields: { usage_event_id: usageEventId } });
      }
      throw mapped;
    }
    stages.push(...outcome.stages);

    const charged = { amount: demo ? '0.00' : outcome.cost, currency: 'USDC', paid_via: reservation.paidVia, billable: !demo && reservation.paidVia === null };
    stages.push({ stage: 'charge', ms: 0, ...charged });
    t = performance.now();
    const usageEvent = usageEventOf(call, {
      status: 'ok',
      functionId: outcome.fn.id,
      functionName: outcome.fn.name,
      strategy: outcome.strategy,
      price: outcome.result.price,
      currency: outcome.result.currency,
      confidence: outcome.result.confidence,
      cost: charged.amount,
      billable: charged.billable,
      paidVia: reservation.paidVia,
      cached: outcome.cached,
      fallbackUsed: outcome.fallbackUsed,
      networkEvidence: outcome.result.inputs_used.includes('network_observations'),
      failedFunctionIds: failedOthers(outcome.attempts, outcome.fn.id),
      latencyMs: ms(t0),
    });
    // A reservation the caller brought is the caller's to settle.
    const settles = call.reservation ? null : reservation;
    // The part of the answer a retry with the key is given again.
    const answer = {
      price: outcome.result.price,
      currency: outcome.result.currency,
      confidence: outcome.result.confidence,
      function: { id: outcome.fn.id, name: outcome.fn.name, built_in: outcome.fn.builtIn, execution_type: outcome.fn.executionType },
      strategy: outcome.strategy,
      method: {
        confidence_factors: outcome.result.confidence_factors,
        inputs_used: outcome.result.inputs_used,
        notes: outcome.result.notes,
        ...(outcome.result.details ? { details: outcome.result.details } : {}),
      },
    };
    const chosen = { id: outcome.fn.id, name: outcome.fn.name };
    const cache = outcome.cached ? 'hit' : outcome.stages.some((s) => s.stage === 'cache' && s.disabled) ? 'disabled' : 'miss';
    let recorded: RecordedEvent;
    // The function a pinned call named: kept with a keyed answer, and what its price_in_batch example pins.
    const pinned = resolvedPin(outcome.stages);
    // Counted once the answer's fate is known: a price whose record could not be written (or whose key's concurrent
    // call could not be answered instead) is not answered; one whose caller left meanwhile is not delivered.
    const recording = <T>(write: Promise<T>): Promise<T> => this.countedIfFailing(outcome, write);
    if (keyed) {
      // What a retry with the key answers: the answer but for what the replay rebuilds (a replay consults no cache and
      // runs nothing, so its trace keeps only who answered, and the function a pinned call named, for its next actions).
      const response = { ...answer, trace: { chosen_function: chosen, fallback_used: outcome.fallbackUsed, ...(pinned ? { pinned_function_id: pinned } : {}) }, request_id: call.requestId };
      const claimed = await recording(this.recorder.recordAndSettle(usageEvent, settles, () => callerGone(call.req), { key: keyed.key, fingerprint: keyed.fingerprint, response, batchKey: keyed.batchKey }));
      if (!claimed) {
        // Another call with this key was recorded first (concurrently): this one is not charged, and answers that one.
        const first = await recording(this.replays.find(keyed.workspaceId, keyed.key));
        const replayed = first ? await recording(this.replay(call, first, stages.filter((s) => s.stage === 'authenticate_and_validate' || s.stage === 'idempotency_wait'), t0)) : null;
        if (replayed) {
          // Answered, with the concurrent call's price: counted under the function that priced this one.
          this.engine.countPriced(outcome, 'ok');
          return replayed;
        }
        // That call was not delivered (its key is free again): this one is priced and claims it, once more at most (and
        // that pricing is the one counted).
        if (!earlier) return this.computeOnce(call, undefined, outcome);
        this.engine.countPriced(outcome, 'not_answered');
        throw new ApiError('conflict', `Another call with this ${IDEMPOTENCY_HEADER} was being recorded at the same time; this one was not charged.`, { hint: 'Send the same request with the same key again: it answers what the other call recorded.' });
      }
      recorded = claimed;
    } else {
      recorded = await recording(this.recorder.recordAndSettle(usageEvent, settles, () => callerGone(call.req)));
    }
    this.engine.countPriced(outcome, 'ok');
    const usageEventId = recorded.id;
    stages.push({ stage: 'record_usage', ms: ms(t), usage_event_id: usageEventId });

    const total = call.startedAt !== undefined ? ms(call.startedAt) : ms(t0);
    const functionMs = stages.filter((s) => s.stage === 'execute').reduce((sum, s) => sum + s.ms, 0);
    const body: Record<string, unknown> = {
      ...answer,
      trace: {
        stages,
        chosen_function: chosen,
        fallback_used: outcome.fallbackUsed,
        cache,
        charged,
        attempts: outcome.attempts,
        overhead_ms: Math.max(0, toMs(total - functionMs)),
        total_ms: total,
      },
      // The demo charges nothing, whichever function answers: there is nothing to have saved.
      ...(outcome.savings && !demo ? { savings: outcome.savings } : {}),
      // The pinned function as resolved (a function_name names it; a fallback may have answered in its place).
      next_actions: this.nextActionsOf(call, usageEventId, { price: outcome.result.price, strategy: outcome.strategy, pinnedFunctionId: pinned }, hasDefaultPolicy, reservation.remaining),
      // A keyless caller's receipt offers registration only where this caller would get one (open, its daily ones not spent).
      receipt: receipt(this.publicUrl(), recorded, usageEvent, p, mayCall(null, this.routes.find('agents.register'), clientIp(call.req))),
    };
    const left = remaining(p, reservation, call.rateLimit);
    if (left) body.remaining = left;
    return { body, headers: reservation.headers ?? {}, usageEventId, reservation: settles };
  }

  /** `standing`: what the caller's admitter reports left (a sandbox's daily calls), which decides whether priced calls are offered. */
  private nextActionsOf(call: ComputeCall, usageEventId: string, answered: { price: string; strategy: string; pinnedFunctionId: string | undefined }, hasDefaultPolicy: boolean, standing: Record<string, unknown> | undefined) {
    const daily = (standing?.daily_compute_calls as { remaining?: unknown } | undefined)?.remaining;
    const allowances = [typeof daily === 'number' ? daily : undefined, call.demoBudgetLeft].filter((n): n is number => n !== undefined);
    return nextActions(call.principal, this.routes, this.config.limits.nextActionsMax, {
      pricedCallsLeft: allowances.length > 0 ? Math.min(...allowances) : undefined,
      pinned: call.functionId !== undefined || call.functionName !== undefined,
      pinnedFunctionId: answered.pinnedFunctionId ?? call.functionId,
      preference: call.preference,
      usageEventId,
      price: answered.price,
      strategy: answered.strategy,
      context: call.context,
      sandboxCallsPerDay: this.config.limits.sandbox.computeCallsPerDay,
      inBatch: call.operation === 'batch_item',
      hasDefaultPolicy,
      credentialIgnored: call.credentialIgnored === true,
      address: clientIp(call.req),
    });
  }

  /**
   * The answer to a retry of a call recorded under the same Idempotency-Key: that call's price and
   * method, its receipt as the record is now, and nothing charged or recorded now. Another request
   * under the key is 422 idempotency_key_reused. No savings: this call cost nothing. Null when the
   * key was let go meanwhile (that call was just marked not delivered): this one is priced afresh.
   */
  private async replay(call: ComputeCall, first: RecordedCall, stages: TraceStage[], t0: number): Promise<ComputeResult | null> {
    const p = call.principal as Principal;
    if (first.fingerprint !== call.idempotency?.fingerprint) throw idempotencyKeyReused(first.event.id, this.replays.ttlHours);
    // Its answer now reaches a caller: a not-delivered mark arriving later (from any instance) leaves it charged.
    if (!(await this.replays.markReplayed(p.workspaceId, call.idempotency.key, first.event.id))) return null;
    const { request_id: firstRequestId, trace, ...answer } = first.response as { request_id: string; trace: Record<string, unknown>; price: string; strategy: string };
    stages.push({ stage: 'idempotent_replay', ms: ms(t0), usage_event_id: first.event.id, first_request_id: firstRequestId });
    const total = call.startedAt !== undefined ? ms(call.startedAt) : ms(t0);
    const hasDefaultPolicy = (await this.policies.defaultFor(p.workspaceId)) !== null;
    const standing = await this.hooks.standing({ operation: admissionOperation(call), principal: p, req: call.req, channel: call.channel });
    const body: Record<string, unknown> = {
      ...answer,
      trace: {
        stages,
        chosen_function: trace.chosen_function,
        fallback_used: trace.fallback_used,
        // This request consulted no cache and ran nothing: the answer is the first call's, and so are chosen_function and fallback_used.
        cache: 'not_consulted',
        charged: { amount: '0.00', currency: 'USDC', paid_via: null, billable: false },
        attempts: [],
        overhead_ms: total,
        total_ms: total,
      },
      next_actions: this.nextActionsOf(call, first.event.id, { price: answer.price, strategy: answer.strategy, pinnedFunctionId: answer.strategy === 'explicit' ? replayedPin(trace) : undefined }, hasDefaultPolicy, standing ?? undefined),
      receipt: receiptOfRow(this.publicUrl(), first.event, p, this.config.identity.selfRegistrationOpen),
      idempotent_replay: { first_request_id: firstRequestId, recorded_at: first.event.created_at.toISOString() },
    };
    const left = remaining(p, { ...freeReservation(), ...(standing ? { remaining: standing } : {}) }, call.rateLimit);
    if (left) body.remaining = left;
    return { body, headers: { [REPLAYED_HEADER]: 'true' }, usageEventId: first.event.id, reservation: null };
  }
}

/**
 * The function a replayed pinned call named, as its first call kept it; a call recorded before that was kept names it only
 * when no fallback answered (then the function that answered is the pinned one).
 */
function replayedPin(trace: Record<string, unknown>): string | undefined {
  if (typeof trace.pinned_function_id === 'string') return trace.pinned_function_id;
  return trace.fallback_used === false ? (trace.chosen_function as { id?: string } | undefined)?.id : undefined;
}

/** The function a pinned call resolved to, from its resolve stage (undefined for a routed call). */
function resolvedPin(stages: readonly TraceStage[]): string | undefined {
  const id = stages.find((s) => s.stage === 'resolve' && s.explicit === true)?.function_id;
  return typeof id === 'string' ? id : undefined;
}
