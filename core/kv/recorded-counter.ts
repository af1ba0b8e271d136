import type { KvStore } from './types';

/**
 * Counts `by` on a counter whose events the database also records (a day's calls, rotations,
 * registrations). When this store has no such key (the in-process store after a restart, a flushed
 * Redis), it is first created from what `recorded` says already happened, so losing the store gives
 * no one a second allowance. Every count counts only on a key that exists (one atomic step), so
 * calls arriving together while it is being created count on top of the record, never beside it
 * (counting first and adding the record after let a burst of them through). The record is read
 * while the key is missing: once per key, or per concurrent caller that found it missing.
 */
export async function incrFromRecord(kv: KvStore, key: string, by: number, ttlMs: number, recorded: () => Promise<number>, once?: { token: string; ttlMs: number }): Promise<number> {
  // With a token, counted at most once under it, so that kv.undoOnce can take the count back even when its answer was lost.
  const count = () => (once ? kv.incrIfPresentOnce(key, by, once.token, once.ttlMs) : kv.incrIfPresent(key, by));
  // One round trip while the key exists, which is nearly always.
  const counted = await count();
  if (counted !== null) return counted;
  // Created from the record, then counted on; a key gone again in between (evicted, expired) is made once more, so
  // a token's count stays one that undoOnce can take back.
  for (let attempt = 0; attempt < 2; attempt++) {
    await kv.setIfAbsent(key, String(await recorded()), ttlMs);
    const next = await count();
    if (next !== null) return next;
  }
  return kv.incr(key, by, ttlMs);
}

/**
 * Takes `by` back from a counter incrFromRecord keeps (a refused or failed call). When the store has
 * lost the key meanwhile nothing is taken back: the record the next count starts from does not hold
 * that call, and a decrement would create the key below zero without an expiry, so the record would
 * never be read again that day.
 */
export async function uncount(kv: KvStore, key: string, by: number): Promise<void> {
  await kv.incrIfPresent(key, -by);
}
