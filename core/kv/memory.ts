import { EventEmitter } from 'node:events';
import type { Clock } from '../clock';
import { createLogger } from '../logger';
import type { Logger } from '../logger';
import { checkIncrement, checkLease, checkLeaseBatch, checkRateLimit, checkTokenTtl, checkTtl, counterValue, isolateHandler, onceKey } from './contract';
import type { MessageHandler } from './contract';
import { slidingWindow } from './types';
import type { KvStore, RateLimitResult, Unsubscribe } from './types';

interface Entry {
  value: string;
  expiresAt: number | null;
}

/** A lease set: each member and when its lease ends. */
interface LeaseSet {
  ends: Map<string, number>;
  expiresAt: number;
}

/** In-process store for a single instance. Expired entries are dropped lazily and by a sweep. */
export class MemoryKvStore implements KvStore {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Entry>();
  private readonly leases = new Map<string, LeaseSet>();
  private readonly bus = new EventEmitter();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger = createLogger('warn'),
    sweepIntervalMs = 60_000,
  ) {
    this.bus.setMaxListeners(0);
    this.sweeper = setInterval(() => this.sweep(), sweepIntervalMs);
    this.sweeper.unref();
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt !== null && entry.expiresAt <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt !== null && entry.expiresAt <= now) this.entries.delete(key);
    for (const [key, set] of this.leases) if (set.expiresAt <= now) this.leases.delete(key);
  }

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    checkTtl(ttlMs);
    this.entries.set(key, { value, expiresAt: ttlMs ? this.clock.now() + ttlMs : null });
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    checkTtl(ttlMs);
    if (this.live(key)) return false;
    await this.set(key, value, ttlMs);
    return true;
  }

  async del(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async delIfEquals(key: string, value: string): Promise<void> {
    if (this.live(key)?.value === value) this.entries.delete(key);
  }

  async incr(key: string, by = 1, ttlMs?: number): Promise<number> {
    checkIncrement(by);
    checkTtl(ttlMs);
    const entry = this.live(key);
    const next = (entry ? counterValue(key, entry.value) : 0) + by;
    const expiresAt = entry?.expiresAt ?? (ttlMs ? this.clock.now() + ttlMs : null);
    this.entries.set(key, { value: String(next), expiresAt });
    return next;
  }

  async incrIfPresent(key: string, by = 1): Promise<number | null> {
    checkIncrement(by);
    const entry = this.live(key);
    if (!entry) return null;
    const next = counterValue(key, entry.value) + by;
    this.entries.set(key, { value: String(next), expiresAt: entry.expiresAt });
    return next;
  }

  async incrIfPresentOnce(key: string, by: number, token: string, tokenTtlMs: number): Promise<number | null> {
    checkIncrement(by);
    checkTokenTtl(tokenTtlMs);
    const entry = this.live(key);
    if (!entry) return null;
    const mark = onceKey(key, token);
    if (this.live(mark)) return counterValue(key, entry.value);
    this.entries.set(mark, { value: String(by), expiresAt: this.clock.now() + tokenTtlMs });
    return this.incrIfPresent(key, by);
  }

  async undoOnce(key: string, by: number, token: string): Promise<void> {
    checkIncrement(by);
    const mark = onceKey(key, token);
    if (!this.live(mark)) return;
    this.entries.delete(mark);
    await this.incrIfPresent(key, -by);
  }

  async forgetOnce(key: string, token: string): Promise<boolean> {
    const mark = onceKey(key, token);
    if (!this.live(mark)) return false;
    this.entries.delete(mark);
    return true;
  }

  private leaseSet(key: string): LeaseSet | undefined {
    const set = this.leases.get(key);
    if (set && set.expiresAt <= this.clock.now()) {
      this.leases.delete(key);
      return undefined;
    }
    return set;
  }

  async holdLease(key: string, member: string, untilMs: number, keyTtlMs: number, renewOnly = false): Promise<void> {
    checkLease(untilMs, keyTtlMs);
    const set = this.leaseSet(key);
    if (renewOnly && !set?.ends.has(member)) return;
    const held = set ?? { ends: new Map<string, number>(), expiresAt: 0 };
    held.ends.set(member, untilMs);
    held.expiresAt = this.clock.now() + keyTtlMs;
    this.leases.set(key, held);
  }

  async dropLease(key: string, member: string): Promise<boolean> {
    const set = this.leaseSet(key);
    const held = set?.ends.delete(member) ?? false;
    if (set?.ends.size === 0) this.leases.delete(key);
    return held;
  }

  async takeExpiredLeases(key: string, nowMs: number, max: number): Promise<string[]> {
    checkLeaseBatch(max);
    const set = this.leaseSet(key);
    if (!set) return [];
    // In lease-end order, as Redis's sorted set answers them.
    const ended = [...set.ends].filter(([, end]) => end <= nowMs).sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1)).slice(0, max).map(([member]) => member);
    for (const member of ended) set.ends.delete(member);
    if (set.ends.size === 0) this.leases.delete(key);
    return ended;
  }

  private windowCounts(key: string, windowMs: number): { cur: number; prev: number; elapsed: number; curKey: string; idx: number } {
    const now = this.clock.now();
    const idx = Math.floor(now / windowMs);
    const curKey = `${key}:${idx}`;
    const cur = Number(this.live(curKey)?.value ?? 0);
    const prev = Number(this.live(`${key}:${idx - 1}`)?.value ?? 0);
    return { cur, prev, elapsed: now - idx * windowMs, curKey, idx };
  }

  async rateLimit(key: string, limit: number, windowMs: number, cost = 1): Promise<RateLimitResult> {
    checkRateLimit(limit, windowMs, cost);
    const { cur, prev, elapsed, curKey, idx } = this.windowCounts(key, windowMs);
    const r = slidingWindow(prev, cur, elapsed, windowMs, limit, cost);
    if (r.allowed) await this.incr(curKey, cost, windowMs * 2);
    return { allowed: r.allowed, limit, remaining: r.remaining, resetMs: r.resetMs, restoredMs: r.restoredMs, retryAfterMs: r.retryAfterMs, window: idx };
  }

  async refundRateLimit(key: string, windowMs: number, cost = 1, window?: number): Promise<void> {
    checkRateLimit(1, windowMs, cost);
    const countedIn = `${key}:${window ?? this.windowCounts(key, windowMs).idx}`;
    const entry = this.live(countedIn);
    const cur = Number(entry?.value ?? 0);
    if (entry && cur > 0) this.entries.set(countedIn, { value: String(cur - Math.min(cost, cur)), expiresAt: entry.expiresAt });
  }

  async peekRateLimit(key: string, limit: number, windowMs: number): Promise<RateLimitResult> {
    checkRateLimit(limit, windowMs);
    const { cur, prev, elapsed } = this.windowCounts(key, windowMs);
    const r = slidingWindow(prev, cur, elapsed, windowMs, limit, 0);
    return { allowed: r.weighted < limit, limit, remaining: r.remaining, resetMs: r.resetMs, restoredMs: r.restoredMs, retryAfterMs: r.weighted < limit ? 0 : r.resetMs };
  }

  async publish(channel: string, message: string): Promise<void> {
    this.bus.emit(channel, message);
  }

  async subscribe(channel: string, handler: MessageHandler): Promise<Unsubscribe> {
    const isolated = isolateHandler(handler, channel, this.log);
    this.bus.on(channel, isolated);
    return async () => {
      this.bus.off(channel, isolated);
    };
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.entries.clear();
    this.leases.clear();
    this.bus.removeAllListeners();
  }
}
