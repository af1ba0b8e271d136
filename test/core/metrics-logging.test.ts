import { expect } from 'chai';
import { Writable } from 'node:stream';
import { loadConfig } from '../../config';
import { startService } from '../../core/service';
import { Pool } from 'pg';
import { createLogger, scrubSecrets } from '../../core/logger';
import { errorHandler, logOutage } from '../../core/http/middleware';
import { RepeatedLines } from '../../core/repeated-lines';
import { KvUnavailableError } from '../../core/kv/contract';
import { builtInPlugins } from '../../plugins';
import { createTestDatabase } from '../support/db';
import { probePlugin } from '../support/probe-plugin';
import { client } from '../support/http';

/** A log destination that keeps each line written to it. */
function capturedLog(): { lines: string[]; sink: Writable } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { lines, sink };
}

describe('metrics and structured logs', () => {
  it('GET /metrics exposes default process metrics and the request histogram by route template', async () => {
    const { lines, sink } = capturedLog();
    const config = loadConfig(
      { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' },
      { database: { url: await createTestDatabase() }, plugins: { enabled: ['health', 'probe'] } },
    );
    const svc = await startService({ config, plugins: [...builtInPlugins, probePlugin()], logDestination: sink });
    try {
      const api = client(svc.url);
      const secret = 'sk_live_ABCDEFGHIJKLMNOPQRSTUVWX';
      await api.get('/probe/items/abc123', { 'x-api-key': secret, authorization: `Bearer ${secret}`, 'payment-signature': 'eyJzZWNyZXQiOiJwYXkifQ==' });
      await api.get('/probe/items/zzz999');
      const res = await api.get('/metrics');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/text\/plain/);
      expect(res.text).to.contain('process_cpu_user_seconds_total');
      expect(res.text).to.contain('# TYPE http_request_duration_seconds histogram');
      expect(res.text).to.match(/http_request_duration_seconds_count\{method="GET",route="\/probe\/items\/:id",status="200"\} 2/);
      expect(res.text).not.to.contain('abc123');
      // Methods no route serves share one series: a caller sending WebDAV verbs to every route adds none per verb.
      for (const method of ['PROPFIND', 'MKCOL', 'REBIND']) expect((await api.raw(method, '/probe/items/abc123')).status).to.equal(405);
      const after = await api.get('/metrics');
      expect(after.text).to.match(/http_request_duration_seconds_count\{method="other",route="\/probe\/items\/:id",status="405"\} 3/);
      expect(after.text).not.to.match(/PROPFIND|MKCOL|REBIND/);

      const log = lines.join('');
      const entries = lines.flatMap((l) => l.split('\n')).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      const access = entries.filter((e) => e.msg === 'request');
      expect(access.length).to.be.greaterThan(1);
      expect(access[0]).to.have.property('req_id').that.matches(/^req_/);
      expect(log).not.to.contain(secret);
      expect(log).not.to.contain('eyJzZWNyZXQiOiJwYXkifQ');
    } finally {
      await svc.close();
    }
  });

  it('logs a request whose connection closed before its answer was complete, marked cut off, and keeps it out of the duration histogram', async () => {
    const { lines, sink } = capturedLog();
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' }, { database: { url: await createTestDatabase() }, plugins: { enabled: ['health', 'probe'] } });
    const svc = await startService({ config, plugins: [...builtInPlugins, probePlugin({ slowMs: 2000 })], logDestination: sink });
    try {
      const abort = new AbortController();
      const gone = fetch(`${svc.url}/probe/slow`, { signal: abort.signal }).catch(() => 'aborted');
      await new Promise((r) => setTimeout(r, 200));
      abort.abort();
      expect(await gone).to.equal('aborted');
      await new Promise((r) => setTimeout(r, 200));
      const entries = lines.flatMap((l) => l.split('\n')).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      const cut = entries.find((e) => e.msg === 'request closed before its answer was complete');
      expect(cut, JSON.stringify(entries.map((e) => e.msg))).to.include({ method: 'GET', route: '/probe/slow', cut_off: true, status: null });
      expect(cut?.req_id).to.match(/^req_/);
      const metrics = await (await fetch(`${svc.url}/metrics`)).text();
      expect(metrics).to.not.match(/route="\/probe\/slow"/);
    } finally {
      await svc.close();
    }
  });

  it('logs a store that did not answer a request as an outage: its reason, no stack', () => {
    const { lines, sink } = capturedLog();
    const handler = errorHandler(createLogger('info', sink));
    const res = { locals: { requestId: 'req_x', routeTemplate: '/api/agents/claim/:token' }, headersSent: false, headers: {} as Record<string, string>, statusCode: 0, body: undefined as unknown };
    const reply = {
      ...res,
      setHeader(k: string, v: string) {
        res.headers[k] = v;
      },
      getHeader(k: string) {
        return res.headers[k];
      },
      status(code: number) {
        res.statusCode = code;
        return this;
      },
      json(body: unknown) {
        res.body = body;
      },
    };
    const token = 'pcs_clm_ctq5aGgKYh9yDXY1uoqjSFY468hKQj0c';
    handler(new KvUnavailableError(new Error('Connection is closed.')), { method: 'POST', path: `/api/agents/claim/${token}`, headers: {} } as never, reply as never, () => undefined);
    expect(res.statusCode).to.equal(503);
    expect(lines).to.have.length(1);
    const entry = JSON.parse(lines[0] as string) as Record<string, unknown>;
    // The route as declared, never the path sent: this one carries a one-time claim token.
    expect(entry).to.include({ msg: 'a store the request needed failed', reason: 'The key-value store did not answer: Connection is closed.', method: 'POST', route: '/api/agents/claim/:token' });
    expect(entry).to.not.have.property('path');
    expect(lines[0]).not.to.contain(token);
    expect(lines[0]).not.to.contain('stack');
  });

  it('logs an outage once per reason and route every LOG_REPEAT_INTERVAL_MS, the next line counting the ones held back, however many requests it fails', async () => {
    const { lines, sink } = capturedLog();
    const handler = errorHandler(createLogger('info', sink), undefined, undefined, { repeatIntervalMs: 200 });
    const fail = (route: string, reason: string) => {
      const res = { locals: { requestId: 'req_x', routeTemplate: route }, headersSent: false, headers: {} as Record<string, string>, statusCode: 0 };
      const reply = { ...res, setHeader: (k: string, v: string) => (res.headers[k] = v), getHeader: (k: string) => res.headers[k], status: (code: number) => ((res.statusCode = code), reply), json: () => undefined };
      handler(new KvUnavailableError(new Error(reason)), { method: 'POST', path: route, headers: {} } as never, reply as never, () => undefined);
      return res.statusCode;
    };
    for (let i = 0; i < 50; i++) expect(fail('/api/compute/price', 'Connection is closed.')).to.equal(503);
    fail('/api/compute/batch', 'Connection is closed.');
    fail('/api/compute/price', 'Command timed out');
    const entries = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries().map((e) => [e.route, e.reason])).to.deep.equal([
      ['/api/compute/price', 'The key-value store did not answer: Connection is closed.'],
      ['/api/compute/batch', 'The key-value store did not answer: Connection is closed.'],
      ['/api/compute/price', 'The key-value store did not answer: Command timed out'],
    ]);
    await new Promise((r) => setTimeout(r, 250));
    fail('/api/compute/price', 'Connection is closed.');
    expect(entries()[3]).to.include({ route: '/api/compute/price', repeats_since_last_logged: 49 });
  });

  it('logs an outage a route caught itself (a batch item, an MCP tool) as the error handler does, and leaves anything else to its caller', () => {
    const { lines, sink } = capturedLog();
    const log = createLogger('info', sink);
    const outages = new RepeatedLines(60_000);
    for (let index = 0; index < 100; index++) expect(logOutage(log, outages, new KvUnavailableError(new Error('Connection is closed.')), { index }, 'batch item', 'a store a batch item needed failed')).to.equal(true);
    expect(logOutage(log, outages, new Error('a bug'), { index: 0 }, 'batch item', 'a store a batch item needed failed')).to.equal(false);
    expect(lines).to.have.length(1);
    expect(JSON.parse(lines[0] as string)).to.include({ level: 'warn', msg: 'a store a batch item needed failed', index: 0, reason: 'The key-value store did not answer: Connection is closed.' });
    expect(lines[0]).not.to.contain('stack');
  });

  it('scrubs our secret shapes from free-text log messages', () => {
    expect(scrubSecrets('key sk_live_ABCDEFGHIJKLMNOPQRSTUVWX used')).to.equal('key [redacted] used');
    // The other secrets the service issues: claim links, invitations, session cookies, signing secrets.
    for (const secret of ['pcs_clm_ctq5aGgKYh9yDXY1uoqjSFY468hKQj0c', 'pcs_inv_ctq5aGgKYh9yDXY1uoqjSFY468hKQj0c', 'pcs_ses_ctq5aGgKYh9yDXY1uoqjSFY468hKQj0c', 'pcs_fsig_ctq5aGgKYh9yDXY1uoqjSFY468hKQj0c']) {
      expect(scrubSecrets(`seen ${secret}.`)).to.equal('seen [redacted].');
    }
  });

  it('logs a database connection error with its own fields, not the client node-postgres attaches to it', async () => {
    const { lines, sink } = capturedLog();
    const log = createLogger('info', sink);
    const url = await createTestDatabase();
    const pool = new Pool({ connectionString: url, max: 1 });
    const admin = new Pool({ connectionString: url, max: 1 });
    try {
      const idleError = new Promise<Error>((resolve) => pool.once('error', resolve));
      const idle = await pool.connect();
      const pid = (idle as unknown as { processID: number }).processID;
      idle.release();
      // What a database restart or an administrator does to an idle connection.
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      const err = await idleError;
      expect((err as Error & { client?: unknown }).client, 'node-postgres attaches its client').to.be.an('object');
      log.warn({ err }, 'idle database connection failed');
      expect(lines).to.have.length(1);
      const entry = JSON.parse(lines[0] as string) as { err: Record<string, unknown> };
      expect(entry.err).to.include({ type: 'DatabaseError', code: '57P01', severity: 'FATAL', client: '[Client]' });
      expect(entry.err.message).to.match(/terminating connection/);
      expect(lines[0]).to.not.match(/secretKey|parsedStatements|connectionParameters/);
      expect((lines[0] as string).length).to.be.below(2500);
    } finally {
      await pool.end();
      await admin.end();
    }
  });

  it('keeps plain values and nested errors of a logged error', () => {
    const { lines, sink } = capturedLog();
    const err = Object.assign(new Error('outer'), { code: 'E_OUTER', detail: { rows: [1, 2], at: new Date(0) }, inner: new Error('inner'), socket: new Writable() });
    createLogger('info', sink).error({ err }, 'failed');
    const entry = JSON.parse(lines[0] as string) as { err: Record<string, unknown> };
    expect(entry.err).to.deep.include({ code: 'E_OUTER', detail: { rows: [1, 2], at: '1970-01-01T00:00:00.000Z' }, socket: '[Writable]' });
    expect(entry.err.inner).to.deep.include({ type: 'Error', message: 'inner' });
  });
});
