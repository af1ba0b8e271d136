import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../../core/db/embedded';
import { createLogger } from '../../../core/logger';
import { startTestService } from '../../support/service';
import { client } from '../../support/http';

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
    const svc = await startTestService({ enabled: ['health'], databaseUrl: pg.url });
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
});
