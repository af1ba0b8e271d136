import type { AddressInfo } from 'node:net';
import express from 'express';
import { Pool } from 'pg';
import { createLogger } from '../core/logger';
import { UsageRecorder } from '../plugins/usage/services/recorder';
import { rssSampler, serve } from './ipc';

/**
 * The bare comparison: a one-route Express 5 app in its own process (GET and POST /bare). Once told
 * the service's database, it also answers POST /bare-commit: the bare route plus one usage event
 * written through the service's own writer (same table, indexes, statement and durable commit), the
 * floor under any route that must record its call durably before answering.
 */
async function main(): Promise<void> {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json());
  app.get('/bare', (_req, res) => {
    res.json({ ok: true });
  });
  app.post('/bare', (req, res) => {
    res.json({ ok: true, echo: req.body as unknown });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  const rss = rssSampler();
  let floorPool: Pool | null = null;
  serve({
    floor: (payload) => {
      floorPool = new Pool({ connectionString: String(payload), max: 4 });
      const recorder = new UsageRecorder(floorPool, createLogger('warn'));
      app.post('/bare-commit', async (req, res) => {
        const id = await recorder.record({
          workspaceId: 'ws_bench_floor',
          operation: 'compute',
          channel: 'api',
          status: 'ok',
          functionId: 'fn_builtin_cost_plus',
          functionName: 'cost-plus',
          strategy: 'explicit',
          price: '3.00',
          currency: 'USD',
          confidence: 0.5,
          cost: '0.001',
          billable: true,
          paidVia: null,
          callerKeyId: 'key_bench_floor',
          callerVerified: true,
          classification: 'mine',
          latencyMs: 0.1,
          contextKeys: { product_type: 'coffee', currency: 'USD' },
        });
        res.json({ ok: true, id, echo: req.body as unknown });
      });
      return true;
    },
    url: () => `http://127.0.0.1:${port}`,
    memory: () => rss.read(),
    close: () => server.close(() => void (floorPool?.end() ?? Promise.resolve()).finally(() => process.exit(0))),
  });
  process.send?.({ ready: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
