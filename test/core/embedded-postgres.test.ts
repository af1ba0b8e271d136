import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EmbeddedPostgresAccessError, closedFolderOnPath, portUnavailable, startEmbeddedPostgres } from '../../core/db/embedded';
import type { PostgresExit } from '../../core/db/embedded';
import { createLogger } from '../../core/logger';
import { connectionsPerInstance, openDatabase } from '../../core/service';
import { loadConfig } from '../../config';
import { Client } from 'pg';

describe('embedded PostgreSQL: folders the postgres OS user must pass through', () => {
  let base: string;

  beforeEach(() => {
    base = mkdtempSync(path.join(tmpdir(), 'pcs-folders-'));
    chmodSync(base, 0o755);
  });

  afterEach(() => {
    chmodSync(base, 0o755);
    rmSync(base, { recursive: true, force: true });
  });

  it('names the first folder on the path that other users cannot pass through', () => {
    const closed = path.join(base, 'private');
    mkdirSync(path.join(closed, 'inner'), { recursive: true });
    chmodSync(closed, 0o700);
    expect(closedFolderOnPath(path.join(closed, 'inner', 'file'))).to.equal(closed);
  });

  it('finds nothing on an open path, including folders not made yet', () => {
    mkdirSync(path.join(base, 'open'), { mode: 0o755 });
    expect(closedFolderOnPath(path.join(base, 'open', 'file'))).to.equal(null);
    expect(closedFolderOnPath(path.join(base, 'open', 'not', 'yet', 'made'))).to.equal(null);
  });

  it('refuses to start, as root, with a data folder below a private folder, naming it and the fixes', async function () {
    if (process.getuid?.() !== 0) this.skip(); // the postgres user is switched to only when running as root
    const closed = path.join(base, 'private');
    mkdirSync(closed);
    chmodSync(closed, 0o700);
    const err = await startEmbeddedPostgres(path.join(closed, 'data'), 0, createLogger('silent')).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err).to.be.instanceOf(EmbeddedPostgresAccessError);
    expect(err?.message).to.include(`because ${closed} is closed to other users (mode 700)`);
    expect(err?.message).to.include(`chmod o+x ${closed}`);
    expect(err?.message).to.include('DATABASE_URL');
  });

  it('npm start stops with that message alone, no stack trace, and exit code 1', function () {
    this.timeout(20_000);
    if (process.getuid?.() !== 0) this.skip();
    const closed = path.join(base, 'private');
    mkdirSync(closed);
    chmodSync(closed, 0o700);
    const main = path.join(__dirname, '..', '..', 'core', 'main.js');
    const res = spawnSync(process.execPath, [main], {
      env: { ...process.env, PORT: '0', DATABASE_URL: '', DATA_DIR: path.join(closed, 'data'), LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(res.status).to.equal(1);
    expect(res.stderr).to.match(/^The embedded PostgreSQL runs as the OS user postgres, which cannot reach the data folder because /);
    expect(res.stderr).not.to.include('    at ');
  });
});

describe('embedded PostgreSQL: stopping it, and it dying', function () {
  this.timeout(60_000);
  let base: string;

  before(() => {
    base = mkdtempSync(path.join(tmpdir(), 'pcs-stop-'));
    chmodSync(base, 0o755);
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  /** A debug logger whose lines (the server's own log included) land in `lines`. */
  function capture(lines: string[]) {
    return createLogger('debug', new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }));
  }

  /** Living processes whose parent is `pid` (a zombie is not living). */
  function childrenOf(pid: number): number[] {
    const out = spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).stdout;
    return out.split('\n').map((l) => Number(l.trim())).filter((n) => n > 0);
  }
  function alive(pid: number): boolean {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
    } catch {
      return false;
    }
  }

  async function query(url: string, sql: string): Promise<unknown[]> {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(sql)).rows;
    } finally {
      await c.end();
    }
  }

  it('immediate skips the shutdown checkpoint; the next start recovers every committed row from the WAL', async () => {
    const dir = path.join(base, 'data');
    const first = await startEmbeddedPostgres(dir, 0, createLogger('silent'));
    await query(first.url, 'CREATE TABLE kept (n int); INSERT INTO kept SELECT generate_series(1, 1000)');
    await first.stop('immediate');

    const lines: string[] = [];
    const second = await startEmbeddedPostgres(dir, 0, capture(lines));
    try {
      expect(await query(second.url, 'SELECT count(*)::int AS n FROM kept')).to.deep.equal([{ n: 1000 }]);
      // A cluster stopped without its checkpoint replays the WAL at start.
      expect(lines.join('')).to.match(/not properly shut down|automatic recovery in progress/);
    } finally {
      await second.stop();
    }

    const after: string[] = [];
    const third = await startEmbeddedPostgres(dir, 0, capture(after));
    await third.stop();
    expect(after.join('')).to.match(/database system was shut down at/);
    expect(after.join('')).not.to.match(/automatic recovery in progress/);
  });

  it('a server that dies is reported once to onUnexpectedExit (also to a listener added later), and stop() then returns at once', async () => {
    const dir = path.join(base, 'dies');
    const db = await startEmbeddedPostgres(dir, 0, createLogger('silent'));
    const seen: PostgresExit[] = [];
    const reported = new Promise<void>((resolve) => db.onUnexpectedExit((exit) => (seen.push(exit), resolve())));
    const postmaster = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(postmaster, 'SIGKILL');
    await reported;
    db.onUnexpectedExit((exit) => seen.push(exit));
    expect(seen).to.deep.equal([
      { code: null, signal: 'SIGKILL' },
      { code: null, signal: 'SIGKILL' },
    ]);
    const started = performance.now();
    await db.stop();
    expect(performance.now() - started).to.be.below(500);
  });

  it('is sized for the pools of the instance it serves: max_connections 200, or what DB_POOL_MAX needs with room to spare; DB_POOL_MAX above 1000 is refused', async () => {
    const maxConnections = async (env: Record<string, string>): Promise<number> => {
      const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: path.join(base, `sized-${env.DB_POOL_MAX ?? 'default'}`), ...env });
      const { url, embedded } = await openDatabase(config, createLogger('silent'));
      try {
        const client = new Client({ connectionString: url });
        await client.connect();
        try {
          return Number((await client.query<{ max_connections: string }>('SHOW max_connections')).rows[0]?.max_connections);
        } finally {
          await client.end();
        }
      } finally {
        await embedded?.stop('immediate');
      }
    };
    expect(await maxConnections({})).to.equal(200);
    expect(connectionsPerInstance(400)).to.equal(600);
    expect(await maxConnections({ DB_POOL_MAX: '400' })).to.equal(620);
    expect(() => loadConfig({ DB_POOL_MAX: '1001' })).to.throw(/DB_POOL_MAX.*at most 1000/);
  });

  it('a stop of a server that neither stops nor answers (paused) asks for an immediate shutdown after EMBEDDED_PG_STOP_TIMEOUT_MS, kills it after as long again, logs each step, and the next start recovers its rows', async () => {
    const dir = path.join(base, 'paused');
    const lines: string[] = [];
    const db = await startEmbeddedPostgres(dir, 0, capture(lines), undefined, 300);
    await query(db.url, 'CREATE TABLE kept (n int); INSERT INTO kept SELECT generate_series(1, 10)');
    // A session open while the server is paused: its backend is stopped too.
    const held = new Client({ connectionString: db.url });
    held.on('error', () => undefined);
    await held.connect();
    const postmaster = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    // The postmaster and every process of the cluster: each backend is a process group of its own (setsid).
    const children = childrenOf(postmaster);
    expect(children.length, 'backends and auxiliary processes').to.be.above(2);
    for (const pid of [postmaster, ...children]) process.kill(pid, 'SIGSTOP');
    const started = performance.now();
    await db.stop();
    const took = performance.now() - started;
    expect(took).to.be.above(550).and.below(3000);
    expect(alive(postmaster)).to.equal(false);
    for (let i = 0; i < 50 && children.some(alive); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(children.filter(alive), 'stopped backends left holding the shared memory').to.deep.equal([]);
    const log = lines.join('');
    expect(log).to.include('did not stop within EMBEDDED_PG_STOP_TIMEOUT_MS: asking for an immediate shutdown');
    expect(log).to.include('did not answer an immediate shutdown either: killing its processes');

    const again = await startEmbeddedPostgres(dir, 0, createLogger('silent'));
    try {
      expect(await query(again.url, 'SELECT count(*)::int AS n FROM kept')).to.deep.equal([{ n: 10 }]);
    } finally {
      await again.stop();
    }
  });

  it('a requested stop is not reported as unexpected', async () => {
    const db = await startEmbeddedPostgres(path.join(base, 'stopped'), 0, createLogger('silent'));
    const seen: PostgresExit[] = [];
    db.onUnexpectedExit((exit) => seen.push(exit));
    await db.stop('immediate');
    db.onUnexpectedExit((exit) => seen.push(exit));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).to.deep.equal([]);
  });
});


describe('embedded PostgreSQL: start failures an operator can fix are one sentence', function () {
  this.timeout(60_000);
  let base: string;
  const main = path.join(__dirname, '..', '..', 'core', 'main.js');

  before(() => {
    base = mkdtempSync(path.join(tmpdir(), 'pcs-startfail-'));
    chmodSync(base, 0o755);
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  it('a DATA_DIR that cannot be created (under /proc, where a recursive mkdir of Node 20 never returns) fails at once, naming DATA_DIR', async () => {
    const started = performance.now();
    const err = await startEmbeddedPostgres('/proc/pcs-no-such-folder/data', 0, createLogger('silent')).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.match(/^DATA_DIR \/proc\/pcs-no-such-folder\/data cannot be created \(ENOENT/);
    expect(performance.now() - started).to.be.below(1000);
  });

  it('a busy EMBEDDED_PG_PORT stops npm start with a sentence naming the setting and the port, no stack and no "undefined"', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const busy = (holder.address() as AddressInfo).port;
    try {
      expect(await portUnavailable(busy)).to.be.a('string');
      const res = spawnSync(process.execPath, [main], {
        env: { ...process.env, PORT: '0', DATABASE_URL: '', REDIS_URL: '', EMBEDDED_PG_PORT: String(busy), DATA_DIR: path.join(base, 'busy'), LOG_LEVEL: 'info' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(res.status, res.stderr).to.equal(1);
      expect(res.stderr).to.match(new RegExp(`^EMBEDDED_PG_PORT ${busy} is in use: `, 'm'));
      expect(res.stderr).not.to.include('undefined');
      expect(res.stderr).not.to.include('    at ');
    } finally {
      holder.close();
    }
  });

  it('a cluster already running in DATA_DIR stops npm start with that sentence alone, no stack trace, naming how to share it; the DATABASE_URL it names connects', async () => {
    const dir = path.join(base, 'running');
    const db = await startEmbeddedPostgres(dir, 0, createLogger('silent'));
    try {
      // The recipe docs/architecture.md and the sentence give: user and database postgres, the password file's content.
      const port = new URL(db.url).port;
      const shared = new Client({ connectionString: `postgres://postgres:${encodeURIComponent(readFileSync(path.join(dir, 'postgres.password'), 'utf8').trim())}@127.0.0.1:${port}/postgres` });
      await shared.connect();
      expect((await shared.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).to.equal(1);
      await shared.end();
      const res = spawnSync(process.execPath, [main], {
        env: { ...process.env, PORT: '0', DATABASE_URL: '', REDIS_URL: '', EMBEDDED_PG_PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(res.status, res.stderr).to.equal(1);
      expect(res.stderr).to.match(/^The embedded PostgreSQL in .* is already running \(pid \d+\): another instance uses this DATA_DIR\. Stop it, give this one another DATA_DIR, or share that database with DATABASE_URL=postgres:\/\/postgres:<the content of .*postgres\.password>@127\.0\.0\.1:<its port, EMBEDDED_PG_PORT or the one it logged>\/postgres \(it stops when that instance stops; docs\/architecture\.md\)\.\n$/);
    } finally {
      await db.stop('immediate');
    }
  });
});
