import { Redis } from 'ioredis';
import { startTestRedis } from '../test/support/redis';
import type { TestRedis } from '../test/support/redis';

/**
 * The soak in Redis mode (bench/soak.ts): what the shared store holds per thing callers make, which
 * is what an operator sizes Redis for. `SOAK_REDIS=1` starts a redis-server of the soak's own (on a
 * Unix socket, nothing else in it); a REDIS_URL already set is used instead, under a key prefix of the
 * soak's own, and only keys under that prefix are counted (its memory figure is the whole server's).
 */
export interface RedisReading {
  /** INFO memory's used_memory: the whole server's. */
  usedMemory: number;
  /** Keys under the soak's prefix. */
  keys: number;
  /** Of them, keys without an expiry: each would stay until deleted by hand. */
  withoutExpiry: number;
}

export interface SoakRedis {
  read(): Promise<RedisReading>;
  close(): Promise<void>;
}

/** Sets REDIS_URL and REDIS_KEY_PREFIX for the service child when the soak runs in Redis mode; null in in-process mode. */
export async function soakRedis(): Promise<SoakRedis | null> {
  let own: TestRedis | null = null;
  if (!process.env.REDIS_URL) {
    if (process.env.SOAK_REDIS !== '1') return null;
    own = await startTestRedis();
    process.env.REDIS_URL = own.url;
  }
  const prefix = `pcs-soak-${Date.now()}:`;
  process.env.REDIS_KEY_PREFIX = prefix;
  const url = process.env.REDIS_URL;
  const client = url.startsWith('/') ? new Redis({ path: url, lazyConnect: true }) : new Redis(url, { lazyConnect: true });
  await client.connect();

  const read = async (): Promise<RedisReading> => {
    const info = await client.info('memory');
    const usedMemory = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
    let keys = 0;
    let withoutExpiry = 0;
    // Keys that must share a Cluster slot carry the prefix inside a hash tag: `{pcs-soak-…:`.
    for (const match of [`${prefix}*`, `{${prefix}*`]) {
      let cursor = '0';
      do {
        const [next, batch] = await client.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        cursor = next;
        keys += batch.length;
        const lifetimes = batch.length > 0 ? await client.pipeline(batch.map((k) => ['pttl', k])).exec() : [];
        withoutExpiry += (lifetimes ?? []).filter(([, pttl]) => pttl === -1).length;
      } while (cursor !== '0');
    }
    return { usedMemory, keys, withoutExpiry };
  };
  return {
    read,
    close: async () => {
      client.disconnect();
      await own?.close();
    },
  };
}
