import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { MMAP_THRESHOLD } from '../core/banner';
import type { Job } from './load-worker';

/** One request to a benchmark child process and its answer, matched by id. */
export interface IpcRequest {
  id: number;
  kind: string;
  payload?: unknown;
}

export interface IpcReply {
  id: number;
  ok: boolean;
  res?: unknown;
  error?: string;
}

let nextId = 0;

/** Sends a request to a child and resolves with its answer. */
export function ask<T>(child: ChildProcess, kind: string, payload?: unknown): Promise<T> {
  const id = ++nextId;
  return new Promise<T>((resolve, reject) => {
    const onMessage = (msg: IpcReply) => {
      if (msg.id !== id) return;
      child.off('message', onMessage);
      if (msg.ok) resolve(msg.res as T);
      else reject(new Error(msg.error));
    };
    child.on('message', onMessage);
    child.send({ id, kind, payload } satisfies IpcRequest);
  });
}

/** Serves requests in a child: each handler's answer (or error) goes back to the parent. */
export function serve(handlers: Record<string, (payload: unknown) => unknown>): void {
  process.on('message', (msg: IpcRequest) => {
    const handler = handlers[msg.kind];
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`unknown request ${msg.kind}`);
        return handler(msg.payload);
      })
      .then(
        (res: unknown) => process.send?.({ id: msg.id, ok: true, res } satisfies IpcReply),
        (err: unknown) => process.send?.({ id: msg.id, ok: false, error: String(err) } satisfies IpcReply),
      );
  });
}

/** Peak resident memory of this process since the last reading, sampled every 100 ms. */
export function rssSampler(): { read: () => { peak: number; now: number } } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 100);
  timer.unref();
  return {
    read: () => {
      const now = process.memoryUsage.rss();
      const out = { peak: Math.max(peak, now), now };
      peak = now;
      return out;
    },
  };
}

/**
 * What `npm start` sets for the service (package.json): glibc returns large freed buffers to the system instead of
 * keeping them in per-thread arenas. The benchmarks run the service as operators do; an operator's value stands.
 */
export const SERVICE_MMAP_THRESHOLD = process.env.MALLOC_MMAP_THRESHOLD_ ?? MMAP_THRESHOLD;

/** Forks a benchmark child (a file of this folder, as built) and waits for its `ready`. */
export function startChild(file: string, execArgv: string[] = []): Promise<ChildProcess> {
  const env = file === 'service-process.js' ? { ...process.env, MALLOC_MMAP_THRESHOLD_: SERVICE_MMAP_THRESHOLD } : process.env;
  const child = fork(path.join(__dirname, file), [], { stdio: 'inherit', execArgv, env });
  return new Promise((resolve, reject) => {
    const onReady = (msg: { ready?: boolean }) => {
      if (!msg.ready) return;
      child.off('message', onReady);
      resolve(child);
    };
    child.on('message', onReady);
    child.once('exit', (code) => reject(new Error(`${file} exited with code ${code}`)));
  });
}

/** Asks a child to close (the service stops its PostgreSQL) and waits for it to exit. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.send({ id: 0, kind: 'close' } satisfies IpcRequest);
  });
}

/** Gives the load generator one job and resolves with its figures. */
export function askLoad<T>(worker: ChildProcess, job: Job): Promise<T> {
  return new Promise((resolve, reject) => {
    worker.once('message', (msg: { ok: boolean; res?: T; error?: string }) => (msg.ok ? resolve(msg.res as T) : reject(new Error(msg.error))));
    worker.send(job);
  });
}

/** The load generator's process (it needs no `ready`: it answers jobs as they come). */
export function startLoadWorker(): ChildProcess {
  return fork(path.join(__dirname, 'load-worker.js'), [], { stdio: 'inherit' });
}
