import { threadId, workerData } from 'node:worker_threads';
import { BUILTIN_METHODS } from '../builtins/catalogue';
import { MethodNotApplicable } from '../builtins/types';
import type { Context, MarketEvidence, MethodResult, PricingMethod } from '../builtins/types';
import { RING_DONE, RING_QUEUED, RING_RUNNING, ringClock, ringSlot, ringTag } from './task-ring';

/**
 * Worker-thread entry of the pricing pool. Methods are the built-ins plus those of modules listed in
 * `workerData.extraModules` (each exporting `functions: Record<string, PricingMethod>`; tests use it
 * for functions that throw, hang or exhaust memory). Answers are plain JSON: a thrown error loses
 * its class crossing threads, so "not applicable" travels as data.
 */
export type WorkerAnswer = { ok: true; result: MethodResult } | { ok: false; kind: 'not_applicable'; message: string; missing: string[]; refused?: boolean };

/** What a worker sends back for one call: an answer, the error it threw, or word that it was cancelled before it started. */
export type TaskOutcome = WorkerAnswer | { ok: false; kind: 'cancelled' } | { ok: false; kind: 'error'; message: string; name: string };

export interface WorkerTask {
  fn: string;
  context: Context;
  /** Network price observations of the context's product type, when the service found any. */
  market?: MarketEvidence;
  /** The task's number in the pool's task ring (engine/worker/task-ring.ts). */
  seq: number;
}

interface PoolWorkerData {
  extraModules?: string[];
  ring?: SharedArrayBuffer;
  ringSize?: number;
}

const data = (workerData ?? {}) as PoolWorkerData;
const methods: Record<string, PricingMethod> = { ...BUILTIN_METHODS };
for (const file of data.extraModules ?? []) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(file) as { functions?: unknown };
  // A module of another shape would add nothing in silence, and the functions meant to run from it would be unknown.
  const fns = mod.functions;
  if (typeof fns !== 'object' || fns === null || Array.isArray(fns)) throw new Error(`${file} exports no \`functions\` object (exports.functions = { name: method })`);
  for (const [name, method] of Object.entries(fns as Record<string, unknown>)) {
    if (typeof method !== 'function') throw new Error(`${file}: functions.${name} is not a function`);
    methods[name] = method as PricingMethod;
  }
}
const ring = data.ring ? new Int32Array(data.ring) : null;
const ringSize = data.ringSize ?? 1;

function failure(err: unknown): TaskOutcome {
  if (err instanceof MethodNotApplicable) return { ok: false, kind: 'not_applicable', message: err.message, missing: err.missing, ...(err.refused ? { refused: true } : {}) };
  return err instanceof Error ? { ok: false, kind: 'error', message: err.message, name: err.name } : { ok: false, kind: 'error', message: String(err), name: 'Error' };
}

/**
 * Runs one call. A synchronous method (every built-in) is marked done in the ring the moment it
 * returns, before the next call of its batch starts: were that mark left to a promise callback, a
 * batch peer that never yields would keep it RUNNING, and the pool would blame this call's function
 * for the peer's hang.
 */
function runOne(task: WorkerTask): TaskOutcome | Promise<TaskOutcome> {
  const slot = ringSlot(task.seq, ringSize);
  if (ring) {
    Atomics.store(ring, slot + 1, threadId);
    Atomics.store(ring, slot + 2, ringClock());
    // The pool cancelled the call while it waited (its time is up): do not run it.
    if (Atomics.compareExchange(ring, slot, ringTag(task.seq, RING_QUEUED), ringTag(task.seq, RING_RUNNING)) !== ringTag(task.seq, RING_QUEUED)) return { ok: false, kind: 'cancelled' };
  }
  const done = (outcome: TaskOutcome): TaskOutcome => {
    if (ring) Atomics.compareExchange(ring, slot, ringTag(task.seq, RING_RUNNING), ringTag(task.seq, RING_DONE));
    return outcome;
  };
  let value: MethodResult | Promise<MethodResult>;
  try {
    const method = methods[task.fn];
    if (!method) throw new Error(`unknown pricing method ${task.fn}`);
    value = method(task.context, task.market);
  } catch (err) {
    return done(failure(err));
  }
  if (!(value instanceof Promise)) return done({ ok: true, result: value });
  return value.then(
    (result) => done({ ok: true, result }),
    (err: unknown) => done(failure(err)),
  );
}

/** Answers once the worker has started, its extra modules loaded: the pool's start check. */
export function ping(): string {
  return `ready with ${Object.keys(methods).length} methods`;
}

/** One Piscina task: a batch of calls, each answered on its own (a call that throws fails alone). */
export function runBatch(tasks: WorkerTask[]): Promise<TaskOutcome[]> {
  return Promise.all(tasks.map((task) => Promise.resolve(runOne(task))));
}
