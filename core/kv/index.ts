import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { MemoryKvStore } from './memory';
import { RedisKvStore } from './redis';
import type { RedisKvOptions } from './redis';
import type { KvStore } from './types';

export type { KvStore, RateLimitResult, Unsubscribe } from './types';
export type { MessageHandler } from './contract';
export { KvUnavailableError, storeUnavailable } from './contract';
export type { RedisKvOptions } from './redis';
export { MemoryKvStore } from './memory';
export { RedisKvStore, authRefusal } from './redis';
export { incrFromRecord, uncount } from './recorded-counter';

/** Redis when a URL is configured, otherwise the in-process store. */
export function createKvStore(redisUrl: string | undefined, prefix: string, clock: Clock, log: Logger, redisOptions: RedisKvOptions = {}): KvStore {
  return redisUrl ? new RedisKvStore(redisUrl, prefix, clock, log, redisOptions) : new MemoryKvStore(clock, log);
}
