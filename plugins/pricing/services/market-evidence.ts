import type { Counter } from 'prom-client';
import type { Logger } from '../../../core/logger';
import type { Metrics } from '../../../core/metrics';
import { currencyOf } from '../../../engine';
import type { MarketEvidence } from '../../../engine';

/** Longest product_type looked up (the observation store keeps at most 100 characters). */
const MAX_PRODUCT_TYPE_LENGTH = 100;

/** Where the network's price observations come from: the plugin that stores them. */
export interface MarketEvidenceSource {
  /** Observations of a product type (case-insensitive) in a currency, summarised per source; null when there are none. */
  lookup(productType: string, currency: string): Promise<MarketEvidence | null>;
}

export type LookupOutcome = 'found' | 'withheld' | 'none' | 'timeout' | 'error';

/** What a lookup gave: evidence only when found. */
export interface MarketLookup {
  evidence: MarketEvidence | null;
  outcome: LookupOutcome;
}

/**
 * The network's price observations of a context's product type, for the built-in methods that
 * position against a market. The pricing plugin owns the slot; the plugin that stores observations
 * (verification, which registers after pricing) fills it. Left empty, or switched off
 * (ENGINE_MARKET_EVIDENCE), every context is priced from what it carries. A lookup that fails or
 * takes longer than ENGINE_MARKET_LOOKUP_TIMEOUT_MS (a busy database) prices the call without it:
 * the evidence is an addition, never a reason for a compute to fail or wait.
 */
export class MarketEvidenceSlot {
  private source: MarketEvidenceSource | null = null;
  private readonly lookups: Counter<'outcome'>;

  constructor(
    private readonly opts: { enabled: boolean; timeoutMs: number },
    private readonly log: Logger,
    metrics: Metrics,
  ) {
    this.lookups = metrics.counter({ name: 'pricing_market_evidence_lookups_total', help: 'Lookups of network price observations for compute contexts, by outcome (found, withheld: found but set aside as no reference, none, timeout, error).', labelNames: ['outcome'] });
  }

  provide(source: MarketEvidenceSource): void {
    this.source = source;
  }

  /**
   * Evidence for this context: looked up only when it names a product_type and brings no
   * competitor_prices of its own (the caller's list always wins; null counts as not sent);
   * undefined when not looked up.
   */
  async forContext(context: Record<string, unknown>): Promise<MarketLookup | undefined> {
    if (!this.opts.enabled || !this.source || context.competitor_prices != null) return undefined;
    const productType = typeof context.product_type === 'string' ? context.product_type.trim() : '';
    if (productType === '' || productType.length > MAX_PRODUCT_TYPE_LENGTH) return undefined;
    const result = await this.lookup(this.source, productType, currencyOf(context));
    this.lookups.inc({ outcome: result.outcome });
    return result;
  }

  private async lookup(source: MarketEvidenceSource, productType: string, currency: string): Promise<MarketLookup> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<MarketLookup>((resolve) => {
      timer = setTimeout(() => resolve({ evidence: null, outcome: 'timeout' }), this.opts.timeoutMs);
    });
    const read = source.lookup(productType, currency).then(
      (evidence): MarketLookup => ({ evidence, outcome: evidence ? (evidence.withheld ? 'withheld' : 'found') : 'none' }),
      (err: unknown): MarketLookup => {
        this.log.warn({ err }, 'network price observations could not be read; pricing without them');
        return { evidence: null, outcome: 'error' };
      },
    );
    try {
      return await Promise.race([read, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
