import type { Clock } from '../clock';
import { MemoryKvStore } from './memory';
import { RedisKvStore } from './redis';
import type { KvStore } from './types';

export type { KvStore, RateLimitResult, Unsubscribe } from './types';
export { MemoryKvStore } from './memory';
export { RedisKvStore } from './redis';

/** Redis when a URL is configured, otherwise the in-process store. */
export function createKvStore(redisUrl: string | undefined, prefix: string, clock: Clock): KvStore {
  return redisUrl ? new RedisKvStore(redisUrl, prefix, clock) : new MemoryKvStore(clock);
}
