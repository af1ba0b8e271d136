import { StartupError } from '../core/plugin';
import path from 'node:path';
import { Piscina } from 'piscina';
import type { Metrics } from '../core/metrics';
import type { Context, MarketEvidence } from './builtins/types';
import { RING_DONE, RING_QUEUED, RING_RUNNING, RING_CANCELLED, RING_STRIDE, ringElapsed, ringSlot, ringTag } from './worker/task-ring';
import type { TaskOutcome, WorkerAnswer, WorkerTask } from './worker/pricing-worker';

export interface PoolOptions {
  threads: number;
  maxQueue: number;
  /** Heap cap of each worker; a method exhausting it kills only its worker. */
  maxOldGenerationSizeMb: number;
  extraModules?: readonly string[];
  /** Tasks handed to one worker before it answers (Piscina `concurrentTasksPerWorker`), default 1. */
  tasksPerWorker?: number;
}

export class PoolTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The pricing function did not answer within ${timeoutMs} ms.`);
    this.name = 'PoolTimeoutError';
  }
}

const BUSY_MESSAGES = {
  queue_full: (limit: number) => `The pricing pool's queue is full (${limit} calls waiting).`,
  not_started: (limit: number) => `No pricing worker was free to start the call within ${limit} ms.`,
  answer_held: (limit: number) => `The pricing function answered, but its answer was held behind a slower call on the same worker past ${limit} ms.`,
};

/**
 * The pool could not run the call or bring its answer back in time: its queue was full, no worker
 * was free to start it before its time ran out, or its answer waited with its batch behind a call
 * still running. Says nothing against the pricing function, which never ran or answered in time.
 */
export class PoolBusyError extends Error {
  constructor(
    readonly reason: keyof typeof BUSY_MESSAGES,
    readonly limit: number,
  ) {
    super(BUSY_MESSAGES[reason](limit));
    this.name = 'PoolBusyError';
  }
}

/** How long past its timeout a call that has answered waits for its answer to arrive (a message in transit). */
const ANSWER_GRACE_MS = 25;

/** Sequence numbers stay below 2^29 so `seq * 4 + state` fits an Int32 slot of the task ring. */
const SEQ_LIMIT = 2 ** 29;
/** Most pricing calls one Piscina task carries. */
const MAX_BATCH = 32;

interface Call {
  task: WorkerTask;
  slot: number;
  timeoutMs: number;
  timer: NodeJS.Timeout;
  settled: boolean;
  /** Its time ran out after it had answered, and it is waiting for the answer to arrive. */
  graced?: boolean;
  resolve: (answer: WorkerAnswer) => void;
  reject: (err: Error) => void;
}

/** Time constant of the utilisation average: about the last 10 s weigh in, whatever the scrape interval. */
const UTILIZATION_TAU_MS = 10_000;

/**
 * The Piscina worker pool running pricing methods. A call that throws, hangs past its timeout
 * (the worker is terminated and replaced) or exhausts its heap is a failed attempt, never a crash.
 *
 * Calls are handed to Piscina in batches: while every worker has a batch, new calls wait here and
 * leave together when a worker is free (a lone call leaves at once), so under load the message
 * round trip, the thread wake-up and Piscina's bookkeeping are paid per batch, not per call.
 *
 * Timeouts are kept here rather than with an AbortSignal per task (Piscina runs an abortable task
 * alone on its worker, and an AbortController per call costs main-thread time). Each call has a
 * slot in a shared ring (engine/worker/task-ring.ts) that the worker marks when the call starts and
 * clears when it ends. When a call's timer fires, a call not yet started is cancelled in its slot
 * (the worker skips it; the pool was busy), one that started late gets the rest of its time counted
 * from its start, and one that ran its full time has its worker terminated, which Piscina replaces.
 * The other calls of a batch lost with its worker are run again, except the one running when the
 * worker died of something else (out of memory), which fails with that error.
 */
export class PricingPool {
  private readonly piscina: Piscina;
  private readonly ring: Int32Array;
  private readonly ringSize: number;
  private readonly capacity: number;
  private readonly waiting: Call[] = [];
  private inFlight = 0;
  /**
   * The busy share of the workers, averaged over time with an exponential decay of UTILIZATION_TAU_MS
   * (the level held since the last change decays in at each change or read). Reading changes nothing
   * a reader sees: any number of scrapers read the same value.
   */
  private busyShare = 0;
  private busyChanged = performance.now();
  private seq = 0;
  private closing = false;

  constructor(
    private readonly opts: PoolOptions,
    metrics: Metrics,
  ) {
    const tasksPerWorker = opts.tasksPerWorker ?? 1;
    this.capacity = opts.threads * tasksPerWorker;
    // Room for every call that can be waiting or in a batch at once, twice over, as a power of two.
    let size = 1024;
    while (size < 2 * (opts.maxQueue + this.capacity * MAX_BATCH)) size *= 2;
    this.ringSize = size;
    const shared = new SharedArrayBuffer(size * RING_STRIDE * Int32Array.BYTES_PER_ELEMENT);
    this.ring = new Int32Array(shared);
    this.piscina = new Piscina({
      filename: path.join(__dirname, 'worker', 'pricing-worker.js'),
      name: 'runBatch',
      minThreads: opts.threads,
      maxThreads: opts.threads,
      concurrentTasksPerWorker: tasksPerWorker,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: opts.maxOldGenerationSizeMb, maxYoungGenerationSizeMb: 16 },
      workerData: { extraModules: opts.extraModules ?? [], ring: shared, ringSize: size },
    });
    // A worker that dies is replaced by Piscina; the error must not reach the process.
    this.piscina.on('error', () => undefined);
    const pool = this.piscina;
    const waiting = this.waiting;
    metrics.gauge({
      name: 'pricing_pool_queue_length',
      help: 'Pricing tasks waiting for a worker.',
      collect() {
        this.set(waiting.length + pool.queueSize);
      },
    });
    // Piscina's own utilization averages over the pool's whole life; this one over the last seconds.
    const readUtilization = () => this.recentUtilization();
    metrics.gauge({
      name: 'pricing_pool_utilization',
      help: 'Share of worker capacity in use, averaged over about the last 10 s (exponential decay; 0 to 1).',
      collect() {
        this.set(readUtilization());
      },
    });
    metrics.gauge({
      name: 'pricing_pool_threads',
      help: 'Worker threads of the pricing pool.',
      collect() {
        this.set(pool.threads.length);
      },
    });
  }

  run(fn: string, context: Context, timeoutMs: number, market?: MarketEvidence): Promise<WorkerAnswer> {
    if (this.waiting.length >= this.opts.maxQueue) return Promise.reject(new PoolBusyError('queue_full', this.opts.maxQueue));
    this.seq = this.seq + 1 >= SEQ_LIMIT ? 1 : this.seq + 1;
    const seq = this.seq;
    const slot = ringSlot(seq, this.ringSize);
    Atomics.store(this.ring, slot + 1, 0);
    Atomics.store(this.ring, slot, ringTag(seq, RING_QUEUED));
    return new Promise<WorkerAnswer>((resolve, reject) => {
      const call: Call = { task: market ? { fn, context, market, seq } : { fn, context, seq }, slot, timeoutMs, settled: false, resolve, reject, timer: setTimeout(() => this.expire(call), timeoutMs) };
      this.waiting.push(call);
      this.dispatch();
    });
  }

  /** Hands the waiting calls to Piscina while a worker can take a batch. */
  private dispatch(): void {
    while (this.inFlight < this.capacity && this.waiting.length > 0 && !this.closing) {
      const batch = this.waiting.splice(0, MAX_BATCH).filter((c) => !c.settled);
      if (batch.length === 0) continue;
      this.changeInFlight(1);
      this.piscina.run(batch.map((c) => c.task)).then(
        (outcomes: TaskOutcome[]) => {
          this.changeInFlight(-1);
          batch.forEach((call, i) => this.answer(call, outcomes[i]));
          this.dispatch();
        },
        (err: unknown) => {
          this.changeInFlight(-1);
          this.lost(batch, err instanceof Error ? err : new Error(String(err)));
          this.dispatch();
        },
      );
    }
  }

  private changeInFlight(delta: number): void {
    this.decayUtilization();
    this.inFlight += delta;
  }

  /** Folds the level held since the last change into the average (exact for a level held constant). */
  private decayUtilization(): void {
    const now = performance.now();
    const kept = Math.exp(-(now - this.busyChanged) / UTILIZATION_TAU_MS);
    this.busyShare = this.busyShare * kept + Math.min(1, this.inFlight / this.capacity) * (1 - kept);
    this.busyChanged = now;
  }

  /** Share of the workers' capacity in use, averaged over about the last UTILIZATION_TAU_MS (0 to 1). */
  recentUtilization(): number {
    this.decayUtilization();
    return this.busyShare;
  }

  private settle(call: Call): boolean {
    if (call.settled) return false;
    call.settled = true;
    clearTimeout(call.timer);
    return true;
  }

  private answer(call: Call, outcome: TaskOutcome | undefined): void {
    if (!this.settle(call)) return;
    if (!outcome) call.reject(new Error('the pricing worker gave no answer'));
    else if (outcome.ok || outcome.kind === 'not_applicable') call.resolve(outcome);
    // Only a call whose time was up before it started is cancelled; its timer has normally answered already.
    else if (outcome.kind === 'cancelled') call.reject(new PoolBusyError('not_started', call.timeoutMs));
    else call.reject(Object.assign(new Error(outcome.message), { name: outcome.name }));
  }

  /** The batch's worker died (terminated for a timeout, out of memory, or the pool closing). */
  private lost(batch: Call[], err: Error): void {
    for (const call of batch) {
      if (call.settled) continue;
      const running = Atomics.load(this.ring, call.slot) === ringTag(call.task.seq, RING_RUNNING);
      if (running || this.closing) {
        this.settle(call);
        call.reject(err);
        continue;
      }
      // Not started, or finished with its answer lost with the worker: pricing methods are pure, run
      // it again, with its full time again: it should not pay for the call that took its worker down.
      Atomics.store(this.ring, call.slot + 1, 0);
      Atomics.store(this.ring, call.slot, ringTag(call.task.seq, RING_QUEUED));
      clearTimeout(call.timer);
      call.graced = false;
      call.timer = setTimeout(() => this.expire(call), call.timeoutMs);
      this.waiting.unshift(call);
    }
  }

  /**
   * The call's time is up. Not started: cancel it (the pool was busy, not the function slow).
   * Started late, after waiting for a worker: it gets the rest of its time, counted from its start.
   * Running its full time: terminate the worker running it. Answered but the answer not here: a
   * moment's grace for a message in transit, then the pool was busy (its batch is held up).
   */
  private expire(call: Call): void {
    if (call.settled) return;
    const { seq } = call.task;
    if (Atomics.compareExchange(this.ring, call.slot, ringTag(seq, RING_QUEUED), ringTag(seq, RING_CANCELLED)) === ringTag(seq, RING_QUEUED)) {
      this.settle(call);
      call.reject(new PoolBusyError('not_started', call.timeoutMs));
      return;
    }
    const state = Atomics.load(this.ring, call.slot);
    if (state === ringTag(seq, RING_DONE)) {
      // It answered in time; the answer is in transit or held by its batch behind a slower call.
      if (!call.graced) {
        call.graced = true;
        call.timer = setTimeout(() => this.expire(call), Math.min(call.timeoutMs, ANSWER_GRACE_MS));
        return;
      }
      this.settle(call);
      call.reject(new PoolBusyError('answer_held', call.timeoutMs));
      return;
    }
    const running = state === ringTag(seq, RING_RUNNING);
    if (running) {
      const ran = ringElapsed(Atomics.load(this.ring, call.slot + 2));
      if (ran < call.timeoutMs) {
        call.timer = setTimeout(() => this.expire(call), call.timeoutMs - ran);
        return;
      }
    }
    this.settle(call);
    call.reject(new PoolTimeoutError(call.timeoutMs));
    if (!running) return;
    const threadId = Atomics.load(this.ring, call.slot + 1);
    const worker = this.piscina.threads.find((w) => w.threadId === threadId);
    void worker?.terminate();
  }

  get queueSize(): number {
    return this.waiting.length + this.piscina.queueSize;
  }

  /**
   * Resolves once a worker has started and loaded its modules; rejects with why it could not (an
   * extra module that is missing or throws), so a start fails rather than a pool that answers every
   * call service_busy while reporting itself up.
   */
  async check(timeoutMs = 20_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no pricing worker started within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.piscina.run(null, { name: 'ping' }), late]);
    } catch (err) {
      const extra = this.opts.extraModules?.length ? ` Check ENGINE_EXTRA_WORKER_MODULES (${this.opts.extraModules.join(', ')}).` : '';
      throw new StartupError(`A pricing worker could not start: ${err instanceof Error ? err.message : String(err)}.${extra}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.piscina.destroy();
  }
}
