import type { Config } from '../../../config';
import { median } from '../../../engine';
import type { MarketEvidence } from '../../../engine';
import type { MarketEvidenceSource } from '../../pricing';
import type { Evidence, ObservationStore } from './observations';
import type { ObservedProductTypes } from './product-types';

const DAY_MS = 86_400_000;

/**
 * The network's stored price observations as market evidence for compute: the same rows, window
 * and read limit as verification (so a computed price and a verdict on it rest on the same
 * evidence), summarised as one median per source (workspace and source label), newest sources
 * first. Summaries follow the store's cached reads: a new read gives a new summary.
 */
export class NetworkMarketEvidence implements MarketEvidenceSource {
  private readonly summaries = new WeakMap<Evidence, Omit<MarketEvidence, 'product_type' | 'currency'> | null>();

  constructor(
    private readonly store: ObservationStore,
    private readonly observed: ObservedProductTypes,
    private readonly config: Config,
    private readonly now: () => number,
  ) {}

  async lookup(productType: string, currency: string): Promise<MarketEvidence | null> {
    if (!this.observed.mayHave(productType, currency)) return null;
    const since = new Date(this.now() - this.config.verification.maxAgeDays * DAY_MS);
    const evidence = await this.store.forVerification(productType, currency, since, this.config.verification.maxObservationsRead);
    let summary = this.summaries.get(evidence);
    if (summary === undefined) {
      summary = summarise(evidence, this.config.engine.marketMaxSources);
      this.summaries.set(evidence, summary);
    }
    return summary ? { product_type: productType, currency, ...summary } : null;
  }
}

function summarise(evidence: Evidence, maxSources: number): Omit<MarketEvidence, 'product_type' | 'currency'> | null {
  // Rows come newest first, so a source's first row places it.
  const bySource = new Map<string, { workspaceId: string; prices: number[] }>();
  for (const o of evidence.observations) {
    const price = Number(o.amount);
    if (!Number.isFinite(price) || price <= 0) continue;
    const key = `${o.workspaceId}\u0000${o.source}`;
    const entry = bySource.get(key);
    if (entry) entry.prices.push(price);
    else if (bySource.size < maxSources) bySource.set(key, { workspaceId: o.workspaceId, prices: [price] });
  }
  if (bySource.size === 0) return null;
  const sources = [...bySource.values()];
  return {
    observations: sources.reduce((n, s) => n + s.prices.length, 0),
    source_prices: sources.map((s) => median(s.prices)),
    workspaces: new Set(sources.map((s) => s.workspaceId)).size,
  };
}
