import type { DomainEvents } from '../../../core/events';
import type { Logger } from '../../../core/logger';
import { CURRENCY_CODE, DECIMAL_PATTERN, dec, formatMoney } from '../../../core/money';
import type { ObservationStore } from './observations';

type OutcomeEvent = DomainEvents['usage.outcome_recorded'];

const CONTEXT_KEY = /^[a-z][a-z0-9_]{0,39}$/;

/**
 * Accepted compute outcomes are price evidence too: an accepted outcome with a price, a currency,
 * a product type and the function that priced it becomes an observation (origin
 * `accepted_outcome`, source `accepted:<function name>`), once per usage event. An outcome later
 * changed to rejected withdraws it. A price that was positioned on the network's own observations
 * is not stored: accepted, it would echo that evidence back as if it were new.
 */
export class OutcomeObserver {
  constructor(
    private readonly store: ObservationStore,
    private readonly log: Logger,
  ) {}

  async handle(e: OutcomeEvent): Promise<void> {
    if (e.outcome === 'rejected') {
      if (await this.store.withdrawOutcome(e.eventId)) this.log.info({ usageEventId: e.eventId }, 'accepted-outcome observation withdrawn');
      return;
    }
    if (e.networkEvidence) {
      this.log.debug({ usageEventId: e.eventId }, 'accepted outcome priced on network observations: not stored as a new observation');
      return;
    }
    const productType = typeof e.contextKeys.product_type === 'string' ? e.contextKeys.product_type.trim().slice(0, 100) : '';
    const currency = (e.currency ?? '').trim().toUpperCase();
    const price = (e.price ?? '').trim();
    if (!productType || !CURRENCY_CODE.test(currency) || !e.functionName || !DECIMAL_PATTERN.test(price) || !dec(price).greaterThan(0)) return;
    const context: Record<string, string> = {};
    for (const [k, v] of Object.entries(e.contextKeys)) {
      if (k === 'product_type' || k === 'currency' || typeof v !== 'string' || !CONTEXT_KEY.test(k)) continue;
      context[k] = v.slice(0, 200);
    }
    // The price held when it was quoted, not when the caller got round to reporting it: a report (or a rejection turned
    // back into an acceptance) weeks later must not pass an old price off as fresh evidence.
    const at = Date.parse(e.calledAt);
    const stored = await this.store.recordAcceptedOutcome({
      usageEventId: e.eventId,
      workspaceId: e.workspaceId,
      productType,
      currency,
      amount: formatMoney(dec(price), 18),
      functionName: e.functionName,
      observedAt: Number.isFinite(at) ? new Date(at) : new Date(),
      context,
    });
    if (stored) this.log.debug({ usageEventId: e.eventId }, 'accepted outcome recorded as a price observation');
  }
}
