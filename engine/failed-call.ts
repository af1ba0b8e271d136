import type { MarketEvidence } from './builtins/types';
import type { CallAttempts } from './call-attempts';
import type { AttemptReport } from './errors';
import { EngineError, triedRoles } from './errors';
import type { FunctionDescriptor } from './functions';
import type { FunctionRegistry } from './registry';
import type { RoutingPolicy } from './routing/policy';
import { excludedByPolicy } from './routing/comparisons';
import type { RouteDecision } from './routing/router';
import { wholeSecondsToWait } from './stats/breaker';
import type { CircuitBreakers } from './stats/function-breakers';
import { unpricedContext } from './unpriced';

export interface FailedCall {
  calls: CallAttempts;
  pinned: boolean;
  decision: RouteDecision | null;
  policy: RoutingPolicy | null;
  context: Record<string, unknown>;
  workspaceId: string;
  /** Whose breaker a failure counts in (healthCallerOf). */
  caller: string;
  marketFor: (fn: FunctionDescriptor) => MarketEvidence | undefined;
}

/**
 * How long a function that failed in this call stays out of a retry's reach (ms), or null when a retry may call it at
 * once: its endpoint's Retry-After, or the breaker its failure opened, whichever ends later (the breaker skips it till then).
 */
function waitAfterFailure(breakers: CircuitBreakers, a: AttemptReport, caller: string): number | null {
  const asked = a.retry_after !== undefined ? a.retry_after * 1000 : null;
  const breaker = a.id ? breakers.retryInMs(a.id, caller) : null;
  return asked === null ? breaker : breaker === null ? asked : Math.max(asked, breaker);
}

/**
 * The answer to a call that ran (or could have run) something and got no price: a refused value or a context no function
 * could price (422 insufficient_context), a pool too busy to run anything (service_busy), or functions that failed
 * (functions_failed), with the wait a retry needs when every one is kept away for a while.
 */
export function failedCallAnswer(f: FailedCall, registry: FunctionRegistry, breakers: CircuitBreakers): EngineError {
  const { calls, caller } = f;
  const attempts = calls.list;
  const { missing, notApplicable } = calls;
  if (calls.refused) {
    return new EngineError('insufficient_context', `The context cannot be priced by ${calls.refused.fn}: ${calls.refused.message}`, { attempts, missing: [], refused: calls.refused.inputs });
  }
  // A function out of reach or not active was never a candidate to run; an open breaker stands for real failures.
  const failedForReal = attempts.filter((a) => a.outcome === 'failed' || (a.outcome === 'skipped' && a.error === 'breaker open'));
  // Functions the pool never ran might have priced it: the service is at fault, and a retry can succeed.
  if (failedForReal.length === 0 && calls.poolBusy()) return new EngineError('service_busy', 'Every pricing worker was busy: no function could be run in time.', { attempts });
  // A function at an address the service will never call is as unable to price the context as one lacking its inputs:
  // beside functions that could not price it, the caller hears what the context lacks, not "retrying will not help".
  const mayPass = failedForReal.filter((a) => a.retryable !== false);
  // A routed call whose every function able to judge the context could not price it is the context's fault, whether the
  // others failed on it or are behind an open breaker (left out by routing, or skipped): the same context answers the same
  // 422 in every breaker state, not a 502 while a breaker is closed or half-open and a 422 while it is open. Only when
  // every function in the order was judged: one the pool or the time budget never ran, or a strategy passed over after
  // a failure, might have priced it. A pinned function is the caller's own choice: its failure stays the answer (502).
  const judgedAll = !calls.passedOver && !attempts.some((a) => a.outcome === 'pool_busy' || a.cut_by_budget || a.error === 'call time budget spent');
  if (notApplicable.length > 0 && (mayPass.length === 0 || (!f.pinned && judgedAll))) {
    const ran = new Set(attempts.flatMap((a) => (a.outcome !== 'skipped' && a.id ? [a.id] : [])));
    // Under `policy`, a candidate another rule sends contexts to was never this context's to run, breaker or not.
    const heldOut = (f.decision?.candidates ?? []).filter((c) => c.reason === 'breaker open' && !c.also?.some((x) => x.reason === 'rule miss')).map((c) => c.function);
    return unpricedContext({
      attempts,
      notApplicable,
      missing: [...missing],
      chosenMissing: calls.chosenMissing,
      declined: [...calls.declined].map(([input, reason]) => ({ input, reason })),
      endpointRefused: calls.endpointRefused,
      excludedCouldPrice: excludedByPolicy(registry, f.decision, calls.overCeiling, ran, f.context, f.marketFor),
      policyId: f.policy?.id,
      heldOut,
    });
  }
  // Functions that could not price the context did not fail: the message names the parts that did, and them apart.
  // Named, not only by role: the functions that could not price it share those roles.
  const failedWords = notApplicable.length
    ? `Every function that could price the context failed (${triedRoles(failedForReal.length ? failedForReal : attempts, f.pinned)}${failedForReal.length ? `: ${[...new Set(failedForReal.map((a) => a.function))].join(', ')}` : ''})`
    : `Every function tried failed (${triedRoles(attempts, f.pinned)})`;
  const couldNotPrice = notApplicable.length ? ` ${notApplicable.join(', ')} could not price it.` : '';
  const missingDetail = missing.size ? { missing: [...missing] } : {};
  // Every function that could answer is kept away for a while: behind its breaker (open, or half-open with its trial in
  // flight; or opened by its failure in this very call), or because its endpoint failed asking for a wait (Retry-After).
  // The soonest of them says when a retry may be answered (a retry finds the others as they are, and the first that takes
  // a call again may answer it).
  const behind = calls.behind;
  const waits = failedForReal.map((a) => (a.outcome === 'skipped' ? (behind.get(a.id ?? '')?.waitMs ?? null) : waitAfterFailure(breakers, a, caller)));
  if (failedForReal.length > 0 && waits.every((w) => w !== null)) {
    const retryAfterS = wholeSecondsToWait(Math.min(...waits));
    const trials = failedForReal.some((a) => behind.get(a.id ?? '')?.trial);
    const skippedOnly = failedForReal.every((a) => a.outcome === 'skipped');
    // Why the ones that ran stay away: their endpoints asked for a wait, or their failures opened their breakers.
    const asked = failedForReal.some((a) => a.retry_after !== undefined);
    const guarded = failedForReal.some((a) => a.outcome === 'skipped' || (a.id !== null && a.id !== undefined && breakers.retryInMs(a.id, caller) !== null));
    return new EngineError(
      'functions_failed',
      skippedOnly
        ? failedForReal.every((a) => behind.get(a.id ?? '')?.own)
          ? `Every function that could answer has a circuit breaker open for this workspace: its calls to them kept failing (other workspaces' calls still reach them); the first lets a trial call of this workspace through in ${retryAfterS} s.`
          : trials
          ? `Every function that could answer has its circuit breaker open after recent failures, or half-open with its one trial call in flight; retry in ${retryAfterS} s.`
          : `Every function that could answer has its circuit breaker open after recent failures; the first lets a trial call through in ${retryAfterS} s.`
        : `${failedWords}, ${asked && guarded ? 'each endpoint asking to be called again later or behind an open circuit breaker' : asked ? 'each endpoint asking to be called again later' : 'each now behind an open circuit breaker'}: the soonest in ${retryAfterS} s.${couldNotPrice}`,
      { attempts, retryAfterS, ...missingDetail },
    );
  }
  if (failedForReal.length > 0 && failedForReal.every((a) => a.retryable === false)) {
    const refusedAt = [...new Set(failedForReal.flatMap((a) => (a.id ? [a.id] : [])))];
    // Only the caller's own functions are its to PATCH: the others' owners are told apart, by no id.
    const ownRefusedAt = refusedAt.filter((id) => registry.find(id)?.workspaceId === f.workspaceId);
    return new EngineError('functions_failed', 'Every function tried failed at an address the service will not call: retrying will not help.', { attempts, permanent: true, refusedAt, ownRefusedAt, pinned: f.pinned, ...missingDetail });
  }
  return new EngineError('functions_failed', `${failedWords}.${couldNotPrice}`, { attempts, ...missingDetail });
}
