import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A redis-server of a test's own, to freeze (SIGSTOP), stop and start again: the suite's shared
 * Redis (REDIS_URL) must keep working for the other tests. It listens on a Unix socket in a
 * temporary folder, so it takes no TCP port from anything else on the machine; REDIS_URL accepts
 * the socket's path.
 */
export interface TestRedis {
  /** The socket path, usable as REDIS_URL. */
  readonly url: string;
  freeze(): void;
  thaw(): void;
  /** Shuts the server down and waits until it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same socket. */
  start(): Promise<void>;
  /** Stops it (thawed first) and removes its folder. */
  close(): Promise<void>;
}

export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Skips the calling test when redis-server is missing, except under CI, which must run it. */
export function requireRedisServer(ctx: Mocha.Context): void {
  if (redisServerAvailable()) return;
  if (process.env.CI) throw new Error('redis-server is not installed: CI must run the Redis outage tests (.ci/run installs it).');
  ctx.skip();
}

function answersPing(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection(socket);
    const done = (ok: boolean) => {
      c.destroy();
      resolve(ok);
    };
    c.setTimeout(500, () => done(false));
    c.once('error', () => done(false));
    c.once('connect', () => c.write('PING\r\n'));
    c.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

export async function startTestRedis(): Promise<TestRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pcs-redis-'));
  const socket = path.join(dir, 'redis.sock');
  let proc: ChildProcess | null = null;

  const start = async () => {
    const child = spawn('redis-server', ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    proc = child;
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new Error(`redis-server exited at start (code ${child.exitCode})`);
      if (await answersPing(socket)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('redis-server did not answer within 5 s');
  };
  const signal = (sig: NodeJS.Signals) => {
    if (proc?.pid !== undefined && proc.exitCode === null) proc.kill(sig);
  };
  const stop = async () => {
    const child = proc;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    await exited;
    proc = null;
  };

  await start();
  return {
    url: socket,
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT'),
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP proxy on a loopback port to the test's Redis socket, which can drop its connections, swallow
 * SUBSCRIBE commands, and refuse connections for a while (Redis unreachable).
 */
export async function redisProxy(socketPath: string) {
  const open = new Set<Socket>();
  const state = { mode: 'pass' as 'pass' | 'stall-subscribe' };
  const server: Server = createServer((downstream) => {
    const upstream = createConnection(socketPath);
    const stall = state.mode === 'stall-subscribe';
    for (const s of [downstream, upstream]) {
      open.add(s);
      s.on('error', () => undefined);
      s.on('close', () => open.delete(s));
    }
    downstream.on('data', (d) => {
      if (stall && /subscribe/i.test(d.toString())) return;
      upstream.write(d);
    });
    upstream.on('data', (d) => downstream.write(d));
    downstream.on('close', () => upstream.destroy());
    upstream.on('close', () => downstream.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const drop = () => {
    for (const s of open) s.destroy();
  };
  const refuse = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      drop();
    });
  return {
    port,
    get mode() {
      return state.mode;
    },
    set mode(m: 'pass' | 'stall-subscribe') {
      state.mode = m;
    },
    drop,
    refuse,
    /** Listens again on the same port. */
    accept: () => listen(port),
    close: () => (server.listening ? refuse() : Promise.resolve()),
  };
}

/** Awaits `work` while Redis is frozen; without a bound it would wait as long as Redis stays frozen, so Redis is thawed after `safetyMs`. */
export async function whileRedisFrozen<T>(redis: TestRedis, work: () => Promise<T>, safetyMs = 4000): Promise<{ result: T; ms: number }> {
  redis.freeze();
  const safety = setTimeout(() => redis.thaw(), safetyMs);
  const started = Date.now();
  try {
    const result = await work();
    return { result, ms: Date.now() - started };
  } finally {
    clearTimeout(safety);
    redis.thaw();
  }
}
