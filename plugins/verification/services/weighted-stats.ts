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
 * The weighted median: the value where the cumulative weight reaches half the total; when it lands
 * exactly on half, the mean of that value and the next (so equal weights give the usual median).
 */
export function weightedMedianDec(items: readonly Weighted<Dec>[]): Dec {
  const sorted = [...items].sort((a, b) => a.value.comparedTo(b.value));
  const total = sorted.reduce((s, i) => s + i.weight, 0);
  const half = total / 2;
  const eps = total * 1e-12;
  let cum = 0;
  for (let i = 0; i < sorted.length; i++) {
    const item = sorted[i] as Weighted<Dec>;
    cum += item.weight;
    if (cum >= half - eps) {
      const next = sorted[i + 1];
      if (Math.abs(cum - half) <= eps && next) return item.value.plus(next.value).dividedBy(2);
      return item.value;
    }
  }
  const last = sorted[sorted.length - 1];
  if (!last) throw new RangeError('weighted median of nothing');
  return last.value;
}

/** The weighted q-quantile of numbers (first value whose cumulative weight reaches q of the total). */
function weightedQuantile(items: readonly Weighted<number>[], q: number): number {
  const sorted = [...items].sort((a, b) => a.value - b.value);
  const total = sorted.reduce((s, i) => s + i.weight, 0);
  const target = total * q;
  const eps = total * 1e-12;
  let cum = 0;
  for (let i = 0; i < sorted.length; i++) {
    const item = sorted[i] as Weighted<number>;
    cum += item.weight;
    if (cum >= target - eps) {
      const next = sorted[i + 1];
      if (q === 0.5 && Math.abs(cum - target) <= eps && next) return (item.value + next.value) / 2;
      return item.value;
    }
  }
  return sorted[sorted.length - 1]?.value ?? 0;
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
