import type { Request } from 'express';
import type { Reservation } from '../../../core/admission';
import { callerGone } from '../../../core/http/caller-gone';
import type { Config } from '../../../config';
import type { Channel, Principal } from '../../../core/auth';
import type { Clock } from '../../../core/clock';
import type { Hooks } from '../../../core/hooks';
import type { RequestRate } from '../../identity';
import { dec, formatMoney } from '../../../core/money';
import { minorUnits } from '../../../engine';
import { DEMO_WORKSPACE_ID } from '../../pricing';
import { callerFields, contextKeys, receipt, remaining } from '../../usage';
import type { UsageEventInput, UsageRecorder } from '../../usage';
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
}

export interface VerifyResult {
  body: Record<string, unknown>;
  headers: Record<string, string>;
  usageEventId: string;
  verdict: VerdictResult;
  /** What this verification committed: given back by notDelivered. */
  reservation: Reservation;
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
  constructor(
    private readonly store: ObservationStore,
    private readonly hooks: Hooks,
    private readonly recorder: UsageRecorder,
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly publicUrl: () => string,
    private readonly functions: FunctionsByName,
    /** Called once per answered verification (recorded), with its verdict: the plugin counts them in the metrics. */
    private readonly answered: (verdict: VerdictValue, channel: Channel) => void = () => undefined,
  ) {}

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
  notDelivered(usageEventId: string, reservation: Reservation): Promise<void> {
    return this.recorder.undeliver([usageEventId], [reservation]);
  }

  async verify(call: VerifyCall): Promise<VerifyResult> {
    const t0 = performance.now();
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
      contextKeys: contextKeys(call.context, { currency }),
    };
    const recorded = await this.recorder.recordAndSettle(usageEvent, reservation, () => callerGone(call.req));
    const usageEventId = recorded.id;
    this.answered(verdict.verdict, call.channel);

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
      receipt: receipt(this.publicUrl(), recorded, usageEvent, p, this.config.identity.selfRegistrationOpen),
    };
    // Without evidence the verdict says why; the hint says what would give one.
    if (verdict.verdict === 'unknown' && !verdict.evidence.sufficient) body.hint = unknownHint(verdict.constraints);
    const left = remaining(p, reservation, call.rateLimit);
    if (left) body.remaining = left;
    return { body, headers: reservation.headers ?? {}, usageEventId, verdict, reservation };
  }
}
