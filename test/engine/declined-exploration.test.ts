import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixture, harness, policy } from './harness';
import type { Harness } from './harness';

/**
 * An endpoint that declines every context (here a 404, as one registered at a wrong path answers) leaves no latency
 * sample, by design: the caller's context chose the refusal. It must not stay cold for `fastest` forever, explored
 * first on every call at the price of a round trip.
 */
describe('engine: fastest and an endpoint that declines every context', function () {
  this.timeout(20_000);
  let h: Harness;
  let upstream: Server;

  before(async () => {
    upstream = createServer((_req, res) => {
      res.statusCode = 404;
      res.end('{"error":"no such product"}');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/price`;
    h = await harness({
      functions: [fixture('test-decliner', { executionType: 'external_api', endpointUrl: url, timeoutMs: 1000 }), fixture('test-ok')],
      engine: { cacheTtlMs: 0, latencyColdBelow: 3 },
      outbound: { allowList: ['127.0.0.1'] },
    });
  });
  after(async () => {
    await h.close();
    await new Promise((resolve) => upstream.close(resolve));
  });

  it('counts its declines as explorations: once explored as often as a cold function needs, it is tried after the functions with a latency, not first', async () => {
    const fastest = policy('fastest', { candidates: ['test-decliner', 'test-ok'] });
    const firsts: string[] = [];
    for (let i = 0; i < 12; i++) {
      const out = await h.price({ context: { current_price: 10 }, policy: fastest });
      expect(out.fn.name).to.equal('test-ok');
      firsts.push(out.attempts[0]?.function ?? '');
    }
    // At most LATENCY_COLD_BELOW explorations of the decliner (while it is cold), then test-ok first on every call.
    expect(firsts.filter((f) => f === 'test-decliner').length).to.be.at.most(3);
    expect(firsts.slice(-6)).to.deep.equal(Array(6).fill('test-ok'));
    const snap = h.parts.latency.snapshot('fn_test_decliner');
    expect(snap).to.include({ samples: 0, p50_ms: null, cold: false });
  });
});
