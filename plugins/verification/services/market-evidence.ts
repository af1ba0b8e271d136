import type { Config } from '../../../config';
import { dec, formatMoney } from '../../../core/money';
import type { Dec } from '../../../core/money';
import { minorUnits } from '../../../engine';
import type { MarketEvidence } from '../../../engine';
import type { MarketEvidenceSource } from '../../pricing';
import type { Evidence, ObservationStore } from './observations';
import type { ObservedProductTypes } from './product-types';
import { pct, shownBounds } from './verdict';
import { enoughForVerdict, logBand, restsOnOneWorkspace, sourceMedians, splitAround, withoutCopies } from './weighted-stats';

const DAY_MS = 86_400_000;

const boundsAsNumbers = (b: { lower: Dec; upper: Dec }): { lower: number; upper: number } => ({ lower: b.lower.toNumber(), upper: b.upper.toNumber() });

type Summary = Omit<MarketEvidence, 'product_type' | 'currency'>;

/**
 * The network's stored price observations as market evidence for compute: the same rows, window,
 * read limit and statistic as verification (one observation per workspace and amount, each
 * weighted 0.5^(age / half-life), one weighted median per source, the reference the weighted median
 * of those), so a computed price and a verdict on it rest on the same reference. A reference that
 * rests on one workspace (restsOnOneWorkspace) or lies in the gap between two groups of prices
 * (splitAround) — the verdict's "not sufficient" — is no evidence, so no price is positioned on it: the
 * summary then has no source price and says why (withheld). With the evidence a two-sided verdict needs, the summary carries the verdict's band too. Verification's one
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
    const evidence = await this.store.forVerification(productType, currency, new Date(now - v.maxAgeDays * DAY_MS), v.maxObservationsRead, v.maxObservationsPerAccount);
    let summary = this.summaries.get(evidence);
    if (summary === undefined) {
      summary = summarise(evidence, { now, halfLifeMs: v.halfLifeDays * DAY_MS, maxSources: this.config.engine.marketMaxSources, minRelativeHalfWidth: v.minRelativeHalfWidth, bandK: v.bandK, minEffectiveObservations: v.minEffectiveObservations, minSources: v.minSources, minorDigits: minorUnits(currency) });
      this.summaries.set(evidence, summary);
    }
    return summary ? { product_type: productType, currency, ...summary } : null;
  }
}

interface SummaryOptions {
  now: number;
  halfLifeMs: number;
  maxSources: number;
  minRelativeHalfWidth: number;
  bandK: number;
  minEffectiveObservations: number;
  minSources: number;
  /** The currency's minor units, which amounts in a reason carry at least. */
  minorDigits: number;
}

function summarise(evidence: Evidence, opts: SummaryOptions): Summary | null {
  const aged = withoutCopies(evidence.observations.map((o) => ({ ...o, value: dec(o.amount), age: Math.max(0, opts.now - o.observedAt) })));
  // Rows come newest first: the newest maxSources sources are kept.
  const kept = new Set<string>();
  const recent = aged.filter((o) => {
    const key = `${o.workspaceId}\u0000${o.source}`;
    if (!kept.has(key) && kept.size < opts.maxSources) kept.add(key);
    return kept.has(key);
  });
  if (recent.length === 0) return null;
  const stats = sourceMedians(recent, opts.halfLifeMs);
  const { sources, totalWeight, reference } = stats;
  const workspaces = new Set(sources.map((s) => s.workspaceId)).size;
  const amount = (x: Dec): string => formatMoney(x, 18, opts.minorDigits);
  const withheld = (why: string): Summary => ({ observations: recent.length, source_prices: [], workspaces, withheld: why });
  // Said first when both hold (two workspaces, one group each): it says what separates them.
  // A median between two price groups is a price nobody quotes: positioning on it would invent one.
  const split = splitAround(stats.weighted, reference, opts.minRelativeHalfWidth);
  if (split) return withheld(`the quotes split into two groups around ${amount(split.below)} and ${amount(split.above)}, and their reference ${amount(reference)} lies in the gap (a more specific product_type separates them)`);
  const rests = restsOnOneWorkspace(stats, opts.minRelativeHalfWidth);
  if (rests) return withheld(`the reference rests on one workspace: without the one that submitted ${pct(rests.rawShare)} of the weight it would be ${amount(rests.withoutIt)}, not ${amount(rests.reference)}`);
  // The verdict's band, only where a verdict would draw one: with less evidence no price is called inside or outside it.
  const band = enoughForVerdict(stats.effectiveN, stats.workspaces, opts) ? logBand(stats.weighted, reference, opts.bandK, opts.minRelativeHalfWidth) : null;
  return {
    observations: recent.length,
    source_prices: sources.map((s) => s.median.toNumber()),
    reference_price: reference.toNumber(),
    // Rounded as the factor reads it, so the cached results keyed by it do not change as the weights age by the second.
    largest_source_share: totalWeight > 0 ? Math.round(((sources[0]?.weight ?? 0) / totalWeight) * 1000) / 1000 : 1,
    workspaces,
    ...(band ? { band: boundsAsNumbers(shownBounds(band)) } : {}),
  };
}
