import type { ChildProcess } from 'node:child_process';
import { SERVICE_MMAP_THRESHOLD, ask, askLoad, startChild, startLoadWorker, stopChild } from './ipc';
import type { LoadResult, SequentialResult } from './load-worker';
import { cpuDelta, cpuSnapshot, descendantsRss } from './proc-stats';
import type { CpuSnapshot } from './proc-stats';
import type { Scenario } from './scenarios';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 200);
const ONLY = process.env.BENCH_ONLY;

function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

const fmt = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const mb = (bytes: number | null) => (bytes === null ? 'n/a' : `${fmt(bytes / 1024 / 1024, 0)} MB`);

interface Measured {
  load: LoadResult;
  /** CPU ms of the measured server (main thread, other threads, children) and of the load generator during the run. */
  server: CpuSnapshot | null;
  generator: number | null;
}

async function measure(worker: ChildProcess, server: ChildProcess, target: Scenario['service'], durationS: number): Promise<Measured> {
  const pid = server.pid ?? 0;
  const s0 = cpuSnapshot(pid);
  const g0 = cpuSnapshot(worker.pid ?? 0);
  const load = await askLoad<LoadResult>(worker, { kind: 'load', target, connections: CONNECTIONS, durationS });
  const s = cpuDelta(s0, cpuSnapshot(pid));
  const g = cpuDelta(g0, cpuSnapshot(worker.pid ?? 0));
  return { load, server: s, generator: g ? g.main + g.threads : null };
}

/** CPU microseconds per request of one part, median over the repeats. */
function perRequest(runs: Measured[], pick: (m: Measured) => number | null): string {
  const values = runs.map((m) => {
    const v = pick(m);
    return v === null || m.load.requests === 0 ? Number.NaN : (v * 1000) / m.load.requests;
  });
  return values.some((v) => Number.isNaN(v)) ? 'n/a' : fmt(median(values), 0);
}

async function main(): Promise<void> {
  const bare = await startChild('bare-process.js');
  // Node options for the service alone, to try V8 flags in an A/B (e.g. --trace-gc, --max-semi-space-size=32).
  const service = await startChild('service-process.js', (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean));
  const worker = startLoadWorker();
  try {
    const bareUrl = await ask<string>(bare, 'url');
    await ask(bare, 'floor', await ask<string>(service, 'databaseUrl'));
    const info = await ask<{ scenarios: Scenario[]; kv: string; synchronousCommit: boolean }>(service, 'scenarios', bareUrl);
    const scenarios = info.scenarios.filter((s) => !ONLY || s.name.includes(ONLY));
    console.log(
      `Benchmark: ${CONNECTIONS} connections, ${REPEATS} x ${DURATION_S}s per route (bare and service alternating), Node ${process.version}, ${info.kv}, ` +
        `USAGE_SYNCHRONOUS_COMMIT=${info.synchronousCommit ? 'on' : 'off'}, service MALLOC_MMAP_THRESHOLD_=${SERVICE_MMAP_THRESHOLD} (as npm start), ${new Date().toISOString().slice(0, 10)}`,
    );
    console.log('Medians over the repeats; the ratio is the median of the ratios of adjacent bare/service runs.\n');
    console.log('| scenario | service req/s | bare req/s | ratio | service p50/p99 ms | bare p50/p99 ms | p99 ratio | non-2xx | DB queries/req | hot-pool statements/req (usage inserts, key lookups) |');
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    const cpuRows: string[] = [];
    let servicePeak = 0;
    let barePeak = 0;
    let pgRss = 0;
    for (const s of scenarios) {
      // Warm both paths up, then alternate bare and service runs.
      await askLoad<LoadResult>(worker, { kind: 'load', target: s.bare, connections: CONNECTIONS, durationS: 2 });
      await askLoad<LoadResult>(worker, { kind: 'load', target: s.service, connections: CONNECTIONS, durationS: 2 });
      await ask(service, 'memory');
      await ask(service, 'counts');
      const b: Measured[] = [];
      const v: Measured[] = [];
      const counts = { queries: 0, usageInserts: 0 };
      for (let r = 0; r < REPEATS; r++) {
        b.push(await measure(worker, bare, s.bare, DURATION_S));
        await ask(service, 'counts');
        v.push(await measure(worker, service, s.service, DURATION_S));
        const c = await ask<{ queries: number; usageInserts: number }>(service, 'counts');
        counts.queries += c.queries;
        counts.usageInserts += c.usageInserts;
        pgRss = Math.max(pgRss, descendantsRss(service.pid ?? 0) ?? 0);
      }
      servicePeak = Math.max(servicePeak, (await ask<{ peak: number }>(service, 'memory')).peak);
      barePeak = Math.max(barePeak, (await ask<{ peak: number }>(bare, 'memory')).peak);
      const rps = median(v.map((m) => m.load.rps));
      const bareRps = median(b.map((m) => m.load.rps));
      const ratio = median(v.map((m, i) => m.load.rps / (b[i] as Measured).load.rps));
      const p99Ratio = median(v.map((m, i) => m.load.p99 / Math.max(1, (b[i] as Measured).load.p99)));
      const requests = v.reduce((sum, m) => sum + m.load.requests, 0);
      const bad = v.reduce((sum, m) => sum + m.load.non2xx + m.load.errors, 0);
      console.log(
        `| ${s.name} | ${fmt(rps, 0)} | ${fmt(bareRps, 0)} | ${fmt(ratio)} | ${median(v.map((m) => m.load.p50))}/${median(v.map((m) => m.load.p99))} | ` +
          `${median(b.map((m) => m.load.p50))}/${median(b.map((m) => m.load.p99))} | ${fmt(p99Ratio)} | ${bad} | ${fmt(counts.queries / Math.max(1, requests), 3)} | ${fmt(counts.usageInserts / Math.max(1, requests), 3)} |`,
      );
      cpuRows.push(
        `| ${s.name} | ${perRequest(v, (m) => m.server?.main ?? null)} | ${perRequest(v, (m) => m.server?.threads ?? null)} | ${perRequest(v, (m) => m.server?.children ?? null)} | ` +
          `${perRequest(v, (m) => m.generator)} | ${perRequest(b, (m) => m.server?.main ?? null)} | ${perRequest(b, (m) => m.generator)} |`,
      );
    }
    console.log('\nCPU per request under load (us, from /proc; Linux only):');
    console.log('| scenario | service main thread | service other threads (workers, GC, libuv) | PostgreSQL | load generator | bare main thread | load generator (bare) |');
    console.log('|---|---|---|---|---|---|---|');
    for (const row of cpuRows) console.log(row);
    console.log(`\nResident memory, peak under load: service process ${mb(servicePeak)} (main and worker threads; PostgreSQL not included), PostgreSQL processes ${mb(pgRss || null)} (sum of RSS, shared buffers counted in each), bare app ${mb(barePeak)}.`);

    const seq = scenarios.filter((s) => s.sequential);
    if (seq.length > 0 && ROUNDS > 0) {
      console.log(`\nSequential overhead (one request at a time, ${ROUNDS} interleaved rounds of ${PER_ROUND}, median of round medians):`);
      console.log('bare + commit is the bare route plus one usage event written through the service\'s own writer to its database (durable commit): the floor of a route that records its call before answering.');
      console.log('| scenario | service ms | bare ms | added ms | bare + commit ms | added over bare + commit ms |');
      console.log('|---|---|---|---|---|---|');
      const breakdown: string[] = [];
      for (const s of seq) {
        const targets = s.floor ? [s.bare, s.floor, s.service] : [s.bare, s.service];
        const r = await askLoad<SequentialResult>(worker, { kind: 'sequential', targets, rounds: ROUNDS, perRound: PER_ROUND });
        const bareMs = r.medians[0] ?? 0;
        const svcMs = r.medians[targets.length - 1] ?? 0;
        const floorMs = s.floor ? (r.medians[1] ?? 0) : null;
        console.log(
          `| ${s.name} | ${fmt(svcMs, 3)} | ${fmt(bareMs, 3)} | ${fmt(svcMs - bareMs, 3)} | ${floorMs === null ? '-' : fmt(floorMs, 3)} | ${floorMs === null ? '-' : fmt(svcMs - floorMs, 3)} |`,
        );
        const trace = r.stages[targets.length - 1];
        if (trace) breakdown.push(`| ${s.name} | ${Object.entries(trace).map(([stage, ms]) => `${stage} ${fmt(ms, 3)}`).join(', ')} |`);
      }
      if (breakdown.length > 0) {
        console.log('\nWhere the service time goes in the sequential run (medians of the stage times each response\'s own trace reports, ms; total = the trace\'s total_ms):');
        console.log('| scenario | stages |');
        console.log('|---|---|');
        for (const row of breakdown) console.log(row);
      }
    }
  } finally {
    worker.kill();
    await Promise.all([stopChild(bare), stopChild(service)]);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
