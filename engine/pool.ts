import path from 'node:path';
import { Piscina } from 'piscina';
import type { Metrics } from '../core/metrics';
import type { Context } from './builtins/types';
import { RING_QUEUED, RING_RUNNING, RING_CANCELLED, ringSlot, ringTag } from './worker/task-ring';
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

export class PoolSaturatedError extends Error {
  constructor() {
    super('The pricing pool queue is full.');
    this.name = 'PoolSaturatedError';
  }
}

/** Sequence numbers stay below 2^29 so `seq * 4 + state` fits an Int32 slot of the task ring. */
const SEQ_LIMIT = 2 ** 29;

/**
 * The Piscina worker pool running pricing methods. A call that throws, hangs past its timeout
 * (the worker is terminated and replaced) or exhausts its heap is a failed attempt, never a crash.
 *
 * Timeouts are kept here rather than with an AbortSignal per task: Piscina runs an abortable task
 * alone on its worker and an AbortController per call costs main-thread time on every request.
 * Each task instead has a slot in a shared ring (engine/worker/task-ring.ts) that the worker marks
 * when it starts and clears when it ends. When the timer fires, a task still queued is cancelled in
 * its slot (its worker skips it) and a task still running has its worker terminated, which Piscina
 * replaces. Tasks that were only queued on that worker never ran and are submitted again.
 */
export class PricingPool {
  private readonly piscina: Piscina;
  private readonly ring: Int32Array;
  private readonly ringSize: number;
  private seq = 0;
  private closing = false;

  constructor(
    private readonly opts: PoolOptions,
    metrics: Metrics,
  ) {
    const tasksPerWorker = opts.tasksPerWorker ?? 1;
    // Room for every task that can be queued or running at once, twice over, as a power of two.
    let size = 1024;
    while (size < 2 * (opts.maxQueue + opts.threads * tasksPerWorker)) size *= 2;
    this.ringSize = size;
    const shared = new SharedArrayBuffer(size * 2 * Int32Array.BYTES_PER_ELEMENT);
    this.ring = new Int32Array(shared);
    this.piscina = new Piscina({
      filename: path.join(__dirname, 'worker', 'pricing-worker.js'),
      name: 'runTask',
      minThreads: opts.threads,
      maxThreads: opts.threads,
      maxQueue: opts.maxQueue,
      concurrentTasksPerWorker: tasksPerWorker,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: opts.maxOldGenerationSizeMb, maxYoungGenerationSizeMb: 16 },
      workerData: { extraModules: opts.extraModules ?? [], ring: shared, ringSize: size },
    });
    // A worker that dies is replaced by Piscina; the error must not reach the process.
    this.piscina.on('error', () => undefined);
    const pool = this.piscina;
    metrics.gauge({
      name: 'pricing_pool_queue_length',
      help: 'Pricing tasks waiting for a worker.',
      collect() {
        this.set(pool.queueSize);
      },
    });
    metrics.gauge({
      name: 'pricing_pool_utilization',
      help: 'Share of worker capacity in use (0 to 1).',
      collect() {
        this.set(pool.utilization);
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

  run(fn: string, context: Context, timeoutMs: number): Promise<WorkerAnswer> {
    this.seq = this.seq + 1 >= SEQ_LIMIT ? 1 : this.seq + 1;
    const seq = this.seq;
    const slot = ringSlot(seq, this.ringSize);
    Atomics.store(this.ring, slot + 1, 0);
    Atomics.store(this.ring, slot, ringTag(seq, RING_QUEUED));
    const task: WorkerTask = { fn, context, seq };
    return new Promise<WorkerAnswer>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        this.expire(seq, slot);
        reject(new PoolTimeoutError(timeoutMs));
      }, timeoutMs);
      const submit = (): void => {
        this.piscina.run(task).then(
          (answer: TaskOutcome) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            // Only a task whose time was up is cancelled; its timer has normally answered already.
            if (!answer.ok && answer.kind === 'cancelled') reject(new PoolTimeoutError(timeoutMs));
            else resolve(answer);
          },
          (err: unknown) => {
            if (settled) return;
            // Its worker was terminated for another task before this one started: run it elsewhere.
            if (Atomics.load(this.ring, slot) === ringTag(seq, RING_QUEUED) && !this.closing && /worker exited/i.test((err as Error)?.message ?? '')) {
              submit();
              return;
            }
            settled = true;
            clearTimeout(timer);
            reject(err instanceof Error ? (err.message.includes('queue is full') ? new PoolSaturatedError() : err) : new Error(String(err)));
          },
        );
      };
      submit();
    });
  }

  /** The task's time is up: cancel it if it has not started, or terminate the worker running it. */
  private expire(seq: number, slot: number): void {
    if (Atomics.compareExchange(this.ring, slot, ringTag(seq, RING_QUEUED), ringTag(seq, RING_CANCELLED)) === ringTag(seq, RING_QUEUED)) return;
    if (Atomics.load(this.ring, slot) !== ringTag(seq, RING_RUNNING)) return;
    const threadId = Atomics.load(this.ring, slot + 1);
    const worker = this.piscina.threads.find((w) => w.threadId === threadId);
    void worker?.terminate();
  }

  get queueSize(): number {
    return this.piscina.queueSize;
  }

  get utilization(): number {
    return this.piscina.utilization;
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.piscina.destroy();
  }
}
