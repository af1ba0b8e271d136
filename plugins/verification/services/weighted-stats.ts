import type { Dec } from '../../../core/money';

/**
 * Weighted order statistics and robust spread for the verdict: each observation counts with the
 * weight its age and source give it (docs/verification.md).
 */

/** 1 / Φ⁻¹(0.75): scales a MAD to a normal standard deviation. */
const MAD_TO_SIGMA = 1.4826;
/** IQR / 1.349 estimates a normal standard deviation. */
const IQR_TO_SIGMA = 1 / 1.349;
/** 1.2533 × mean absolute deviation estimates a normal standard deviation. */
const MEAN_AD_TO_SIGMA = 1.2533;

export interface Weighted<T> {
  value: T;
  weight: number;
}

/**
 * Where the weighted q-quantile of items sorted ascending lies: the first index whose cumulative
 * weight reaches q of the total, and whether it lands exactly on it with an item after it (the
 * median then takes the mean of the two, so equal weights give the usual median).
 */
function quantilePosition(sorted: readonly Weighted<unknown>[], q: number): { index: number; between: boolean } {
  const total = sorted.reduce((s, i) => s + i.weight, 0);
  const target = total * q;
  const eps = total * 1e-12;
  let cum = 0;
  for (let i = 0; i < sorted.length; i++) {
    cum += (sorted[i] as Weighted<unknown>).weight;
    if (cum >= target - eps) return { index: i, between: Math.abs(cum - target) <= eps && i + 1 < sorted.length };
  }
  return { index: sorted.length - 1, between: false };
}

/** The weighted median of decimals (see quantilePosition for the tie at exactly half). */
export function weightedMedianDec(items: readonly Weighted<Dec>[]): Dec {
  if (items.length === 0) throw new RangeError('weighted median of nothing');
  const sorted = [...items].sort((a, b) => a.value.comparedTo(b.value));
  const { index, between } = quantilePosition(sorted, 0.5);
  const value = (sorted[index] as Weighted<Dec>).value;
  return between ? value.plus((sorted[index + 1] as Weighted<Dec>).value).dividedBy(2) : value;
}

/** The weighted q-quantile of numbers; the median (q = 0.5) takes the mean at an exact tie. */
function weightedQuantile(items: readonly Weighted<number>[], q: number): number {
  if (items.length === 0) return 0;
  const sorted = [...items].sort((a, b) => a.value - b.value);
  const { index, between } = quantilePosition(sorted, q);
  const value = (sorted[index] as Weighted<number>).value;
  return q === 0.5 && between ? (value + (sorted[index + 1] as Weighted<number>).value) / 2 : value;
}

/** Robust spread of log prices around the centre: MAD, then IQR, then mean absolute deviation. */
export function robustSigma(logs: readonly Weighted<number>[], centre: number): { sigma: number; estimator: 'mad' | 'iqr' | 'mean_absolute_deviation' | 'none' } {
  const deviations = logs.map((l) => ({ value: Math.abs(l.value - centre), weight: l.weight }));
  const mad = weightedQuantile(deviations, 0.5);
  if (mad > 1e-12) return { sigma: MAD_TO_SIGMA * mad, estimator: 'mad' };
  const iqr = weightedQuantile(logs, 0.75) - weightedQuantile(logs, 0.25);
  if (iqr > 1e-12) return { sigma: iqr * IQR_TO_SIGMA, estimator: 'iqr' };
  const total = deviations.reduce((s, d) => s + d.weight, 0);
  const meanAd = total > 0 ? deviations.reduce((s, d) => s + d.value * d.weight, 0) / total : 0;
  if (meanAd > 1e-12) return { sigma: MEAN_AD_TO_SIGMA * meanAd, estimator: 'mean_absolute_deviation' };
  return { sigma: 0, estimator: 'none' };
}

/** An observation as the source statistic reads it: who, under which label, what amount, how old. */
export interface AgedObservation {
  workspaceId: string;
  source: string;
  value: Dec;
  observedAt: number;
  /** ms before "now". */
  age: number;
  /** The label shown for the source when it differs from `source`. */
  label?: string;
}

/** Exact copies (same workspace, source, amount and time; 4.5 and 4.50 alike) count once. */
export function withoutCopies<T extends AgedObservation>(observations: readonly T[]): T[] {
  const seen = new Set<string>();
  return observations.filter((o) => {
    const k = `${o.workspaceId}\u0000${o.source}\u0000${o.value.toString()}\u0000${o.observedAt}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** One source (a workspace and its label): its observations, their summed weight and their weighted median. */
export interface SourceMedian<T> {
  workspaceId: string;
  label: string;
  items: Array<T & { weight: number }>;
  weight: number;
  median: Dec;
}

/**
 * The time-weighted median of source medians: each observation weighs 0.5^(age / half-life), each
 * source (workspace and label) its weighted median and the sum of its weights, and the reference is
 * the weighted median of the source medians. Sources come heaviest first (then by label). The one
 * statistic behind a verdict's reference and compute's network reference.
 */
export function sourceMedians<T extends AgedObservation>(observations: readonly T[], halfLifeMs: number): { weighted: Array<T & { weight: number }>; sources: Array<SourceMedian<T>>; totalWeight: number; reference: Dec } {
  const weighted = observations.map((o) => ({ ...o, weight: 0.5 ** (o.age / halfLifeMs) }));
  const groups = new Map<string, Array<T & { weight: number }>>();
  for (const o of weighted) {
    const k = `${o.workspaceId}\u0000${o.source}`;
    const items = groups.get(k);
    if (items) items.push(o);
    else groups.set(k, [o]);
  }
  const sources = [...groups.values()].map((items) => {
    const first = items[0] as T & { weight: number };
    return { workspaceId: first.workspaceId, label: first.label ?? first.source, items, weight: items.reduce((s, o) => s + o.weight, 0), median: weightedMedianDec(items) };
  });
  sources.sort((a, b) => b.weight - a.weight || a.label.localeCompare(b.label));
  return {
    weighted,
    sources,
    totalWeight: weighted.reduce((s, o) => s + o.weight, 0),
    reference: weightedMedianDec(sources.map((s) => ({ value: s.median, weight: s.weight }))),
  };
}
