/** The verdict's input and answer shapes (see verdict.ts, docs/verification.md). */

export type VerdictValue = 'reasonable' | 'high' | 'low' | 'unknown';

/** One stored observation, as the verdict needs it. */
export interface Observation {
  id: string;
  workspaceId: string;
  source: string;
  /** Decimal string, > 0. */
  amount: string;
  /** Epoch milliseconds. */
  observedAt: number;
  /** Where it came from; an accepted outcome's source names a function. */
  origin?: 'contribution' | 'accepted_outcome';
  /** The label shown for its source, when it differs from `source` (a private function's name hidden); grouping stays by `source`. */
  label?: string;
}

export interface VerdictThresholds {
  /** Smallest Kish effective n of the time-weighted observations for a two-sided verdict. */
  minEffectiveObservations: number;
  /** Smallest number of distinct submitting workspaces for a two-sided verdict. */
  minSources: number;
  halfLifeDays: number;
  maxAgeDays: number;
  /** Band half-width in robust standard deviations of log prices. */
  bandK: number;
  /** Smallest band half-width relative to the reference (0.05 = 5 %). */
  minRelativeHalfWidth: number;
}

/** A hard bound the caller stated in the context, with the keys it came from. */
export interface Constraint {
  value: string;
  from: string[];
}

export interface VerdictInput {
  /** Decimal string, > 0. */
  proposedPrice: string;
  /** Matching observations (same product type and currency); older ones are ignored here too. */
  observations: readonly Observation[];
  now: number;
  /** The caller's workspace, or null for the keyless demo. */
  callerWorkspaceId: string | null;
  /** The caller's own current price (context.current_price), a decimal string. */
  currentPrice?: string | null;
  /** Lowest acceptable price (max of unit_cost and min_price). */
  floor?: Constraint | null;
  /** Highest acceptable price (max_price). */
  ceiling?: Constraint | null;
  /** Matching observations older than the max age that were not read (reported only). */
  olderIgnored?: number;
  thresholds: VerdictThresholds;
  /** The currency's minor units: the fewest decimals an amount is shown with (default 2). */
  minorDigits?: number;
}

export interface SourceSummary {
  label: string;
  observations: number;
  median: string;
  weight_share: number;
  own_workspace: boolean;
}

export interface Reference {
  price: string;
  statistic: 'time_weighted_median_of_source_medians';
  observations: number;
  effective_n: number;
  sources: number;
  source_labels: SourceSummary[];
  sources_listed_truncated: boolean;
  newest_age_days: number;
  oldest_age_days: number;
  median_age_days: number;
  half_life_days: number;
  total_weight: number;
}

export interface Band {
  lower: string | null;
  upper: string | null;
  lower_open: boolean;
  upper_open: boolean;
  method: string;
  /** Two-sided bands: how the bounds follow from the reference. */
  formula?: string;
  /** Two-sided bands: the robust standard deviation of log prices and how it was estimated. */
  scale?: { sigma_log: number; estimator: 'mad' | 'iqr' | 'mean_absolute_deviation' | 'none'; half_width_log: number; min_half_width_applied: boolean };
}

export interface Independence {
  independent: boolean;
  reasons: string[];
  sources: number;
  /** Distinct submitting workspaces behind the evidence: what the minimum of sources counts. */
  workspaces: number;
  largest_source_share: number | null;
  own_workspace_share: number;
  own_workspace_observations: number;
  excluded_circular: number;
  duplicates_removed: number;
}

export interface VerdictResult {
  verdict: VerdictValue;
  proposed_price: string;
  /** What decided the verdict: the observation band, a caller constraint, or nothing. */
  basis: 'observations' | 'floor' | 'ceiling' | 'none';
  reasons: string[];
  reference: Reference | null;
  band: Band;
  constraints: { floor: Constraint | null; ceiling: Constraint | null };
  independence: Independence;
  evidence: { matched: number; used: number; ignored_older_than_max_age: number; sufficient: boolean };
  confidence: number;
  confidence_factors: Record<string, number>;
  /** What would make the evidence judgeable, when the verdict alone knows (prices split into two groups); the service adds it to its hint. */
  hint?: string;
  thresholds: {
    min_effective_observations: number;
    min_sources: number;
    half_life_days: number;
    max_age_days: number;
    band_k: number;
    min_relative_half_width: number;
  };
}
