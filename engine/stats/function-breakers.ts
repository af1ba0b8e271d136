import type { Admission, BreakerSet, BreakerState, BreakerView, RecentFailure } from './breaker';
import { wholeSecondsToWait } from './breaker';
import type { FunctionDescriptor } from '../functions';

/** Whom an open breaker keeps out: every caller of the function, or the workspace reading it. */
export type BreakerReach = 'everyone' | 'this_workspace';

export interface CallerBreakerView extends BreakerView {
  applies_to: BreakerReach;
}

/** The counts of a breaker reading that tell how much a function is called, and by how many. */
type VolumeField = 'calls' | 'failures' | 'callers' | 'failing_callers';

/** A reading whose volume counts may be withheld from this reader (null; see CircuitBreakers.showsVolume). */
export type ReaderBreakerView = Omit<CallerBreakerView, VolumeField> & { [K in VolumeField]: number | null };

/** What `allow` let through: an admission of the function's breaker and one of the caller's. */
export interface CallAdmission {
  readonly network: Admission;
  readonly caller: Admission;
}

const SEVERITY: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

/**
 * A function's circuit breaker and, beside it, one per caller workspace. The function's opens only when several
 * callers' calls fail (BREAKER_MIN_FAILING_CALLERS, and at least BREAKER_FAILURE_RATIO of the callers in the window),
 * so one workspace sending contexts its endpoint fails on cannot take a marketplace function away from everyone. The
 * caller's own opens on its own calls alone, so a workspace whose calls keep failing stops waiting on them without
 * deciding for anybody else. A call goes through when both let it.
 *
 * Without a caller, a reading is of the function's breaker (metrics, the owner's failure reasons).
 */
export class CircuitBreakers {
  constructor(
    /** Per function, over every caller's calls. */
    readonly network: BreakerSet,
    /** Per function and caller workspace. */
    private readonly perCaller: BreakerSet,
    /**
     * Distinct callers in the function's window before other workspaces read how much a workspace's function is called
     * (LEADERBOARD_MIN_DISTINCT_CONSUMERS: SPEC publishes usage only from 3 distinct consumers, and a count read here
     * would otherwise tell what the leaderboard withholds).
     */
    private readonly volumeFloor = 1,
  ) {}

  /**
   * Whether the workspace `reader` may read the function's call volume (breaker counts, latency samples): its own
   * function or a built-in always; another workspace's only once at least `volumeFloor` distinct callers besides its
   * owner are in the function's window (the leaderboard's consumers leave the publisher out too).
   */
  showsVolume(fn: Pick<FunctionDescriptor, 'id' | 'builtIn' | 'workspaceId'>, reader: string | undefined): boolean {
    if (fn.builtIn || (reader !== undefined && fn.workspaceId === reader)) return true;
    return this.network.callersBesides(fn.id, fn.workspaceId) >= this.volumeFloor;
  }

  /** `view` as `reader` may read it: the function's counts withheld (null) unless showsVolume; the reader's own breaker is its own calls. */
  readerView(fn: Pick<FunctionDescriptor, 'id' | 'builtIn' | 'workspaceId'>, caller: string | undefined, reader: string | undefined): ReaderBreakerView {
    const v = this.view(fn.id, caller);
    if (v.applies_to === 'this_workspace' || this.showsVolume(fn, reader)) return v;
    return { ...v, calls: null, failures: null, callers: null, failing_callers: null };
  }

  private key(fnId: string, caller: string): string {
    return `${fnId}\u0000${caller}`;
  }

  /** Whether a call from `caller` may go to the function now (null: not); each half-open breaker admits one trial at a time. */
  allow(fnId: string, caller: string): CallAdmission | null {
    const network = this.network.allow(fnId);
    if (!network) return null;
    const own = this.perCaller.allow(this.key(fnId, caller));
    if (!own) {
      // The function's trial slot, if this was its trial, goes to the next caller.
      this.network.release(fnId, network);
      return null;
    }
    return { network, caller: own };
  }

  /** Ends an admitted call that says nothing about the function's health (see BreakerSet.release). */
  release(fnId: string, caller: string, admission: CallAdmission): void {
    this.network.release(fnId, admission.network);
    this.perCaller.release(this.key(fnId, caller), admission.caller);
  }

  /** An outcome of a call from `caller`, in both breakers; `reason` is kept for the function's owner. */
  record(fnId: string, caller: string, ok: boolean, admission?: CallAdmission, reason?: string): void {
    this.network.record(fnId, ok, admission?.network, reason, caller);
    this.perCaller.record(this.key(fnId, caller), ok, admission?.caller, undefined, caller);
  }

  /** A failure shown to the function's owner (recentFailures) that counts in neither breaker (see BreakerSet.noteFailure). */
  noteFailure(fnId: string, reason: string): void {
    this.network.noteFailure(fnId, reason);
  }

  /** The state a call from `caller` meets (the more closed of the two lets it less); without a caller, the function's. */
  state(fnId: string, caller?: string): BreakerState {
    const network = this.network.state(fnId);
    if (caller === undefined) return network;
    const own = this.perCaller.state(this.key(fnId, caller));
    return SEVERITY[own] > SEVERITY[network] ? own : network;
  }

  /**
   * The breaker that keeps `caller` out, read as BreakerView with whom it keeps out: the function's when it is not
   * closed (or no caller is given), else the caller's own when that one is not closed, else the function's.
   */
  view(fnId: string, caller?: string): CallerBreakerView {
    const network = this.network.view(fnId);
    if (caller === undefined || network.state !== 'closed') return { ...network, applies_to: 'everyone' };
    const own = this.perCaller.view(this.key(fnId, caller));
    if (own.state === 'closed') return { ...network, applies_to: 'everyone' };
    return { ...own, function_id: fnId, applies_to: 'this_workspace' };
  }

  /** Milliseconds until a call from `caller` may find both breakers letting a trial through (0: now); null when neither is open. */
  retryInMs(fnId: string, caller: string): number | null {
    return latest(this.network.retryInMs(fnId), this.perCaller.retryInMs(this.key(fnId, caller)));
  }

  /** Milliseconds until the half-open trials in flight that keep `caller` out have answered at the latest; null when none does. */
  trialEndsInMs(fnId: string, caller: string, timeoutMs: number): number | null {
    return latest(this.network.trialEndsInMs(fnId, timeoutMs), this.perCaller.trialEndsInMs(this.key(fnId, caller), timeoutMs));
  }

  /** Whole seconds (at least 1) until the first of these functions lets a trial call from `caller` through; null when none is open. */
  firstTrialInS(fnIds: readonly string[], caller: string): number | null {
    const waits = fnIds.map((id) => this.retryInMs(id, caller)).filter((w): w is number => w !== null);
    return waits.length ? wholeSecondsToWait(Math.min(...waits)) : null;
  }

  /** Ends the cooldown of the function's breaker and of every caller's open one for it: the next call of each is a trial (BreakerSet.expedite). */
  expedite(fnId: string): void {
    this.network.expedite(fnId);
    const prefix = this.key(fnId, '');
    for (const key of this.perCaller.known()) if (key.startsWith(prefix)) this.perCaller.expedite(key);
  }

  /** The function's last failures, whoever's calls they were (see BreakerSet.recentFailures). */
  recentFailures(fnId: string): RecentFailure[] {
    return this.network.recentFailures(fnId);
  }

  /** Functions with a breaker on this instance (callers' breakers are never listed: one per workspace would flood the metrics). */
  known(): string[] {
    return this.network.known();
  }
}

function latest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}
