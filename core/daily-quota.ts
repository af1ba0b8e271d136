import { ApiError, errorBodySchema } from './errors';
import type { NextStep } from './errors';
import { incrFromRecord, uncount } from './kv';
import type { KvStore } from './kv';

const DAY_MS = 86_400_000;

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function utcDayStart(ms: number): Date {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS);
}

export function secondsUntilUtcMidnight(ms: number): number {
  return Math.max(1, Math.ceil((Math.floor(ms / DAY_MS + 1) * DAY_MS - ms) / 1000));
}

/**
 * A route's 429 for its OpenAPI entry when it has a daily quota: the generic one names only the per-minute rate limit
 * (`rateLimited`: whether the route has one), which hid the refusal a caller of such a route is likeliest to meet.
 * `what`: which count was spent, naming its settings.
 */
export function dailyQuotaRefusal(what: string, rateLimited: boolean, after = ''): { description: string; schema: typeof errorBodySchema } {
  const quota = `daily_quota_exceeded: ${what}; retry_after runs to 00:00 UTC and limit names the limit${after}`;
  return { description: rateLimited ? `rate_limited: wait Retry-After seconds; or ${quota}.` : `${quota}.`, schema: errorBodySchema };
}

/** One thing counted per UTC day per network address and overall (agent registrations, person sign-ups). */
export interface DailyQuota {
  /** What is counted, as the refusals name it: `registration`, `sign-up`. */
  what: string;
  /** Names the key-value counters: `<counter>:ip:<address>:<day>` and `<counter>:all:<day>`. */
  counter: string;
  /** The address the limit counts under (core/address.ts: limitAddress). */
  address: string;
  perAddressPerDay: number;
  overallPerDay: number;
  /** What the records hold since the start of the day: where a counter starts when the store lost it (a restart without Redis). */
  recordedForAddress: (since: Date) => Promise<number>;
  recordedOverall: (since: Date) => Promise<number>;
  /** The refusals' hints, given the seconds until the quota resets. */
  addressHint: (retryAfter: number) => string;
  overallHint: (retryAfter: number) => string;
  /** What a refused caller can do instead today (never the counted request itself), as the other 429s list it. */
  next?: NextStep[];
  /**
   * Told when a count is spent for the day (this one took its last place, or was refused), so what offers the counted
   * request can stop offering it to that address, or to everyone (`overall`), without reading the counters.
   */
  onSpent?: (scope: 'address' | 'overall') => Promise<void>;
}

export interface DailyCount {
  /** What the address has left today after this one. */
  remainingForAddress: number;
  /** Takes this one back (what it counted failed); best effort, see uncount. */
  release: () => Promise<void>;
}

/**
 * Counts one against the per-address and the overall daily limit, or refuses it with 429
 * `daily_quota_exceeded` (`retry_after` to midnight UTC, `limit` naming both limits, which one was reached (`scope`:
 * address or service) and `resets_at`, a hint, and `next` when the quota gives one). A refused
 * one is taken back from every counter it reached.
 */
export async function countDaily(kv: KvStore, now: number, q: DailyQuota): Promise<DailyCount> {
  const day = utcDay(now);
  const since = utcDayStart(now);
  const retryAfter = secondsUntilUtcMidnight(now);
  // As the other daily 429s state it (the sandbox's compute calls, the demo's hour): which count, and when it starts again.
  const resetsAt = new Date(utcDayStart(now).getTime() + DAY_MS).toISOString();
  const limit = (scope: 'address' | 'service') => ({ per_address_per_day: q.perAddressPerDay, overall_per_day: q.overallPerDay, scope, resets_at: resetsAt });
  const next = q.next ? { next: q.next } : {};
  const addressKey = `${q.counter}:ip:${q.address}:${day}`;
  const overallKey = `${q.counter}:all:${day}`;
  const byAddress = await incrFromRecord(kv, addressKey, 1, 2 * DAY_MS, () => q.recordedForAddress(since));
  if (byAddress > q.perAddressPerDay) {
    // A refused one is taken back too: the counter then holds what was let through, so a release after it
    // (a sign-up that created nothing) gives the address its place back instead of leaving it spent.
    await uncount(kv, addressKey, 1);
    await q.onSpent?.('address');
    throw new ApiError('daily_quota_exceeded', `Daily ${q.what} quota reached for this network address (${q.perAddressPerDay} per day).`, {
      retry_after: retryAfter,
      limit: limit('address'),
      hint: q.addressHint(retryAfter),
      ...next,
    });
  }
  const overall = await incrFromRecord(kv, overallKey, 1, 2 * DAY_MS, () => q.recordedOverall(since));
  if (overall > q.overallPerDay) {
    await uncount(kv, addressKey, 1);
    await uncount(kv, overallKey, 1);
    await q.onSpent?.('overall');
    throw new ApiError('daily_quota_exceeded', `Daily ${q.what} quota of the service reached (${q.overallPerDay} per day).`, {
      retry_after: retryAfter,
      limit: limit('service'),
      hint: q.overallHint(retryAfter),
      ...next,
    });
  }
  if (byAddress >= q.perAddressPerDay) await q.onSpent?.('address');
  if (overall >= q.overallPerDay) await q.onSpent?.('overall');
  return {
    remainingForAddress: q.perAddressPerDay - byAddress,
    release: async () => {
      await uncount(kv, addressKey, 1);
      await uncount(kv, overallKey, 1);
    },
  };
}
