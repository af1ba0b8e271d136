import { ask, askLoad, startChild, startLoadWorker, stopChild } from './ipc';
import type { LoadResult } from './load-worker';
import type { Scenario } from './scenarios';

/**
 * What the service allocates under load, and what of it outlives a young-generation collection:
 * runs one scenario (compute by default) at 50 connections twice with V8's sampling heap profiler,
 * once counting every sampled allocation, once only what no young collection freed (promoted to the
 * old generation, whether still alive or freed by a full collection since), and prints both per
 * request, by allocating function.
 *
 * `npm run bench:heap` (BENCH_PROFILE_S, 10; BENCH_ONLY, 'compute/price'; BENCH_CONNECTIONS, 50).
 */
const DURATION_S = Number(process.env.BENCH_PROFILE_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ONLY = process.env.BENCH_ONLY ?? 'compute/price';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Bytes by allocating frame (function, file and line), self sizes summed over the tree. */
function bySite(root: HeapNode): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (n: HeapNode, parent: string) => {
    const url = n.callFrame.url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^node:/, '');
    const site = `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
    if (n.selfSize > 0) {
      const key = n.callFrame.url ? site : `${site} < ${parent}`;
      out.set(key, (out.get(key) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, n.callFrame.url ? site : parent);
  };
  walk(root, '(root)');
  return out;
}

function print(title: string, sites: Map<string, number>, requests: number): void {
  const total = [...sites.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${title}: ${(total / requests / 1024).toFixed(1)} KB per request (sampled)`);
  console.log('| allocating frame | KB per request | share |');
  console.log('|---|---|---|');
  for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
    console.log(`| ${site} | ${(bytes / requests / 1024).toFixed(2)} | ${((100 * bytes) / total).toFixed(1)}% |`);
  }
}

async function main(): Promise<void> {
  const service = await startChild('service-process.js');
  const worker = startLoadWorker();
  try {
    const info = await ask<{ scenarios: Scenario[] }>(service, 'scenarios', 'http://127.0.0.1:9');
    const scenario = info.scenarios.find((s) => s.name.includes(ONLY));
    if (!scenario) throw new Error(`no scenario matches BENCH_ONLY=${ONLY}`);
    console.log(`Heap sampling ${scenario.name}: ${CONNECTIONS} connections, 2 s warm-up then ${DURATION_S} s per pass.`);
    await askLoad<LoadResult>(worker, { kind: 'load', target: scenario.service, connections: CONNECTIONS, durationS: 2 });
    const passes = [
      { title: 'Allocated', minor: true, major: true },
      { title: 'Outlived the young generation (promoted to the old one, alive or collected by a full collection since)', minor: false, major: true },
    ];
    for (const pass of passes) {
      await ask(service, 'heapStart', pass);
      const running = askLoad<LoadResult>(worker, { kind: 'load', target: scenario.service, connections: CONNECTIONS, durationS: DURATION_S });
      // Read while the load still runs, so "alive" means in flight or kept, as at any young collection.
      await new Promise((r) => setTimeout(r, (DURATION_S - 1) * 1000));
      const profile = await ask<{ head: HeapNode }>(service, 'heapStop');
      const load = await running;
      const requests = (load.requests * (DURATION_S - 1)) / DURATION_S;
      print(`${pass.title} (${load.rps.toFixed(0)} req/s)`, bySite(profile.head), requests);
    }
  } finally {
    worker.kill();
    await stopChild(service);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
