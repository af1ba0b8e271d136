import { expect } from 'chai';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { probePlugin } from '../support/probe-plugin';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';

/** A socket to the service, and everything it reads until the server closes it. */
function open(port: number): { socket: Socket; answer: Promise<{ text: string; ms: number }> } {
  const started = Date.now();
  const socket = connect(port, '127.0.0.1');
  const answer = new Promise<{ text: string; ms: number }>((resolve) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ text, ms: Date.now() - started }));
  });
  return { socket, answer };
}

/** Sends `start`, then `piece` every `everyMs` until the server closes the connection; what it answered. */
async function trickle(port: number, start: string, piece: string, everyMs: number): Promise<{ text: string; ms: number }> {
  const c = open(port);
  c.socket.write(start);
  const drip = setInterval(() => c.socket.writable && c.socket.write(piece), everyMs);
  try {
    return await c.answer;
  } finally {
    clearInterval(drip);
  }
}

describe('kernel HTTP server: slow callers and connection count', function () {
  this.timeout(20_000);
  let svc: TestService;
  let port: number;
  before(async () => {
    svc = await startTestService({ extraPlugins: [probePlugin()], enabled: ['health', 'probe'], config: { server: { headersTimeoutMs: 800, requestTimeoutMs: 1500, keepAliveTimeoutMs: 500, maxConnections: 3 } } });
    port = Number(new URL(svc.url).port);
  });
  after(() => svc.close());

  it('cuts a body that trickles in past REQUEST_TIMEOUT_MS with 408 request_timeout, and headers that trickle past HEADERS_TIMEOUT_MS', async () => {
    const slowBody = await trickle(port, 'POST /probe/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{', ' ', 200);
    expect(slowBody.text).to.match(/^HTTP\/1.1 408 /);
    expect(slowBody.text).to.contain('"code":"request_timeout"');
    expect(slowBody.ms).to.be.within(1400, 6000);

    const slowHead = await trickle(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', 'X-Slow: 1\r\n', 100);
    expect(slowHead.text).to.match(/^HTTP\/1.1 408 /);
    expect(slowHead.ms).to.be.within(700, 6000);
  });

  it('closes connections past MAX_CONNECTIONS at once, and serves again when one is free', async () => {
    const held = [open(port), open(port), open(port)];
    await new Promise((r) => setTimeout(r, 100));
    const extra = open(port);
    const dropped = await extra.answer;
    expect(dropped.text, 'no answer: the connection is closed').to.equal('');
    expect(dropped.ms).to.be.below(1000);
    for (const h of held) h.socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`${svc.url}/healthz`);
    expect(res.status).to.equal(200);
  });

  it('refuses to start with HEADERS_TIMEOUT_MS above REQUEST_TIMEOUT_MS, naming both', async () => {
    const err = await startTestService({ enabled: ['health'], config: { server: { headersTimeoutMs: 2000, requestTimeoutMs: 1000 } } }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.contain('HEADERS_TIMEOUT_MS (2000) is above REQUEST_TIMEOUT_MS (1000)');
  });
});
