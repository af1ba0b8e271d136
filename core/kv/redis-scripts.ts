import type { Redis } from 'ioredis';

/** The Lua scripts that keep the Redis store's counters and limits atomic, and the commands they define. */

/** INCRBY that sets the expiry only when the key has none, in one atomic step. */
const INCR_WITH_EXPIRY = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v`;

/** INCRBY of a key that exists; nil (nothing created) when it does not. */
const INCR_IF_PRESENT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('INCRBY', KEYS[1], ARGV[1])`;

/**
 * INCR_IF_PRESENT at most once per token: KEYS[2] remembers the count (ARGV[2] ms). A repeat of the
 * token answers the value without adding; nil when the counter does not exist.
 */
const INCR_IF_PRESENT_ONCE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return tonumber(redis.call('GET', KEYS[1])) end
return redis.call('INCRBY', KEYS[1], ARGV[1])`;

/** DEL of a key that still holds ARGV[1]. */
const DEL_IF_EQUALS = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Takes back, once, what INCR_IF_PRESENT_ONCE counted under the token KEYS[2]. */
const UNDO_ONCE = `
if redis.call('DEL', KEYS[2]) == 1 and redis.call('EXISTS', KEYS[1]) == 1 then redis.call('INCRBY', KEYS[1], -tonumber(ARGV[1])) end
return 1`;

/** ZADD of a lease (XX when ARGV[4] is 1: renew only), then the set's expiry ARGV[3] ms on. */
const HOLD_LEASE = `
if ARGV[4] == '1' then redis.call('ZADD', KEYS[1], 'XX', ARGV[1], ARGV[2]) else redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

/** Removes and answers up to ARGV[2] members whose scores (lease ends) are ARGV[1] or less. */
const TAKE_EXPIRED_LEASES = `
local ended = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #ended > 0 then redis.call('ZREM', KEYS[1], unpack(ended)) end
return ended`;

/**
 * Sliding-window counter. KEYS[1] = current window, KEYS[2] = previous window (same hash tag, so
 * the script is Redis Cluster safe). Returns {allowed, cur, prev}.
 */
const RATE_LIMIT = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
local window = tonumber(ARGV[1])
local elapsed = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local weighted = prev * ((window - elapsed) / window) + cur
if cost > 0 and weighted + cost <= limit then
  redis.call('INCRBY', KEYS[1], cost)
  redis.call('PEXPIRE', KEYS[1], window * 2)
  return {1, cur, prev}
end
return {0, cur, prev}`;

/** Takes back up to ARGV[1] from a window's count, never below 0. */
const RATE_REFUND = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local back = math.min(tonumber(ARGV[1]), cur)
if back > 0 then redis.call('DECRBY', KEYS[1], back) end
return back`;

export type RedisWithScripts = Redis & {
  pcsIncrIfPresentOnce(key: string, mark: string, by: number, tokenTtlMs: number): Promise<number | null>;
  pcsUndoOnce(key: string, mark: string, by: number): Promise<number>;
  pcsDelIfEquals(key: string, value: string): Promise<number>;
  pcsHoldLease(key: string, untilMs: number, member: string, keyTtlMs: number, renewOnly: 0 | 1): Promise<number>;
  pcsTakeExpiredLeases(key: string, nowMs: number, max: number): Promise<string[]>;
  pcsRateRefund(cur: string, cost: number): Promise<number>;
  pcsIncr(key: string, by: number, ttlMs: number): Promise<number>;
  pcsIncrIfPresent(key: string, by: number): Promise<number | null>;
  pcsRateLimit(cur: string, prev: string, windowMs: number, elapsed: number, limit: number, cost: number): Promise<[number, number, number]>;
};

/** Defines the scripts as commands of `client` (pcsIncr, pcsRateLimit, …). */
export function defineScripts(client: Redis): void {
  client.defineCommand('pcsIncr', { numberOfKeys: 1, lua: INCR_WITH_EXPIRY });
  client.defineCommand('pcsIncrIfPresent', { numberOfKeys: 1, lua: INCR_IF_PRESENT });
  client.defineCommand('pcsRateLimit', { numberOfKeys: 2, lua: RATE_LIMIT });
  client.defineCommand('pcsRateRefund', { numberOfKeys: 1, lua: RATE_REFUND });
  client.defineCommand('pcsIncrIfPresentOnce', { numberOfKeys: 2, lua: INCR_IF_PRESENT_ONCE });
  client.defineCommand('pcsUndoOnce', { numberOfKeys: 2, lua: UNDO_ONCE });
  client.defineCommand('pcsDelIfEquals', { numberOfKeys: 1, lua: DEL_IF_EQUALS });
  client.defineCommand('pcsHoldLease', { numberOfKeys: 1, lua: HOLD_LEASE });
  client.defineCommand('pcsTakeExpiredLeases', { numberOfKeys: 1, lua: TAKE_EXPIRED_LEASES });
}
