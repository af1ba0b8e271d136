import { workerData } from 'node:worker_threads';
import { BUILTIN_METHODS } from '../builtins/catalogue';
import { MethodNotApplicable } from '../builtins/types';
import type { Context, MethodResult, PricingMethod } from '../builtins/types';

/**
 * Worker-thread entry of the pricing pool. Methods are the built-ins plus those of modules listed in
 * `workerData.extraModules` (each exporting `functions: Record<string, PricingMethod>`; tests use it
 * for functions that throw, hang or exhaust memory). Answers are plain JSON: a thrown error loses
 * its class crossing threads, so "not applicable" travels as data.
 */
export type WorkerAnswer = { ok: true; result: MethodResult } | { ok: false; kind: 'not_applicable'; message: string; missing: string[] };

export interface WorkerTask {
  fn: string;
  context: Context;
}

const methods: Record<string, PricingMethod> = { ...BUILTIN_METHODS };
const extra = (workerData as { extraModules?: string[] } | undefined)?.extraModules ?? [];
for (const file of extra) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(file) as { functions?: Record<string, PricingMethod> };
  Object.assign(methods, mod.functions ?? {});
}

export async function runTask(task: WorkerTask): Promise<WorkerAnswer> {
  const method = methods[task.fn];
  if (!method) throw new Error(`unknown pricing method ${task.fn}`);
  try {
    return { ok: true, result: await method(task.context) };
  } catch (err) {
    if (err instanceof MethodNotApplicable) return { ok: false, kind: 'not_applicable', message: err.message, missing: err.missing };
    throw err;
  }
}
