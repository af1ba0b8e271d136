import { mkdtempSync, rmSync } from 'node:fs';
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
    const embedded = await startEmbeddedPostgres(dir, 0, createLogger('silent'));
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
  if (s.dir) rmSync(s.dir, { recursive: true, force: true });
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
