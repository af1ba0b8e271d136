import 'reflect-metadata';
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { loadConfig } from '../config';
import { startService } from '../core/service';
import { builtInPlugins } from '../plugins';
import { buildScenarios } from './scenarios';
import type { Job, LoadResult, SequentialResult } from './load-worker';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 200);

function ask<T>(worker: ChildProcess, job: Job): Promise<T> {
  return new Promise((resolve, reject) => {
    worker.once('message', (msg: { ok: boolean; res?: T; error?: string }) => (msg.ok ? resolve(msg.res as T) : reject(new Error(msg.error))));
    worker.send(job);
  });
}

async function startBare(): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json());
  app.get('/bare', (_req, res) => {
    res.json({ ok: true });
  });
  app.post('/bare', (req, res) => {
    res.json({ ok: true, echo: req.body as unknown });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

const fmt = (n: number, d = 2) => n.toFixed(d);

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
  const bare = await startBare();
  const worker = fork(path.join(__dirname, 'load-worker.js'), [], { stdio: 'inherit' });
  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 200);
  try {
    const scenarios = await buildScenarios({ service, bareUrl: bare.url });
    console.log(`Benchmark: ${CONNECTIONS} connections, ${DURATION_S}s per run, Node ${process.version}, ${config.redis.url ? 'Redis' : 'in-process store'}`);
    console.log('| scenario | service req/s | bare req/s | ratio | service p50/p99 ms | bare p50/p99 ms | p99 ratio | non-2xx | DB queries/req |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    let queries = 0;
    const query = service.sequelize.query.bind(service.sequelize);
    service.sequelize.query = ((...args: Parameters<typeof query>) => {
      queries++;
      return query(...args);
    }) as typeof query;
    for (const s of scenarios) {
      // Warm both paths up, then measure bare and service back to back.
      await ask<LoadResult>(worker, { kind: 'load', target: s.bare, connections: CONNECTIONS, durationS: 2 });
      await ask<LoadResult>(worker, { kind: 'load', target: s.service, connections: CONNECTIONS, durationS: 2 });
      const b = await ask<LoadResult>(worker, { kind: 'load', target: s.bare, connections: CONNECTIONS, durationS: DURATION_S });
      queries = 0;
      const v = await ask<LoadResult>(worker, { kind: 'load', target: s.service, connections: CONNECTIONS, durationS: DURATION_S });
      console.log(
        `| ${s.name} | ${fmt(v.rps, 0)} | ${fmt(b.rps, 0)} | ${fmt(v.rps / b.rps)} | ${v.p50}/${v.p99} | ${b.p50}/${b.p99} | ${fmt(v.p99 / Math.max(1, b.p99))} | ${v.non2xx + v.errors} | ${fmt(queries / Math.max(1, v.requests), 3)} |`,
      );
    }
    console.log(`\nResident memory of the benchmark process (service + bare app), peak under load: ${fmt(peakRss / 1024 / 1024, 0)} MB`);

    const seq = scenarios.filter((s) => s.sequential);
    if (seq.length > 0) {
      console.log(`\nSequential overhead (one request at a time, ${ROUNDS} interleaved rounds of ${PER_ROUND}, median of round medians):`);
      console.log('| scenario | service ms | bare ms | added ms |');
      console.log('|---|---|---|---|');
      for (const s of seq) {
        const r = await ask<SequentialResult>(worker, { kind: 'sequential', targets: [s.bare, s.service], rounds: ROUNDS, perRound: PER_ROUND });
        const [bareMs = 0, svcMs = 0] = r.medians;
        console.log(`| ${s.name} | ${fmt(svcMs, 3)} | ${fmt(bareMs, 3)} | ${fmt(svcMs - bareMs, 3)} |`);
      }
    }
  } finally {
    clearInterval(sampler);
    worker.kill();
    await bare.close();
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
