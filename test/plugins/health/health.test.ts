import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../../core/db/embedded';
import { createLogger } from '../../../core/logger';
import { startTestService } from '../../support/service';
import { client } from '../../support/http';
import type { PluginDefinition } from '../../../core/plugin';

/** A readiness check that counts its runs and takes `ms` to answer. */
function countedCheck(ms: number): { plugin: PluginDefinition; runs: () => number } {
  let runs = 0;
  const plugin: PluginDefinition = {
    name: 'counted-check',
    description: 'test: a readiness check that counts its runs',
    dependsOn: [],
    register(ctx) {
      ctx.readiness('counted', async () => {
        runs++;
        await new Promise((r) => setTimeout(r, ms));
      });
    },
  };
  return { plugin, runs: () => runs };
}

/** A readiness check that always fails. */
const failingCheck: PluginDefinition = {
  name: 'failing-check',
  description: 'test: a readiness check that fails',
  dependsOn: [],
  register(ctx) {
    ctx.readiness('broken', () => Promise.reject(new Error('it is broken')));
  },
};

describe('health plugin', () => {
  it('GET /healthz answers while the process is up', async () => {
    const svc = await startTestService({ enabled: ['health'] });
    try {
      const res = await client(svc.url).get('/healthz');
      expect(res.status).to.equal(200);
      expect(res.body.status).to.equal('ok');
    } finally {
      await svc.close();
    }
  });

  it('GET /metrics with METRICS_TOKEN set answers only its Bearer token; others get 401 saying what to send', async () => {
    const token = 'metrics-token-0123456789';
    const svc = await startTestService({ enabled: ['health'], config: { metrics: { token } } });
    try {
      const api = client(svc.url);
      for (const headers of [{}, { authorization: 'Bearer metrics-token-012345678X' }, { authorization: `Basic ${token}` }] as Array<Record<string, string>>) {
        const refused = await api.get<Record<string, any>>('/metrics', headers);
        expect(refused.status, JSON.stringify(headers)).to.equal(401);
        expect(refused.headers.get('www-authenticate')).to.equal('Bearer realm="metrics"');
        expect(refused.body).to.include({ code: headers.authorization ? 'invalid_credentials' : 'unauthorized', retryable: false });
        expect(refused.body.next).to.deep.equal([]);
        expect(refused.body.hint).to.include('METRICS_TOKEN');
        expect(refused.text).to.not.include('process_cpu');
      }
      const ok = await api.get('/metrics', { authorization: `Bearer ${token}` });
      expect(ok.status).to.equal(200);
      expect(ok.text).to.include('process_cpu_user_seconds_total');
    } finally {
      await svc.close();
    }
    // The OpenAPI document says what the route takes: the token scheme and its 401 while it is set, nothing while it is not.
    for (const [config, secured] of [[{ metrics: { token } }, true], [{}, false]] as const) {
      const docs = await startTestService({ enabled: ['health', 'identity', 'discovery'], config });
      try {
        const doc = (await client(docs.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
        const op = doc.paths['/metrics'].get;
        expect(op.security).to.deep.equal(secured ? [{ MetricsToken: [] }] : []);
        expect(Object.keys(op.responses).includes('401')).to.equal(secured);
        expect(Object.keys(doc.components.securitySchemes).includes('MetricsToken')).to.equal(secured);
      } finally {
        await docs.close();
      }
    }
    // Unset, it stays open (a scrape on a private network needs nothing).
    const open = await startTestService({ enabled: ['health'] });
    try {
      expect((await client(open.url).get('/metrics')).status).to.equal(200);
    } finally {
      await open.close();
    }
  });

  it('GET /readyz is 200 when the database answers and 503 naming the database when it is stopped', async function () {
    this.timeout(60_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'pcs-ready-'));
    const pg = await startEmbeddedPostgres(dir, 0, createLogger('silent'));
    // Checks run for every request (READINESS_CACHE_MS=0): the stop is seen by the very next one.
    const svc = await startTestService({ enabled: ['health'], databaseUrl: pg.url, config: { metrics: { readinessCacheMs: 0 } } });
    try {
      const api = client(svc.url);
      const up = await api.get('/readyz');
      expect(up.status).to.equal(200);
      expect(up.body.status).to.equal('ready');
      expect((up.body.checks as Record<string, { status: string }>).database?.status).to.equal('up');
      // The same check as a series to alert on.
      expect((await api.get('/metrics')).text).to.match(/^service_dependency_up\{dependency="database"\} 1$/m);

      await pg.stop();
      expect((await api.get('/metrics')).text).to.match(/^service_dependency_up\{dependency="database"\} 0$/m);
      const down = await api.get('/readyz');
      expect(down.status).to.equal(503);
      expect(down.body.status).to.equal('not_ready');
      expect(down.body.failing).to.deep.equal(['database']);
      expect((down.body.checks as Record<string, { status: string }>).database?.status).to.equal('down');
      // Public: the driver's reason without the database's address.
      expect(down.text).to.not.match(/127\.0\.0\.1|:\d{4,5}\b/);
      const live = await api.get('/healthz');
      expect(live.status).to.equal(200);
    } finally {
      await svc.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('GET /readyz checks Redis when it is configured', async function () {
    if (!process.env.REDIS_URL) {
      if (process.env.CI) throw new Error('REDIS_URL must be set in CI');
      this.skip();
    }
    const svc = await startTestService({ enabled: ['health'], env: { REDIS_URL: process.env.REDIS_URL } });
    try {
      const res = await client(svc.url).get('/readyz');
      expect(res.status).to.equal(200);
      expect((res.body.checks as Record<string, { status: string }>).redis?.status).to.equal('up');
      expect((await client(svc.url).get('/metrics')).text).to.match(/^service_dependency_up\{dependency="redis"\} 1$/m);
    } finally {
      await svc.close();
    }
  });

  it('GET /readyz and the dependency gauge share one run of the checks within READINESS_CACHE_MS, and one at a time: a flood of the public route is not a flood of database queries', async () => {
    const counted = countedCheck(50);
    const svc = await startTestService({ enabled: ['health', 'counted-check'], extraPlugins: [counted.plugin], config: { metrics: { readinessCacheMs: 1000 } } });
    try {
      const api = client(svc.url);
      const before = counted.runs();
      const answers = await Promise.all([...Array.from({ length: 40 }, () => api.get<Record<string, any>>('/readyz')), ...Array.from({ length: 5 }, () => api.get('/metrics'))]);
      const ready = answers.slice(0, 40) as Array<{ status: number; body: Record<string, any> }>;
      expect(ready.map((r) => r.status)).to.deep.equal(Array(40).fill(200));
      expect(new Set(ready.map((r) => r.body.checked_at)).size, 'one run answered them all').to.equal(1);
      expect(ready[0]?.body.checks.counted).to.include({ status: 'up' });
      expect(answers.slice(40).every((r) => /^service_dependency_up\{dependency="counted"\} 1$/m.test(r.text))).to.equal(true);
      expect(counted.runs() - before, 'checks run for 45 requests').to.equal(1);
      // Past READINESS_CACHE_MS, the next request runs them again.
      await new Promise((r) => setTimeout(r, 1100));
      const later = await api.get<Record<string, any>>('/readyz');
      expect(counted.runs() - before).to.equal(2);
      expect(Date.parse(later.body.checked_at)).to.be.greaterThan(Date.parse(ready[0]?.body.checked_at));
    } finally {
      await svc.close();
    }
    // READINESS_CACHE_MS=0: each request runs them, but requests at the same moment still share the run in flight.
    const each = countedCheck(200);
    const svc0 = await startTestService({ enabled: ['health', 'counted-check'], extraPlugins: [each.plugin], config: { metrics: { readinessCacheMs: 0 } } });
    try {
      const api = client(svc0.url);
      const before = each.runs();
      await Promise.all(Array.from({ length: 20 }, () => api.get('/readyz')));
      expect(each.runs() - before).to.equal(1);
      await api.get('/readyz');
      await api.get('/readyz');
      expect(each.runs() - before).to.equal(3);
    } finally {
      await svc0.close();
    }
  });

  it('GET /readyz answers 503 in the common error shape (error, code, message, request_id) beside its status fields, as its OpenAPI schema declares', async () => {
    const svc = await startTestService({ enabled: ['health', 'identity', 'discovery', 'failing-check'], extraPlugins: [failingCheck] });
    try {
      const api = client(svc.url);
      const down = await api.get<Record<string, any>>('/readyz');
      expect(down.status).to.equal(503);
      expect(down.body).to.include({ status: 'not_ready', code: 'not_ready', request_id: down.headers.get('x-request-id') });
      expect(down.body.error).to.equal('Not ready: the broken check failed (checks gives why).');
      expect(down.body.message).to.equal(down.body.error);
      expect(down.body.failing).to.deep.equal(['broken']);
      expect(down.body.checks.broken).to.include({ status: 'down', error: 'it is broken' });
      expect(down.body.checks.database).to.include({ status: 'up' });
      expect(Date.parse(down.body.checked_at)).to.be.a('number').and.not.NaN;
      const doc = (await api.get<Record<string, any>>('/api/openapi.json?format=json')).body;
      const schema = doc.paths['/readyz'].get.responses['503'].content['application/json'].schema as { required: string[]; properties: Record<string, unknown> };
      expect(schema.required).to.include.members(['error', 'code', 'message', 'request_id', 'status', 'checks', 'failing', 'checked_at']);
      expect(Object.keys(down.body).filter((k) => !(k in schema.properties))).to.deep.equal([]);
    } finally {
      await svc.close();
    }
  });

  it("GET /readyz's summary names every check it makes (the pricing pool's too)", async () => {
    const svc = await startTestService();
    try {
      const api = client(svc.url);
      const checks = Object.keys((await api.get<Record<string, any>>('/readyz')).body.checks as object);
      expect(checks).to.include.members(['database', 'pricing_pool']);
      const summary = (await api.get<Record<string, any>>('/api/openapi.json?format=json')).body.paths['/readyz'].get.summary as string;
      for (const name of [...checks, 'redis']) expect(summary.toLowerCase(), name).to.include(name.replace(/_/g, ' '));
    } finally {
      await svc.close();
    }
  });
});
