import autocannon from 'autocannon';
import { Agent, request } from 'node:http';

/**
 * The load generator runs in a child process so it does not share an event loop with the servers
 * it measures. Messages in: a load or sequential job; messages out: its figures.
 */
export interface Target {
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** The response body carries the service's trace: its stage times are collected (sequential runs). */
  traced?: boolean;
  /** A header sent with a value of its own on every request (an Idempotency-Key per call). */
  freshHeader?: string;
}

let fresh = 0;
/** The target's headers, with its fresh header's new value when it has one. */
function headersOf(t: Target): Record<string, string> {
  return t.freshHeader ? { ...t.headers, [t.freshHeader]: `bench-${process.pid}-${Date.now().toString(36)}-${fresh++}` } : (t.headers ?? {});
}

export type Job =
  | { kind: 'load'; target: Target; connections: number; durationS: number }
  | { kind: 'sequential'; targets: Target[]; rounds: number; perRound: number };

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  requests: number;
}

export interface SequentialResult {
  /** Median over rounds of each target's per-round median latency, in ms. */
  medians: number[];
  /** For traced targets: the median of each trace stage's time and of the service's total, in ms. */
  stages: Array<Record<string, number> | null>;
}

interface Sample {
  ms: number;
  /** Stage name → ms, and `total` (the trace's total_ms), when the target is traced. */
  trace: Record<string, number> | null;
}

function traceOf(body: string): Record<string, number> | null {
  const parsed = JSON.parse(body) as { trace?: { stages?: Array<{ stage: string; ms: number }>; total_ms?: number } };
  if (!parsed.trace?.stages) return null;
  const out: Record<string, number> = {};
  for (const st of parsed.trace.stages) out[st.stage] = (out[st.stage] ?? 0) + st.ms;
  if (typeof parsed.trace.total_ms === 'number') out.total = parsed.trace.total_ms;
  return out;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

async function load(job: Extract<Job, { kind: 'load' }>): Promise<LoadResult> {
  const result = await autocannon({
    url: job.target.url,
    method: job.target.method,
    headers: job.target.headers ?? {},
    ...(job.target.body !== undefined ? { body: job.target.body } : {}),
    ...(job.target.freshHeader ? { requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, headers: { ...req.headers, ...headersOf(job.target) } }) }] } : {}),
    connections: job.connections,
    duration: job.durationS,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    requests: result.requests.total,
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function once(t: Target): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const u = new URL(t.url);
    const start = process.hrtime.bigint();
    // A length, as autocannon and fetch send for a known body, rather than chunked encoding.
    const headers = t.body === undefined ? headersOf(t) : { ...headersOf(t), 'content-length': String(Buffer.byteLength(t.body)) };
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: t.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      if (t.traced) res.on('data', (c: Buffer) => chunks.push(c));
      else res.resume();
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - start) / 1e6;
        if ((res.statusCode ?? 0) >= 300) reject(new Error(`${t.method} ${t.url} answered ${res.statusCode}`));
        // Parsed after the clock stopped, so reading the trace costs the measurement nothing.
        else resolve({ ms, trace: t.traced ? traceOf(Buffer.concat(chunks).toString('utf8')) : null });
      });
    });
    req.on('error', reject);
    if (t.body !== undefined) req.end(t.body);
    else req.end();
  });
}

async function sequential(job: Extract<Job, { kind: 'sequential' }>): Promise<SequentialResult> {
  const perTarget: number[][] = job.targets.map(() => []);
  const traces: Array<Array<Record<string, number>>> = job.targets.map(() => []);
  for (let round = 0; round < job.rounds; round++) {
    for (const [i, t] of job.targets.entries()) {
      const samples: number[] = [];
      for (let n = 0; n < job.perRound; n++) {
        const s = await once(t);
        samples.push(s.ms);
        if (s.trace) traces[i]?.push(s.trace);
      }
      perTarget[i]?.push(median(samples));
    }
  }
  const stages = traces.map((list) => {
    if (list.length === 0) return null;
    const names = [...new Set(list.flatMap((tr) => Object.keys(tr)))];
    return Object.fromEntries(names.map((name) => [name, median(list.map((tr) => tr[name] ?? 0))]));
  });
  return { medians: perTarget.map(median), stages };
}

process.on('message', (job: Job) => {
  const work = job.kind === 'load' ? load(job) : sequential(job);
  work.then(
    (res) => process.send?.({ ok: true, res }),
    (err: unknown) => process.send?.({ ok: false, error: String(err) }),
  );
});
