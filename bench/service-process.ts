import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { loadConfig } from '../config';
import { startService } from '../core/service';
import { TOKENS } from '../core/tokens';
import { builtInPlugins } from '../plugins';
import { rssSampler, serve } from './ipc';
import { buildScenarios } from './scenarios';

/**
 * The service under test, in its own process (so its memory and CPU are its own): embedded
 * PostgreSQL in a temporary folder, in-process store unless REDIS_URL is set, settings from the
 * environment like `npm start`, with rate limits raised and the result cache off.
 */
async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pcs-bench-'));
  // Limits are raised so the benchmark measures the rate-limit guard's cost, not its refusals.
  const config = loadConfig(
    { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', DATA_DIR: dataDir },
    {
      // The keyless demo's hourly budget too, so the demo verify scenario measures the route, not 429s.
      limits: { rateLimit: { perWorkspacePerMinute: 100_000_000, perAddressPerMinute: 100_000_000 }, demo: { callsPerHour: 100_000_000 } },
      // The result cache would answer every repeated request; the benchmark measures the real path.
      engine: { cacheTtlMs: 0 },
    },
  );
  const service = await startService({ config, plugins: builtInPlugins });
  const rss = rssSampler();

  // Statements on the hot path: Sequelize queries, and the hot pg pool's (a usage insert per group commit, a keyed call's key lookup).
  const counts = { queries: 0, usageInserts: 0 };
  const query = service.sequelize.query.bind(service.sequelize);
  service.sequelize.query = ((...args: Parameters<typeof query>) => {
    counts.queries++;
    return query(...args);
  }) as typeof query;
  const pg = service.container.resolve<Pool>(TOKENS.PgPool);
  const pgQuery = pg.query.bind(pg) as (...args: unknown[]) => unknown;
  (pg as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    counts.usageInserts++;
    return pgQuery(...args);
  };

  const inspector = new Session();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => inspector.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))));

  const close = async (): Promise<void> => {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  serve({
    scenarios: async (payload) => {
      const scenarios = await buildScenarios({ service, bareUrl: String(payload) });
      counts.queries = 0;
      counts.usageInserts = 0;
      return { scenarios, kv: config.redis.url ? 'Redis' : 'in-process store', synchronousCommit: config.usage.synchronousCommit };
    },
    counts: () => {
      const out = { ...counts };
      counts.queries = 0;
      counts.usageInserts = 0;
      return out;
    },
    // Where the bare app writes its comparison usage events: the service's own database.
    databaseUrl: () => (pg as unknown as { options: { connectionString: string } }).options.connectionString,
    memory: () => rss.read(),
    url: () => service.url,
    // V8's sampling heap profiler (bench/heap.ts): samples of objects still alive when read, plus those collected by a young (minor) or full (major) collection since if asked.
    heapStart: (payload) => {
      const { minor = false, major = false } = (payload ?? {}) as { minor?: boolean; major?: boolean };
      inspector.connect();
      return post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: major, includeObjectsCollectedByMinorGC: minor });
    },
    heapStop: async () => {
      const { profile } = (await post('HeapProfiler.getSamplingProfile')) as { profile: unknown };
      await post('HeapProfiler.stopSampling');
      inspector.disconnect();
      return profile;
    },
    // bench/soak.ts: what the service retains. The scrape comes first so its own garbage is collected
    // with the rest; two full collections, since objects freed by the first (weak references,
    // finalizers) may only become collectable in the second.
    heap: async () => {
      const metricsLines = (await (await fetch(`${service.url}/metrics`)).text()).split('\n').filter(Boolean).length;
      inspector.connect();
      try {
        await post('HeapProfiler.collectGarbage');
        await post('HeapProfiler.collectGarbage');
      } finally {
        inspector.disconnect();
      }
      const { heapUsed, rss } = process.memoryUsage();
      return { heapUsed, rss, metricsLines };
    },
    close,
  });
  process.send?.({ ready: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
