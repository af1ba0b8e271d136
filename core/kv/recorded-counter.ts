import type { KvStore } from './types';

/**
 * Counts `by` on a counter whose events the database also records (a day's calls, rotations,
 * registrations). The first count of a key in this store (the in-process store after a restart, a
 * flushed Redis) adds what `recorded` says already happened, so losing the store gives no one a
 * second allowance. Only the count that creates the key asks the database: one query per key.
 */
export async function incrFromRecord(kv: KvStore, key: string, by: number, ttlMs: number, recorded: () => Promise<number>): Promise<number> {
  const used = await kv.incr(key, by, ttlMs);
  if (used !== by) return used;
  const before = await recorded();
  return before > 0 ? kv.incr(key, before, ttlMs) : used;
}
