import { Redis } from 'ioredis';
import type { Clock } from '../clock';
import { createLogger } from '../logger';
import type { Logger } from '../logger';
import { KvUnavailableError, checkIncrement, checkLease, checkLeaseBatch, checkRateLimit, checkTokenTtl, checkTtl, isolateHandler, notACounter, onceKey } from './contract';
import type { MessageHandler } from './contract';
import { defineScripts } from './redis-scripts';
import type { RedisWithScripts } from './redis-scripts';
import { DEFAULT_REPEAT_INTERVAL_MS, RepeatedLines } from '../repeated-lines';
import { slidingWindow } from './types';
import { authRefusal, connectionFailure, databaseRefusal, isReplyError } from './redis-failures';
import type { KvStore, RateLimitResult, Unsubscribe } from './types';

export { authRefusal, connectionFailure } from './redis-failures';

/** Most messages kept while Redis cannot be reached (the oldest give way). */
const UNSENT_MAX = 10_000;

export interface RedisKvOptions {
  /**
   * Longest a command waits for Redis's answer (ioredis commandTimeout) before it fails with
   * KvUnavailableError; unset: no limit. Also bounds this store's subscribe and unsubscribe calls.
   */
  commandTimeoutMs?: number;
  /** How often the same connection failure is logged again while it lasts (LOG_REPEAT_INTERVAL_MS); default 30 s. */
  failureLogIntervalMs?: number;
}

/**
 * Redis-backed store shared by every instance; scripts keep counters and limits atomic. A command
 * Redis does not answer (frozen, down, unreachable past the retries) fails with KvUnavailableError
 * within the command timeout; the connections reconnect on their own with ioredis's back-off.
 */
export class RedisKvStore implements KvStore {
  readonly kind = 'redis' as const;
  private readonly client: RedisWithScripts;
  /** The last connection failure, for a start that cannot connect to say why. */
  private lastError: unknown = null;
  /** Redis's refusal of REDIS_URL's database number, which no retry mends. */
  private selectRefused: string | null = null;
  private subscriber: Redis | null = null;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  /** Messages publish could not hand to Redis, sent when the connection is ready again. */
  private readonly unsent: Array<[string, string]> = [];
  /** Per channel, what to run once it is subscribed again after a lost connection (missed messages). */
  private readonly gapHandlers = new Map<string, Set<(message: string) => void>>();
  /** The connection failures since the last line logged, by reason. */
  private readonly failing: RepeatedLines;
  /** The subscribed connection reconnects on its own schedule: its failures are told apart, as rarely. */
  private readonly subscriberFailing: RepeatedLines;

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly clock: Clock,
    private readonly log: Logger = createLogger('warn'),
    private readonly opts: RedisKvOptions = {},
  ) {
    this.failing = new RepeatedLines(opts.failureLogIntervalMs ?? DEFAULT_REPEAT_INTERVAL_MS, 20);
    this.subscriberFailing = new RepeatedLines(opts.failureLogIntervalMs ?? DEFAULT_REPEAT_INTERVAL_MS, 20);
    // No offline queue and no resending after a reconnect: a command that failed its caller (a 503
    // answered) must not run later, when Redis is back, and count a call nobody was served for.
    // While the connection is down, commands fail at once rather than waiting out the timeout.
    const client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: false, autoResendUnfulfilledCommands: false, commandTimeout: opts.commandTimeoutMs });
    defineScripts(client);
    // Reconnection attempts fail with an error event each; logged here rather than by ioredis on stderr,
    // one line per attempt naming the reason (a stack says nothing about a refused connection).
    client.on('error', (err: unknown) => {
      // A command refused while disconnected says only that: the reason that broke the connection stays the one told.
      if (this.lastError === null || !/Stream isn't writeable/.test(err instanceof Error ? err.message : '')) this.lastError = err;
      this.selectRefused ??= databaseRefusal(err);
      this.warnThrottled(this.failing, connectionFailure(err), 'key-value store connection failed');
    });
    client.on('ready', () => {
      if (this.failing.any) this.log.info('key-value store connected again');
      this.failing.clear();
      this.flushUnsent();
    });
    this.client = client as RedisWithScripts;
  }

  /**
   * One warning per reason every LOG_REPEAT_INTERVAL_MS, with the count of the attempts since: a Redis down for an hour
   * is reconnected to every few seconds, and each attempt's line said the same.
   */
  private warnThrottled(lines: RepeatedLines, reason: string, message: string): void {
    const due = lines.due(reason);
    if (!due) return;
    this.log.warn({ reason, ...(due.first ? {} : { attempts_since_last_logged: due.heldBack + 1 }) }, message);
  }

  private k(key: string): string {
    return this.prefix + key;
  }

  /** A command's answer; a failure of the connection, not Redis's refusal of the command, becomes KvUnavailableError. */
  private async send<T>(command: Promise<T>): Promise<T> {
    try {
      return await command;
    } catch (err) {
      throw isReplyError(err) ? err : new KvUnavailableError(err);
    }
  }

  /** The same for the subscriber connection, which has no command timeout of its own: bounded here. */
  private async sendBounded<T>(command: Promise<T>): Promise<T> {
    const ms = this.opts.commandTimeoutMs;
    if (ms === undefined) return this.send(command);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('Command timed out')), ms);
    });
    try {
      // The command may still settle later; race() has handled it, so that is never unhandled.
      return await this.send(Promise.race([command, timeout]));
    } finally {
      clearTimeout(timer);
    }
  }

  async get(key: string): Promise<string | null> {
    return this.send(this.client.get(this.k(key)));
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    checkTtl(ttlMs);
    if (ttlMs) await this.send(this.client.set(this.k(key), value, 'PX', ttlMs));
    else await this.send(this.client.set(this.k(key), value));
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    checkTtl(ttlMs);
    const res = await this.send(ttlMs ? this.client.set(this.k(key), value, 'PX', ttlMs, 'NX') : this.client.set(this.k(key), value, 'NX'));
    return res === 'OK';
  }

  async del(key: string): Promise<void> {
    await this.send(this.client.del(this.k(key)));
  }

  async delIfEquals(key: string, value: string): Promise<void> {
    await this.send(this.client.pcsDelIfEquals(this.k(key), value));
  }

  async incr(key: string, by = 1, ttlMs = 0): Promise<number> {
    checkIncrement(by);
    checkTtl(ttlMs);
    return Number(await this.counter(key, this.client.pcsIncr(this.k(key), by, ttlMs)));
  }

  async incrIfPresent(key: string, by = 1): Promise<number | null> {
    checkIncrement(by);
    const v = await this.counter(key, this.client.pcsIncrIfPresent(this.k(key), by));
    return v === null ? null : Number(v);
  }

  async incrIfPresentOnce(key: string, by: number, token: string, tokenTtlMs: number): Promise<number | null> {
    checkIncrement(by);
    checkTokenTtl(tokenTtlMs);
    const v = await this.counter(key, this.client.pcsIncrIfPresentOnce(this.k(key), onceKey(this.k(key), token), by, tokenTtlMs));
    return v === null ? null : Number(v);
  }

  async undoOnce(key: string, by: number, token: string): Promise<void> {
    checkIncrement(by);
    await this.counter(key, this.client.pcsUndoOnce(this.k(key), onceKey(this.k(key), token), by));
  }

  async forgetOnce(key: string, token: string): Promise<boolean> {
    return (await this.send(this.client.del(onceKey(this.k(key), token)))) === 1;
  }

  async holdLease(key: string, member: string, untilMs: number, keyTtlMs: number, renewOnly = false): Promise<void> {
    checkLease(untilMs, keyTtlMs);
    await this.send(this.client.pcsHoldLease(this.k(key), untilMs, member, keyTtlMs, renewOnly ? 1 : 0));
  }

  async dropLease(key: string, member: string): Promise<boolean> {
    return (await this.send(this.client.zrem(this.k(key), member))) === 1;
  }

  async takeExpiredLeases(key: string, nowMs: number, max: number): Promise<string[]> {
    checkLeaseBatch(max);
    return this.send(this.client.pcsTakeExpiredLeases(this.k(key), nowMs, max));
  }

  /** A counter script's answer; Redis's refusal of a value that is not an integer becomes the contract's RangeError. */
  private async counter<T>(key: string, command: Promise<T>): Promise<T> {
    try {
      return await this.send(command);
    } catch (err) {
      if (err instanceof Error && err.message.includes('not an integer')) throw notACounter(key);
      throw err;
    }
  }

  /** The window's key prefix: both windows of a limiter share a hash tag (one Cluster slot). */
  private windowTag(key: string): string {
    return `{${this.k(key)}}`;
  }

  async refundRateLimit(key: string, windowMs: number, cost = 1, window?: number): Promise<void> {
    checkRateLimit(1, windowMs, cost);
    await this.send(this.client.pcsRateRefund(`${this.windowTag(key)}:${window ?? Math.floor(this.clock.now() / windowMs)}`, cost));
  }

  private async window(key: string, limit: number, windowMs: number, cost: number): Promise<{ allowed: boolean; cur: number; prev: number; elapsed: number; idx: number }> {
    const now = this.clock.now();
    const idx = Math.floor(now / windowMs);
    const tag = this.windowTag(key);
    const elapsed = now - idx * windowMs;
    const [ok, cur, prev] = await this.send(this.client.pcsRateLimit(`${tag}:${idx}`, `${tag}:${idx - 1}`, windowMs, elapsed, limit, cost));
    return { allowed: ok === 1, cur: Number(cur), prev: Number(prev), elapsed, idx };
  }

  async rateLimit(key: string, limit: number, windowMs: number, cost = 1): Promise<RateLimitResult> {
    checkRateLimit(limit, windowMs, cost);
    const w = await this.window(key, limit, windowMs, cost);
    const r = slidingWindow(w.prev, w.cur, w.elapsed, windowMs, limit, cost);
    // The script decided atomically; the shared arithmetic only derives the reported figures.
    return { allowed: w.allowed, limit, remaining: r.remaining, resetMs: r.resetMs, restoredMs: r.restoredMs, retryAfterMs: w.allowed ? 0 : r.retryAfterMs, window: w.idx };
  }

  async peekRateLimit(key: string, limit: number, windowMs: number): Promise<RateLimitResult> {
    checkRateLimit(limit, windowMs);
    const w = await this.window(key, limit, windowMs, 0);
    const r = slidingWindow(w.prev, w.cur, w.elapsed, windowMs, limit, 0);
    return { allowed: r.weighted < limit, limit, remaining: r.remaining, resetMs: r.resetMs, restoredMs: r.restoredMs, retryAfterMs: r.weighted < limit ? 0 : r.resetMs };
  }

  /**
   * Publishes, or, when Redis cannot be reached, keeps the message and sends it once the connection
   * is ready again: what is published here are invalidations of a change already made (a revoked
   * key, a deactivated function), which must not be lost because this instance's connection was
   * down, and which are harmless to deliver late or twice. At most UNSENT_MAX are kept.
   */
  async publish(channel: string, message: string): Promise<void> {
    try {
      await this.send(this.client.publish(this.k(channel), message));
    } catch (err) {
      if (!(err instanceof KvUnavailableError)) throw err;
      this.keepUnsent(this.k(channel), message);
      this.log.warn({ err, channel }, 'Redis unreachable: the message is sent once it is back');
    }
  }

  private keepUnsent(channel: string, message: string): void {
    if (this.unsent.some(([c, m]) => c === channel && m === message)) return;
    if (this.unsent.length >= UNSENT_MAX) this.unsent.shift();
    this.unsent.push([channel, message]);
  }

  /** Sends the kept messages, oldest first; one that fails again stays for the next ready. */
  private flushUnsent(): void {
    const pending = this.unsent.splice(0);
    void (async () => {
      for (const [channel, message] of pending) {
        try {
          await this.send(this.client.publish(channel, message));
        } catch {
          this.keepUnsent(channel, message);
        }
      }
    })();
  }

  /**
   * The subscribed connection waits for messages for as long as it is open, so it has no command
   * timeout, and it subscribes again after a reconnect itself rather than through ioredis's
   * autoResubscribe: ioredis's own resubscription is a promise nobody holds, and its failure (a
   * command timeout, the retries used up, the connection closed) would be an unhandled rejection
   * that ends the process.
   */
  private subscriberConnection(): Redis {
    if (this.subscriber) return this.subscriber;
    // SUBSCRIBE may wait for the connection and be sent again after a reconnect: it counts nothing, and
    // without the resend a SUBSCRIBE cut off by a dropped connection would never settle (ioredis drops
    // unfulfilled commands silently then, and this connection has no command timeout).
    const subscriber = this.client.duplicate({ commandTimeout: undefined, autoResubscribe: false, enableOfflineQueue: true, autoResendUnfulfilledCommands: true });
    subscriber.on('error', (err: unknown) => this.warnThrottled(this.subscriberFailing, connectionFailure(err), 'key-value subscriber connection failed'));
    subscriber.on('message', (ch: string, msg: string) => {
      for (const h of this.handlers.get(ch) ?? []) h(msg);
    });
    // Every time, the first included: ioredis may write a SUBSCRIBE queued while it was connecting
    // before its ready check, whose INFO is then refused in subscriber mode and the connection made
    // again, so even the first ready can find the channel unsubscribed. A second SUBSCRIBE is harmless.
    subscriber.on('ready', () => {
      if (this.subscriberFailing.any) this.log.info('key-value subscriber connected again');
      this.subscriberFailing.clear();
      this.resubscribe(subscriber);
    });
    this.subscriber = subscriber;
    return subscriber;
  }

  private resubscribe(subscriber: Redis): void {
    const channels = [...this.handlers.keys()];
    if (channels.length === 0) return;
    // Waits as long as Redis takes; a failure means the connection was lost again, and the next
    // reconnect subscribes again.
    subscriber.subscribe(...channels).then(
      () => {
        // Subscribed again: whatever was published before this point may have been missed; from here on it is heard.
        for (const ch of channels) for (const gap of this.gapHandlers.get(ch) ?? []) gap('');
      },
      (err: unknown) => this.log.warn({ err, channels: channels.length }, 'key-value resubscription failed; retried on the next reconnect'),
    );
  }

  /** Registers a channel's handler set and subscribes to it; when SUBSCRIBE fails, the channel is left as it was. */
  private async addChannel(subscriber: Redis, full: string): Promise<Set<(message: string) => void>> {
    const handlers = new Set<(message: string) => void>();
    this.handlers.set(full, handlers);
    try {
      await this.sendBounded(subscriber.subscribe(full));
    } catch (err) {
      // Not subscribed: the next subscribe to the channel sends SUBSCRIBE again.
      if (this.handlers.get(full) === handlers && handlers.size === 0) this.handlers.delete(full);
      throw err;
    }
    return handlers;
  }

  async subscribe(channel: string, handler: MessageHandler, onGap?: () => unknown): Promise<Unsubscribe> {
    const full = this.k(channel);
    const subscriber = this.subscriberConnection();
    const handlers = this.handlers.get(full) ?? (await this.addChannel(subscriber, full));
    const isolated = isolateHandler(handler, channel, this.log);
    handlers.add(isolated);
    // Kept to itself like a message handler: a reload that fails is logged, never unhandled.
    const gap = onGap ? isolateHandler(onGap, channel, this.log) : null;
    if (gap) this.gapHandlers.set(full, (this.gapHandlers.get(full) ?? new Set<(message: string) => void>()).add(gap));
    return async () => {
      handlers.delete(isolated);
      if (gap) this.gapHandlers.get(full)?.delete(gap);
      if (handlers.size === 0 && this.handlers.get(full) === handlers) {
        this.handlers.delete(full);
        await this.sendBounded(subscriber.unsubscribe(full));
      }
    };
  }

  /** Redis's refusal of the database number in REDIS_URL, if it refused it. */
  get databaseError(): string | null {
    return this.selectRefused;
  }

  /** Why the connection last failed, if it did (a refused connection, a failed AUTH). */
  get connectionError(): string | null {
    if (this.lastError === null) return null;
    return connectionFailure(this.lastError);
  }

  /**
   * Resolves true once the command connection is ready, or false after `ms`: without an offline
   * queue, a command sent while the first connection is still being made would fail.
   */
  async connected(ms: number): Promise<boolean> {
    if (this.client.status === 'ready') return true;
    let onReady: (() => void) | undefined;
    let onError: ((err: unknown) => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<boolean>((resolve) => {
        onReady = () => resolve(true);
        // Refused credentials or database end the wait at once: waiting the rest of `ms` for them to change would be
        // for nothing. The database's refusal comes before ioredis's ready, which would otherwise be taken as ready.
        onError = (err: unknown) => {
          if (authRefusal(connectionFailure(err)) || databaseRefusal(err)) resolve(false);
        };
        this.client.once('ready', onReady);
        this.client.on('error', onError);
        timer = setTimeout(() => resolve(false), ms);
      });
    } finally {
      clearTimeout(timer);
      if (onReady) this.client.off('ready', onReady);
      if (onError) this.client.off('error', onError);
    }
  }

  async ping(): Promise<void> {
    await this.send(this.client.ping());
  }

  async close(): Promise<void> {
    if (this.subscriber) this.subscriber.disconnect();
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
