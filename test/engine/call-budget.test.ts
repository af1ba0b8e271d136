import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { engineError, fixture, harness, policy } from './harness';
import type { Harness } from './harness';

const BUDGET_MS = 700;
const OWN_TIMEOUT_MS = 500;

describe("engine: one call's time budget (COMPUTE_CALL_MAX_MS)", function () {
  this.timeout(20_000);
  let h: Harness;
  let upstream: Server;

  before(async () => {
    // An endpoint that never answers.
    upstream = createServer(() => undefined);
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/hang`;
    const hanging = (name: string) => fixture(name, { executionType: 'external_api', endpointUrl: url, timeoutMs: OWN_TIMEOUT_MS });
    h = await harness({
      functions: [hanging('test-hang-one'), hanging('test-hang-two'), fixture('test-ok')],
      engine: { cacheTtlMs: 0, breakerMinCalls: 1, breakerFailureRatio: 0.5, callMaxMs: BUDGET_MS },
      outbound: { allowList: ['127.0.0.1'] },
    });
  });
  after(async () => {
    await h.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });

  it('bounds the attempts of one call: the second hanging function gets the time left, the rest are skipped, and the answer is the retryable 502', async () => {
    const started = performance.now();
    const err = await engineError(h.price({ pin: { name: 'test-hang-one' }, policy: policy('default', {}, { fallback_chain: ['test-hang-two'], fallback_function: 'test-ok' }) }), 'functions_failed');
    const took = performance.now() - started;
    expect(took, 'the call ends with its budget, not after two own timeouts').to.be.below(BUDGET_MS + 250);
    expect(took).to.be.at.least(BUDGET_MS - 20);
    const attempts = err.details.attempts ?? [];
    expect(attempts.map((a) => [a.function, a.role, a.outcome])).to.deep.equal([
      ['test-hang-one', 'chosen', 'failed'],
      ['test-hang-two', 'fallback_chain', 'failed'],
      ['test-ok', 'fallback_function', 'skipped'],
    ]);
    expect(attempts[0]?.error).to.equal(`The endpoint did not answer within ${OWN_TIMEOUT_MS} ms.`);
    expect(attempts[0]).to.not.have.property('cut_by_budget');
    expect(attempts[1]?.error).to.match(/^The endpoint did not answer within \d+ ms\. The call's time budget \(COMPUTE_CALL_MAX_MS, 700 ms\) left it \d+ ms of its 500 ms\.$/);
    expect(attempts[1]).to.include({ cut_by_budget: true });
    expect(attempts[2]).to.include({ error: 'call time budget spent', ms: 0 });
    expect(err.details.permanent).to.equal(undefined);
    expect(err.message).to.equal('Every function tried failed (the function named in the request, the fallback chain).');
    // The function that timed out on its own limit failed; the one cut short by the budget was not given its time.
    expect(h.parts.breakers.view('fn_test_hang_one')).to.include({ calls: 1, failures: 1 });
    expect(h.parts.breakers.view('fn_test_hang_two')).to.include({ calls: 0, failures: 0 });
    expect(h.parts.latency.snapshot('fn_test_hang_two').samples).to.equal(0);
  });

  it('counts a function whose own limit is the whole budget as failing when it hangs: a first attempt is never cut short by routing time', async () => {
    const own = await harness({
      functions: [fixture('test-hang-whole', { executionType: 'external_api', endpointUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/hang`, timeoutMs: BUDGET_MS })],
      engine: { cacheTtlMs: 0, breakerMinCalls: 2, breakerFailureRatio: 0.5, callMaxMs: BUDGET_MS },
      outbound: { allowList: ['127.0.0.1'] },
    });
    try {
      for (let i = 0; i < 2; i++) {
        const err = await engineError(own.price({ pin: { name: 'test-hang-whole' } }), 'functions_failed');
        expect(err.details.attempts?.[0]).to.not.have.property('cut_by_budget');
        expect(err.details.attempts?.[0]?.error).to.equal(`The endpoint did not answer within ${BUDGET_MS} ms.`);
      }
      expect(own.parts.breakers.view('fn_test_hang_whole')).to.include({ calls: 2, failures: 2, state: 'open' });
      // One workspace's failures are one latency sample, its latest.
      expect(own.parts.latency.snapshot('fn_test_hang_whole').samples).to.equal(1);
    } finally {
      await own.close();
    }
  });

  it('gives every call its own budget', async () => {
    const out = await h.price({ pin: { name: 'test-ok' } });
    expect(out.fn.name).to.equal('test-ok');
  });
});
