import path from 'node:path';
import { Piscina } from 'piscina';
import type { Metrics } from '../core/metrics';
import type { Context } from './builtins/types';
import type { WorkerAnswer, WorkerTask } from './worker/pricing-worker';

export interface PoolOptions {
  threads: number;
  maxQueue: number;
  /** Heap cap of each worker; a method exhausting it kills only its worker. */
  maxOldGenerationSizeMb: number;
  extraModules?: readonly string[];
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

/**
 * The Piscina worker pool running pricing methods. A call that throws, hangs past its timeout
 * (the worker is terminated and replaced) or exhausts its heap is a failed attempt, never a crash.
 */
export class PricingPool {
  private readonly piscina: Piscina;

  constructor(
    private readonly opts: PoolOptions,
    metrics: Metrics,
  ) {
    this.piscina = new Piscina({
      filename: path.join(__dirname, 'worker', 'pricing-worker.js'),
      name: 'runTask',
      minThreads: opts.threads,
      maxThreads: opts.threads,
      maxQueue: opts.maxQueue,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: opts.maxOldGenerationSizeMb, maxYoungGenerationSizeMb: 16 },
      workerData: { extraModules: opts.extraModules ?? [] },
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

  async run(fn: string, context: Context, timeoutMs: number): Promise<WorkerAnswer> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      return (await this.piscina.run({ fn, context } satisfies WorkerTask, { signal: abort.signal })) as WorkerAnswer;
    } catch (err) {
      if (abort.signal.aborted) throw new PoolTimeoutError(timeoutMs);
      if ((err as Error)?.message?.includes('queue is full')) throw new PoolSaturatedError();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  get queueSize(): number {
    return this.piscina.queueSize;
  }

  get utilization(): number {
    return this.piscina.utilization;
  }

  async close(): Promise<void> {
    await this.piscina.destroy();
  }
}
