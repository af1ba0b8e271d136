import type { Logger } from '../../../core/logger';
import { currencyOf } from '../../../engine';
import type { MarketEvidence } from '../../../engine';

/** Longest product_type looked up (the observation store keeps at most 100 characters). */
const MAX_PRODUCT_TYPE_LENGTH = 100;

/** Where the network's price observations come from: the plugin that stores them. */
export interface MarketEvidenceSource {
  /** Observations of a product type (case-insensitive) in a currency, summarised per source; null when there are none. */
  lookup(productType: string, currency: string): Promise<MarketEvidence | null>;
}

/**
 * The network's price observations of a context's product type, for the built-in methods that
 * position against a market. The pricing plugin owns the slot; the plugin that stores observations
 * (verification, which registers after pricing) fills it. Left empty, or switched off
 * (ENGINE_MARKET_EVIDENCE), every context is priced from what it carries.
 */
export class MarketEvidenceSlot {
  private source: MarketEvidenceSource | null = null;

  constructor(
    private readonly enabled: boolean,
    private readonly log: Logger,
  ) {}

  provide(source: MarketEvidenceSource): void {
    this.source = source;
  }

  /**
   * Evidence for this context: looked up only when it names a product_type and brings no
   * competitor_prices of its own (the caller's list always wins); undefined when not looked up, null
   * when the network has none. A failed lookup prices the call without it.
   */
  async forContext(context: Record<string, unknown>): Promise<MarketEvidence | null | undefined> {
    if (!this.enabled || !this.source || context.competitor_prices !== undefined) return undefined;
    const productType = typeof context.product_type === 'string' ? context.product_type.trim() : '';
    if (productType === '' || productType.length > MAX_PRODUCT_TYPE_LENGTH) return undefined;
    try {
      return await this.source.lookup(productType, currencyOf(context));
    } catch (err) {
      this.log.warn({ err }, 'network price observations could not be read; pricing without them');
      return null;
    }
  }
}
