import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../core/db/embedded';
import { createLogger } from '../../core/logger';

interface EntryPoint {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  output: () => string;
}

/** Runs core/main.js (what `npm start` runs) on its own embedded PostgreSQL in `dataDir`, until it listens. */
async function startEntryPoint(dataDir: string, extraEnv: NodeJS.ProcessEnv = {}, ownGroup = false): Promise<EntryPoint> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...extraEnv };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  // ownGroup: the service leads a process group, as in a terminal, so a signal can be sent to the whole group.
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'core', 'main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: ownGroup });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(output);
      if (m?.[1]) {
        clearInterval(timer);
        resolve(m[1]);
      }
    }, 50);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`the service exited before listening:\n${output}`));
    });
  });
  return { child, url, exited, output: () => output };
}

interface Result {
  status: number;
  code?: string;
  usageEventId?: string;
}

/**
 * The real entry point (what `npm start` runs) with its own embedded PostgreSQL, stopped by SIGTERM
 * while compute calls are in flight: the requests finish or are refused, none fails because the
 * database went first, the process exits 0, and every 200 has its usage event in the cluster.
 */
describe('the real entry point and its embedded PostgreSQL: SIGTERM under load, and the database dying', function () {
  this.timeout(90_000);
  let base: string;

  before(() => {
    base = mkdtempSync(path.join(tmpdir(), 'pcs-signal-'));
    chmodSync(base, 0o755);
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  /**
   * Stops the service under load with `signal` and checks that it finishes or refuses every request, stops PostgreSQL
   * last, exits 0, and that every 200 has its event.
   */
  const drainsUnder = async (label: string, signal: (child: ChildProcess) => void, ownGroup = false) => {
    const dataDir = path.join(base, label);
    const { child, url, exited, output } = await startEntryPoint(dataDir, { RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: '1000000', RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '1000000', ENGINE_CACHE_TTL_MS: '0' }, ownGroup);

    const signup = await fetch(`${url}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'signal@example.com', password: 'correct horse battery', date_of_birth: '1990-01-01' }),
    });
    const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const created = await fetch(`${url}/api/api-keys`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ name: 'signal' }) });
    const key = ((await created.json()) as { api_key: { key: string } }).api_key.key;

    const results: Result[] = [];
    let stop = false;
    const loop = async (n: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await fetch(`${url}/api/compute/price`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': key },
            body: JSON.stringify({ context: { current_price: n + i / 100 + 1 } }),
          });
          const body = (await res.json()) as { code?: string; receipt?: { usage_event_id: string } };
          results.push({ status: res.status, code: body.code, usageEventId: body.receipt?.usage_event_id });
        } catch {
          // Refused or cut once the server has closed: the loop ends.
          return;
        }
      }
    };
    const loops = Array.from({ length: 16 }, (_, n) => loop(n));
    // Let the load settle (some answers in, not a fixed wait: a loaded CI machine may need seconds for the first),
    // then stop the service as an orchestrator would.
    const settledBy = Date.now() + 15_000;
    while (results.length < 32 && Date.now() < settledBy) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 200));
    const before = results.length;
    signal(child);
    const code = await exited;
    stop = true;
    await Promise.all(loops);

    expect(code, output()).to.equal(0);
    expect(before).to.be.greaterThan(0);
    const failed = results.filter((r) => r.status !== 200 && !(r.status === 503 && r.code === 'shutting_down'));
    expect(failed, 'every answer is a price or a shutting_down refusal').to.deep.equal([]);
    expect(output()).not.to.include('idle database connection failed');
    expect(output()).not.to.include('usage events could not be written');

    const ok = results.filter((r) => r.status === 200).map((r) => r.usageEventId as string);
    const db = await startEmbeddedPostgres(dataDir, 0, createLogger('silent'));
    try {
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        const found = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM usage_events WHERE id = ANY($1::text[])', [ok]);
        expect(found.rows[0]?.n).to.equal(ok.length);
      } finally {
        await client.end();
      }
    } finally {
      await db.stop();
    }
  };

  it('SIGTERM to the service: finishes or refuses every request, stops PostgreSQL last, exits 0, and every 200 has its event', async () => {
    await drainsUnder('term', (child) => child.kill('SIGTERM'));
  });

  it('Ctrl-C: SIGINT to the whole process group, delivered twice (the terminal, then npm passing it on), drains the same way; PostgreSQL, in a group of its own, is not stopped under the requests', async () => {
    await drainsUnder(
      'group',
      (child) => {
        process.kill(-(child.pid as number), 'SIGINT');
        setTimeout(() => process.kill(child.pid as number, 'SIGINT'), 20);
      },
      true,
    );
  });

  it('stops and exits 1 with a clear message when its embedded PostgreSQL dies, instead of serving without a database', async () => {
    const dataDir = path.join(base, 'dies');
    const { exited, output, url } = await startEntryPoint(dataDir);
    const postmaster = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const killedAt = performance.now();
    process.kill(postmaster, 'SIGKILL');
    const code = await exited;
    expect(code, output()).to.equal(1);
    expect(performance.now() - killedAt).to.be.below(5000);
    expect(output()).to.include('The embedded PostgreSQL exited unexpectedly (SIGKILL); nothing restarts it. Stopping the service.');
    expect(output()).to.match(/"msg":"embedded PostgreSQL had already exited"/);
    await fetch(`${url}/healthz`).then(
      () => expect.fail('the service still answers'),
      () => undefined,
    );
  });
  it('after the service is killed outright, the next start stops the PostgreSQL it left running and serves; a second live instance on the same folder is still refused', async () => {
    const dataDir = path.join(base, 'orphan');
    const first = await startEntryPoint(dataDir);
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    const orphan = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    first.child.kill('SIGKILL');
    await first.exited;
    // The postmaster outlives its service (nothing stops it on SIGKILL).
    expect(() => process.kill(orphan, 0)).to.not.throw();
    const second = await startEntryPoint(dataDir);
    try {
      expect(second.output()).to.match(/"msg":"stopping the embedded PostgreSQL left running by a service that died"/);
      expect(() => process.kill(orphan, 0)).to.throw();
      const health = await fetch(`${second.url}/readyz`);
      expect(health.status).to.equal(200);
      const third = spawn(process.execPath, [path.join(__dirname, '..', '..', 'core', 'main.js')], {
        env: { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'warn', DATABASE_URL: '', REDIS_URL: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      third.stdout.on('data', (d: Buffer) => (output += d.toString()));
      third.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => third.once('exit', resolve));
      expect(code, output).to.equal(1);
      expect(output).to.include('is already running');
      expect((await fetch(`${second.url}/readyz`)).status).to.equal(200);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});
