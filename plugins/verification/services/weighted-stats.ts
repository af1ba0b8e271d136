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
/** A share to a tenth of a percent, as shares are shown and compared. */
const perMille = (share: number): number => Math.round(share * 1000);

export interface Weighted<T> {
  value: T;
  weight: number;
}

/**
 * How close to one half the cumulative weight must come for a median to count as "exactly half" and take the mean of
 * the two neighbours: a hundredth of the total. Time decay makes no two weights equal — at the 30-day half-life, two
 * quotes of one source an hour and five hours old weigh 0.999 and 0.995, a share of 50.1 % — and the median of two
 * quotes was then the fresher one, decided by four hours of ageing. A percent of the weight is about 1.7 days of ageing
 * between two quotes at that half-life (4 % apart in weight): quotes that close weigh alike here.
 */
const MEDIAN_TIE = 0.01;

/**
 * Where the weighted q-quantile of items sorted ascending lies: the first index whose cumulative
 * weight reaches q of the total, and whether it lands on it (within `tie` of the total) with an item
 * after it (the median then takes the mean of the two, so near-equal weights give the usual median).
 */
function quantilePosition(sorted: readonly Weighted<unknown>[], q: number, tie = 1e-12): { index: number; between: boolean } {
  const total = sorted.reduce((s, i) => s + i.weight, 0);
  const target = total * q;
  const eps = total * tie;
  let cum = 0;
  for (let i = 0; i < sorted.length; i++) {
    cum += (sorted[i] as Weighted<unknown>).weight;
    if (cum >= target - eps) return { index: i, between: Math.abs(cum - target) <= eps && i + 1 < sorted.length };
  }
  return { index: sorted.length - 1, between: false };
}

/** The weighted median of decimals (see quantilePosition and MEDIAN_TIE for the tie at half). */
export function weightedMedianDec(items: readonly Weighted<Dec>[]): Dec {
  if (items.length === 0) throw new RangeError('weighted median of nothing');
  const sorted = [...items].sort((a, b) => a.value.comparedTo(b.value));
  const { index, between } = quantilePosition(sorted, 0.5, MEDIAN_TIE);
  const value = (sorted[index] as Weighted<Dec>).value;
  return between ? value.plus((sorted[index + 1] as Weighted<Dec>).value).dividedBy(2) : value;
}

/** The weighted q-quantile of numbers; the median (q = 0.5) takes the mean at a tie (MEDIAN_TIE), other quantiles do not. */
function weightedQuantile(items: readonly Weighted<number>[], q: number): number {
  if (items.length === 0) return 0;
  const sorted = [...items].sort((a, b) => a.value - b.value);
  const median = q === 0.5;
  const { index, between } = quantilePosition(sorted, q, median ? MEDIAN_TIE : undefined);
  const value = (sorted[index] as Weighted<number>).value;
  return median && between ? (value + (sorted[index + 1] as Weighted<number>).value) / 2 : value;
}

/** Robust spread of log prices around the centre: MAD, then IQR, then mean absolute deviation. */
export function robustSigma(logs: readonly Weighted<number>[], centre: number): { sigma: number; estimator: SpreadEstimator } {
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

export type SpreadEstimator = 'mad' | 'iqr' | 'mean_absolute_deviation' | 'none';

/** The verdict's band in log space around a reference (docs/verification.md, step 5). */
export interface LogBand {
  /** ln(reference). */
  centre: number;
  sigma: number;
  estimator: SpreadEstimator;
  /** The half-width in log space: max(k·σ, ln(1 + minimum half-width)). */
  hw: number;
  /** Whether the minimum half-width, not k·σ, set it. */
  minApplied: boolean;
}

/**
 * The band a verdict judges against: ln(reference) ± max(k·σ, ln(1 + minRelativeHalfWidth)), σ the robust spread of the
 * weighted log prices around ln(reference). One function, so the verdict and compute's market evidence draw one band.
 */
export function logBand(items: readonly Weighted<Dec>[], reference: Dec, bandK: number, minRelativeHalfWidth: number): LogBand {
  const centre = Math.log(reference.toNumber());
  const { sigma, estimator } = robustSigma(
    items.map((o) => ({ value: Math.log(o.value.toNumber()), weight: o.weight })),
    centre,
  );
  const minHw = Math.log(1 + minRelativeHalfWidth);
  return { centre, sigma, estimator, hw: Math.max(bandK * sigma, minHw), minApplied: bandK * sigma < minHw };
}

/** Enough independent evidence for a two-sided verdict: the effective n as reported (two decimals) and distinct workspaces. */
export function enoughForVerdict(effectiveN: number, workspaces: number, t: { minEffectiveObservations: number; minSources: number }): boolean {
  return Math.round(effectiveN * 100) / 100 >= t.minEffectiveObservations && workspaces >= t.minSources;
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

/**
 * Copies count once: one observation per workspace and amount (4.5 and 4.50 alike), whatever its
 * label or time, the freshest kept (largest observedAt; the first of equals). Repeated quotes of one
 * amount by one submitter are not independent evidence (notes §7: ρ = 1 for pure copies). The
 * kept observations stay in their input order.
 */
export function withoutCopies<T extends AgedObservation>(observations: readonly T[]): T[] {
  const freshest = new Map<string, T>();
  for (const o of observations) {
    const k = `${o.workspaceId}\u0000${o.value.toString()}`;
    const kept = freshest.get(k);
    if (!kept || o.observedAt > kept.observedAt) freshest.set(k, o);
  }
  const keep = new Set(freshest.values());
  return observations.filter((o) => keep.has(o));
}

/** One source (a workspace and its label): its observations, their summed weight and their weighted median. */
export interface SourceMedian<T> {
  workspaceId: string;
  label: string;
  items: Array<T & { weight: number }>;
  weight: number;
  median: Dec;
}

/** The submitting workspace carrying the most weight before the cap: its share of the raw weight and its observation count. */
export interface HeaviestWorkspace {
  workspaceId: string;
  rawShare: number;
  observations: number;
}

/** Largest and second-largest of some numbers with who holds the largest: "the largest among the others" of each in O(n). */
function topTwo(values: ReadonlyMap<string, number>): { top: string | null; first: number; second: number } {
  let top: string | null = null;
  let first = -Infinity;
  let second = -Infinity;
  for (const [k, v] of values) {
    if (v > first) {
      second = first;
      first = v;
      top = k;
    } else if (v > second) second = v;
  }
  return { top, first, second };
}

/**
 * The time-weighted median of source medians, with no workspace carrying more than the next one:
 *
 * - each observation weighs 0.5^(age / half-life);
 * - a workspace's weight (the sum of its observations') is capped at the largest weight of any
 *   other workspace; its observations' weights shrink in proportion, so its labels keep their
 *   shares. One workspace posting N quotes then weighs no more than the next-heaviest workspace.
 *   Alone, a workspace is not capped (it cannot meet the minimum of sources anyway);
 * - each source (workspace and label) has the weighted median of its observations and the sum of
 *   their weights, and the reference is the weighted median of the source medians;
 * - the effective n counts independent submitters, not quotes: one submitter's quotes are one
 *   cluster whose members are taken as fully correlated (notes §7: design effect 1 + (m − 1)·ρ with
 *   ρ = 1, "one value per group"), so each workspace counts once, with the weight T_w the reference
 *   gives it: Kish's (Σ T_w)² / Σ T_w² over workspaces. Two workspaces however many quotes they
 *   post count 2 (less when their weights differ); ρ cannot be estimated from a handful of
 *   workspaces, and quotes that agree within a submitter say nothing about other submitters.
 *
 * Sources come heaviest first (then by label). The one statistic behind a verdict's reference and
 * compute's network reference. With two workspaces or more it also gives the reference without the
 * heaviest workspace's sources (the others' sources with their weights as above), which
 * restsOnOneWorkspace compares with the reference.
 */
export function sourceMedians<T extends AgedObservation>(
  observations: readonly T[],
  halfLifeMs: number,
): {
  weighted: Array<T & { weight: number }>;
  sources: Array<SourceMedian<T>>;
  totalWeight: number;
  reference: Dec;
  effectiveN: number;
  /** Observations counted as their workspace's cap counts them (Σ of the cap factors): the mean weight's denominator. */
  counted: number;
  workspaces: number;
  heaviest: HeaviestWorkspace | null;
  /** The reference without the heaviest (raw weight) workspace's sources; null with fewer than two workspaces. */
  withoutHeaviest: Dec | null;
} {
  const raw = observations.map((o) => 0.5 ** (o.age / halfLifeMs));
  const perWorkspace = new Map<string, { sum: number; count: number }>();
  observations.forEach((o, i) => {
    const g = perWorkspace.get(o.workspaceId) ?? { sum: 0, count: 0 };
    g.sum += raw[i] as number;
    g.count += 1;
    perWorkspace.set(o.workspaceId, g);
  });
  const sums = topTwo(new Map([...perWorkspace].map(([k, g]) => [k, g.sum])));
  const capped = new Map<string, { factor: number; weight: number }>();
  for (const [k, g] of perWorkspace) {
    const maxOtherSum = k === sums.top ? sums.second : sums.first;
    // Alone (no other workspace), nothing caps it.
    const weight = perWorkspace.size > 1 ? Math.min(g.sum, maxOtherSum) : g.sum;
    capped.set(k, { factor: g.sum > 0 ? weight / g.sum : 1, weight });
  }

  const weighted = observations.map((o, i) => ({ ...o, weight: (raw[i] as number) * (capped.get(o.workspaceId)?.factor ?? 1) }));
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
  // Heaviest first by the share shown (a tenth of a percent), then by label: sources tied as shown keep one order while
  // their observations age (time decay moves tied weights apart by a hair, one way then the other).
  const sourceTotal = sources.reduce((s, x) => s + x.weight, 0);
  const shown = (w: number): number => (sourceTotal > 0 ? perMille(w / sourceTotal) : 0);
  sources.sort((a, b) => shown(b.weight) - shown(a.weight) || a.label.localeCompare(b.label));

  // Each workspace is one independent unit weighing its capped weight: Kish's n over workspaces.
  let totalCapped = 0;
  let sumSq = 0;
  for (const c of capped.values()) {
    totalCapped += c.weight;
    sumSq += c.weight * c.weight;
  }
  const rawTotal = [...perWorkspace.values()].reduce((s, g) => s + g.sum, 0);
  const top = sums.top === null ? undefined : perWorkspace.get(sums.top);
  const others = sources.filter((s) => s.workspaceId !== sums.top);
  return {
    weighted,
    sources,
    totalWeight: weighted.reduce((s, o) => s + o.weight, 0),
    reference: weightedMedianDec(sources.map((s) => ({ value: s.median, weight: s.weight }))),
    effectiveN: sumSq > 0 ? (totalCapped * totalCapped) / sumSq : 0,
    counted: observations.reduce((s, o) => s + (capped.get(o.workspaceId)?.factor ?? 1), 0),
    workspaces: perWorkspace.size,
    heaviest: sums.top !== null && top && rawTotal > 0 ? { workspaceId: sums.top, rawShare: top.sum / rawTotal, observations: top.count } : null,
    withoutHeaviest: perWorkspace.size > 1 && others.length > 0 ? weightedMedianDec(others.map((s) => ({ value: s.median, weight: s.weight }))) : null,
  };
}

/**
 * A weight share over one half, to a tenth of a percent: exactly half is not (two workspaces equalised by the cap give
 * 0.5 + ε), nor is a half that time decay tilts by less (the same quote from two workspaces a second apart weighs
 * 0.5 + 10⁻⁸), which would be disclosed as dependence on one of them. So a share called over half reads 50.1% or more.
 */
export function overHalf(share: number): boolean {
  return perMille(share) > 500;
}

/**
 * A weight share of one half or more, to a tenth of a percent. The heaviest of two workspaces always has it, so two
 * workspaces that disagree in equal measure (a tie, or one a second fresher) are weighed as one resting on the other.
 */
export function halfOrMore(share: number): boolean {
  return perMille(share) >= 500;
}

/** The reference resting on one workspace: what it would be without it, and that workspace's share of the raw weight. */
export interface OneWorkspaceReference {
  rawShare: number;
  reference: Dec;
  withoutIt: Dec;
}

/**
 * Whether the reference rests on one workspace: the heaviest carries half or more of the raw weight and
 * the reference with it differs from the reference without it by more than the band's minimum
 * half-width (|ln a − ln b| > ln(1 + minRelativeHalfWidth)). Then neither a verdict nor compute's
 * network reference stands on it.
 */
export function restsOnOneWorkspace(
  stats: { reference: Dec; withoutHeaviest: Dec | null; heaviest: HeaviestWorkspace | null },
  minRelativeHalfWidth: number,
): OneWorkspaceReference | null {
  const { heaviest, reference, withoutHeaviest } = stats;
  if (!heaviest || !withoutHeaviest || !halfOrMore(heaviest.rawShare)) return null;
  const gap = Math.abs(Math.log(reference.toNumber()) - Math.log(withoutHeaviest.toNumber()));
  return gap > Math.log(1 + minRelativeHalfWidth) ? { rawShare: heaviest.rawShare, reference, withoutIt: withoutHeaviest } : null;
}

/**
 * "Almost no" weight near the reference: below a tenth of it (to a tenth of a percent, as shares are compared). One stray
 * quote among ten or more does not hide a gap; a real cluster at the reference holds far more.
 */
const NEAR_SHARE_PER_MILLE = 100;

/** Evidence split around the reference: the groups on either side and how little lies near the reference. */
export interface SplitEvidence {
  /** Weighted median of the observations below the near zone, and of those above it. */
  below: Dec;
  above: Dec;
  /** Share of the weight within the near zone. */
  nearShare: number;
  /** The near zone's half-width as a ratio: e^radius − 1 (0.19 = within 19 % either way). */
  nearRelative: number;
}

/**
 * Whether the reference lies in a gap between separated groups of prices (two price clusters: a
 * median of source medians then falls between them, on a price nobody quotes). On log prices around
 * the reference c, with the weights the band uses: the near zone is |ln x − c| ≤ max(MAD / 2,
 * ln(1 + minRelativeHalfWidth)), MAD the weighted median absolute deviation from c (unscaled). By
 * definition half the weight lies within one MAD of c; a single cluster around c puts about a
 * quarter within half of it (a normal or a uniform sample alike), two clusters either side of c put
 * none. Split when under a tenth of the weight is near, with weight on both sides. The floor at the
 * band's minimum half-width keeps two groups closer than that (9.90 and 10.10) from counting as two.
 */
export function splitAround(items: readonly Weighted<Dec>[], reference: Dec, minRelativeHalfWidth: number): SplitEvidence | null {
  const total = items.reduce((s, i) => s + i.weight, 0);
  if (items.length < 2 || total <= 0) return null;
  const centre = Math.log(reference.toNumber());
  const logs = items.map((i) => ({ ...i, d: Math.log(i.value.toNumber()) - centre }));
  const mad = weightedQuantile(logs.map((l) => ({ value: Math.abs(l.d), weight: l.weight })), 0.5);
  const radius = Math.max(mad / 2, Math.log(1 + minRelativeHalfWidth));
  // A hair of tolerance so a price exactly on the zone's edge (as computed in floating point) counts as near.
  const edge = radius + 1e-12;
  const nearShare = logs.filter((l) => Math.abs(l.d) <= edge).reduce((s, l) => s + l.weight, 0) / total;
  if (perMille(nearShare) >= NEAR_SHARE_PER_MILLE) return null;
  const below = logs.filter((l) => l.d < -edge);
  const above = logs.filter((l) => l.d > edge);
  if (below.length === 0 || above.length === 0) return null;
  return { below: weightedMedianDec(below), above: weightedMedianDec(above), nearShare, nearRelative: Math.exp(radius) - 1 };
}
