import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../core/db/embedded';
import type { EmbeddedDatabase } from '../core/db/embedded';
import { createLogger } from '../core/logger';
import { newId } from '../core/ids';

/**
 * The floor under the compute route's sequential latency: what one durable PostgreSQL commit of a
 * usage row costs on this machine's disk, next to a bare round trip, the same insert with
 * synchronous_commit off, and a raw fdatasync of the filesystem holding the cluster; back to back,
 * and after a 2 ms pause as between the statements of sequential requests.
 *
 * `npm run bench:floor` (DATABASE_URL to measure another server; BENCH_FLOOR_N samples, 1000).
 */
const N = Number(process.env.BENCH_FLOOR_N ?? 1000);
const IDLE_MS = 2;

function summary(samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => (s[Math.min(s.length - 1, Math.floor(p * s.length))] as number).toFixed(3);
  return `${q(0.5)} | ${q(0.9)} | ${q(0.99)}`;
}

/** Times `fn` n times; with `idleMs`, after that long a pause each time, as between sequential requests. */
async function timed(n: number, fn: () => unknown, idleMs = 0): Promise<number[]> {
  for (let i = 0; i < Math.min(100, n); i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}

const COLUMNS = ['id', 'workspace_id', 'request_id', 'operation', 'channel', 'status', 'function_id', 'function_name', 'strategy', 'price', 'currency', 'confidence', 'cost', 'billable', 'caller_key_id', 'caller_verified', 'caller_address_hash', 'classification', 'latency_ms', 'context_keys'];

function usageRow(): unknown[] {
  return [newId('use'), 'ws_bench', newId('req'), 'compute', 'api', 'ok', 'fn_builtin_cost_plus', 'cost-plus', 'explicit', '3.00', 'USD', 0.8, '0.001', true, 'key_bench', true, 'a'.repeat(32), 'mine', 1.5, '{"product_type":"coffee","currency":"USD"}'];
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pcs-floor-'));
  let embedded: EmbeddedDatabase | null = null;
  try {
    let url = process.env.DATABASE_URL;
    if (!url) {
      embedded = await startEmbeddedPostgres(dataDir, 0, createLogger('warn'));
      url = embedded.url;
    }
    const db = new Client({ connectionString: url });
    await db.connect();
    // The same shape as usage_events (plugins/usage/migrations), in a scratch table.
    await db.query('DROP TABLE IF EXISTS bench_commit_floor');
    await db.query(`CREATE TABLE bench_commit_floor (
      id text PRIMARY KEY, workspace_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), request_id text, operation text NOT NULL, channel text NOT NULL,
      status text NOT NULL, error_code text, function_id text, function_name text, strategy text, price numeric(30, 8), currency text, confidence double precision,
      cost numeric(20, 8) NOT NULL DEFAULT 0, billable boolean NOT NULL DEFAULT false, paid_via text, outcome text, quality_score double precision, outcome_at timestamptz,
      caller_key_id text, caller_agent_id text, caller_person_id text, caller_user_agent text, caller_verified boolean NOT NULL DEFAULT false, caller_address_hash text,
      classification text NOT NULL, cached boolean NOT NULL DEFAULT false, fallback_used boolean NOT NULL DEFAULT false, latency_ms double precision,
      context_keys jsonb NOT NULL DEFAULT '{}'::jsonb)`);
    await db.query('CREATE INDEX ON bench_commit_floor (workspace_id, created_at DESC, id DESC)');
    const insert = `INSERT INTO bench_commit_floor (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;
    const batch20 = `INSERT INTO bench_commit_floor (${COLUMNS.join(', ')}) VALUES ${Array.from({ length: 20 }, (_, r) => `(${COLUMNS.map((_, i) => `$${r * COLUMNS.length + i + 1}`).join(', ')})`).join(', ')}`;
    const info = await db.query<{ version: string; wal_sync_method: string; fsync: string }>("SELECT version() AS version, current_setting('wal_sync_method') AS wal_sync_method, current_setting('fsync') AS fsync");

    const rows: Array<[string, number[]]> = [];
    const select1 = () => db.query({ name: 'one', text: 'SELECT 1' });
    const insertOne = () => db.query({ name: 'ins', text: insert, values: usageRow() });
    rows.push(['round trip, SELECT 1 (prepared)', await timed(N, select1)]);
    await db.query('SET synchronous_commit = on');
    rows.push(['INSERT one usage row, synchronous_commit on (durable)', await timed(N, insertOne)]);
    rows.push(['INSERT 20 usage rows in one statement, synchronous_commit on', await timed(Math.ceil(N / 4), () => db.query({ name: 'ins20', text: batch20, values: Array.from({ length: 20 }, usageRow).flat() }))]);
    await db.query('SET synchronous_commit = off');
    rows.push(['INSERT one usage row, synchronous_commit off', await timed(N, insertOne)]);
    // Sequential requests leave PostgreSQL idle between statements; waking it up is part of the floor.
    rows.push([`round trip, SELECT 1, after ${IDLE_MS} ms idle`, await timed(N, select1, IDLE_MS)]);
    await db.query('SET synchronous_commit = on');
    rows.push([`INSERT one usage row, synchronous_commit on, after ${IDLE_MS} ms idle`, await timed(N, insertOne, IDLE_MS)]);
    await db.query('SET synchronous_commit = off');
    rows.push([`INSERT one usage row, synchronous_commit off, after ${IDLE_MS} ms idle`, await timed(N, insertOne, IDLE_MS)]);
    await db.query('DROP TABLE bench_commit_floor');
    await db.end();

    // The disk itself: an 8 KB write and fdatasync, as PostgreSQL does for its WAL at each commit.
    const file = path.join(dataDir, 'fsync-probe');
    const fd = openSync(file, 'w');
    const page = Buffer.alloc(8192, 1);
    let i = 0;
    rows.push([
      'raw 8 KB write + fdatasync (same filesystem)',
      await timed(N, () => {
        writeSync(fd, page, 0, page.length, (i++ % 64) * 8192);
        fdatasyncSync(fd);
      }),
    ]);
    rows.push([
      `raw 8 KB write + fdatasync, after ${IDLE_MS} ms idle`,
      await timed(
        N,
        () => {
          writeSync(fd, page, 0, page.length, (i++ % 64) * 8192);
          fdatasyncSync(fd);
        },
        IDLE_MS,
      ),
    ]);
    closeSync(fd);

    console.log(`Commit latency floor, ${N} sequential samples, ${new Date().toISOString().slice(0, 10)}, ${info.rows[0]?.version.split(',')[0] ?? ''}, wal_sync_method=${info.rows[0]?.wal_sync_method ?? '?'}, fsync=${info.rows[0]?.fsync ?? '?'}`);
    console.log('| measurement | p50 ms | p90 ms | p99 ms |');
    console.log('|---|---|---|---|');
    for (const [name, samples] of rows) console.log(`| ${name} | ${summary(samples)} |`);
  } finally {
    await embedded?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
