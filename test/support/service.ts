import { loadConfig } from '../../config';
import type { Config, ConfigInput } from '../../config';
import type { Clock } from '../../core/clock';
import type { PluginDefinition } from '../../core/plugin';
import { startService } from '../../core/service';
import type { Service } from '../../core/service';
import { builtInPlugins } from '../../plugins';
import { createTestDatabase } from './db';

export interface TestServiceOptions {
  config?: ConfigInput;
  /** Plugins added to the built-in catalogue (test-only plugins). */
  extraPlugins?: readonly PluginDefinition[];
  /** Enabled plugins; default: every built-in plugin. */
  enabled?: readonly string[];
  /** Reuse a database (two instances on one database); default: a fresh one. */
  databaseUrl?: string;
  clock?: Clock;
  env?: NodeJS.ProcessEnv;
}

export interface TestService extends Service {
  databaseUrl: string;
}

const running = new Set<Service>();

export function testConfig(overrides: ConfigInput = {}, env: NodeJS.ProcessEnv = {}): Config {
  // SHUTDOWN_IDLE_GRACE_MS 0: a test's own kept-alive connections would hold every close for the whole grace; the
  // grace itself is tested where it is set (test/core/shutdown.test.ts) and at the real entry point.
  return loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', HOST: '127.0.0.1', PORT: '0', SHUTDOWN_IDLE_GRACE_MS: '0', ...env }, overrides);
}

/** Starts a real service instance on a loopback port against a real PostgreSQL. */
export async function startTestService(opts: TestServiceOptions = {}): Promise<TestService> {
  const databaseUrl = opts.databaseUrl ?? (await createTestDatabase());
  const plugins = [...builtInPlugins, ...(opts.extraPlugins ?? [])];
  const enabled = opts.enabled ?? builtInPlugins.map((p) => p.name);
  const base = opts.config ?? {};
  const config = testConfig(
    {
      ...base,
      database: { ...base.database, url: databaseUrl },
      // Every test request comes from 127.0.0.1 and many files sign up more people than the daily
      // per-address default: generous unless the test sets the sign-up limits itself.
      limits: { ...base.limits, signups: { perAddressPerDay: 100_000, overallPerDay: 100_000, ...base.limits?.signups } },
      plugins: { enabled: [...enabled] },
      redis: { ...base.redis, url: base.redis?.url ?? (opts.env?.REDIS_URL || undefined) },
    },
    opts.env,
  );
  const service = await startService({ config, plugins, ...(opts.clock ? { clock: opts.clock } : {}) });
  running.add(service);
  const close = service.close;
  return Object.assign(service, {
    databaseUrl,
    close: async () => {
      running.delete(service);
      await close();
    },
  });
}

/** Stops every test service still running (use in after hooks). */
export async function stopAllTestServices(): Promise<void> {
  await Promise.all([...running].map((s) => s.close()));
  running.clear();
}
