import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ask, askLoad, startChild, startLoadWorker, stopChild } from './ipc';
import type { LoadResult } from './load-worker';
import type { Scenario } from './scenarios';

/**
 * Where the service's main thread spends its time under load: runs one benchmark scenario (compute
 * by default) at 50 connections with the V8 CPU profiler on, then prints the busy share, the CPU per
 * request, the self time by package or project file, and the inclusive time of the project's own
 * functions. The .cpuprofile files are kept for Chrome DevTools when BENCH_PROFILE_KEEP is set.
 *
 * `npm run bench:profile` (BENCH_PROFILE_S, 10; BENCH_ONLY, 'compute/price'; BENCH_CONNECTIONS, 50).
 */
const DURATION_S = Number(process.env.BENCH_PROFILE_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ONLY = process.env.BENCH_ONLY ?? 'compute/price';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock that process.hrtime also reads (Linux). */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** Where a frame lives: a package name, a project file (as built under dist/), or a V8 pseudo-frame. */
function placeOf(url: string, functionName: string): string {
  if (!url) return functionName || '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `npm:${pkg[1]}`;
  const own = /\/dist\/(.*)$/.exec(url);
  if (own) return own[1] as string;
  return url.startsWith('node:') ? 'node (http, streams, events)' : url;
}

/** Summarises the samples taken between `fromUs` and `toUs` (the measured run, not start-up or warm-up). */
function summarise(profile: CpuProfile, requests: number, fromUs: number, toUs: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    if (at < fromUs || at > toUs) return;
    self.set(id, (self.get(id) ?? 0) + dt);
    total += dt;
  });
  if (total === 0) throw new Error('no profile samples fall in the measured run (the profile clock is not process.hrtime\'s here)');
  const idle = profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').reduce((s, n) => s + (self.get(n.id) ?? 0), 0);
  const busy = total - idle;
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1)}%`;
  const perRequest = (us: number) => (requests > 0 ? (us / requests).toFixed(1) : 'n/a');

  const byPlace = new Map<string, number>();
  for (const n of profile.nodes) {
    if (n.callFrame.functionName === '(idle)') continue;
    const place = placeOf(n.callFrame.url, n.callFrame.functionName);
    byPlace.set(place, (byPlace.get(place) ?? 0) + (self.get(n.id) ?? 0));
  }

  // Inclusive time of each project function, counted once per sample even when it recurses.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  for (const [id, t] of self) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = (byId.get(cur) as ProfileNode).callFrame;
      const own = f.url.includes('/node_modules/') ? null : /\/dist\/(.*)$/.exec(f.url);
      if (!own || own[1]?.startsWith('bench/')) continue;
      const key = `${f.functionName || '(anonymous)'} ${own[1]}:${f.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + t);
    }
  }

  console.log(`Main thread during the run: ${(total / 1000).toFixed(0)} ms sampled, busy ${((busy / total) * 100).toFixed(0)}% of it; ${perRequest(busy)} us of CPU per request (profiler overhead included).`);
  console.log('\nSelf time by place (share of busy time; us per request):');
  console.log('| place | share | us/request |');
  console.log('|---|---|---|');
  for (const [place, t] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`| ${place} | ${pct(t)} | ${perRequest(t)} |`);
  console.log("\nThe project's own functions, inclusive (their callees counted):");
  console.log('| function | share | us/request |');
  console.log('|---|---|---|');
  for (const [key, t] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`| ${key} | ${pct(t)} | ${perRequest(t)} |`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pcs-profile-'));
  const service = await startChild('service-process.js', ['--cpu-prof', '--cpu-prof-dir', dir]);
  const worker = startLoadWorker();
  let requests = 0;
  let fromUs = 0;
  let toUs = 0;
  try {
    // No bare app here: the scenarios' bare targets are not used.
    const info = await ask<{ scenarios: Scenario[] }>(service, 'scenarios', 'http://127.0.0.1:9');
    const scenario = info.scenarios.find((s) => s.name.includes(ONLY));
    if (!scenario) throw new Error(`no scenario matches BENCH_ONLY=${ONLY}`);
    console.log(`Profiling ${scenario.name}: ${CONNECTIONS} connections, 2 s warm-up then ${DURATION_S} s.`);
    await askLoad<LoadResult>(worker, { kind: 'load', target: scenario.service, connections: CONNECTIONS, durationS: 2 });
    fromUs = nowUs();
    const load = await askLoad<LoadResult>(worker, { kind: 'load', target: scenario.service, connections: CONNECTIONS, durationS: DURATION_S });
    toUs = nowUs();
    console.log(`${load.rps.toFixed(0)} req/s, p50/p99 ${load.p50}/${load.p99} ms under the profiler.`);
    requests = load.requests;
  } finally {
    worker.kill();
    await stopChild(service);
  }
  // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile: the main thread is thread 0 (workers write their own).
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile') && f.split('.')[4] === '0')
    .map((f) => path.join(dir, f));
  if (!files[0]) throw new Error('the service wrote no CPU profile');
  summarise(JSON.parse(readFileSync(files[0], 'utf8')) as CpuProfile, requests, fromUs, toUs);
  if (process.env.BENCH_PROFILE_KEEP) console.log(`\nProfiles kept in ${dir} (open them in Chrome DevTools, Performance tab).`);
  else rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
