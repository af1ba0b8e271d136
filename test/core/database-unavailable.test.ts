import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ConnectionAcquireTimeoutError, ConnectionRefusedError, DatabaseError, UniqueConstraintError } from 'sequelize';
import { createHotPool } from '../../core/db/database';
import type { Sql } from '../../core/db/sql';
import { TOKENS } from '../../core/tokens';
import { isDatabaseUnavailable, mayHaveCommitted } from '../../core/db/failures';
import { startEmbeddedPostgres } from '../../core/db/embedded';
import { createLogger } from '../../core/logger';
import { client } from '../support/http';
import type { HttpResult } from '../support/http';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { registerSandbox } from '../support/world';
import { freezeBackends, whileFrozen } from '../support/db';
import { tcpProxy } from '../support/tcp-proxy';

type Body = Record<string, any>;

const DEMO = { context: { current_price: 4, currency: 'USD' } };

/** The writer's answer to a database it cannot reach, which every route now gives (usage-write-failure.test.ts). */
/** `call`: a priced call's route (compute, demo, verify), whose hint first says that nothing was charged. */
function expectDatabaseUnavailable(res: HttpResult<Body>, call = false): void {
  expect(res.status, res.text).to.equal(503);
  expect(res.headers.get('retry-after')).to.equal('5');
  expect(res.body).to.include({ code: 'service_unavailable', error: 'The request could not be completed: the database did not answer.', retryable: true, retry_after: 5 });
  expect(res.body.hint).to.equal(`${call ? 'Nothing was charged: a call is charged only with its answer. ' : ''}The database is not reachable or did not answer in time; retry in 5 s.`);
  expect(res.body.request_id).to.be.a('string');
}

/**
 * A database that does not answer in time or cannot be reached, outside the usage writer (the key
 * lookup of a key not in the cache, the keyless demo's budget read), answers 503 like the writer.
 */
describe('database unavailable: the central error mapping', function () {
  this.timeout(30_000);

  describe('with a table locked by another session (real statement timeout)', () => {
    let svc: TestService;
    let key: string;
    let locker: Client;

    /** Takes a lock every reader of `table` waits for, held until unlock(). */
    const lock = async (table: string) => {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    };
    const unlock = () => locker.query('ROLLBACK');

    before(async () => {
      // No key cache: every request looks its key up in PostgreSQL.
      svc = await startTestService({ config: { database: { statementTimeoutMs: 1000 }, identity: { keyCacheTtlMs: 0 } } });
      key = (await registerSandbox(svc, 'lookup-agent')).key;
      locker = new Client({ connectionString: svc.databaseUrl });
      await locker.connect();
    });
    afterEach(() => unlock());
    after(async () => {
      await locker?.end();
      await svc?.close();
    });

    it('a key lookup cut off by the statement timeout answers 503 service_unavailable with Retry-After, and 200 once the lock is gone', async () => {
      const api = client(svc.url, { 'x-api-key': key });
      expect((await api.get('/api/me')).status).to.equal(200);

      await lock('api_keys');
      const started = Date.now();
      const res = await api.get<Body>('/api/me');
      expectDatabaseUnavailable(res);
      expect(Date.now() - started, 'answered at the statement timeout').to.be.lessThan(5000);
      expect(res.text).to.not.include('statement timeout');

      await unlock();
      expect((await api.get('/api/me')).status).to.equal(200);
    });

    it('a key lookup whose session the administrator ends (57P01) answers 503 service_unavailable', async () => {
      const api = client(svc.url, { 'x-api-key': key });
      await lock('api_keys');
      const pending = api.get<Body>('/api/me');
      // The service's session waiting for the lock is ended while its statement runs.
      let ended = 0;
      for (let i = 0; i < 100 && ended === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        const r = await locker.query<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
        );
        ended = r.rows[0]?.n ?? 0;
      }
      expect(ended, 'a session waited for the lock').to.be.greaterThan(0);
      expectDatabaseUnavailable(await pending);
    });

    it('the keyless demo whose budget read is cut off by the statement timeout answers 503 service_unavailable, and 200 once the lock is gone', async () => {
      await lock('usage_events');
      expectDatabaseUnavailable(await client(svc.url).post<Body>('/api/public/compute/demo', DEMO), true);
      await unlock();
      const res = await client(svc.url).post<Body>('/api/public/compute/demo', DEMO);
      expect(res.status, res.text).to.equal(200);
    });

    it('a database error that is not an outage (a column missing) still answers 500 internal_error', async () => {
      await locker.query('BEGIN');
      await locker.query('ALTER TABLE api_keys RENAME COLUMN key_hash TO key_hash_gone');
      await locker.query('COMMIT');
      try {
        const res = await client(svc.url, { 'x-api-key': key }).get<Body>('/api/me');
        expect(res.status, res.text).to.equal(500);
        expect(res.body.code).to.equal('internal_error');
        expect(res.headers.get('retry-after')).to.equal(null);
      } finally {
        await locker.query('ALTER TABLE api_keys RENAME COLUMN key_hash_gone TO key_hash');
      }
    });
  });

  it('with the database stopped, a key not in the cache and the keyless demo answer 503 service_unavailable', async function () {
    this.timeout(60_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'pcs-db-down-'));
    const pg = await startEmbeddedPostgres(dir, 0, createLogger('silent'));
    const svc = await startTestService({ databaseUrl: pg.url, config: { identity: { keyCacheTtlMs: 0 } } });
    try {
      const key = (await registerSandbox(svc, 'stopped-db-agent')).key;
      await pg.stop();
      expectDatabaseUnavailable(await client(svc.url, { 'x-api-key': key }).get<Body>('/api/me'));
      expectDatabaseUnavailable(await client(svc.url).post<Body>('/api/public/compute/demo', DEMO), true);
    } finally {
      await svc.close().catch(() => undefined);
      await pg.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('with a database that stops answering (frozen server, cut network)', () => {
    let svc: TestService;
    let key: string;

    before(async () => {
      // One client-side bound of 1 s: far enough from two (a ROLLBACK waiting behind) to tell them apart on a slow machine.
      svc = await startTestService({ config: { database: { statementTimeoutMs: 300, answerGraceMs: 700 }, identity: { keyCacheTtlMs: 0 } } });
      key = (await registerSandbox(svc, 'frozen-lookup')).key;
    });
    after(() => svc?.close());

    it('a key lookup gives up after DB_STATEMENT_TIMEOUT_MS + DB_ANSWER_GRACE_MS on its own side: 503 service_unavailable, and 200 once thawed', async function () {
      // Freezing needs the server's processes on this machine: the embedded test database.
      if (process.env.TEST_DATABASE_URL) this.skip();
      const api = client(svc.url, { 'x-api-key': key });
      expect((await api.get('/api/me')).status).to.equal(200);
      let started = 0;
      const res = await whileFrozen(svc.databaseUrl, 'pricing-compute', () => {
        started = Date.now();
        return api.get<Body>('/api/me');
      });
      expectDatabaseUnavailable(res);
      expect(Date.now() - started, 'bounded by the client side, not by the frozen server').to.be.within(900, 3000);
      expect((await api.get('/api/me')).status).to.equal(200);
    });

    it('a compute call cut off by a frozen server before its usage event answers 503 saying nothing was charged, not that a change may have been made', async function () {
      if (process.env.TEST_DATABASE_URL) this.skip();
      const api = client(svc.url, { 'x-api-key': key });
      // Connections in both pools: the key's reads and the usage event's insert.
      expect((await api.post('/api/compute/price', { context: { unit_cost: 1 } })).status).to.equal(200);
      const res = await whileFrozen(svc.databaseUrl, 'pricing-compute', () =>
        whileFrozen(svc.databaseUrl, 'pricing-compute-hot', () => api.post<Body>('/api/compute/price', { context: { unit_cost: 1 } }, { 'idempotency-key': 'frozen-read-1' })),
      );
      expectDatabaseUnavailable(res, true);
      expect(res.body.hint).not.to.match(/may have been made/);
      expect((await api.post('/api/compute/price', { context: { unit_cost: 1 } })).status).to.equal(200);
    });

    it('a hot-path connection the server never completes gives up after DB_CONNECT_TIMEOUT_MS: an outage, and nothing was sent', async () => {
      const db = new URL(svc.databaseUrl);
      const proxy = await tcpProxy(db.hostname, Number(db.port));
      proxy.mode = 'hold';
      const pool = createHotPool({ url: proxy.via(svc.databaseUrl), max: 2, applicationName: 'hot-connect-test', statementTimeoutMs: 300, answerGraceMs: 300, connectTimeoutMs: 300, acquireTimeoutMs: 5000 });
      try {
        const started = Date.now();
        const err = await pool.query('SELECT 1').then(() => null, (e: unknown) => e);
        expect(Date.now() - started).to.be.within(250, 2000);
        expect(err).to.be.instanceOf(Error);
        expect(isDatabaseUnavailable(err), String(err)).to.equal(true);
        expect(mayHaveCommitted(err), String(err)).to.equal(false);
      } finally {
        await pool.end();
        await proxy.close();
      }
    });

    it('a hot-path statement waits for a busy connection up to DB_ACQUIRE_TIMEOUT_MS, not DB_CONNECT_TIMEOUT_MS', async () => {
      const pool = createHotPool({ url: svc.databaseUrl, max: 1, applicationName: 'hot-acquire-test', statementTimeoutMs: 5000, answerGraceMs: 1000, connectTimeoutMs: 300, acquireTimeoutMs: 5000 });
      try {
        const busy = await pool.connect();
        setTimeout(() => busy.release(), 800);
        const started = Date.now();
        const res = await pool.query<{ one: number }>('SELECT 1 AS one');
        expect(res.rows).to.deep.equal([{ one: 1 }]);
        expect(Date.now() - started).to.be.within(700, 3000);
      } finally {
        await pool.end();
      }
    });

    it('a transaction whose statement gets no answer ends after one bound, not two: its connection is closed, not sent a ROLLBACK to wait behind', async function () {
      if (process.env.TEST_DATABASE_URL) this.skip();
      const sql = svc.container.resolve<Sql>(TOKENS.Sql);
      let pid = 0;
      const started = { at: 0 };
      const err = await sql
        .tx(async (t) => {
          pid = (await sql.one<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], t))?.pid ?? 0;
          process.kill(pid, 'SIGSTOP');
          started.at = Date.now();
          return sql.one('SELECT 1', [], t);
        })
        .then(() => null, (e: unknown) => e)
        .finally(() => pid && process.kill(pid, 'SIGCONT'));
      const waited = Date.now() - started.at;
      expect(isDatabaseUnavailable(err), String(err)).to.equal(true);
      // One bound is 300 + 700 ms; a ROLLBACK queued behind the statement would wait as long again.
      expect(waited).to.be.within(950, 1700);
      expect((await client(svc.url, { 'x-api-key': key }).get('/api/me')).status).to.equal(200);
    });
  });

  describe('isDatabaseUnavailable', () => {
    const pgError = (code: string, message = `error ${code}`) => Object.assign(new Error(message), { code, severity: 'ERROR' });
    const wrapped = (err: Error) => new DatabaseError(err as Error & { sql: string; parameters: object });

    it('takes timeouts, lost connections, shutdowns and connection limits for an outage, raw or wrapped by Sequelize', () => {
      for (const code of ['57014', '57P01', '57P02', '57P03', '53300', '08006', '08001', '08P01']) {
        expect(isDatabaseUnavailable(pgError(code)), code).to.equal(true);
        expect(isDatabaseUnavailable(wrapped(pgError(code))), `${code} wrapped`).to.equal(true);
      }
      const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      expect(isDatabaseUnavailable(refused)).to.equal(true);
      expect(isDatabaseUnavailable(new ConnectionRefusedError(refused))).to.equal(true);
      expect(isDatabaseUnavailable(new ConnectionAcquireTimeoutError(new Error('TimeoutError: Operation timeout')))).to.equal(true);
      expect(isDatabaseUnavailable(wrapped(new Error('Connection terminated unexpectedly')))).to.equal(true);
      expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).to.equal(true);
      expect(isDatabaseUnavailable(new Error('Query read timeout'))).to.equal(true);
      expect(isDatabaseUnavailable(wrapped(new Error('Query read timeout')))).to.equal(true);
    });

    it('leaves statements the database refused, and other components\' socket failures, to the generic 500', () => {
      for (const code of ['23505', '23514', '42P01', '42703', '22P02', '40001']) expect(isDatabaseUnavailable(wrapped(pgError(code))), code).to.equal(false);
      expect(isDatabaseUnavailable(new UniqueConstraintError({ parent: pgError('23505') as never }))).to.equal(false);
      expect(isDatabaseUnavailable(new Error('boom'))).to.equal(false);
      expect(isDatabaseUnavailable(new Error('outbound call failed', { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) }))).to.equal(false);
      expect(isDatabaseUnavailable(null)).to.equal(false);
      expect(isDatabaseUnavailable('Connection terminated')).to.equal(false);
    });
  });
});

describe('database: a stop while the server is frozen', () => {
  it('ends within DB_CLOSE_TIMEOUT_MS per pool instead of waiting for the frozen server to answer the connections\' goodbye', async function () {
    // Freezing needs the server's processes on this machine: the embedded test database.
    if (process.env.TEST_DATABASE_URL) this.skip();
    this.timeout(20_000);
    const svc = await startTestService({ config: { database: { closeTimeoutMs: 300 } } });
    // Idle connections in both pools, and no write left for the stop (no key was used): the main pool's from the
    // readiness check, the hot pool's from the keyless demo's usage event.
    expect((await client(svc.url).get('/readyz')).status).to.equal(200);
    const demo = await client(svc.url).post('/api/public/compute/demo', { context: { unit_cost: 1 } });
    expect(demo.status, demo.text).to.equal(200);
    const thawMain = await freezeBackends(svc.databaseUrl, 'pricing-compute');
    const thawHot = await freezeBackends(svc.databaseUrl, 'pricing-compute-hot');
    const thaw = () => (thawMain(), thawHot());
    const safety = setTimeout(thaw, 10_000);
    try {
      const started = Date.now();
      await svc.close();
      expect(Date.now() - started, 'not held until the server thaws').to.be.below(3000);
    } finally {
      clearTimeout(safety);
      thaw();
    }
  });
});
