import type { NotApplicable } from './attempt';
import type { AttemptReport, CandidateReport } from './errors';
import type { BehindBreaker } from './excluded';

/**
 * What one call's walk through its functions found, attempt by attempt: the trace's `attempts`, and what the answer to a
 * call no function priced is made of (failed-call.ts).
 */
export class CallAttempts {
  readonly list: AttemptReport[] = [];
  /** Inputs some function that could not price the context lacked. */
  readonly missing = new Set<string>();
  /** Context values an endpoint would not price as given, by the first reason given. */
  readonly declined = new Map<string, string>();
  /** What the chosen function itself lacked: for a pinned call, the inputs to name (the fallbacks' are theirs, not its). */
  chosenMissing: string[] = [];
  /** A value of the caller's a function refuses to read: the walk stops there (see record). */
  refused: { fn: string; message: string; inputs: string[] } | null = null;
  /** The functions that could not price the context, in the order tried. */
  readonly notApplicable: string[] = [];
  /** Functions whose endpoint refused the context without naming a value (HTTP 400, 404, 413, 422): no input to ask for. */
  readonly endpointRefused: string[] = [];
  /** An alternate the strategy did not try after a failure (RouteDecision.alternatesAfterFailure): it was never judged. */
  passedOver = false;
  readonly tried = new Set<string>();
  /** Functions skipped behind their breaker, with the milliseconds until one may be called again (null: unknown). */
  readonly behind = new Map<string, BehindBreaker>();
  /** Fallbacks the policy's cost ceiling kept from running: the policy's own exclusion, like a candidate's. */
  readonly overCeiling: CandidateReport[] = [];

  poolBusy(): boolean {
    return this.list.some((a) => a.outcome === 'pool_busy');
  }

  skip(fn: { name: string; id: string | null }, role: AttemptReport['role'], error: string): void {
    this.list.push({ function: fn.name, id: fn.id, role, outcome: 'skipped', error, ms: 0 });
  }

  /** Records a function that could not price the context; true when it refused a value of the caller's (the walk ends). */
  unpriced(fn: string, role: AttemptReport['role'], na: NotApplicable): boolean {
    if (na.refused) {
      // A value of the caller's no method may read that way: another function that happens not to read it must not
      // hide the mistake behind its price.
      this.refused = { fn, message: na.message, inputs: na.missing };
      return true;
    }
    this.notApplicable.push(fn);
    if (role === 'chosen') this.chosenMissing = na.missing;
    for (const m of na.missing) this.missing.add(m);
    for (const input of na.declined ?? []) if (!this.declined.has(input)) this.declined.set(input, na.message);
    if (na.declined?.length === 0) this.endpointRefused.push(fn);
    return false;
  }
}
