import type { AttemptReport, CandidateReport } from './errors';
import { EngineError } from './errors';

export interface UnpricedContext {
  attempts: AttemptReport[];
  /** The functions that said they cannot price this context, in the order tried. */
  notApplicable: string[];
  missing: string[];
  chosenMissing: string[];
  declined: Array<{ input: string; reason: string }>;
  /** Functions whose endpoint refused the context without naming a value (HTTP 400, 404, 413, 422). */
  endpointRefused: string[];
  excludedCouldPrice: CandidateReport[];
  policyId: string | undefined;
  /** Candidates routing left out for their open breaker alone (not in attempts): named beside those that failed. */
  heldOut: string[];
}

const listed = (names: string[]): string => [...new Set(names)].join(', ');

/**
 * The 422 of a context no function that could judge it could price: each one's reason, and, named apart, the functions
 * that failed on it, cannot be called at their address, or are behind an open breaker (so the answer says what failed,
 * whichever state the breakers are in).
 */
export function unpricedContext(u: UnpricedContext): EngineError {
  // The reasons of the functions that ran; a function skipped (out of reach, over the ceiling) is in attempts and excluded_by_policy.
  const said = u.attempts.filter((a) => (a.outcome === 'not_applicable' || a.outcome === 'failed') && a.error);
  // One function's reason reads as it is; several say whose each is.
  const reasons = said.length === 1 ? (said[0]?.error ?? '') : said.map((a) => `${a.function}: ${a.error ?? ''}${/[.!?)]$/.test(a.error ?? '') ? '' : '.'}`).join(' ');
  const failed = said.filter((a) => a.outcome === 'failed');
  const uncallable = failed.filter((a) => a.retryable === false).map((a) => a.function);
  const broke = failed.filter((a) => a.retryable !== false).map((a) => a.function);
  const behind = [...u.attempts.filter((a) => a.outcome === 'skipped' && a.error === 'breaker open').map((a) => a.function), ...u.heldOut];
  const others = [
    broke.length ? `${listed(broke)} failed` : null,
    uncallable.length ? `${listed(uncallable)} cannot be called` : null,
    behind.length ? `${listed(behind)} ${new Set(behind).size > 1 ? 'are' : 'is'} behind an open circuit breaker` : null,
  ].filter((p): p is string => p !== null);
  return new EngineError('insufficient_context', `The context cannot be priced by ${u.notApplicable.join(', ')}${others.length ? `, and ${others.join(', and ')}` : ''}: ${reasons}`, {
    attempts: u.attempts,
    missing: u.missing,
    chosenMissing: u.chosenMissing,
    ...(u.declined.length ? { declined: u.declined } : {}),
    ...(u.endpointRefused.length ? { endpointRefused: u.endpointRefused } : {}),
    ...(u.excludedCouldPrice.length ? { excludedCouldPrice: u.excludedCouldPrice, ...(u.policyId ? { policyId: u.policyId } : {}) } : {}),
  });
}
