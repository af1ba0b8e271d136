import type { FailureKind } from './attempt';
import type { AppliedRule } from './routing/router';
/** Typed outcomes of the engine that the HTTP layer maps onto SPEC's errors. */
export interface CandidateReport {
  function: string;
  id: string | null;
  kept: boolean;
  reason?: 'cost ceiling' | 'latency ceiling' | 'breaker open' | 'rule miss' | 'unreachable' | 'not active' | 'no weight' | 'pipeline unavailable';
  detail?: string;
  /**
   * What else leaves it out besides `reason`: a second ceiling (over both, raising one alone would still leave it out),
   * or, under a policy, that no rule sends this context to it (its ceiling is then not what keeps the call from it).
   */
  also?: Array<{ reason: 'latency ceiling' | 'rule miss'; detail: string }>;
  cost_per_unit?: string;
  latency_p50_ms?: number | 'no data';
}

export interface AttemptReport {
  function: string;
  /** null for a reference out of the caller's reach (skipped): what it is, is not the caller's to know. */
  id: string | null;
  role: 'chosen' | 'alternate' | 'fallback_chain' | 'fallback_function';
  outcome: 'ok' | 'failed' | 'skipped' | 'not_applicable' | 'pool_busy';
  error?: string;
  /** On a failed attempt: why, for machines (FailureKind; `error` says it in words). */
  failure?: FailureKind;
  /** false on a failure no retry can change: the function's address is one the service will not call. */
  retryable?: false;
  /** true on a timeout the call's time budget (COMPUTE_CALL_MAX_MS) imposed before the function's own: not counted against it. */
  cut_by_budget?: true;
  /** true when the answer came from the result cache: the function did not run. */
  cached?: true;
  /** Seconds the endpoint asked to wait before another call (its Retry-After with the failure, at most 300). */
  retry_after?: number;
  ms: number;
}

export type EngineErrorCode =
  | 'function_not_found'
  | 'outside_plan'
  | 'function_draft'
  | 'function_inactive'
  | 'no_eligible_function'
  | 'functions_failed'
  | 'service_busy'
  | 'insufficient_context'
  | 'pipeline_execution_unavailable'
  | 'explicit_without_function';

export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    /**
     * `reached`: the function a pinned call named, resolved within the caller's reach, that cannot run (a draft, inactive,
     * a pipeline); never set for one missing or out of reach, whose refusal must not tell the two apart.
     */
    readonly details: { reached?: { id: string; name: string }; candidates?: CandidateReport[]; decisive?: CandidateReport[]; attempts?: AttemptReport[]; missing?: string[]; refused?: string[]; retryAfterS?: number; functionId?: string; strategy?: string; policyStrategy?: string; permanent?: boolean; excludedCouldPrice?: CandidateReport[]; policyId?: string; refusedAt?: string[]; ownRefusedAt?: string[]; pinned?: boolean; suggestedId?: string; suggestedName?: string; declined?: Array<{ input: string; reason: string }>; chosenMissing?: string[]; endpointRefused?: string[]; ruleMatched?: boolean; rule?: AppliedRule } = {},
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

/** How a failure message names each part of the attempt order. */
const ROLE_WORDS: Record<AttemptReport['role'], string> = {
  chosen: 'the chosen function',
  alternate: "the strategy's alternates",
  fallback_chain: 'the fallback chain',
  fallback_function: 'the fallback function',
};

/** The parts of the attempt order a call went through, in that order: what a failure message names. */
export function triedRoles(attempts: AttemptReport[], pinned: boolean): string {
  // The parts that ran; a part whose functions were all skipped (out of reach, not active) was not tried.
  const ran = attempts.filter((a) => a.outcome !== 'skipped');
  return [...new Set((ran.length ? ran : attempts).map((a) => a.role))].map((role) => (role === 'chosen' && pinned ? 'the function named in the request' : ROLE_WORDS[role])).join(', ');
}
