import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../core/db/embedded';
import type { EmbeddedDatabase } from '../../core/db/embedded';
import { createLogger } from '../../core/logger';
import { randomToken } from '../../core/ids';

/**
 * Tests run against a real PostgreSQL: TEST_DATABASE_URL when set, otherwise one embedded server
 * started on first use and stopped by the root hook. Every test service gets a database of its own.
 */
let server: Promise<{ adminUrl: string; embedded: EmbeddedDatabase | null; dir: string | null }> | null = null;

export function testDatabaseServer(): Promise<{ adminUrl: string }> {
  server ??= (async () => {
    const external = process.env.TEST_DATABASE_URL;
    if (external) return { adminUrl: external, embedded: null, dir: null };
    const dir = mkdtempSync(path.join(tmpdir(), 'pcs-test-pg-'));
    // Each stop step (fast, immediate, kill) waits at most 5 s: the three together stay well inside the root hook's 60 s on a
    // loaded machine, where the default 10 s each could not (the cluster is deleted next anyway).
    const embedded = await startEmbeddedPostgres(dir, 0, createLogger('silent'), undefined, 5000);
    return { adminUrl: embedded.url, embedded, dir };
  })();
  return server;
}

export async function stopTestDatabaseServer(): Promise<void> {
  if (!server) return;
  const s = await server;
  server = null;
  // The cluster is deleted next: no shutdown checkpoint (about 13 s for the suite's databases).
  await s.embedded?.stop('immediate');
  // Deleting the suite's hundreds of databases took past the root hook's 60 s on a loaded machine (a CI run beside other
  // work), failing a run whose tests had all passed: a process of its own deletes them, outliving mocha's exit.
  if (s.dir) spawn('rm', ['-rf', s.dir], { detached: true, stdio: 'ignore' }).unref();
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates an empty database and returns its URL. */
export async function createTestDatabase(): Promise<string> {
  const { adminUrl } = await testDatabaseServer();
  const name = `t_${randomToken(12).toLowerCase()}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return withDatabase(adminUrl, name);
}

/**
 * Freezes (SIGSTOP) the server processes serving `url`'s database under `applicationName`: a frozen
 * server holds what it was sent and acts on it once thawed, as after a stall of its host or a
 * partition that heals. Returns what thaws them. Needs the test database on this machine (the
 * embedded one), not TEST_DATABASE_URL.
 */
export async function freezeBackends(url: string, applicationName: string): Promise<() => void> {
  const admin = new Client({ connectionString: url });
  await admin.connect();
  let pids: number[];
  try {
    const res = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()', [applicationName]);
    pids = res.rows.map((r) => r.pid);
  } finally {
    await admin.end();
  }
  if (pids.length === 0) throw new Error(`no server process of application_name ${applicationName}`);
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  return () => {
    for (const pid of pids) process.kill(pid, 'SIGCONT');
  };
}

/**
 * Runs `fn` while the server processes of `url`'s database under `applicationName` are frozen
 * (freezeBackends), thawing them after it, or after `safetyMs` at the latest so a call that waits
 * for the thaw cannot hang the test.
 */
export async function whileFrozen<T>(url: string, applicationName: string, fn: () => Promise<T>, safetyMs = 8000): Promise<T> {
  const thaw = await freezeBackends(url, applicationName);
  const safety = setTimeout(thaw, safetyMs);
  try {
    return await fn();
  } finally {
    clearTimeout(safety);
    thaw();
  }
}
