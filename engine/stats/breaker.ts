import { BoundedMap } from '../../core/bounded-map';
import type { Clock } from '../../core/clock';

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  windowMs: number;
  /** Most outcomes a window keeps, the latest: a busy function's window holds its last calls, not every call of `windowMs`. */
  windowMaxCalls: number;
  minCalls: number;
  /** Failure share (0 to 1) over the window that opens the breaker. */
  failureRatio: number;
  cooldownMs: number;
  /**
   * Distinct callers whose own calls in the window failed at least `failureRatio` of the time, needed
   * (and needed to be at least `failureRatio` of the window's callers) before the breaker opens: one
   * caller's failing calls cannot take the function away from the others. 1 for a breaker of one caller.
   */
  minFailingCallers: number;
  /** Most breakers kept (the oldest made is dropped past it); unbounded when absent. */
  maxEntries?: number;
}

export interface BreakerView {
  function_id: string;
  state: BreakerState;
  calls: number;
  failures: number;
  /** Distinct callers in the window, and those whose own calls failed at least the failure ratio of the time. */
  callers: number;
  failing_callers: number;
  opened_at: string | null;
  retry_at: string | null;
}

/** Callers with at least `minCalls` calls, at least `ratio` of them failed. */
function countFailing(callers: Iterable<{ calls: number; failures: number }>, ratio: number, minCalls: number): number {
  let n = 0;
  for (const c of callers) if (c.calls >= minCalls && c.failures / c.calls >= ratio) n++;
  return n;
}

/**
 * The outcomes of the last window, oldest first, in a ring of at most `cap` (the latest are kept), with running failure
 * counts in all and per caller: recording and expiring are O(1) amortised, so a busy function does not rescan its window
 * on every call, and a window's memory is bounded by its cap (about 17 bytes an outcome) however long it goes unread.
 */
class OutcomeWindow {
  private times = new Float64Array(4);
  private oks = new Uint8Array(4);
  private callers: string[] = new Array<string>(4);
  private start = 0;
  private count = 0;
  failures = 0;
  /** Calls and failures of each caller in the window. */
  readonly byCaller = new Map<string, { calls: number; failures: number }>();

  constructor(private readonly cap: number) {}

  get size(): number {
    return this.count;
  }

  private slot(i: number): number {
    return (this.start + i) % this.times.length;
  }

  push(t: number, ok: boolean, caller: string): void {
    if (this.count === this.times.length) {
      if (this.times.length < this.cap) this.grow();
      else this.dropOldest();
    }
    const at = this.slot(this.count);
    this.times[at] = t;
    this.oks[at] = ok ? 1 : 0;
    this.callers[at] = caller;
    this.count++;
    if (!ok) this.failures++;
    const c = this.byCaller.get(caller);
    if (c) {
      c.calls++;
      if (!ok) c.failures++;
    } else this.byCaller.set(caller, { calls: 1, failures: ok ? 0 : 1 });
  }

  /** Doubles the ring (up to the cap), oldest first again. */
  private grow(): void {
    const length = Math.min(this.cap, this.times.length * 2);
    const times = new Float64Array(length);
    const oks = new Uint8Array(length);
    const callers = new Array<string>(length);
    for (let i = 0; i < this.count; i++) {
      const from = this.slot(i);
      times[i] = this.times[from] as number;
      oks[i] = this.oks[from] as number;
      callers[i] = this.callers[from] as string;
    }
    this.times = times;
    this.oks = oks;
    this.callers = callers;
    this.start = 0;
  }

  private dropOldest(): void {
    const ok = this.oks[this.start] === 1;
    if (!ok) this.failures--;
    const caller = this.callers[this.start] as string;
    const c = this.byCaller.get(caller);
    if (c) {
      c.calls--;
      if (!ok) c.failures--;
      if (c.calls <= 0) this.byCaller.delete(caller);
    }
    this.start = (this.start + 1) % this.times.length;
    this.count--;
  }

  /** Callers with at least `minCalls` calls in the window, at least `ratio` of them failed: those whose own breaker would open. */
  failingCallers(ratio: number, minCalls: number): number {
    return countFailing(this.byCaller.values(), ratio, minCalls);
  }

  /** Drops outcomes older than `horizon`. */
  expire(horizon: number): void {
    while (this.count > 0 && (this.times[this.start] as number) < horizon) this.dropOldest();
  }

  clear(): void {
    this.times = new Float64Array(4);
    this.oks = new Uint8Array(4);
    this.callers = new Array<string>(4);
    this.start = 0;
    this.count = 0;
    this.failures = 0;
    this.byCaller.clear();
  }

  /** Each caller's calls and failures at or after `horizon`, without dropping anything. */
  private byCallerSince(horizon: number): Map<string, { calls: number; failures: number }> {
    const byCaller = new Map<string, { calls: number; failures: number }>();
    for (let i = 0; i < this.count; i++) {
      const at = this.slot(i);
      if ((this.times[at] as number) < horizon) continue;
      const caller = this.callers[at] as string;
      const c = byCaller.get(caller) ?? { calls: 0, failures: 0 };
      c.calls++;
      if (this.oks[at] !== 1) c.failures++;
      byCaller.set(caller, c);
    }
    return byCaller;
  }

  /** Distinct callers at or after `horizon` other than `except`, without dropping anything. */
  callersSince(horizon: number, except: string | null): number {
    const byCaller = this.byCallerSince(horizon);
    return byCaller.size - (except !== null && byCaller.has(except) ? 1 : 0);
  }

  /** Calls, failures and callers (all, and those failing at least `ratio` of their calls) at or after `horizon`, without dropping anything. */
  countSince(horizon: number, ratio: number, minCalls: number): { calls: number; failures: number; callers: number; failingCallers: number } {
    const byCaller = this.byCallerSince(horizon);
    let calls = 0;
    let failures = 0;
    for (const c of byCaller.values()) {
      calls += c.calls;
      failures += c.failures;
    }
    return { calls, failures, callers: byCaller.size, failingCallers: countFailing(byCaller.values(), ratio, minCalls) };
  }
}

interface Entry {
  outcomes: OutcomeWindow;
  state: BreakerState;
  openedAt: number | null;
  trialInFlight: boolean;
  /** When the trial in flight was let through. */
  trialStartedAt: number | null;
  /** Numbers the trials, so an admission from an earlier one can never pass for the trial in flight. */
  trials: number;
  /** Counts the closings: outcomes of calls admitted before the last one describe the function before it recovered. */
  closings: number;
  /** The admission of ordinary calls since the last closing (one object per closing, not per call). */
  ordinary: Admission;
  /** The last failures' reasons, newest last, for the function's owner (RECENT_FAILURES_KEPT at most). */
  recentFailures: Array<{ at: number; reason: string }>;
}

/** A wait as a Retry-After states it: whole seconds, rounded up, at least 1 (0 would read as "retry now" while still refused). */
export function wholeSecondsToWait(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** How many failure reasons a breaker keeps for its function's owner. */
export const RECENT_FAILURES_KEPT = 5;

export interface RecentFailure {
  at: string;
  reason: string;
}

/**
 * A call `allow` let through, handed back to `record` or `release`. Only the half-open trial's admission carries its
 * number: calls that started before the breaker opened may answer while a trial is in flight, and theirs are not the
 * trial's outcome. Every admission carries the closing it was made after, so a call admitted before the breaker last
 * closed, answering after, is left out of the new window.
 */
export interface Admission {
  readonly trial: number | null;
  readonly closing: number;
}

/**
 * Circuit breakers by key (a function, or a function as one caller calls it): one opens when, over the last
 * `windowMs`, at least `minCalls` calls happened, the failure share reached `failureRatio`, and so did the share of
 * failing callers, `minFailingCallers` at least (a caller fails when its own calls do, at that ratio); after `cooldownMs`
 * one trial call is let through (half-open); its success closes the breaker with an empty window, its failure opens it
 * again. Outcomes of other calls admitted before the breaker opened only join the window while it is open, and are left
 * out once it has closed: many slow failures from before the recovery cannot reopen it.
 */
export class BreakerSet {
  private readonly entries: Map<string, Entry>;

  constructor(
    private readonly clock: Clock,
    private readonly opts: BreakerOptions,
  ) {
    this.entries = opts.maxEntries === undefined ? new Map<string, Entry>() : new BoundedMap<string, Entry>(opts.maxEntries);
  }

  private entry(fnId: string): Entry {
    let e = this.entries.get(fnId);
    if (!e) {
      e = { outcomes: new OutcomeWindow(this.opts.windowMaxCalls), state: 'closed', openedAt: null, trialInFlight: false, trialStartedAt: null, trials: 0, closings: 0, ordinary: Object.freeze({ trial: null, closing: 0 }), recentFailures: [] };
      this.entries.set(fnId, e);
    }
    return e;
  }

  /** Current state without side effects (an open breaker past its cooldown reads as half-open). */
  state(fnId: string): BreakerState {
    const e = this.entries.get(fnId);
    if (!e) return 'closed';
    if (e.state === 'open' && e.openedAt !== null && this.clock.now() >= e.openedAt + this.opts.cooldownMs) return 'half_open';
    return e.state;
  }

  /**
   * Ends the cooldown of an open breaker now, so the next call is its trial: what it failed on has changed (its owner
   * gave it a new address). A success closes it as ever; a failure opens it again.
   */
  expedite(fnId: string): void {
    const e = this.entries.get(fnId);
    if (e?.state === 'open' && e.openedAt !== null) e.openedAt = Math.min(e.openedAt, this.clock.now() - this.opts.cooldownMs);
  }

  /** Whether a call may go to the function now (null: not); a half-open breaker admits one trial at a time. */
  allow(fnId: string): Admission | null {
    const e = this.entry(fnId);
    const state = this.state(fnId);
    if (state === 'closed') return e.ordinary;
    if (state === 'open') return null;
    e.state = 'half_open';
    if (e.trialInFlight) return null;
    e.trialInFlight = true;
    e.trialStartedAt = this.clock.now();
    e.trials++;
    return { trial: e.trials, closing: e.closings };
  }

  private isTrial(e: Entry, admission: Admission | undefined): boolean {
    return admission?.trial != null && e.trialInFlight && admission.trial === e.trials;
  }

  /**
   * Ends a call admitted by `allow` that says nothing about the function's health (it could not
   * price the context): a half-open trial slot is freed, so the next call becomes the trial.
   */
  release(fnId: string, admission: Admission): void {
    const e = this.entries.get(fnId);
    if (e && this.isTrial(e, admission)) e.trialInFlight = false;
  }

  /**
   * An outcome; without the trial's admission it only joins the window (and can open a closed breaker), unless the
   * call was admitted before the breaker last closed. Without an admission it counts as a call of the current window.
   */
  record(fnId: string, ok: boolean, admission?: Admission, reason?: string, caller = ''): void {
    const e = this.entry(fnId);
    const now = this.clock.now();
    if (!ok && reason !== undefined) this.keepFailure(e, now, reason);
    if (this.isTrial(e, admission)) {
      e.trialInFlight = false;
      if (ok) {
        e.outcomes.clear();
        e.closings++;
        e.ordinary = Object.freeze({ trial: null, closing: e.closings });
        e.openedAt = null;
        e.state = 'closed';
      } else if (this.opts.minFailingCallers <= 1 ? this.joinFailure(e, now, caller) : this.opensWith(e, now, caller)) {
        e.openedAt = now;
        e.state = 'open';
      }
      // Otherwise it stays half-open, its trial slot free: one caller's failing trial cannot keep the function from the
      // others once the failures that opened it have left the window; the next call is the trial.
      return;
    }
    if (admission && admission.closing !== e.closings) return;
    // Only a failure opens a closed breaker. A success joins the window like any call, but a window that already met the
    // ratio before it must not shut callers out just when the function answers again.
    if (e.state === 'closed' && !ok && this.opensWith(e, now, caller)) {
      e.openedAt = now;
      e.state = 'open';
    } else if (e.state !== 'closed' || ok) this.join(e, now, caller, ok);
  }

  /**
   * A failure kept for the function's owner that does not count toward opening the breaker (an address the outbound
   * guard refuses: no retry changes it, so no cooldown should read as a time to retry); the owner still reads why
   * callers' calls fail.
   */
  noteFailure(fnId: string, reason: string): void {
    this.keepFailure(this.entry(fnId), this.clock.now(), reason);
  }

  private keepFailure(e: Entry, now: number, reason: string): void {
    e.recentFailures.push({ at: now, reason });
    if (e.recentFailures.length > RECENT_FAILURES_KEPT) e.recentFailures.shift();
  }

  private join(e: Entry, now: number, caller: string, ok: boolean): void {
    e.outcomes.push(now, ok, caller);
    e.outcomes.expire(now - this.opts.windowMs);
  }

  /** A failed trial of a breaker that reopens on it alone: in the window all the same, or the reopened breaker would read 0 calls. */
  private joinFailure(e: Entry, now: number, caller: string): true {
    this.join(e, now, caller, false);
    return true;
  }

  /** Adds a failure to the window and says whether the window now opens the breaker (a failed trial's included). */
  private opensWith(e: Entry, now: number, caller: string): boolean {
    this.join(e, now, caller, false);
    const w = e.outcomes;
    if (w.size < this.opts.minCalls || w.failures / w.size < this.opts.failureRatio) return false;
    const failing = w.failingCallers(this.opts.failureRatio, this.opts.minCalls);
    return failing >= this.opts.minFailingCallers && failing / w.byCaller.size >= this.opts.failureRatio;
  }

  /** Where a reading's window starts. While open or half-open no call reaches the function to refresh the window: the reading covers the window the breaker opened on (and what came after), rather than falling to zero calls while it still keeps callers out. */
  private readingHorizon(e: Entry | undefined, state: BreakerState): number {
    const end = state !== 'closed' && e?.openedAt ? Math.min(this.clock.now(), e.openedAt) : this.clock.now();
    return end - this.opts.windowMs;
  }

  /** Distinct callers in the window a reading covers, `except` (the function's owner) left out. */
  callersBesides(fnId: string, except: string | null): number {
    const e = this.entries.get(fnId);
    return e ? e.outcomes.callersSince(this.readingHorizon(e, this.state(fnId)), except) : 0;
  }

  view(fnId: string): BreakerView {
    const e = this.entries.get(fnId);
    const state = this.state(fnId);
    const horizon = this.readingHorizon(e, state);
    const recent = e ? e.outcomes.countSince(horizon, this.opts.failureRatio, this.opts.minCalls) : { calls: 0, failures: 0, callers: 0, failingCallers: 0 };
    return {
      function_id: fnId,
      state,
      calls: recent.calls,
      failures: recent.failures,
      callers: recent.callers,
      failing_callers: recent.failingCallers,
      opened_at: e?.openedAt ? new Date(e.openedAt).toISOString() : null,
      retry_at: e?.openedAt && state !== 'closed' ? new Date(e.openedAt + this.opts.cooldownMs).toISOString() : null,
    };
  }

  /**
   * Whole seconds (at least 1) until the first of these functions' open breakers lets a trial call
   * through; null when none of them is open.
   */
  firstTrialInS(fnIds: readonly string[]): number | null {
    const waits = fnIds.map((id) => this.retryInMs(id)).filter((w): w is number => w !== null);
    return waits.length ? wholeSecondsToWait(Math.min(...waits)) : null;
  }

  /** Milliseconds until an open breaker lets a trial call through (0 when it would now); null when it is not open. */
  retryInMs(fnId: string): number | null {
    const e = this.entries.get(fnId);
    if (!e?.openedAt || this.state(fnId) !== 'open') return null;
    return Math.max(0, e.openedAt + this.opts.cooldownMs - this.clock.now());
  }

  /**
   * Milliseconds until a half-open breaker's trial call in flight has answered at the latest (`timeoutMs`, the
   * function's time limit, after it was let through; 0 when overdue); null when no trial is in flight. Until then the
   * breaker keeps every other call away, as an open one does.
   */
  trialEndsInMs(fnId: string, timeoutMs: number): number | null {
    const e = this.entries.get(fnId);
    if (!e?.trialInFlight || e.trialStartedAt === null || this.state(fnId) !== 'half_open') return null;
    return Math.max(0, e.trialStartedAt + timeoutMs - this.clock.now());
  }

  /**
   * The last failures of the function on this instance, newest first, with the owner's wording (the endpoint's address
   * included): why callers' calls fail, which the owner could not learn from other workspaces' events.
   */
  recentFailures(fnId: string): RecentFailure[] {
    return (this.entries.get(fnId)?.recentFailures ?? []).map((f) => ({ at: new Date(f.at).toISOString(), reason: f.reason })).reverse();
  }

  known(): string[] {
    return [...this.entries.keys()];
  }
}
