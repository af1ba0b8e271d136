import { expect } from 'chai';
import express from 'express';
import type { Request, Response } from 'express';
import { createServer, request } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callerLeftSignal } from '../../core/http/caller-gone';

/** An Express server, as the service's requests come (req.res set), handing each request to `onRequest` (which answers or not). */
async function serverWith(onRequest: (req: Request, res: Response) => void): Promise<{ server: Server; port: number }> {
  const app = express();
  app.use(onRequest);
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('core: callerLeftSignal tells a wait that its caller has gone', () => {
  it('aborts when the client closes its connection before the answer, and one signal serves the whole request', async () => {
    let signal: AbortSignal | null = null;
    let same = false;
    const { server, port } = await serverWith((req) => {
      signal = callerLeftSignal(req);
      same = callerLeftSignal(req) === signal;
    });
    try {
      const client = request({ host: '127.0.0.1', port, method: 'POST', path: '/' });
      client.on('error', () => undefined);
      client.end('{}');
      for (let i = 0; i < 50 && !signal; i++) await new Promise((r) => setTimeout(r, 10));
      expect(signal, 'the request arrived').to.not.equal(null);
      expect(same).to.equal(true);
      expect((signal as unknown as AbortSignal).aborted).to.equal(false);
      // A retried batch's items all wait on it at once: no leak warning for a hundred listeners.
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(w.name);
      process.on('warning', onWarning);
      // One listener per waiting item (an EventTarget keeps one of identical listeners).
      const listeners = Array.from({ length: 100 }, () => () => undefined);
      for (const l of listeners) (signal as unknown as AbortSignal).addEventListener('abort', l);
      await new Promise((r) => setTimeout(r, 20));
      process.off('warning', onWarning);
      for (const l of listeners) (signal as unknown as AbortSignal).removeEventListener('abort', l);
      expect(warnings).to.deep.equal([]);
      const aborted = new Promise<void>((resolve) => (signal as unknown as AbortSignal).addEventListener('abort', () => resolve()));
      client.destroy();
      await Promise.race([aborted, new Promise((_, reject) => setTimeout(() => reject(new Error('the signal did not abort')), 2_000))]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('does not abort once the answer was written and the response closed', async () => {
    let signal: AbortSignal | null = null;
    const { server, port } = await serverWith((req, res) => {
      signal = callerLeftSignal(req);
      res.end('ok');
    });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const client = request({ host: '127.0.0.1', port, method: 'GET', path: '/', agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        client.on('error', reject);
        client.end();
      });
      expect(status).to.equal(200);
      await new Promise((r) => setTimeout(r, 50));
      expect((signal as unknown as AbortSignal).aborted).to.equal(false);
    } finally {
      server.close();
    }
  });
});
