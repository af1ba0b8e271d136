import { readFileSync, readdirSync } from 'node:fs';

/**
 * CPU and memory of processes and threads as Linux reports them in /proc, so the benchmark can say
 * where the CPU of a request went (service main thread, its other threads, PostgreSQL, the load
 * generator) even when other work shares the machine. Elsewhere every figure is null.
 */
export interface CpuSnapshot {
  /** CPU ms of the process's main thread (the event loop). */
  main: number;
  /** CPU ms of its other threads (pricing workers, libuv pool, V8 GC and compiler threads). */
  threads: number;
  /** CPU ms of all its descendant processes (the embedded PostgreSQL server and backends). */
  children: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux.

function fields(path: string): string[] | null {
  try {
    const s = readFileSync(path, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** utime + stime in ms of one /proc/.../stat file (0 when gone); with `reaped`, also the CPU of its children that have exited. */
function cpuMs(path: string, reaped = false): number {
  const f = fields(path);
  if (!f) return 0;
  return (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) * TICK_MS;
}

function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const d of entries) {
    if (!/^\d+$/.test(d)) continue;
    const f = fields(`/proc/${d}/stat`);
    if (f) parentOf.set(Number(d), Number(f[1]));
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift() as number;
    for (const [child, parent] of parentOf) {
      if (parent === p) {
        out.push(child);
        queue.push(child);
      }
    }
  }
  return out;
}

export function cpuSnapshot(pid: number): CpuSnapshot | null {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  let main = 0;
  let threads = 0;
  for (const t of tasks) {
    const ms = cpuMs(`/proc/${pid}/task/${t}/stat`);
    if (Number(t) === pid) main = ms;
    else threads += ms;
  }
  let children = 0;
  // PostgreSQL backends that ended are counted through their parent's reaped-children time.
  for (const c of descendants(pid)) children += cpuMs(`/proc/${c}/stat`, true);
  return { main, threads, children };
}

export function cpuDelta(a: CpuSnapshot | null, b: CpuSnapshot | null): CpuSnapshot | null {
  return a && b ? { main: b.main - a.main, threads: b.threads - a.threads, children: b.children - a.children } : null;
}

/** Resident memory in bytes of the descendants of `pid` (PostgreSQL), summed; shared pages count once per process. */
export function descendantsRss(pid: number): number | null {
  let total = 0;
  let seen = false;
  for (const c of descendants(pid)) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${c}/status`, 'utf8'));
      if (m) {
        total += Number(m[1]) * 1024;
        seen = true;
      }
    } catch {
      // gone
    }
  }
  return seen ? total : null;
}
