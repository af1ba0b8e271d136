import { expect } from 'chai';
import { Pool } from 'pg';
import { ApiError } from '../../../core/errors';
import { createLogger } from '../../../core/logger';
import { TOKENS } from '../../../core/tokens';
import { USAGE } from '../../../plugins/usage';
import { UsageRecorder } from '../../../plugins/usage/services/recorder';
import type { RecordedEvent } from '../../../plugins/usage/services/recorder';
import { startTestService, testConfig } from '../../support/service';
import type { TestService } from '../../support/service';
import { recorderEvent as event } from './helpers';


describe('usage recorder: grouped inserts', function () {
  this.timeout(30_000);
  let svc: TestService;
  let recorder: UsageRecorder;

  before(async () => {
    svc = await startTestService({ enabled: ['identity', 'usage'] });
    recorder = svc.container.resolve<UsageRecorder>(USAGE.Recorder);
  });
  after(() => svc.close());

  async function stored(id: string): Promise<Record<string, unknown>> {
    const [rows] = await svc.sequelize.query('SELECT * FROM usage_events WHERE id = $1', { bind: [id] });
    return (rows as Array<Record<string, unknown>>)[0] ?? {};
  }

  it('stores every field with its column type', async () => {
    const id = await recorder.record(event({ callerUserAgent: 'agent/1.0', errorCode: null }));
    const row = await stored(id);
    expect(row).to.include({
      workspace_id: 'ws_recorder_test',
      request_id: 'req_recorder_test',
      operation: 'compute',
      channel: 'api',
      status: 'ok',
      error_code: null,
      function_id: 'fn_builtin_cost_plus',
      function_name: 'cost-plus',
      strategy: 'explicit',
      price: '19.99',
      currency: 'USD',
      confidence: 0.8125,
      cost: '0.00100000',
      billable: true,
      paid_via: null,
      caller_key_id: 'key_1',
      caller_agent_id: null,
      caller_user_agent: 'agent/1.0',
      caller_verified: true,
      classification: 'mine',
      cached: false,
      fallback_used: true,
      latency_ms: 1.234,
    });
    expect(row.context_keys).to.deep.equal({ product_type: 'coffee', currency: 'USD' });
    expect(row.created_at).to.be.instanceOf(Date);
  });

  it('groups concurrent events into few statements and commits each one', async () => {
    const ids = await Promise.all(Array.from({ length: 250 }, (_, i) => recorder.record(event({ price: `${i + 1}.50`, confidence: i / 250 }))));
    expect(new Set(ids).size).to.equal(250);
    const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n, sum(price)::text AS total FROM usage_events WHERE id = ANY($1)', { bind: [ids] });
    expect((rows as Array<{ n: number; total: string }>)[0]).to.deep.equal({ n: 250, total: String(Array.from({ length: 250 }, (_, i) => i + 1.5).reduce((a, b) => a + b, 0).toFixed(2)) });
  });

  it('stores unpaired surrogates and NUL as U+FFFD instead of failing the batch', async () => {
    const [odd, fine] = await Promise.all([recorder.record(event({ currency: 'U\ud800D', contextKeys: { product_type: `a${String.fromCharCode(0)}b` } })), recorder.record(event())]);
    expect((await stored(odd)).currency).to.equal('U\ufffdD');
    expect((await stored(odd)).context_keys).to.deep.equal({ product_type: 'a\ufffdb' });
    expect((await stored(fine)).currency).to.equal('USD');
  });

  describe('calls with an Idempotency-Key', () => {
    const claim = (key: string, fingerprint = 'f1') => ({ key, fingerprint, response: { price: '19.99' } });
    const claimsOf = async (key: string) => {
      const [rows] = await svc.sequelize.query('SELECT usage_event_id, response FROM compute_idempotency_keys WHERE key = $1', { bind: [key] });
      return rows as Array<{ usage_event_id: string; response: unknown }>;
    };
    const written = (r: RecordedEvent | null): RecordedEvent => {
      if (r === null) throw new Error('expected the event written, its key held by this call');
      return r;
    };
    const eventsOf = async (ids: string[]) => {
      const [rows] = await svc.sequelize.query('SELECT id FROM usage_events WHERE id = ANY($1)', { bind: [ids] });
      return (rows as Array<{ id: string }>).map((r) => r.id);
    };

    it('writes the key with its event in one statement, beside events without keys', async () => {
      const key = `rec-${Date.now()}-a`;
      const [plain, claimed] = await Promise.all([recorder.recordEvent(event()), recorder.recordClaimed(event(), claim(key))]);
      const keyed = written(claimed);
      expect(await eventsOf([plain.id, keyed.id])).to.have.members([plain.id, keyed.id]);
      expect(await claimsOf(key)).to.deep.equal([{ usage_event_id: keyed.id, response: { price: '19.99' } }]);
    });

    it('writes one event for one key sent twice in the same tick or in overlapping inserts; the others resolve null, unwritten', async () => {
      const pool = new Pool({ connectionString: svc.databaseUrl, max: 4 });
      try {
        for (const rec of [recorder, new UsageRecorder(pool, createLogger('silent'), { concurrentInserts: 3, maxBatch: 1 })]) {
          const key = `rec-${Date.now()}-${Math.random()}`;
          const results = await Promise.all(Array.from({ length: 6 }, () => rec.recordClaimed(event({ requestId: key }), claim(key))));
          const holders = results.filter((r) => r !== null);
          expect(holders, 'exactly one call holds the key').to.have.length(1);
          expect((await claimsOf(key))[0]?.usage_event_id).to.equal(written(holders[0] ?? null).id);
          const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n FROM usage_events WHERE request_id = $1', { bind: [key] });
          expect((rows as Array<{ n: number }>)[0]?.n, 'the five others wrote no event').to.equal(1);
        }
      } finally {
        await pool.end();
      }
    });

    it('takes over a key past its TTL, writing the new event', async () => {
      const key = `rec-${Date.now()}-ttl`;
      const first = written(await recorder.recordClaimed(event(), claim(key)));
      expect(await recorder.recordClaimed(event(), claim(key, 'f2')), 'held within the TTL').to.equal(null);
      await svc.sequelize.query("UPDATE compute_idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", { bind: [key] });
      const later = written(await recorder.recordClaimed(event(), claim(key, 'f2')));
      expect(later.id).not.to.equal(first.id);
      expect((await claimsOf(key))[0]?.usage_event_id).to.equal(later.id);
    });
  });

  it('logs a database outage as a warning with its reason and the request ids it failed, no stack; a statement the database refuses as an error with its stack', async () => {
    const lines: Array<Record<string, any>> = [];
    const sink = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, any>) };
    // Nothing listens on port 1: every insert fails to connect, as with the database gone.
    const gone = new Pool({ connectionString: 'postgres://pcs:x@127.0.0.1:1/pcs', max: 1, connectionTimeoutMillis: 2000 });
    try {
      const rec = new UsageRecorder(gone, createLogger('warn', sink));
      const err = await rec.record(event({ requestId: 'req_outage_1' })).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(ApiError).and.include({ code: 'service_unavailable' });
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include({ level: 'warn', msg: 'usage events could not be written', events: 1 });
      expect(lines[0]?.request_ids).to.deep.equal(['req_outage_1']);
      expect(lines[0]?.reason).to.be.a('string').and.match(/ECONNREFUSED/);
      expect(lines[0]).to.not.have.property('err');
    } finally {
      await gone.end();
    }
    const refused = new UsageRecorder(svc.container.resolve<Pool>(TOKENS.PgPool), createLogger('warn', sink));
    await refused.record(event({ requestId: 'req_refused_1', price: 'not a number' })).catch(() => undefined);
    const bug = lines.find((l) => l.request_ids?.[0] === 'req_refused_1');
    expect(bug).to.include({ level: 'error', msg: 'usage events could not be written' });
    expect(bug?.err?.stack).to.be.a('string');
  });

  describe('USAGE_CONCURRENT_INSERTS', () => {
    let pool: Pool;
    let inFlight: number;
    let most: number;
    let statements: number;
    beforeEach(() => {
      pool = new Pool({ connectionString: svc.databaseUrl, max: 4 });
      inFlight = 0;
      most = 0;
      statements = 0;
      const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
      (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
        statements++;
        most = Math.max(most, ++inFlight);
        try {
          return await query(...args);
        } finally {
          inFlight--;
        }
      };
    });
    afterEach(() => pool.end());

    /** Events arriving over many ticks, as from concurrent requests, while earlier inserts are in flight. */
    async function waves(rec: UsageRecorder, ticks: number, perTick: number): Promise<string[]> {
      const pending: Array<Promise<string>> = [];
      for (let t = 0; t < ticks; t++) {
        for (let i = 0; i < perTick; i++) pending.push(rec.record(event({ requestId: `req_wave_${t}_${i}` })));
        await new Promise((r) => setImmediate(r));
      }
      return Promise.all(pending);
    }

    async function count(ids: string[]): Promise<number> {
      const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n FROM usage_events WHERE id = ANY($1)', { bind: [ids] });
      return (rows as Array<{ n: number }>)[0]?.n ?? 0;
    }

    it('1 (default): one insert in flight at a time, the events meanwhile grouped into the next', async () => {
      const ids = await waves(new UsageRecorder(pool, createLogger('silent')), 40, 5);
      expect(most).to.equal(1);
      expect(statements).to.be.below(200);
      expect(await count(ids)).to.equal(200);
    });

    it('2: up to two inserts in flight, never more, every event committed once', async () => {
      const ids = await waves(new UsageRecorder(pool, createLogger('silent'), { concurrentInserts: 2 }), 40, 5);
      expect(most).to.equal(2);
      expect(statements).to.be.below(200);
      expect(new Set(ids).size).to.equal(200);
      expect(await count(ids)).to.equal(200);
    });

    it('drainAll waits for the inserts in flight and the events still queued', async () => {
      const rec = new UsageRecorder(pool, createLogger('silent'), { concurrentInserts: 2, maxBatch: 3 });
      const ids: string[] = [];
      const recorded = Array.from({ length: 20 }, () => rec.record(event()).then((id) => ids.push(id)));
      await rec.drainAll();
      expect(ids).to.have.length(20);
      expect(await count(ids)).to.equal(20);
      await Promise.all(recorded);
      await rec.drainAll();
    });

    it('a failed insert rejects its own events only; the writer goes on', async () => {
      const rec = new UsageRecorder(pool, createLogger('silent'), { concurrentInserts: 2 });
      // A price that is no number fails the statement it travels in.
      const bad = rec.record(event({ price: 'not a number' })).then(
        () => null,
        (err: unknown) => err,
      );
      await new Promise((r) => setImmediate(r));
      const good = await Promise.all(Array.from({ length: 5 }, () => rec.record(event())));
      // The caller answers SPEC's error shape from it, not the database's message.
      expect(await bad).to.be.instanceOf(ApiError).and.include({ code: 'service_unavailable', status: 503 });
      expect(await count(good)).to.equal(5);
    });

    it('a row the database refuses inside a group fails only its own call: the others in the same insert are written', async () => {
      const rec = new UsageRecorder(pool, createLogger('silent'));
      // Queued in one tick, so one group: the out-of-range one among eight good ones.
      const calls = Array.from({ length: 9 }, (_, i) => rec.record(event(i === 4 ? { cost: '1'.repeat(15) } : {})).then((id) => ({ id }), (err: unknown) => ({ err })));
      const outcomes = await Promise.all(calls);
      const failed = outcomes.filter((o): o is { err: unknown } => 'err' in o);
      expect(failed).to.have.length(1);
      expect(failed[0]?.err).to.be.instanceOf(ApiError).and.include({ code: 'service_unavailable' });
      expect(outcomes.indexOf(failed[0] as { err: unknown })).to.equal(4);
      expect(await count(outcomes.filter((o): o is { id: string } => 'id' in o).map((o) => o.id))).to.equal(8);
    });

    it('is read from the environment, 1 by default, refused outside 1 to 8', () => {
      expect(svc.config.usage.concurrentInserts).to.equal(1);
      expect(testConfig({}, { USAGE_CONCURRENT_INSERTS: '3' }).usage.concurrentInserts).to.equal(3);
      expect(() => testConfig({}, { USAGE_CONCURRENT_INSERTS: '0' })).to.throw(/USAGE_CONCURRENT_INSERTS/);
      expect(() => testConfig({}, { USAGE_CONCURRENT_INSERTS: '9' })).to.throw(/USAGE_CONCURRENT_INSERTS/);
    });
  });

  describe('USAGE_SYNCHRONOUS_COMMIT', () => {
    let pool: Pool;
    beforeEach(() => {
      pool = new Pool({ connectionString: svc.databaseUrl, max: 1 });
    });
    afterEach(() => pool.end());

    /** WAL fsyncs made by client backends so far (PostgreSQL's own I/O statistics). */
    async function walSyncs(): Promise<number> {
      await pool.query('SELECT pg_stat_force_next_flush()');
      const r = await pool.query<{ n: number }>("SELECT coalesce(sum(fsyncs), 0)::int AS n FROM pg_stat_io WHERE object = 'wal' AND backend_type = 'client backend'");
      return r.rows[0]?.n ?? 0;
    }

    async function recordOneByOne(rec: UsageRecorder, n: number): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push(await rec.record(event()));
      return ids;
    }

    it('on (default): each commit waits for its WAL flush', async () => {
      const before = await walSyncs();
      await recordOneByOne(new UsageRecorder(pool, createLogger('silent')), 10);
      expect((await walSyncs()) - before).to.be.at.least(10);
    });

    it('off: the writer commits without waiting for the WAL flush, only for its own statements, and every event is stored', async () => {
      const before = await walSyncs();
      const ids = await recordOneByOne(new UsageRecorder(pool, createLogger('silent'), { synchronousCommit: false }), 10);
      expect((await walSyncs()) - before).to.be.below(3);
      const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n FROM usage_events WHERE id = ANY($1)', { bind: [ids] });
      expect((rows as Array<{ n: number }>)[0]?.n).to.equal(10);
      // The setting was local to each insert's transaction: the session is as it was.
      expect((await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]?.synchronous_commit).to.equal('on');
    });

    it('is read from the environment, on by default', () => {
      expect(svc.config.usage.synchronousCommit).to.equal(true);
      expect(testConfig({}, { USAGE_SYNCHRONOUS_COMMIT: 'off' }).usage.synchronousCommit).to.equal(false);
    });
  });
});
