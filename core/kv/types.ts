export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  /** Requests still allowed in the current window after this one. */
  remaining: number;
  /** Milliseconds until the current window ends. */
  resetMs: number;
  /**
   * Milliseconds until the whole allowance is back: the window slides, so counts fade out over the
   * next window rather than vanish when this one ends (what X-RateLimit-Reset and `resets_at` report).
   */
  restoredMs: number;
  /** When refused: milliseconds until a request of the same cost would be allowed. */
  retryAfterMs: number;
  /** The window this call counted in (rateLimit only), for refundRateLimit to take it back from. */
  window?: number;
}

import type { MessageHandler } from './contract';

export type Unsubscribe = () => Promise<void>;

/**
 * The key-value store of the kernel. Two implementations: in process (one instance) and Redis
 * (shared by every instance). Both pass the same contract test suite.
 */
export interface KvStore {
  readonly kind: 'memory' | 'redis';
  get(key: string): Promise<string | null>;
  /**
   * Sets a value, optionally expiring after `ttlMs`. Every TTL in this interface is a whole number
   * of milliseconds; 0 or none means no expiry. Arguments outside the contract are refused with a
   * RangeError by both stores (core/kv/contract.ts).
   */
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /** Sets a value only when the key does not exist; true when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean>;
  del(key: string): Promise<void>;
  /** Deletes the key only while it holds `value` (a lease given back by its holder, not by one whose lease ran out). */
  delIfEquals(key: string, value: string): Promise<void>;
  /**
   * Atomically adds `by` (a whole number) to the integer the key holds (none: 0) and returns the
   * new value; a key without an expiry, new or not, gets `ttlMs`, and an expiry it has is kept.
   * Refused for a value that is not an integer.
   */
  incr(key: string, by?: number, ttlMs?: number): Promise<number>;
  /**
   * incr on a key that exists, in one atomic step: the new value, with the key's expiry kept; null,
   * and nothing created, when the key does not exist (a counter the store has lost).
   */
  incrIfPresent(key: string, by?: number): Promise<number | null>;
  /**
   * incrIfPresent counted at most once under `token` (remembered for `tokenTtlMs`): the same token
   * again answers the value without adding. With undoOnce, a count whose answer was lost (a command
   * that timed out, and may yet be carried out) can be taken back safely whether it happened or not.
   */
  incrIfPresentOnce(key: string, by: number, token: string, tokenTtlMs: number): Promise<number | null>;
  /** Takes back, once, what incrIfPresentOnce counted under `token`; nothing when it never counted or the key is gone. */
  undoOnce(key: string, by: number, token: string): Promise<void>;
  /**
   * Makes what incrIfPresentOnce counted under `token` final: undoOnce of it does nothing after. True
   * when this call made it final; false when it was already taken back (or never counted).
   */
  forgetOnce(key: string, token: string): Promise<boolean>;
  /**
   * Holds `member` in the lease set `key` until `untilMs` (ms since the epoch, by the caller's
   * clock), or renews it; with `renewOnly`, a member no longer held (taken as expired) is not held
   * again. The set is dropped `keyTtlMs` after its last hold. A lease tells others the holder is
   * alive: one that its holder stops renewing (a crashed instance) ends.
   */
  holdLease(key: string, member: string, untilMs: number, keyTtlMs: number, renewOnly?: boolean): Promise<void>;
  /** Gives a lease back; true when it was still held (not taken as expired, nor given back before). */
  dropLease(key: string, member: string): Promise<boolean>;
  /** Removes and answers, in one atomic step, up to `max` members whose leases ended by `nowMs`: each goes to one caller only. */
  takeExpiredLeases(key: string, nowMs: number, max: number): Promise<string[]>;
  /**
   * Sliding-window counter: counts `cost` (1 or more) against `limit` per `windowMs` unless that
   * would exceed the limit. Atomic in both implementations.
   */
  rateLimit(key: string, limit: number, windowMs: number, cost?: number): Promise<RateLimitResult>;
  /** Reads a rate-limit window without counting. */
  peekRateLimit(key: string, limit: number, windowMs: number): Promise<RateLimitResult>;
  /**
   * Takes back `cost` a rateLimit counted (never below 0), in the window its result names (`window`;
   * the current one without it): a request another limit refused is given back to the one that let
   * it through.
   */
  refundRateLimit(key: string, windowMs: number, cost?: number, window?: number): Promise<void>;
  publish(channel: string, message: string): Promise<void>;
  /**
   * A handler that throws or rejects is logged; the publisher and other handlers are unaffected.
   * `onGap` runs each time the subscription is made again after its connection was lost (Redis
   * restarted, the network dropped): messages published meanwhile were never delivered, so a
   * subscriber keeping a cache drops or reloads it there. The in-process store never has gaps.
   */
  subscribe(channel: string, handler: MessageHandler, onGap?: () => unknown): Promise<Unsubscribe>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Shared arithmetic of the sliding-window counter: the previous window's count weighs in by the
 * part of it that still overlaps the sliding window.
 */
export function slidingWindow(
  prev: number,
  cur: number,
  elapsed: number,
  windowMs: number,
  limit: number,
  cost: number,
): { allowed: boolean; remaining: number; resetMs: number; restoredMs: number; retryAfterMs: number; weighted: number } {
  const weight = (windowMs - elapsed) / windowMs;
  const weighted = prev * weight + cur;
  const allowed = weighted + cost <= limit;
  const after = allowed ? weighted + cost : weighted;
  const remaining = Math.max(0, Math.floor(limit - after));
  const resetMs = Math.max(1, windowMs - elapsed);
  let retryAfterMs = 0;
  if (!allowed) {
    if (cost > limit) retryAfterMs = resetMs + windowMs;
    else if (cur + cost <= limit && prev > 0) {
      // Same window: wait until enough of the previous window has slid out.
      const neededWeight = (limit - cur - cost) / prev;
      retryAfterMs = Math.max(1, Math.ceil(windowMs * (1 - neededWeight) - elapsed));
    } else {
      // Next window: the current count becomes the previous one.
      const neededWeight = cur > 0 ? (limit - cost) / cur : 1;
      retryAfterMs = Math.max(1, Math.ceil(resetMs + windowMs * (1 - Math.min(1, neededWeight))));
    }
  }
  // This window's count weighs on until the end of the next one; the previous window's until this one ends.
  const counted = allowed ? cur + cost : cur;
  const restoredMs = Math.max(1, counted > 0 ? resetMs + windowMs : prev > 0 ? resetMs : 0);
  return { allowed, remaining, resetMs, restoredMs, retryAfterMs, weighted };
}
