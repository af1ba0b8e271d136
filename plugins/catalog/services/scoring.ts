/**
 * Leaderboard scoring method version 3 (docs/leaderboard.md). Pure functions: the aggregate gives
 * raw counts per function, these turn them into what may be published and into a score.
 */

export const SCORING_METHOD_VERSION = 3;

/** Priors of method 3: each component starts at its prior mean with the weight of that many observations. */
export const PRIORS = {
  /** Beta(2, 2) on the acceptance rate of reported outcomes: mean 0.5, weight 4 outcomes. */
  acceptance: { mean: 0.5, weight: 4 },
  /** Mean quality score 0.5 with the weight of 4 scores. */
  quality: { mean: 0.5, weight: 4 },
  /** Beta(9, 1) on the success share: mean 0.9, weight 10 calls. */
  reliability: { mean: 0.9, weight: 10 },
} as const;

/** Weights of the three components in the score (they sum to 1). */
export const WEIGHTS = { acceptance: 0.5, quality: 0.3, reliability: 0.2 } as const;

export const SCORING_DESCRIPTION =
  'score = 100 × (0.5 × A + 0.3 × Q + 0.2 × R), rounded to 2 decimals, where A = (sum of each consumer\'s accepted share + 2) / (consumers reporting outcomes + 4) is the Bayesian-smoothed acceptance rate of reported outcomes (Beta(2,2) prior), ' +
  'Q = (sum of each consumer\'s mean quality score + 0.5 × 4) / (consumers reporting scores + 4) is the smoothed mean quality score, and R = (successful calls + 9) / (calls + 10) is the smoothed success share of the consumers\' calls (Beta(9,1) prior). ' +
  'Each consumer (a person, counted once) weighs as one view however many reports it sends; the publisher\'s own calls and reports count towards total_invocations only. ' +
  'A function whose usage is below the publication threshold is scored on the priors alone (58.00), so its rank reveals nothing about that usage.';

/**
 * Raw counts of one function over the aggregate window (never published as such). Only `calls`
 * includes the publisher's own calls; everything else is its consumers' (docs/leaderboard.md).
 */
export interface FunctionAggregate {
  /** Calls that named the function: answered by it, or failed with it as the chosen function; the publisher's included. */
  calls: number;
  /** Its consumers' calls (the publisher's left out). */
  consumerCalls: number;
  /** Its consumers' calls it answered. */
  ok: number;
  /** Outcomes its consumers reported on answered calls. */
  accepted: number;
  rejected: number;
  /** Consumers who reported an outcome, and the sum of each one's accepted share: one consumer, one view. */
  outcomeConsumers: number;
  acceptanceSum: number;
  /** Consumers who reported a quality score, and the sum of each one's mean score. */
  qualityConsumers: number;
  qualitySum: number;
  confidenceN: number;
  confidenceSum: number;
  /** Distinct consumers: a person counts once across their workspaces, otherwise the workspace; never the publisher. */
  consumers: number;
}

export const EMPTY_AGGREGATE: FunctionAggregate = {
  calls: 0,
  consumerCalls: 0,
  ok: 0,
  accepted: 0,
  rejected: 0,
  outcomeConsumers: 0,
  acceptanceSum: 0,
  qualityConsumers: 0,
  qualitySum: 0,
  confidenceN: 0,
  confidenceSum: 0,
  consumers: 0,
};

export interface PublicationRules {
  minDistinctConsumers: number;
  confidenceMinCustomers: number;
  confidenceRounding: number;
}

export interface ScoreComponents {
  acceptance: number;
  quality: number;
  reliability: number;
}

export interface PublishedStats {
  score: number;
  total_invocations: number | null;
  distinct_consumers: number | null;
  stats: {
    usage_status: 'published' | 'below_threshold';
    score_basis: 'usage' | 'priors_only';
    components: ScoreComponents;
    reported_outcomes: number | null;
    acceptance_rate: number | null;
    mean_quality_score: number | null;
    success_rate: number | null;
    average_confidence: number | null;
    confidence_status: 'published' | 'below_threshold' | 'no_data';
  };
}

const round = (x: number, decimals: number): number => {
  const f = 10 ** decimals;
  return Math.round(x * f) / f;
};

function decimalsOf(step: number): number {
  const text = String(step);
  const exp = /e-(\d+)$/.exec(text);
  if (exp) return Number(exp[1]);
  return (text.split('.')[1] ?? '').length;
}

/** Rounds to the nearest multiple of `step` (0.05: 0.87 → 0.85, 0.875 → 0.9), without float noise. */
export function roundToStep(x: number, step: number): number {
  // The quotient is cut to 9 decimals first, so 0.975 / 0.05 (19.4999…96 in binary) counts as 19.5.
  return round(Math.round(Number((x / step).toFixed(9))) * step, decimalsOf(step));
}

const smoothed = (sum: number, n: number, prior: { mean: number; weight: number }): number => (sum + prior.mean * prior.weight) / (n + prior.weight);

export function components(a: FunctionAggregate): ScoreComponents {
  return {
    acceptance: smoothed(a.acceptanceSum, a.outcomeConsumers, PRIORS.acceptance),
    quality: smoothed(a.qualitySum, a.qualityConsumers, PRIORS.quality),
    reliability: smoothed(a.ok, a.consumerCalls, PRIORS.reliability),
  };
}

export function scoreOf(c: ScoreComponents): number {
  return round(100 * (WEIGHTS.acceptance * c.acceptance + WEIGHTS.quality * c.quality + WEIGHTS.reliability * c.reliability), 2);
}

/** What the leaderboard may say about one function under the publication rules. */
export function publish(a: FunctionAggregate, rules: PublicationRules): PublishedStats {
  const published = a.consumers >= rules.minDistinctConsumers;
  const basis = published ? a : EMPTY_AGGREGATE;
  const c = components(basis);
  const outcomes = a.accepted + a.rejected;
  let confidenceStatus: PublishedStats['stats']['confidence_status'] = 'below_threshold';
  let confidence: number | null = null;
  if (published && a.consumers >= rules.confidenceMinCustomers) {
    if (a.confidenceN === 0) confidenceStatus = 'no_data';
    else {
      confidenceStatus = 'published';
      confidence = roundToStep(a.confidenceSum / a.confidenceN, rules.confidenceRounding);
    }
  }
  return {
    score: scoreOf(c),
    total_invocations: published ? a.calls : null,
    distinct_consumers: published ? a.consumers : null,
    stats: {
      usage_status: published ? 'published' : 'below_threshold',
      score_basis: published ? 'usage' : 'priors_only',
      components: { acceptance: round(c.acceptance, 4), quality: round(c.quality, 4), reliability: round(c.reliability, 4) },
      reported_outcomes: published ? outcomes : null,
      acceptance_rate: published && a.outcomeConsumers > 0 ? round(a.acceptanceSum / a.outcomeConsumers, 4) : null,
      mean_quality_score: published && a.qualityConsumers > 0 ? round(a.qualitySum / a.qualityConsumers, 4) : null,
      success_rate: published && a.consumerCalls > 0 ? round(a.ok / a.consumerCalls, 4) : null,
      average_confidence: confidence,
      confidence_status: confidenceStatus,
    },
  };
}
