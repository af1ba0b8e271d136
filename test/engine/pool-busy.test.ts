import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { engineError, fixture, harness, policy, stage } from './harness';
import type { Harness } from './harness';

const TIMEOUT_MS = 200;

/** Value of pricing_function_calls_total for one function and outcome. */
async function calls(h: Harness, label: string, outcome: string): Promise<number> {
  const data = await h.metrics.registry.getSingleMetric('pricing_function_calls_total')?.get();
  return data?.values.find((v) => v.labels.function === label && v.labels.outcome === outcome)?.value ?? 0;
}

describe('engine: a busy pool is not the function\'s failure', function () {
  this.timeout(20_000);
  let h: Harness;
  let upstream: Server;
  let upstreamUrl: string;

  before(async () => {
    upstream = createServer((_req, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify({ price: 12.5, currency: 'USD', confidence: 0.7 })));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/price`;
    h = await harness({
      functions: [fixture('test-ok'), fixture('test-alpha'), fixture('test-beta'), fixture('test-slow'), fixture('test-remote', { executionType: 'external_api', endpointUrl: upstreamUrl })],
      engine: { functionTimeoutMs: TIMEOUT_MS, cacheTtlMs: 0, breakerMinCalls: 1, breakerFailureRatio: 0.5 },
      outbound: { allowList: ['127.0.0.1'] },
    });
  });
  after(async () => {
    await h.close();
    await new Promise((resolve) => upstream.close(resolve));
  });

  /** Keeps the only worker busy for `ms`. */
  const holdWorker = (ms: number) => h.parts.pool.run('test-slow', { sleep_ms: ms }, 10_000);

  it('a call no worker could start in time answers service_busy, records no latency or breaker failure, and skips the other built-ins', async () => {
    const held = holdWorker(TIMEOUT_MS * 4);
    const started = performance.now();
    const err = await engineError(h.price({ policy: policy('cheapest', { candidates: ['fn_test_ok'] }, { fallback_chain: ['fn_test_alpha'], fallback_function: 'fn_test_beta' }) }), 'service_busy');
    // One wait for a worker, not one per fallback.
    expect(performance.now() - started).to.be.below(TIMEOUT_MS * 3);
    expect(err.message).to.equal('Every pricing worker was busy: no function could be run in time.');
    expect(err.details.attempts?.map((a) => [a.function, a.role, a.outcome, a.error])).to.deep.equal([
      ['test-ok', 'chosen', 'pool_busy', `No pricing worker was free to start the call within ${TIMEOUT_MS} ms.`],
      ['test-alpha', 'fallback_chain', 'skipped', 'pricing pool busy'],
      ['test-beta', 'fallback_function', 'skipped', 'pricing pool busy'],
    ]);
    // With one call as the breaker's minimum, a counted failure would have opened it.
    expect(h.parts.breakers.view('fn_test_ok')).to.include({ state: 'closed', calls: 0, failures: 0 });
    expect(h.parts.latency.snapshot('fn_test_ok').samples).to.equal(0);
    expect(await calls(h, 'fn_test_ok', 'pool_busy')).to.equal(1);
    expect(await calls(h, 'fn_test_ok', 'timeout')).to.equal(0);
    expect((await held).ok).to.equal(true);
    // The worker is free again: the same call answers.
    const out = await h.price({ pin: { name: 'test-ok' } });
    expect(out.fn.name).to.equal('test-ok');
    expect(h.parts.breakers.view('fn_test_ok')).to.include({ state: 'closed', calls: 1, failures: 0 });
  });

  it('an external function in the fallbacks still answers while the pool is busy, as a fallback', async () => {
    const held = holdWorker(TIMEOUT_MS * 4);
    const out = await h.price({ policy: policy('cheapest', { candidates: ['fn_test_alpha'] }, { fallback_chain: ['fn_test_beta', 'fn_test_remote'] }) });
    expect(out.fn.name).to.equal('test-remote');
    expect(out.result.price).to.equal('12.50');
    expect(out.fallbackUsed).to.equal(true);
    expect(out.attempts.map((a) => [a.function, a.outcome])).to.deep.equal([
      ['test-alpha', 'pool_busy'],
      ['test-beta', 'skipped'],
      ['test-remote', 'ok'],
    ]);
    expect(stage(out, 'fallback')).to.include({ used: true, from: 'test-alpha', to: 'test-remote' });
    expect(h.parts.breakers.view('fn_test_alpha')).to.include({ calls: 0, failures: 0 });
    await held;
  });

  it('a strategy\'s own external alternate answers while the pool is busy (a call the pool never ran is no failure that ends the strategy\'s order)', async () => {
    const held = holdWorker(TIMEOUT_MS * 4);
    // Weighted so heavily that the built-in is chosen; the external function is the strategy's alternate.
    const out = await h.price({ policy: policy('weighted', { weights: { fn_test_alpha: 1_000_000, fn_test_remote: 0.000001 } }) });
    expect(out.fn.name).to.equal('test-remote');
    expect(out.attempts.map((a) => [a.function, a.role, a.outcome])).to.deep.equal([
      ['test-alpha', 'chosen', 'pool_busy'],
      ['test-remote', 'alternate', 'ok'],
    ]);
    expect(out.fallbackUsed).to.equal(true);
    await held;
  });
});
