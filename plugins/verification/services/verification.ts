import { clientIp } from '../../../core/address';
import type { Request } from 'express';
import type { Reservation } from '../../../core/admission';
import { freeReservation } from '../../../core/admission';
import { ApiError } from '../../../core/errors';
import { callerLeftSignal } from '../../../core/http/caller-gone';
import { callerGone } from '../../../core/http/caller-gone';
import type { Config } from '../../../config';
import type { Channel, Principal } from '../../../core/auth';
import type { Clock } from '../../../core/clock';
import type { Hooks } from '../../../core/hooks';
import { IDEMPOTENCY_HEADER, REPLAYED_HEADER } from '../../identity';
import type { RequestRate } from '../../identity';
import type { KvStore } from '../../../core/kv';
import { dec, formatMoney } from '../../../core/money';
import { minorUnits } from '../../../engine';
import { DEMO_WORKSPACE_ID, KeyedTurns, idempotencyKeyReused } from '../../pricing';
import { callerFields, contextKeys, receipt, receiptOfRow, remaining } from '../../usage';
import type { CallReplays, RecordedCall, RecordedEvent, UsageEventInput, UsageRecorder } from '../../usage';
import type { ObservationStore } from './observations';
import { acceptedOutcomeLabel } from './labels';
import type { FunctionsByName } from './labels';
import { evaluateVerdict } from './verdict';
import type { Constraint, Observation, VerdictResult, VerdictThresholds, VerdictValue } from './verdict';

const DAY_MS = 86_400_000;

export interface VerifyCall {
  /** The caller, or null for the keyless demo (demo tenant). */
  principal: Principal | null;
  channel: Channel;
  context: Record<string, unknown>;
  /** Positive number or decimal string (already validated). */
  proposedPrice: string | number;
  req: Request;
  requestId: string;
  /** The request-rate counters of this request, reported in `remaining` for sandboxes. */
  rateLimit?: RequestRate | undefined;
  /** The call's Idempotency-Key and its request's fingerprint (callIdempotency, route verify.price); the demo keeps none. */
  idempotency?: { key: string; fingerprint: string } | undefined;
  /** The caller gives the key's turn back itself (VerifyResult.releaseTurn) once the reply is written or marked not delivered. */
  holdTurn?: boolean;
}

export interface VerifyResult {
  body: Record<string, unknown>;
  headers: Record<string, string>;
  usageEventId: string;
  /** What this verification committed, given back by notDelivered; null for a replay, which committed nothing. */
  reservation: Reservation | null;
  /** With VerifyCall.holdTurn: gives the key's turn back (after the reply). */
  releaseTurn?: () => void;
}

function positive(v: unknown): string | null {
  if (typeof v === 'number' && Number.isFinite(v) && v > 0) return dec(v).toFixed();
  if (typeof v === 'string' && v.trim() !== '') {
    try {
      const d = dec(v.trim());
      return d.greaterThan(0) ? d.toFixed() : null;
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * What an `unknown` verdict for want of evidence is told: what would decide the next one. Bounds
 * the context already gave are not asked for again: between them only the market decides.
 */
function unknownHint(constraints: { floor: unknown; ceiling: unknown }): string {
  const market = 'Observations of the product type (POST /api/data/observations, from a claimed workspace) give the market a say.';
  const lacking = [constraints.floor ? null : 'unit_cost or min_price as a floor', constraints.ceiling ? null : 'max_price as a ceiling'].filter((x): x is string => x !== null);
  const bounds = lacking.length
    ? `Your own bounds in the context decide a verdict without it: ${lacking.join(', ')}${lacking.length < 2 ? ' (the bound you gave decides only a price beyond it)' : ''}.`
    : 'Your floor and ceiling decide only a price beyond them; one between them needs the market.';
  return `Not enough market evidence for this product type and currency to judge the price. ${bounds} ${market}`;
}

/** The caller's hard lower bound: the larger of unit_cost and min_price (SPEC notes §7, §8). */
export function floorOf(context: Record<string, unknown>, digits = 2): Constraint | null {
  const found = (['unit_cost', 'min_price'] as const).map((k) => ({ k, v: positive(context[k]) })).filter((x): x is { k: 'unit_cost' | 'min_price'; v: string } => x.v !== null);
  if (found.length === 0) return null;
  const max = found.reduce((m, x) => (dec(x.v).greaterThan(dec(m)) ? x.v : m), found[0]?.v ?? '0');
  return { value: formatMoney(dec(max), 18, digits), from: found.filter((x) => dec(x.v).eq(dec(max))).map((x) => x.k) };
}

export function ceilingOf(context: Record<string, unknown>, digits = 2): Constraint | null {
  const v = positive(context.max_price);
  return v === null ? null : { value: formatMoney(dec(v), 18, digits), from: ['max_price'] };
}

/**
 * One price verification, the same for REST, the keyless demo and MCP: admission (verification
 * counts against a sandbox's daily limit) → matching observations → the pure verdict → commit →
 * usage event written → response body with the receipt.
 */
export class VerificationService {
  /** One verification at a time per Idempotency-Key, on this instance and, with Redis, across instances. */
  private readonly turns: KeyedTurns;

  constructor(
    private readonly store: ObservationStore,
    private readonly hooks: Hooks,
    private readonly recorder: UsageRecorder,
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly publicUrl: () => string,
    private readonly functions: FunctionsByName,
    /** Called once per answered verification (recorded), with its verdict: the plugin counts them in the metrics. */
    private readonly answered: (verdict: VerdictValue, channel: Channel) => void,
    private readonly replays: CallReplays,
    kv: KvStore,
    /** Whether a keyless caller at this address would get a registration (open, its daily ones not spent): its receipt offers one then. */
    private readonly registrationOffered: (address: string) => boolean = () => config.identity.selfRegistrationOpen,
  ) {
    this.turns = new KeyedTurns(kv);
  }

  /** The observations as this caller may see them: an accepted outcome's function named only where the caller could see the function. */
  private shownTo(observations: readonly Observation[], callerWorkspaceId: string | null): readonly Observation[] {
    if (!observations.some((o) => o.origin === 'accepted_outcome')) return observations;
    return observations.map((o) => {
      if (o.origin !== 'accepted_outcome') return o;
      const label = acceptedOutcomeLabel(o.source, callerWorkspaceId, this.functions);
      return label === o.source ? o : { ...o, label };
    });
  }

  thresholds(): VerdictThresholds {
    const v = this.config.verification;
    return {
      minEffectiveObservations: v.minEffectiveObservations,
      minSources: v.minSources,
      halfLifeDays: v.halfLifeDays,
      maxAgeDays: v.maxAgeDays,
      bandK: v.bandK,
      minRelativeHalfWidth: v.minRelativeHalfWidth,
    };
  }

  /** Marks a recorded verification whose answer reached nobody: not delivered, not charged, what it committed given back. */
  notDelivered(usageEventId: string, reservation: Reservation | null): Promise<void> {
    return this.recorder.undeliver([usageEventId], [reservation]);
  }

  /**
   * A verification with an Idempotency-Key takes its key's turn first: a retry racing it (on this instance or another
   * sharing Redis) waits, then answers what it recorded without counting again.
   */
  async verify(call: VerifyCall): Promise<VerifyResult> {
    const p = call.principal;
    if (!p || !call.idempotency) return this.verifyOnce(call);
    const done = await this.turns.take(`${p.workspaceId}\n${call.idempotency.key}`, this.config.limits.idempotencyWaitMs, () => callerLeftSignal(call.req));
    let held = false;
    try {
      const r = await this.verifyOnce(call);
      // A replay has nothing that could still be marked: its turn ends here.
      if (call.holdTurn && r.reservation !== null) {
        held = true;
        return { ...r, releaseTurn: done };
      }
      return r;
    } finally {
      if (!held) done();
    }
  }

  /** `again`: this call lost its key's claim to a concurrent one that was then not delivered, and verifies once more. */
  private async verifyOnce(call: VerifyCall, again = false): Promise<VerifyResult> {
    const t0 = performance.now();
    const keyed = call.principal && call.idempotency ? { ...call.idempotency, workspaceId: call.principal.workspaceId } : null;
    if (keyed) {
      const first = await this.replays.find(keyed.workspaceId, keyed.key);
      const replayed = first ? await this.replay(call, first) : null;
      if (replayed) return replayed;
    }
    const p = call.principal;
    const rawType = call.context.product_type;
    const productType = typeof rawType === 'string' && rawType.trim() !== '' ? rawType.trim() : null;
    const rawCurrency = call.context.currency;
    const currency = typeof rawCurrency === 'string' && rawCurrency.trim() !== '' ? rawCurrency.trim().toUpperCase() : 'USD';
    // Amounts in the currency's minor units at least (JPY "1500", KWD "1.500"), as compute and the receipt show them.
    const digits = minorUnits(currency);
    const proposed = formatMoney(dec(call.proposedPrice), 18, digits);
    const thresholds = this.thresholds();

    const reservation = await this.hooks.admit({ operation: 'verify', principal: p, units: 1, req: call.req });
    let verdict: VerdictResult;
    try {
      const now = this.clock.now();
      const since = new Date(now - thresholds.maxAgeDays * DAY_MS);
      const found = productType ? await this.store.forVerification(productType, currency, since, this.config.verification.maxObservationsRead, this.config.verification.maxObservationsPerAccount) : { observations: [], older: 0 };
      const current = positive(call.context.current_price);
      verdict = evaluateVerdict({
        proposedPrice: proposed,
        observations: this.shownTo(found.observations, p?.workspaceId ?? null),
        olderIgnored: found.older,
        now,
        // The caller's own quotes are those of its account, as the evidence counts them.
        callerWorkspaceId: p ? await this.store.accountOf(p.workspaceId) : null,
        currentPrice: current,
        floor: floorOf(call.context, digits),
        ceiling: ceilingOf(call.context, digits),
        thresholds,
        minorDigits: digits,
      });
      if (!productType) verdict.reasons.unshift('the context has no product_type, so no stored observation can be matched');
      const listed = call.context.competitor_prices;
      if (Array.isArray(listed) && listed.length > 0) {
        // Compute positions on them; a verdict may not: the caller's own list is one unverified source, and would echo the price it led to.
        verdict.reasons.push(
          `context.competitor_prices (${listed.length}) is not evidence for a verdict: a caller's own list is one unverified source; the band rests on observations workspaces recorded (POST /api/data/observations records these, from a claimed workspace)`,
        );
      }
    } catch (err) {
      await reservation.release();
      throw err;
    }
    const demo = p === null;
    const usageEvent: UsageEventInput = {
      workspaceId: p?.workspaceId ?? DEMO_WORKSPACE_ID,
      requestId: call.requestId,
      operation: 'verify',
      channel: call.channel,
      status: 'ok',
      price: proposed,
      currency,
      confidence: verdict.confidence,
      cost: '0',
      billable: !demo && reservation.paidVia === null,
      paidVia: reservation.paidVia,
      ...callerFields(p, call.req),
      latencyMs: Math.round((performance.now() - t0) * 1000) / 1000,
      // The currency as read (upper-cased), only when the caller sent one: the verdict's USD default is not the caller's.
      contextKeys: contextKeys(call.context, typeof rawCurrency === 'string' ? { currency } : {}),
    };
    const body: Record<string, unknown> = {
      object: 'price_verification',
      verdict: verdict.verdict,
      proposed_price: verdict.proposed_price,
      currency,
      product_type: productType,
      basis: verdict.basis,
      reasons: verdict.reasons,
      reference: verdict.reference,
      band: verdict.band,
      independence: verdict.independence,
      confidence: verdict.confidence,
      confidence_factors: verdict.confidence_factors,
      constraints: verdict.constraints,
      evidence: verdict.evidence,
      thresholds: verdict.thresholds,
    };
    // Without evidence the verdict says why; the hint says what would give one.
    if (verdict.verdict === 'unknown' && !verdict.evidence.sufficient) body.hint = [verdict.hint, unknownHint(verdict.constraints)].filter(Boolean).join(' ');
    let recorded: RecordedEvent;
    if (keyed) {
      // What a retry with the key answers: the verdict as given now (its receipt and remaining allowance are rebuilt).
      const claimed = await this.recorder.recordAndSettle(usageEvent, reservation, () => callerGone(call.req), { key: keyed.key, fingerprint: keyed.fingerprint, response: { ...body, request_id: call.requestId } });
      if (!claimed) {
        // Another call with this key was recorded first (concurrently): this one counts for nothing, and answers that one.
        const first = await this.replays.find(keyed.workspaceId, keyed.key);
        const replayed = first ? await this.replay(call, first) : null;
        if (replayed) return replayed;
        // That call was not delivered (its key is free again): this one verifies once more and claims it.
        if (!again) return this.verifyOnce(call, true);
        throw new ApiError('conflict', `Another verification with this ${IDEMPOTENCY_HEADER} was being recorded at the same time; this one was not counted.`, { hint: 'Send the same request with the same key again: it answers what the other call recorded.' });
      }
      recorded = claimed;
    } else {
      recorded = await this.recorder.recordAndSettle(usageEvent, reservation, () => callerGone(call.req));
    }
    this.answered(verdict.verdict, call.channel);
    body.receipt = receipt(this.publicUrl(), recorded, usageEvent, p, this.registrationOffered(clientIp(call.req)));
    const left = remaining(p, reservation, call.rateLimit);
    if (left) body.remaining = left;
    return { body, headers: reservation.headers ?? {}, usageEventId: recorded.id, reservation };
  }

  /**
   * The answer to a retry of a verification recorded under the same Idempotency-Key: that call's verdict, its receipt as
   * the record is now, and nothing counted or recorded now; another request under the key is 422 idempotency_key_reused.
   * Null when the key was let go meanwhile (that call was just marked not delivered): this one verifies afresh.
   */
  private async replay(call: VerifyCall, first: RecordedCall): Promise<VerifyResult | null> {
    const p = call.principal as Principal;
    if (first.fingerprint !== call.idempotency?.fingerprint) throw idempotencyKeyReused(first.event.id, this.replays.ttlHours);
    // Its answer now reaches a caller: a not-delivered mark arriving later (from any instance) leaves it counted.
    if (!(await this.replays.markReplayed(p.workspaceId, call.idempotency.key, first.event.id))) return null;
    const { request_id: firstRequestId, ...answer } = first.response as { request_id: string };
    const standing = await this.hooks.standing({ operation: 'verify', principal: p, req: call.req, channel: call.channel });
    const body: Record<string, unknown> = {
      ...answer,
      receipt: receiptOfRow(this.publicUrl(), first.event, p, this.config.identity.selfRegistrationOpen),
      idempotent_replay: { first_request_id: firstRequestId, recorded_at: first.event.created_at.toISOString() },
    };
    const left = remaining(p, { ...freeReservation(), ...(standing ? { remaining: standing } : {}) }, call.rateLimit);
    if (left) body.remaining = left;
    return { body, headers: { [REPLAYED_HEADER]: 'true' }, usageEventId: first.event.id, reservation: null };
  }
}
