import { dec, formatMoney } from '../../../core/money';
import type { Dec } from '../../../core/money';
import { enoughForVerdict, logBand, overHalf, restsOnOneWorkspace, sourceMedians, splitAround, withoutCopies } from './weighted-stats';
import type { LogBand, OneWorkspaceReference, SplitEvidence } from './weighted-stats';
import type { VerdictValue, Observation, VerdictThresholds, VerdictInput, Reference, Band, Independence, VerdictResult } from './verdict-types';

export type { VerdictValue, Observation, VerdictThresholds, Constraint, VerdictInput, SourceSummary, Reference, Band, Independence, VerdictResult } from './verdict-types';

/**
 * The price verdict as a pure function of stored observations, the proposed price, the caller's
 * constraints and a fixed "now": no HTTP, no database, no clock. See docs/verification.md for the
 * rules and shared/notes/pricing-methods.md sections 7 and 8 for where they come from.
 */

const DAY_MS = 86_400_000;

/** The band of the observations with its bounds as shown (priceString). */
type ObservationBand = LogBand & { lower: Dec; upper: Dec };
/** Weight share above which one source dominates the evidence (compared with overHalf: exactly half is not over it). */
const DOMINANT_SHARE = 0.5;
/** Prior count in the amount-of-evidence factor n/(n + k). */
const AMOUNT_K = 5;
/** Caller-supplied constraints (unit cost, minimum or maximum price) are trusted this much. */
const CONSTRAINT_CONFIDENCE = 0.5;
/** Most sources listed in the reference (the count is always complete). */
const MAX_SOURCES_LISTED = 20;

const round = (x: number, digits = 3): number => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/** A share in whole percent, but with as many decimals as it takes not to read 50% for a share over half (0.5004: 50.04%). */
export const pct = (share: number): string => {
  for (let digits = 0; digits < 4; digits++) {
    const shown = Number((share * 100).toFixed(digits));
    if (share > 0.5 === shown > 50 || digits === 3) return `${shown}%`;
  }
  return `${share * 100}%`;
};

/** The largest amount a price can be (18 digits on each side of the point): a bound beyond it is as good as open. */
const MAX_PRICE = '999999999999999999.999999999999999999';

/**
 * A positive float as a decimal string with at least 6 significant digits (2 to 18 decimals), and
 * no more digits than a double holds (15), so a bound of 9.4e17 does not print invented ones. A
 * bound beyond the largest price is the largest price; one below the smallest is zero (a band's
 * lower bound is then reported open).
 */
export function priceString(raw: number): string {
  if (!Number.isFinite(raw) || raw >= 1e18) return MAX_PRICE;
  if (raw <= 0) return '0.00';
  const x = dec(raw).toSignificantDigits(15);
  if (x.greaterThanOrEqualTo(1e18)) return MAX_PRICE;
  const magnitude = Math.floor(Math.log10(raw));
  const decimals = Math.min(18, Math.max(2, 5 - magnitude));
  return formatMoney(x, decimals);
}

/** A band's bounds as a verdict shows them (priceString): compute's market evidence carries the same ones. */
export function shownBounds(band: LogBand): { lower: Dec; upper: Dec } {
  return { lower: dec(priceString(Math.exp(band.centre - band.hw))), upper: dec(priceString(Math.exp(band.centre + band.hw))) };
}

function constraintDistance(p: Dec, bound: Dec, minRel: number): number {
  const d = Math.abs(Math.log(p.toNumber()) - Math.log(bound.toNumber()));
  const unit = Math.log(1 + Math.max(minRel, 0.01));
  return round(0.5 + 0.5 * Math.min(1, d / unit));
}

/** Formats an amount of the verdict's currency. */
type Amount = (x: Dec) => string;

/** Judges a proposed price against observations and the caller's floor and ceiling. */
export function evaluateVerdict(input: VerdictInput): VerdictResult {
  const t = input.thresholds;
  // Amounts carry at least the currency's minor units (JPY "1500", KWD "1.500"), as compute answers them.
  const digits = input.minorDigits ?? 2;
  const amount = (x: Dec): string => formatMoney(x, 18, digits);
  const p = dec(input.proposedPrice);
  const halfLifeMs = t.halfLifeDays * DAY_MS;
  const maxAgeMs = t.maxAgeDays * DAY_MS;
  const reasons: string[] = [];

  // 1. Recency: observations past the max age do not count at all.
  let tooOld = input.olderIgnored ?? 0;
  const fresh: Array<Observation & { age: number; value: Dec }> = [];
  for (const o of input.observations) {
    const age = Math.max(0, input.now - o.observedAt);
    if (age > maxAgeMs) {
      tooOld++;
      continue;
    }
    fresh.push({ ...o, age, value: dec(o.amount) });
  }
  const matched = fresh.length;

  // 2. Copies count once: one observation per workspace and amount, the freshest.
  const unique = withoutCopies(fresh);
  const duplicates = matched - unique.length;

  // 3. Circular evidence: the caller's own echo of the proposed price or its current price.
  const current = input.currentPrice ? dec(input.currentPrice) : null;
  const used = unique.filter((o) => !(input.callerWorkspaceId !== null && o.workspaceId === input.callerWorkspaceId && (o.value.eq(p) || (current !== null && o.value.eq(current)))));
  const circular = unique.length - used.length;

  const floor = input.floor ? dec(input.floor.value) : null;
  const ceiling = input.ceiling ? dec(input.ceiling.value) : null;
  const thresholds = {
    min_effective_observations: t.minEffectiveObservations,
    min_sources: t.minSources,
    half_life_days: t.halfLifeDays,
    max_age_days: t.maxAgeDays,
    band_k: t.bandK,
    min_relative_half_width: t.minRelativeHalfWidth,
  };

  // 4. Per-source medians (time-weighted), their weights, and the reference across sources.
  let reference: Reference | null = null;
  let nEff = 0;
  let sourceCount = 0;
  let workspaceCount = 0;
  let heaviest: { rawShare: number; observations: number; own: boolean } | null = null;
  let largestShare: number | null = null;
  let ownShare = 0;
  let ownCount = 0;
  let largestLabel = '';
  let observationBand: ObservationBand | null = null;
  let freshness = 0;
  let oneWorkspace: (OneWorkspaceReference & { own: boolean }) | null = null;
  let split: SplitEvidence | null = null;
  if (used.length > 0) {
    const stats = sourceMedians(used, halfLifeMs);
    const { weighted, totalWeight } = stats;
    nEff = stats.effectiveN;
    // The mean weight, each observation counted as its workspace's cap counts it: fresh copies do not freshen the evidence.
    freshness = stats.counted > 0 ? Math.sqrt(totalWeight / stats.counted) : 0;
    workspaceCount = stats.workspaces;
    heaviest = stats.heaviest ? { rawShare: stats.heaviest.rawShare, observations: stats.heaviest.observations, own: stats.heaviest.workspaceId === input.callerWorkspaceId } : null;
    const sources = stats.sources.map((s) => ({ ...s, own: s.workspaceId === input.callerWorkspaceId, count: s.items.length }));
    sourceCount = sources.length;
    const ref = stats.reference;
    const rests = restsOnOneWorkspace(stats, t.minRelativeHalfWidth);
    oneWorkspace = rests ? { ...rests, own: stats.heaviest?.workspaceId === input.callerWorkspaceId } : null;
    split = splitAround(weighted, ref, t.minRelativeHalfWidth);
    const top = sources[0];
    largestShare = top ? top.weight / totalWeight : null;
    largestLabel = top?.label ?? '';
    ownShare = sources.filter((s) => s.own).reduce((s, g) => s + g.weight, 0) / totalWeight;
    ownCount = sources.filter((s) => s.own).reduce((s, g) => s + g.count, 0);
    const ages = weighted.map((o) => o.age / DAY_MS).sort((a, b) => a - b);
    const mid = Math.floor(ages.length / 2);
    const medianAge = ages.length % 2 === 1 ? (ages[mid] ?? 0) : ((ages[mid - 1] ?? 0) + (ages[mid] ?? 0)) / 2;
    reference = {
      price: amount(ref),
      statistic: 'time_weighted_median_of_source_medians',
      observations: weighted.length,
      effective_n: round(nEff, 2),
      sources: sourceCount,
      source_labels: sources.slice(0, MAX_SOURCES_LISTED).map((s) => ({
        label: s.label,
        observations: s.count,
        median: amount(s.median),
        weight_share: round(s.weight / totalWeight),
        own_workspace: s.own,
      })),
      sources_listed_truncated: sources.length > MAX_SOURCES_LISTED,
      newest_age_days: round(ages[0] ?? 0, 2),
      oldest_age_days: round(ages[ages.length - 1] ?? 0, 2),
      median_age_days: round(medianAge, 2),
      half_life_days: t.halfLifeDays,
      total_weight: round(totalWeight),
    };

    // 5. The band: centre ± k robust standard deviations of log prices, never narrower than the minimum.
    const band = logBand(weighted, ref, t.bandK, t.minRelativeHalfWidth);
    observationBand = { ...band, ...shownBounds(band) };
  }

  // 6. Independence disclosure.
  const independenceReasons: string[] = [];
  if (used.length > 0 && sourceCount < 2) independenceReasons.push(`fewer than 2 distinct sources: all ${used.length} observation(s) come from one source ("${largestLabel}")`);
  if (sourceCount >= 2 && largestShare !== null && overHalf(largestShare)) independenceReasons.push(`one source ("${largestLabel}") carries ${pct(largestShare)} of the weight, over half`);
  // One submitter posting under several labels is one source of evidence, however many labels it uses.
  const oneSubmitter = sourceCount >= 2 && workspaceCount === 1;
  if (oneSubmitter) independenceReasons.push(`all ${sourceCount} sources come from one workspace`);
  // One workspace submitting most of the weight: capped (it counts no more than the next one), and said.
  const dominantWorkspace = workspaceCount >= 2 && heaviest !== null && overHalf(heaviest.rawShare) ? heaviest : null;
  if (dominantWorkspace) {
    independenceReasons.push(
      `one workspace${dominantWorkspace.own ? ' (your own)' : ''} submitted ${pct(dominantWorkspace.rawShare)} of the weight (${dominantWorkspace.observations} of ${used.length} observations), over half: its weight is capped at the next-heaviest workspace's, and like every workspace it counts once`,
    );
  }
  if (ownCount > 0) independenceReasons.push(`${ownCount} observation(s) (${pct(ownShare)} of the weight) come from your own workspace`);
  if (circular > 0) independenceReasons.push(`${circular} observation(s) of your own workspace equal to the proposed price or your current price were excluded as circular evidence`);
  const independence: Independence = {
    independent: independenceReasons.length === 0 && used.length > 0,
    reasons: used.length === 0 && circular === 0 ? ['no observations: there is no evidence to be independent'] : independenceReasons,
    sources: sourceCount,
    workspaces: workspaceCount,
    largest_source_share: largestShare === null ? null : round(largestShare),
    own_workspace_share: round(ownShare),
    own_workspace_observations: ownCount,
    excluded_circular: circular,
    duplicates_removed: duplicates,
  };

  // The effective n is compared as reported (two decimals), so five fresh observations a few
  // minutes apart count as 5, not 4.9999.
  // Sources are counted by submitting workspace here: one workspace under several labels is one source.
  // A reference that one workspace alone moves by more than the band's minimum half-width is not evidence enough either,
  // nor one lying in a gap between two groups of prices (no price anyone quotes).
  const sufficient = used.length > 0 && enoughForVerdict(nEff, workspaceCount, t) && oneWorkspace === null && split === null;
  const evidence = { matched: input.observations.length + (input.olderIgnored ?? 0), used: used.length, ignored_older_than_max_age: tooOld, sufficient };
  const constraints = { floor: input.floor ?? null, ceiling: input.ceiling ?? null };
  const hint = split
    ? `The quotes fall into two separate price groups (around ${amount(split.below)} and ${amount(split.above)}), often two products, sizes or packagings under one product_type: a more specific product_type, for the observations and the verification, separates them.`
    : undefined;
  const base = { proposed_price: amount(p), reference, constraints, independence, evidence, thresholds, ...(hint ? { hint } : {}) };

  if (!sufficient) {
    if (used.length === 0 && circular > 0) reasons.push(`all ${circular} usable matching observation(s) are your own workspace's echo of the proposed or current price and were excluded as circular evidence`);
    else if (used.length === 0 && tooOld > 0) reasons.push(`all ${tooOld} matching observation(s) are older than ${t.maxAgeDays} days and were ignored`);
    else if (used.length === 0) reasons.push('no stored observation matches this product type and currency');
    else {
      if (round(nEff, 2) < t.minEffectiveObservations) reasons.push(`effective number of independent submitters ${round(nEff, 2)} is below the minimum ${t.minEffectiveObservations}: a workspace counts once, however many quotes it posts`);
      if (workspaceCount < t.minSources) {
        reasons.push(`${workspaceCount} distinct source(s), below the minimum ${t.minSources}: sources are counted by submitting workspace (with its test workspace and the agent workspaces claimed into it), one however many labels it uses`);
      }
      if (oneWorkspace) {
        reasons.push(
          `the reference rests on one workspace: without the one${oneWorkspace.own ? ' (your own)' : ''} that submitted ${pct(oneWorkspace.rawShare)} of the weight it would be ${amount(oneWorkspace.withoutIt)}, not ${amount(oneWorkspace.reference)}`,
        );
      }
      if (split && reference) {
        reasons.push(
          `quotes split into two groups around ${amount(split.below)} and ${amount(split.above)}: the reference ${reference.price} lies in the gap between them, with ${pct(split.nearShare)} of the weight within ${Math.round(split.nearRelative * 100)}% of it`,
        );
      }
    }
  }

  // Conflicting constraints: no judgement can honour both.
  if (floor && ceiling && floor.greaterThan(ceiling)) {
    reasons.push(`the floor ${amount(floor)} (${constraints.floor?.from.join(', ')}) is above the ceiling ${amount(ceiling)} (max_price): the constraints conflict`);
    return { ...base, verdict: 'unknown', basis: 'none', reasons, band: { lower: null, upper: null, lower_open: true, upper_open: true, method: 'conflicting_constraints' }, evidence, confidence: 0, confidence_factors: {} };
  }

  // A caller's hard constraint decides first: below the floor is low, above the ceiling is high.
  if (floor && p.lessThan(floor)) {
    reasons.push(`the proposed price is below the floor ${amount(floor)} (${input.floor?.from.join(', ')})`);
    const band = sufficient && observationBand ? constrainedBand(observationBand, floor, ceiling, t, amount) : oneSidedBand(floor, ceiling, amount);
    const distance = constraintDistance(p, floor, t.minRelativeHalfWidth);
    return { ...base, verdict: 'low', basis: 'floor', reasons, band, confidence: round(CONSTRAINT_CONFIDENCE * distance), confidence_factors: { caller_constraint: CONSTRAINT_CONFIDENCE, distance } };
  }
  if (ceiling && p.greaterThan(ceiling)) {
    reasons.push(`the proposed price is above the ceiling ${amount(ceiling)} (max_price)`);
    const band = sufficient && observationBand ? constrainedBand(observationBand, floor, ceiling, t, amount) : oneSidedBand(floor, ceiling, amount);
    const distance = constraintDistance(p, ceiling, t.minRelativeHalfWidth);
    return { ...base, verdict: 'high', basis: 'ceiling', reasons, band, confidence: round(CONSTRAINT_CONFIDENCE * distance), confidence_factors: { caller_constraint: CONSTRAINT_CONFIDENCE, distance } };
  }

  if (!sufficient || !observationBand || !reference) {
    const band = oneSidedBand(floor, ceiling, amount);
    if (floor && !ceiling) reasons.push(`only a floor is known: the price is not below ${amount(floor)}, and a floor alone never makes a price high`);
    else if (ceiling && !floor) reasons.push(`only a ceiling is known: the price is not above ${amount(ceiling)}, and a ceiling alone never makes a price low`);
    else if (floor && ceiling) reasons.push('the price lies between the floor and the ceiling, which alone do not make it reasonable');
    return { ...base, verdict: 'unknown', basis: 'none', reasons, band, confidence: 0, confidence_factors: {} };
  }

  const { sigma, hw } = observationBand;
  // A floor or ceiling inside the market's band cuts it (the price is judged against what the caller may charge and the
  // market bears); one beyond the whole band leaves the band as it is, and says the market is out of the caller's reach.
  const cut = cutBand(observationBand, floor, ceiling);
  const { lower, upper } = cut ?? observationBand;
  if (!cut && floor && floor.greaterThan(observationBand.upper)) {
    reasons.push(`the floor ${amount(floor)} (${constraints.floor?.from.join(', ')}) is above the market's whole band [${amount(observationBand.lower)}, ${amount(observationBand.upper)}]: no price it allows is inside, so the price is judged against the market as it is`);
  } else if (!cut && ceiling && ceiling.lessThan(observationBand.lower)) {
    reasons.push(`the ceiling ${amount(ceiling)} (max_price) is below the market's whole band [${amount(observationBand.lower)}, ${amount(observationBand.upper)}]: no price it allows is inside, so the price is judged against the market as it is`);
  }
  let verdict: VerdictValue;
  let nearest: Dec;
  if (p.lessThan(lower)) {
    verdict = 'low';
    nearest = lower;
    reasons.push(`the proposed price is below the band's lower bound ${amount(lower)} (reference ${reference.price})`);
  } else if (p.greaterThan(upper)) {
    verdict = 'high';
    nearest = upper;
    reasons.push(`the proposed price is above the band's upper bound ${amount(upper)} (reference ${reference.price})`);
  } else {
    verdict = 'reasonable';
    const lp = Math.log(p.toNumber());
    nearest = Math.abs(lp - Math.log(lower.toNumber())) < Math.abs(Math.log(upper.toNumber()) - lp) ? lower : upper;
    const from = lower.isZero() ? '(open below' : `[${amount(lower)}`;
    reasons.push(`the proposed price lies within the band ${from}, ${amount(upper)}] around the reference ${reference.price}`);
  }
  const unit = hw / t.bandK;
  const dist = Math.abs(Math.log(p.toNumber()) - Math.log(nearest.toNumber())) / (unit > 0 ? unit : 1);
  let independenceFactor = 1;
  if (sourceCount < 2 || oneSubmitter) independenceFactor *= 0.5;
  if (largestShare !== null && sourceCount >= 2 && overHalf(largestShare)) independenceFactor *= 1 - (largestShare - DOMINANT_SHARE);
  if (dominantWorkspace) independenceFactor *= 1 - (dominantWorkspace.rawShare - DOMINANT_SHARE);
  independenceFactor *= 1 - 0.5 * ownShare;
  const factors = {
    amount: round(nEff / (nEff + AMOUNT_K)),
    independence: round(independenceFactor),
    agreement: round(1 / (1 + sigma)),
    freshness: round(freshness),
    distance: round(0.5 + 0.5 * Math.min(1, dist)),
  };
  const confidence = round(Math.min(1, Math.max(0, factors.amount * factors.independence * factors.agreement * factors.freshness * factors.distance)));
  const band = cut ? constrainedBand(observationBand, floor, ceiling, t, amount) : twoSidedBand(observationBand, t, amount);
  return { ...base, verdict, basis: 'observations', reasons, band, confidence, confidence_factors: factors };
}

/**
 * A lower bound that rounds to zero (below half the smallest price, 10^-18) is reported open: no
 * price can be below it, and "0.00", closed, would read as if 0 were an acceptable price.
 */
function twoSidedBand(b: ObservationBand, t: VerdictThresholds, amount: Amount): Band {
  const open = b.lower.isZero();
  return {
    lower: open ? null : amount(b.lower),
    upper: amount(b.upper),
    lower_open: open,
    upper_open: false,
    method: 'log_median_k_mad',
    formula: `reference × exp(±max(${t.bandK}·σ, ln(1 + ${t.minRelativeHalfWidth}))), σ = robust standard deviation of the time-weighted log prices`,
    scale: { sigma_log: round(b.sigma, 6), estimator: b.estimator, half_width_log: round(b.hw, 6), min_half_width_applied: b.minApplied },
  };
}

/**
 * The band a price must lie in when the caller's floor or ceiling decided: the observations' band
 * cut to the constraints, so the band shown never contains the price judged low or high. When the
 * constraints leave nothing of it, the constraints alone are the band.
 */
function constrainedBand(b: ObservationBand, floor: Dec | null, ceiling: Dec | null, t: VerdictThresholds, amount: Amount): Band {
  const cut = cutBand(b, floor, ceiling);
  if (!cut) return oneSidedBand(floor, ceiling, amount);
  if (cut.lower === b.lower && cut.upper === b.upper) return twoSidedBand(b, t, amount);
  return { ...twoSidedBand({ ...b, ...cut }, t, amount), method: 'log_median_k_mad_within_constraints' };
}

/** The band cut to a floor or ceiling inside it; null when they leave nothing of it (one beyond the whole band). */
function cutBand(b: { lower: Dec; upper: Dec }, floor: Dec | null, ceiling: Dec | null): { lower: Dec; upper: Dec } | null {
  const lower = floor && floor.greaterThan(b.lower) ? floor : b.lower;
  const upper = ceiling && ceiling.lessThan(b.upper) ? ceiling : b.upper;
  return lower.greaterThan(upper) ? null : { lower, upper };
}

function oneSidedBand(floor: Dec | null, ceiling: Dec | null, amount: Amount): Band {
  if (floor && ceiling) return { lower: amount(floor), upper: amount(ceiling), lower_open: false, upper_open: false, method: 'floor_and_ceiling' };
  if (floor) return { lower: amount(floor), upper: null, lower_open: false, upper_open: true, method: 'floor_only' };
  if (ceiling) return { lower: null, upper: amount(ceiling), lower_open: true, upper_open: false, method: 'ceiling_only' };
  return { lower: null, upper: null, lower_open: true, upper_open: true, method: 'none' };
}
