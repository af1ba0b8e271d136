import type { AttemptReport, CandidateReport } from './errors';
import { EngineError } from './errors';
import { wholeSecondsToWait } from './stats/breaker';
import type { CircuitBreakers } from './stats/function-breakers';

/** A fallback skipped behind its breaker: the milliseconds until it may be called again (null: unknown), as the engine keeps them. */
export interface BehindBreaker {
  waitMs: number | null;
  trial: boolean;
  own: boolean;
}

/**
 * The answer to a call whose routing excluded every candidate and whose policy's fallbacks (if it has any) could not run
 * either: `excluded` is the router's no_eligible_function, `attempts` why each fallback was skipped.
 *
 * A candidate reported `breaker open` is one nothing but its breaker keeps out (the router checks reach, status, the
 * ceilings and weights before it). Under `policy`, only the function the rules send the context to counts (the router's
 * `decisive`): another candidate's breaker is not what keeps this context from a price. When such a candidate, or a
 * fallback skipped behind its breaker, is there, the same call will find something to run once that breaker lets a trial
 * through: the answer is the transient one a pinned call behind an open breaker gets (functions_failed, retryable, with
 * the soonest trial as retry_after), still listing every candidate and why it was excluded. Otherwise the policy's
 * exclusion (ceilings, rules, weights, reach) is the answer, and no retry changes it: no_eligible_function.
 */
export function excludedAnswer(excluded: EngineError, attempts: AttemptReport[], behind: ReadonlyMap<string, BehindBreaker>, breakers: CircuitBreakers, caller: string): EngineError {
  const fallbacks = attempts.length ? ` Nor could a fallback of the policy run: ${attempts.map((a) => `${a.function} (${a.error ?? a.outcome})`).join(', ')}.` : '';
  const candidates = excluded.details.candidates ?? [];
  const held = (excluded.details.decisive ?? candidates).filter((c): c is CandidateReport & { id: string } => c.reason === 'breaker open' && c.id !== null);
  const heldFallbacks = attempts.filter((a) => a.outcome === 'skipped' && a.error === 'breaker open' && a.id && behind.has(a.id));
  if (held.length === 0 && heldFallbacks.length === 0) return fallbacks ? new EngineError(excluded.code, `${excluded.message}${fallbacks}`, { ...excluded.details, attempts }) : excluded;

  const waits = [...held.map((c) => breakers.retryInMs(c.id, caller)), ...heldFallbacks.map((a) => behind.get(a.id ?? '')?.waitMs ?? null)].filter((w): w is number => w !== null);
  const retryAfterS = waits.length ? wholeSecondsToWait(Math.min(...waits)) : undefined;
  // Only the workspace's own breakers keep it out while the functions' are closed: its calls failed, not everyone's.
  const own = held.every((c) => breakers.state(c.id) === 'closed') && heldFallbacks.every((a) => behind.get(a.id ?? '')?.own);
  let lead = excluded.message;
  // Under `policy` the router's message already names the function the rules chose and its reason; otherwise name the
  // candidates the breakers keep out, apart from those the policy's settings exclude.
  if (held.length > 0 && excluded.details.strategy !== 'policy') {
    const names = held.map((c) => c.function).join(', ');
    const many = held.length > 1;
    const others = candidates.some((c) => c.reason !== 'breaker open');
    const why = own
      ? ` for this workspace, whose calls to ${many ? 'them' : 'it'} kept failing (other workspaces' calls still reach ${many ? 'them' : 'it'})`
      : ' after recent failures';
    lead = `No candidate function can run under strategy ${excluded.details.strategy ?? 'default'} now: ${names} ${many ? 'have their' : 'has its'} circuit breaker open${why}${others ? '; every other candidate is excluded (candidates gives each reason)' : ''}.`;
  }
  const when = retryAfterS === undefined ? '' : ` The first lets a trial call through in ${retryAfterS} s.`;
  return new EngineError('functions_failed', `${lead}${fallbacks}${when}`, { ...excluded.details, attempts, ...(retryAfterS !== undefined ? { retryAfterS } : {}) });
}
