import { Redis } from 'ioredis';
import type { Clock } from '../clock';
import { createLogger } from '../logger';
import type { Logger } from '../logger';
import { checkIncrement, checkRateLimit, checkTtl, isolateHandler, notACounter } from './contract';
import type { MessageHandler } from './contract';
import { slidingWindow } from './types';
import type { KvStore, RateLimitResult, Unsubscribe } from './types';

/** INCRBY that sets the expiry only when the key has none, in one atomic step. */
const INCR_WITH_EXPIRY = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v`;

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

type RedisWithScripts = Redis & {
  pcsIncr(key: string, by: number, ttlMs: number): Promise<number>;
  pcsRateLimit(cur: string, prev: string, windowMs: number, elapsed: number, limit: number, cost: number): Promise<[number, number, number]>;
};

/** Redis-backed store shared by every instance; scripts keep counters and limits atomic. */
export class RedisKvStore implements KvStore {
  readonly kind = 'redis' as const;
  private readonly client: RedisWithScripts;
  private subscriber: Redis | null = null;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly clock: Clock,
    private readonly log: Logger = createLogger('warn'),
  ) {
    const client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    client.defineCommand('pcsIncr', { numberOfKeys: 1, lua: INCR_WITH_EXPIRY });
    client.defineCommand('pcsRateLimit', { numberOfKeys: 2, lua: RATE_LIMIT });
    this.client = client as RedisWithScripts;
  }

  private k(key: string): string {
    return this.prefix + key;
  }

  async get(key: string): Promise<string | null> {
    return this.client.get(this.k(key));
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    checkTtl(ttlMs);
    if (ttlMs) await this.client.set(this.k(key), value, 'PX', ttlMs);
    else await this.client.set(this.k(key), value);
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    checkTtl(ttlMs);
    const res = ttlMs ? await this.client.set(this.k(key), value, 'PX', ttlMs, 'NX') : await this.client.set(this.k(key), value, 'NX');
    return res === 'OK';
  }

  async del(key: string): Promise<void> {
    await this.client.del(this.k(key));
  }

  async incr(key: string, by = 1, ttlMs = 0): Promise<number> {
    checkIncrement(by);
    checkTtl(ttlMs);
    try {
      return Number(await this.client.pcsIncr(this.k(key), by, ttlMs));
    } catch (err) {
      if (err instanceof Error && err.message.includes('not an integer')) throw notACounter(key);
      throw err;
    }
  }

  private async window(key: string, limit: number, windowMs: number, cost: number): Promise<{ allowed: boolean; cur: number; prev: number; elapsed: number }> {
    const now = this.clock.now();
    const idx = Math.floor(now / windowMs);
    const tag = `{${this.k(key)}}`;
    const elapsed = now - idx * windowMs;
    const [ok, cur, prev] = await this.client.pcsRateLimit(`${tag}:${idx}`, `${tag}:${idx - 1}`, windowMs, elapsed, limit, cost);
    return { allowed: ok === 1, cur: Number(cur), prev: Number(prev), elapsed };
  }

  async rateLimit(key: string, limit: number, windowMs: number, cost = 1): Promise<RateLimitResult> {
    checkRateLimit(limit, windowMs, cost);
    const w = await this.window(key, limit, windowMs, cost);
    const r = slidingWindow(w.prev, w.cur, w.elapsed, windowMs, limit, cost);
    // The script decided atomically; the shared arithmetic only derives the reported figures.
    return { allowed: w.allowed, limit, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: w.allowed ? 0 : r.retryAfterMs };
  }

  async peekRateLimit(key: string, limit: number, windowMs: number): Promise<RateLimitResult> {
    checkRateLimit(limit, windowMs);
    const w = await this.window(key, limit, windowMs, 0);
    const r = slidingWindow(w.prev, w.cur, w.elapsed, windowMs, limit, 0);
    return { allowed: r.weighted < limit, limit, remaining: r.remaining, resetMs: r.resetMs, retryAfterMs: r.weighted < limit ? 0 : r.resetMs };
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.client.publish(this.k(channel), message);
  }

  async subscribe(channel: string, handler: MessageHandler): Promise<Unsubscribe> {
    const full = this.k(channel);
    if (!this.subscriber) {
      this.subscriber = this.client.duplicate();
      this.subscriber.on('message', (ch: string, msg: string) => {
        for (const h of this.handlers.get(ch) ?? []) h(msg);
      });
    }
    let set = this.handlers.get(full);
    if (!set) {
      set = new Set();
      this.handlers.set(full, set);
      await this.subscriber.subscribe(full);
    }
    const isolated = isolateHandler(handler, channel, this.log);
    set.add(isolated);
    return async () => {
      set.delete(isolated);
      if (set.size === 0) {
        this.handlers.delete(full);
        await this.subscriber?.unsubscribe(full);
      }
    };
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    if (this.subscriber) this.subscriber.disconnect();
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
