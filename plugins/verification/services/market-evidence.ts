import type { Config } from '../../../config';
import { dec } from '../../../core/money';
import type { MarketEvidence } from '../../../engine';
import type { MarketEvidenceSource } from '../../pricing';
import type { Evidence, ObservationStore } from './observations';
import type { ObservedProductTypes } from './product-types';
import { weightedMedianDec } from './weighted-stats';

const DAY_MS = 86_400_000;

type Summary = Omit<MarketEvidence, 'product_type' | 'currency'>;

/**
 * The network's stored price observations as market evidence for compute: the same rows, window,
 * read limit and statistic as verification (exact copies counted once, each observation weighted
 * 0.5^(age / half-life), one weighted median per source, the reference the weighted median of
 * those), so a computed price and a verdict on it rest on the same reference. Verification's one
 * caller-dependent step, dropping the caller's own echo of the price it proposes, has no
 * counterpart here. Summaries follow the store's cached reads: a new read gives a new summary.
 */
export class NetworkMarketEvidence implements MarketEvidenceSource {
  private readonly summaries = new WeakMap<Evidence, Summary | null>();

  constructor(
    private readonly store: ObservationStore,
    private readonly observed: ObservedProductTypes,
    private readonly config: Config,
    private readonly now: () => number,
  ) {}

  async lookup(productType: string, currency: string): Promise<MarketEvidence | null> {
    if (!this.observed.mayHave(productType, currency)) return null;
    const v = this.config.verification;
    const now = this.now();
    const evidence = await this.store.forVerification(productType, currency, new Date(now - v.maxAgeDays * DAY_MS), v.maxObservationsRead);
    let summary = this.summaries.get(evidence);
    if (summary === undefined) {
      summary = summarise(evidence, { now, halfLifeMs: v.halfLifeDays * DAY_MS, maxSources: this.config.engine.marketMaxSources });
      this.summaries.set(evidence, summary);
    }
    return summary ? { product_type: productType, currency, ...summary } : null;
  }
}

function summarise(evidence: Evidence, opts: { now: number; halfLifeMs: number; maxSources: number }): Summary | null {
  const seen = new Set<string>();
  // Rows come newest first, so a source's first row places it.
  const bySource = new Map<string, { workspaceId: string; items: Array<{ value: ReturnType<typeof dec>; weight: number }> }>();
  for (const o of evidence.observations) {
    const value = dec(o.amount);
    // As verification counts copies: 4.5 and 4.50 are the same amount.
    const copy = `${o.workspaceId}\u0000${o.source}\u0000${value.toString()}\u0000${o.observedAt}`;
    if (seen.has(copy)) continue;
    seen.add(copy);
    if (!value.isFinite() || value.lte(0)) continue;
    const key = `${o.workspaceId}\u0000${o.source}`;
    let entry = bySource.get(key);
    if (!entry) {
      if (bySource.size >= opts.maxSources) continue;
      entry = { workspaceId: o.workspaceId, items: [] };
      bySource.set(key, entry);
    }
    entry.items.push({ value, weight: 0.5 ** (Math.max(0, opts.now - o.observedAt) / opts.halfLifeMs) });
  }
  if (bySource.size === 0) return null;
  const sources = [...bySource.values()].map((s) => ({ workspaceId: s.workspaceId, count: s.items.length, weight: s.items.reduce((w, i) => w + i.weight, 0), median: weightedMedianDec(s.items) }));
  const total = sources.reduce((w, s) => w + s.weight, 0);
  return {
    observations: sources.reduce((n, s) => n + s.count, 0),
    source_prices: sources.map((s) => s.median.toNumber()),
    reference_price: weightedMedianDec(sources.map((s) => ({ value: s.median, weight: s.weight }))).toNumber(),
    // Rounded as the factor reads it, so the cached results keyed by it do not change as the weights age by the second.
    largest_source_share: total > 0 ? Math.round((Math.max(...sources.map((s) => s.weight)) / total) * 1000) / 1000 : 1,
    workspaces: new Set(sources.map((s) => s.workspaceId)).size,
  };
}
