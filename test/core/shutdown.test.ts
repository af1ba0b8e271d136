import { expect } from 'chai';
import { Agent, get } from 'node:http';
import { probePlugin } from '../support/probe-plugin';
import { startTestService } from '../support/service';

describe('graceful shutdown', () => {
  it('finishes an in-flight request, then refuses new connections and closes', async () => {
    const svc = await startTestService({ extraPlugins: [probePlugin({ slowMs: 400 })], enabled: ['health', 'probe'] });
    const inFlight = fetch(`${svc.url}/probe/slow`).then(async (r) => ({ status: r.status, body: (await r.json()) }));
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await svc.close();
    const res = await inFlight;
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ slow: true });
    expect(Date.now() - started).to.be.greaterThan(200);
    let refused = false;
    await fetch(`${svc.url}/healthz`).catch(() => {
      refused = true;
    });
    expect(refused).to.equal(true);
  });

  it('answers a request in flight at the stop with Connection: close, so its kept-alive connection is not reused into a reset', async () => {
    let started!: () => void;
    const inHandler = new Promise<void>((resolve) => (started = resolve));
    const svc = await startTestService({ extraPlugins: [probePlugin({ slowMs: 400, onSlowStarted: () => started() })], enabled: ['health', 'probe'] });
    const agent = new Agent({ keepAlive: true });
    try {
      const inFlight = new Promise<{ status?: number; connection?: string }>((resolve, reject) => {
        get(`${svc.url}/probe/slow`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
        }).on('error', reject);
      });
      // Stopped while the request is in its handler, however loaded the machine.
      await inHandler;
      const closing = svc.close();
      expect(await inFlight).to.deep.equal({ status: 200, connection: 'close' });
      await closing;
    } finally {
      agent.destroy();
    }
  });

  it('does not wait past the configured deadline', async () => {
    const svc = await startTestService({ extraPlugins: [probePlugin({ slowMs: 5000 })], enabled: ['health', 'probe'], config: { server: { shutdownTimeoutMs: 200 } } });
    const inFlight = fetch(`${svc.url}/probe/slow`).catch(() => 'cut');
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await svc.close();
    expect(Date.now() - started).to.be.lessThan(2000);
    expect(await inFlight).to.equal('cut');
  });
});
