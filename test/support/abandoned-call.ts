import { expect } from 'chai';
import type { TestService } from './service';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A caller that gives up: POSTs `body` to `path`, runs `meanwhile` (e.g. a store losing a key), then
 * aborts after `afterMs` and waits until the client side has failed and the server has seen it go.
 */
export async function leaveMidway(
  url: string,
  path: string,
  opts: { headers: Record<string, string>; body: unknown; afterMs?: number; meanwhile?: () => Promise<unknown> },
): Promise<void> {
  const abort = new AbortController();
  const pending = fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: JSON.stringify(opts.body),
    signal: abort.signal,
  }).catch((err: Error) => err);
  await sleep(opts.afterMs ?? 300);
  await opts.meanwhile?.();
  abort.abort();
  expect(await pending).to.be.instanceOf(Error);
  await sleep(100);
}

/** Runs `fn` while another session holds a lock on `table` (released after, whatever happens). */
export async function whileLocked<T>(svc: TestService, table: string, mode: string, fn: () => Promise<T>): Promise<T> {
  const holder = await svc.sequelize.transaction();
  try {
    await svc.sequelize.query(`LOCK TABLE ${table} IN ${mode} MODE`, { transaction: holder });
    return await fn();
  } finally {
    await holder.rollback();
  }
}

/** Reads `query` until `done` holds for its rows (or `tries` reads `everyMs` apart have passed); the last rows. */
export async function rowsOnceSettled<R>(svc: TestService, query: string, done: (rows: R[]) => boolean, tries = 50, everyMs = 50): Promise<R[]> {
  let rows: R[] = [];
  for (let i = 0; i < tries; i++) {
    [rows] = (await svc.sequelize.query(query)) as [R[], unknown];
    if (done(rows)) break;
    await sleep(everyMs);
  }
  return rows;
}
