import type { Clock } from '../../core/clock';

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  windowMs: number;
  minCalls: number;
  /** Failure share (0 to 1) over the window that opens the breaker. */
  failureRatio: number;
  cooldownMs: number;
}

export interface BreakerView {
  function_id: string;
  state: BreakerState;
  calls: number;
  failures: number;
  opened_at: string | null;
  retry_at: string | null;
}

interface Entry {
  outcomes: Array<{ t: number; ok: boolean }>;
  state: BreakerState;
  openedAt: number | null;
  trialInFlight: boolean;
}

/**
 * One circuit breaker per function: it opens when, over the last `windowMs`, at least `minCalls`
 * calls happened and the failure share reached `failureRatio`; after `cooldownMs` one trial call
 * is let through (half-open); its success closes the breaker, its failure opens it again.
 */
export class CircuitBreakers {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly opts: BreakerOptions,
    private readonly onChange: (fnId: string, state: BreakerState) => void = () => undefined,
  ) {}

  private entry(fnId: string): Entry {
    let e = this.entries.get(fnId);
    if (!e) {
      e = { outcomes: [], state: 'closed', openedAt: null, trialInFlight: false };
      this.entries.set(fnId, e);
    }
    return e;
  }

  private set(fnId: string, e: Entry, state: BreakerState): void {
    if (e.state === state) return;
    e.state = state;
    this.onChange(fnId, state);
  }

  /** Current state without side effects (an open breaker past its cooldown reads as half-open). */
  state(fnId: string): BreakerState {
    const e = this.entries.get(fnId);
    if (!e) return 'closed';
    if (e.state === 'open' && e.openedAt !== null && this.clock.now() >= e.openedAt + this.opts.cooldownMs) return 'half_open';
    return e.state;
  }

  /** Whether a call may go to the function now; a half-open breaker admits one trial at a time. */
  allow(fnId: string): boolean {
    const e = this.entry(fnId);
    const state = this.state(fnId);
    if (state === 'closed') return true;
    if (state === 'open') return false;
    this.set(fnId, e, 'half_open');
    if (e.trialInFlight) return false;
    e.trialInFlight = true;
    return true;
  }

  /**
   * Ends a call admitted by `allow` that says nothing about the function's health (it could not
   * price the context): a half-open trial slot is freed, so the next call becomes the trial.
   */
  release(fnId: string): void {
    const e = this.entries.get(fnId);
    if (e) e.trialInFlight = false;
  }

  record(fnId: string, ok: boolean): void {
    const e = this.entry(fnId);
    const now = this.clock.now();
    if (e.state === 'half_open' || (e.state === 'open' && this.state(fnId) === 'half_open')) {
      e.trialInFlight = false;
      if (ok) {
        e.outcomes = [];
        e.openedAt = null;
        this.set(fnId, e, 'closed');
      } else {
        e.openedAt = now;
        this.set(fnId, e, 'open');
      }
      return;
    }
    e.outcomes.push({ t: now, ok });
    const horizon = now - this.opts.windowMs;
    while (e.outcomes.length > 0 && (e.outcomes[0] as { t: number }).t < horizon) e.outcomes.shift();
    const failures = e.outcomes.filter((o) => !o.ok).length;
    if (e.state === 'closed' && e.outcomes.length >= this.opts.minCalls && failures / e.outcomes.length >= this.opts.failureRatio) {
      e.openedAt = now;
      this.set(fnId, e, 'open');
    }
  }

  view(fnId: string): BreakerView {
    const e = this.entries.get(fnId);
    const state = this.state(fnId);
    const horizon = this.clock.now() - this.opts.windowMs;
    const recent = (e?.outcomes ?? []).filter((o) => o.t >= horizon);
    return {
      function_id: fnId,
      state,
      calls: recent.length,
      failures: recent.filter((o) => !o.ok).length,
      opened_at: e?.openedAt ? new Date(e.openedAt).toISOString() : null,
      retry_at: e?.openedAt && state !== 'closed' ? new Date(e.openedAt + this.opts.cooldownMs).toISOString() : null,
    };
  }

  known(): string[] {
    return [...this.entries.keys()];
  }
}
