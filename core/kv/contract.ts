import { UNAVAILABLE_RETRY_AFTER_S, serviceUnavailable } from '../errors';
import type { ApiError } from '../errors';
import type { Logger } from '../logger';

/** A subscriber may return a promise; its rejection is caught like a throw. */
export type MessageHandler = (message: string) => unknown;

/**
 * Keeps a subscriber's failure with the subscriber. Redis delivers on its connection's event,
 * where a throw or a rejected promise is unhandled and ends the process; the in-process store
 * would hand a throw back to the publisher, which Redis cannot do, so neither store does.
 */
export function isolateHandler(handler: MessageHandler, channel: string, log: Logger): (message: string) => void {
  const failed = (err: unknown) => log.error({ err, channel }, 'key-value subscriber failed');
  return (message) => {
    try {
      const result = handler(message);
      if (result instanceof Promise) result.catch(failed);
    } catch (err) {
      failed(err);
    }
  };
}

/*
 * Argument checks of the store contract, run by both stores before touching data. They are the
 * values Redis accepts (PX, PEXPIRE and INCRBY take integers only), so the in-process store,
 * which would take anything, cannot pass a test that production on Redis fails.
 */

/** A TTL is absent, 0 (no expiry) or a positive whole number of milliseconds. */
export function checkTtl(ttlMs: number | undefined): void {
  if (ttlMs !== undefined && !(Number.isSafeInteger(ttlMs) && ttlMs >= 0)) throw new RangeError(`TTL must be a whole number of milliseconds, 0 or more (got ${ttlMs})`);
}

export function checkIncrement(by: number): void {
  if (!Number.isSafeInteger(by)) throw new RangeError(`An increment must be a whole number (got ${by})`);
}

/** How long a once-token is remembered: at least 1 ms (a token kept forever would never leave the store). */
export function checkTokenTtl(ttlMs: number): void {
  if (!(Number.isSafeInteger(ttlMs) && ttlMs >= 1)) throw new RangeError(`A token's TTL must be a whole number of milliseconds, 1 or more (got ${ttlMs})`);
}

/** Whether a key has a Redis Cluster hash tag: a `{` followed, later, by a `}` with something between. */
function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  if (open === -1) return false;
  const close = key.indexOf('}', open + 1);
  return close > open + 1;
}

/**
 * The key remembering a count made once under a token, in the counter's Redis Cluster slot: a key
 * with a hash tag of its own (a `{pcs}:` prefix) keeps it; one without becomes the tag, braced.
 */
export function onceKey(key: string, token: string): string {
  return hasHashTag(key) ? `${key}:once:${token}` : `{${key}}:once:${token}`;
}

/** A lease ends at a time in ms since the epoch, and a lease set lives at least 1 ms after its last hold. */
export function checkLease(untilMs: number, keyTtlMs: number): void {
  if (!Number.isSafeInteger(untilMs)) throw new RangeError(`A lease's end must be a whole number of milliseconds since the epoch (got ${untilMs})`);
  checkTokenTtl(keyTtlMs);
}

/** How many expired leases one call may take: 1 or more. */
export function checkLeaseBatch(max: number): void {
  if (!(Number.isSafeInteger(max) && max >= 1)) throw new RangeError(`How many leases to take must be a whole number, 1 or more (got ${max})`);
}

/** A rate-limit call counts at least 1; reading without counting is peekRateLimit. */
export function checkRateLimit(limit: number, windowMs: number, cost = 1): void {
  if (!(Number.isSafeInteger(limit) && limit >= 0)) throw new RangeError(`A rate limit must be a whole number, 0 or more (got ${limit})`);
  if (!(Number.isSafeInteger(windowMs) && windowMs >= 1)) throw new RangeError(`A rate-limit window must be a whole number of milliseconds, 1 or more (got ${windowMs})`);
  if (!(Number.isSafeInteger(cost) && cost >= 1)) throw new RangeError(`A rate-limit cost must be a whole number, 1 or more (got ${cost})`);
}

/** The counter a stored value holds, read as Redis's INCRBY reads it (no sign on 0, no leading zeros). */
export function counterValue(key: string, value: string): number {
  const n = Number(value);
  if (!/^(0|-?[1-9]\d*)$/.test(value) || !Number.isSafeInteger(n)) throw notACounter(key);
  return n;
}

export function notACounter(key: string): RangeError {
  return new RangeError(`The value of ${key} is not an integer counter`);
}

/**
 * A command the store could not carry out because the store did not answer: no answer within the
 * command timeout, the connection lost or not re-established in time. Not a refusal of the command
 * itself (a value that is not a counter stays a RangeError). The HTTP error mapping answers it with
 * storeUnavailable().
 */
export class KvUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`The key-value store did not answer: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'KvUnavailableError';
  }
}

/** The answer to a request the key-value store could not serve (503, retryable, Retry-After). */
export function storeUnavailable(): ApiError {
  return serviceUnavailable(
    'The request could not be completed: the key-value store did not answer.',
    `The shared key-value store (rate limits, counters) is not reachable or did not answer in time; retry in ${UNAVAILABLE_RETRY_AFTER_S} s.`,
  );
}
