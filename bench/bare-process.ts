import type { AddressInfo } from 'node:net';
import express from 'express';
import { rssSampler, serve } from './ipc';

/** The bare comparison: a one-route Express 5 app in its own process (GET and POST /bare). */
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
  serve({
    url: () => `http://127.0.0.1:${port}`,
    memory: () => rss.read(),
    close: () => server.close(() => process.exit(0)),
  });
  process.send?.({ ready: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
