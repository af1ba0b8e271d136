import type { Clock } from '../../core/clock';

export interface LatencySnapshot {
  /** Samples inside the window. */
  samples: number;
  p50_ms: number | null;
  p95_ms: number | null;
  /** Exponentially weighted mean of the same samples, oldest first (seeded with the oldest): recent ones weigh most. */
  ewma_ms: number | null;
  window_ms: number;
  /** Fewer samples than the cold threshold: `fastest` explores it first. */
  cold: boolean;
}

/** What a statistic of a never-timed function reads on the wire (SPEC: catalogue latency "shown as no data"). */
export const NO_DATA = 'no data';

export type LatencyView = Omit<LatencySnapshot, 'p50_ms' | 'p95_ms' | 'ewma_ms'> & { p50_ms: number | typeof NO_DATA; p95_ms: number | typeof NO_DATA; ewma_ms: number | typeof NO_DATA };

/** A snapshot as every route shows it, so a function never timed reads the same everywhere. */
export function latencyView(s: LatencySnapshot): LatencyView {
  return { ...s, p50_ms: s.p50_ms ?? NO_DATA, p95_ms: s.p95_ms ?? NO_DATA, ewma_ms: s.ewma_ms ?? NO_DATA };
}

export interface LatencyOptions {
  windowMs: number;
  maxSamples: number;
  coldBelow: number;
  ewmaAlpha: number;
}

interface Series {
  t: number[];
  ms: number[];
  /** Whether each sample is a failure, recorded at the function's timeout. */
  failed: boolean[];
  /** The workspace whose call a failure sample is, when known (null for successes): one failure sample per workspace is kept. */
  by: Array<string | null>;
  /**
   * When its endpoint declined the context it was sent: no latency sample (the caller's context chose it), but an
   * exploration all the same, so a function that declines every context does not stay cold for `fastest` forever.
   */
  declinedAt: number[];
  cached: LatencySnapshot | null;
}

/** How a latency ceiling's exclusion reads: the p50 over the ceiling, and when failures (counted at the timeout) are among its samples, so. */
export function latencyCeilingDetail(p50: number, ceiling: number, failures: number): string {
  return `p50 ${p50} ms > ${ceiling} ms${failures > 0 ? ' (failures count as the timeout)' : ''}`;
}

function quantile(sorted: number[], q: number): number {
  const i = (sorted.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (i - lo);
}

/** Series of functions not run within the window dropped on each record, from the least recently run: enough to keep up without a timer. */
const SWEEP_PER_RECORD = 4;

/**
 * Rolling latency per function: samples from the last `windowMs` (at most `maxSamples`, oldest
 * dropped first), their p50, p95 and EWMA. Timeouts are recorded at the timeout value, so a
 * hanging function looks slow rather than unknown. Kept per instance.
 */
export class LatencyStats {
  /**
   * Least recently recorded first. A function's samples are only dropped when it is read, and a function no one runs
   * any more is not read: its series (about 12 KB at 256 samples) would stay for every function ever run. One with
   * nothing left in the window reads exactly as one never timed, so it is dropped as later records come.
   */
  private readonly series = new Map<string, Series>();
  /**
   * Every answered call's latency since the instance started, per function (a count and a sum): the catalogue's average
   * once the window holds none, so a function timed an hour ago does not read "no data" (never timed). Two numbers per
   * function ever answered, of which there are as many as the registry holds.
   */
  private readonly lifetime = new Map<string, { n: number; sum: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly opts: LatencyOptions,
  ) {}

  /** Samples (and declined explorations) below which a function is cold (LATENCY_COLD_BELOW): a trace's tie-break names it. */
  get coldBelow(): number {
    return this.opts.coldBelow;
  }

  /**
   * A sample; `failed` marks a failure, recorded at the function's timeout so that one failing at once does not look
   * fast. A failure of `caller`'s call replaces that workspace's earlier failure sample: whoever sends a context chooses
   * it, so one workspace whose contexts fail weighs as one slow sample, and cannot make the function look slow to the
   * others (a latency ceiling, `fastest`) while their calls are answered fast; its own breaker keeps it away instead.
   */
  record(fnId: string, ms: number, failed = false, caller?: string): void {
    if (!failed) {
      const life = this.lifetime.get(fnId) ?? { n: 0, sum: 0 };
      life.n++;
      life.sum += ms;
      this.lifetime.set(fnId, life);
    }
    const s = this.seriesOf(fnId);
    if (failed && caller !== undefined) {
      const earlier = s.by.indexOf(caller);
      if (earlier >= 0) this.remove(s, earlier, 1);
    }
    s.t.push(this.clock.now());
    s.ms.push(ms);
    s.failed.push(failed);
    s.by.push(failed ? (caller ?? null) : null);
    if (s.t.length > this.opts.maxSamples) {
      // shift, not splice: V8 trims an array's front in place, where splice allocates and moves every element.
      s.t.shift();
      s.ms.shift();
      s.failed.shift();
      s.by.shift();
    }
    s.cached = null;
  }

  private remove(s: Series, from: number, n: number): void {
    s.t.splice(from, n);
    s.ms.splice(from, n);
    s.failed.splice(from, n);
    s.by.splice(from, n);
  }

  /** An attempt its endpoint declined (a context it does not price): counts toward exploring it, not toward its latency. */
  recordDeclined(fnId: string): void {
    const s = this.seriesOf(fnId);
    s.declinedAt.push(this.clock.now());
    if (s.declinedAt.length > this.opts.maxSamples) s.declinedAt.shift();
    s.cached = null;
  }

  /** The function's series, moved to the newest end (created when new), after dropping up to SWEEP_PER_RECORD series whose every sample is out of the window. */
  private seriesOf(fnId: string): Series {
    const horizon = this.clock.now() - this.opts.windowMs;
    let swept = 0;
    for (const [id, old] of this.series) {
      if (swept++ === SWEEP_PER_RECORD || id === fnId || Math.max(old.t.at(-1) ?? -Infinity, old.declinedAt.at(-1) ?? -Infinity) >= horizon) break;
      this.series.delete(id);
    }
    let s = this.series.get(fnId);
    if (s) this.series.delete(fnId);
    else s = { t: [], ms: [], failed: [], by: [], declinedAt: [], cached: null };
    this.series.set(fnId, s);
    return s;
  }

  /** Functions with a series kept (for tests of the sweep). */
  get functionsKept(): number {
    return this.series.size;
  }

  /** The function's series with samples older than the window dropped. */
  private inWindow(fnId: string): Series | undefined {
    const s = this.series.get(fnId);
    if (!s) return undefined;
    const horizon = this.clock.now() - this.opts.windowMs;
    let drop = 0;
    while (drop < s.t.length && (s.t[drop] as number) < horizon) drop++;
    if (drop > 0) {
      this.remove(s, 0, drop);
      s.cached = null;
    }
    let declinedDrop = 0;
    while (declinedDrop < s.declinedAt.length && (s.declinedAt[declinedDrop] as number) < horizon) declinedDrop++;
    if (declinedDrop > 0) {
      s.declinedAt.splice(0, declinedDrop);
      s.cached = null;
    }
    return s;
  }

  snapshot(fnId: string): LatencySnapshot {
    const s = this.inWindow(fnId);
    const empty: LatencySnapshot = { samples: 0, p50_ms: null, p95_ms: null, ewma_ms: null, window_ms: this.opts.windowMs, cold: true };
    if (!s) return empty;
    if (s.cached) return s.cached;
    if (s.ms.length === 0) return { ...empty, cold: s.declinedAt.length < this.opts.coldBelow };
    // Recomputed over the window rather than kept running: a running EWMA still carries samples the window dropped.
    const alpha = this.opts.ewmaAlpha;
    const ewma = s.ms.reduce((acc, x, i) => (i === 0 ? x : alpha * x + (1 - alpha) * acc), 0);
    const sorted = [...s.ms].sort((a, b) => a - b);
    s.cached = {
      samples: sorted.length,
      p50_ms: Math.round(quantile(sorted, 0.5) * 1000) / 1000,
      p95_ms: Math.round(quantile(sorted, 0.95) * 1000) / 1000,
      ewma_ms: Math.round(ewma * 1000) / 1000,
      window_ms: this.opts.windowMs,
      cold: sorted.length + s.declinedAt.length < this.opts.coldBelow,
    };
    return s.cached;
  }

  /** Whether `caller`'s latest failure of the function is still in the window (one failure sample is kept per workspace). */
  failedFor(fnId: string, caller: string | undefined): boolean {
    return caller !== undefined && (this.inWindow(fnId)?.by.includes(caller) ?? false);
  }

  /** Failures among the samples in the window. */
  failures(fnId: string): number {
    return this.inWindow(fnId)?.failed.filter(Boolean).length ?? 0;
  }

  /**
   * Average latency for the catalogue: the mean of the answered calls in the window (a failure, recorded at its timeout
   * for ranking, is no latency of an answer), else of every answered call since the instance started; null ("no data")
   * when the function never answered here.
   */
  average(fnId: string): number | null {
    const s = this.inWindow(fnId);
    let n = 0;
    let sum = 0;
    s?.ms.forEach((ms, i) => {
      if (s.failed[i]) return;
      n++;
      sum += ms;
    });
    if (n === 0) {
      const life = this.lifetime.get(fnId);
      if (!life) return null;
      ({ n, sum } = life);
    }
    return Math.round((sum / n) * 1000) / 1000;
  }
}
