import type { ChildProcess } from 'node:child_process';

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
