import { expect } from 'chai';
import type { CandidateReport, PriceOutcome } from '../../engine';
import { CALLER_WS, engineError, fixture, harness, policy, recordLatency, stage } from './harness';
import type { Harness } from './harness';

const candidatesOf = (out: PriceOutcome) => stage(out, 'route').candidates as CandidateReport[];

describe('engine: cost and latency ceilings', function () {
  this.timeout(20_000);
  let h: Harness;

  beforeEach(async () => {
    h = await harness({
      functions: [
        fixture('test-alpha', { costPerUnit: '0.001' }),
        fixture('test-beta', { costPerUnit: '0.002', costMultiplier: '3' }),
        fixture('test-gamma', { costPerUnit: '0.004' }),
        fixture('test-ok', { costPerUnit: '0.05' }),
        fixture('test-flaky'),
        fixture('test-throw', { status: 'draft', workspaceId: CALLER_WS }),
      ],
      engine: { breakerMinCalls: 2 },
    });
  });
  afterEach(() => h.close());

  it('config.max_cost_per_unit removes functions whose cost per call (× multiplier) is above it', async () => {
    recordLatency(h, 'fn_test_alpha', 50);
    recordLatency(h, 'fn_test_beta', 1);
    recordLatency(h, 'fn_test_gamma', 20);
    // beta is fastest but costs 0.002 × 3 = 0.006.
    const out = await h.price({ policy: policy('fastest', { candidates: ['test-alpha', 'test-beta', 'test-gamma'], max_cost_per_unit: '0.005', tie_band_pct: 0 }) });
    expect(out.fn.name).to.equal('test-gamma');
    expect(candidatesOf(out).find((c) => c.function === 'test-beta')).to.include({ kept: false, reason: 'cost ceiling', detail: '0.006 > 0.005' });
    expect(out.decision?.eligible.map((f) => f.name)).to.deep.equal(['test-alpha', 'test-gamma']);
  });

  it('config.max_latency_ms removes functions whose windowed p50 is above it; an untimed function stays', async () => {
    recordLatency(h, 'fn_test_alpha', 500);
    recordLatency(h, 'fn_test_gamma', 20);
    // alpha is the cheapest but too slow; beta has no data and is not excluded; gamma (0.004) beats beta (0.006).
    const out = await h.price({ policy: policy('cheapest', { candidates: ['test-alpha', 'test-beta', 'test-gamma'], max_latency_ms: 100 }) });
    expect(out.fn.name).to.equal('test-gamma');
    const reports = candidatesOf(out);
    expect(reports.find((c) => c.function === 'test-alpha')).to.include({ kept: false, reason: 'latency ceiling', detail: 'p50 500 ms > 100 ms' });
    expect(reports.find((c) => c.function === 'test-beta')).to.include({ kept: true, latency_p50_ms: 'no data' });
  });

  it('when the ceilings exclude every candidate it throws no_eligible_function and runs nothing', async () => {
    const err = await engineError(h.price({ policy: policy('cheapest', { candidates: ['test-beta', 'test-ok'], max_cost_per_unit: '0.001' }) }), 'no_eligible_function');
    expect(err.details.strategy).to.equal('cheapest');
    expect((err.details.candidates ?? []).map((c) => [c.function, c.kept, c.reason])).to.deep.equal([
      ['test-beta', false, 'cost ceiling'],
      ['test-ok', false, 'cost ceiling'],
    ]);
    const calls = await h.metrics.registry.getSingleMetric('pricing_function_calls_total')?.get();
    expect(calls?.values ?? []).to.deep.equal([]);
  });

  it('a candidate over both ceilings says so (also), so raising one alone is not taken for enough', async () => {
    recordLatency(h, 'fn_test_ok', 500);
    const err = await engineError(h.price({ policy: policy('cheapest', { candidates: ['test-ok'], max_cost_per_unit: '0.001', max_latency_ms: 100 }) }), 'no_eligible_function');
    expect(err.details.candidates?.[0]).to.deep.include({ reason: 'cost ceiling', detail: '0.05 > 0.001', also: [{ reason: 'latency ceiling', detail: 'p50 500 ms > 100 ms' }] });
  });

  it('when the ceilings exclude every candidate the policy\'s fallbacks are tried, held to the same ceilings: one within them answers, one above is skipped', async () => {
    const p = policy('cheapest', { candidates: ['test-beta', 'test-ok'], max_cost_per_unit: '0.001' }, { fallback_chain: ['test-gamma'], fallback_function: 'test-alpha' });
    const out = await h.price({ policy: p });
    expect(out.fn.name).to.equal('test-alpha');
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}:${a.error ?? ''}`)).to.deep.equal(['test-gamma:fallback_chain:skipped:cost ceiling (0.004 > 0.001)', 'test-alpha:fallback_function:ok:']);
    // Above the ceiling, the only fallback is skipped, and the exclusion is the answer: nothing is paid for in spite of it.
    const err = await engineError(h.price({ policy: policy('cheapest', { candidates: ['test-beta'], max_cost_per_unit: '0.001' }, { fallback_function: 'test-ok' }) }), 'no_eligible_function');
    expect((err.details.attempts ?? []).map((a) => `${a.function}:${a.error ?? ''}`)).to.deep.equal(['test-ok:cost ceiling (0.05 > 0.001)']);
  });

  it('the latency ceiling holds back a fallback as the cost ceiling does: a function above it is skipped, never silently waited for', async () => {
    recordLatency(h, 'fn_test_ok', 900);
    recordLatency(h, 'fn_test_alpha', 20);
    const p = policy('cheapest', { candidates: ['test-flaky'], max_latency_ms: 100 }, { fallback_chain: ['test-ok', 'test-alpha'] });
    const out = await h.price({ policy: p, context: { fail: true } });
    expect(out.fn.name).to.equal('test-alpha');
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-flaky:chosen:failed', 'test-ok:fallback_chain:skipped', 'test-alpha:fallback_chain:ok']);
    expect(out.attempts[1]?.error).to.equal('latency ceiling (p50 900 ms > 100 ms)');
  });

  it('a function excluded by the latency ceiling because it failed fast says so: its failures count as the timeout', async () => {
    // Its own engine, whose breakers stay closed: test-flaky fails at once, each failure recorded at the function timeout (1000 ms).
    const own = await harness({ functions: [fixture('test-flaky'), fixture('test-alpha'), fixture('test-gamma', { costPerUnit: '0.004' })], engine: { breakerMinCalls: 1000, cacheTtlMs: 0 } });
    try {
      const fail = () => own.price({ pin: { name: 'test-flaky' }, context: { fail: true }, policy: policy('default', {}, { fallback_function: 'test-alpha' }) });
      for (let i = 0; i < 3; i++) await fail();
      expect(own.parts.latency.snapshot('fn_test_flaky').p50_ms).to.equal(1000);
      recordLatency(own, 'fn_test_gamma', 20);
      const out = await own.price({ policy: policy('cheapest', { candidates: ['test-flaky', 'test-gamma'], max_latency_ms: 500 }) });
      expect(out.fn.name).to.equal('test-gamma');
      expect(candidatesOf(out).find((c) => c.function === 'test-flaky')).to.include({ kept: false, reason: 'latency ceiling', detail: 'p50 1000 ms > 500 ms (failures count as the timeout)' });
      // A fallback held back by the ceiling reads the same; a function slow without failing reads as before.
      recordLatency(own, 'fn_test_alpha', 800);
      const fell = await own.price({ pin: { name: 'test-flaky' }, context: { fail: true }, policy: policy('default', { max_latency_ms: 500 }, { fallback_chain: ['test-alpha', 'test-flaky', 'test-gamma'] }) });
      expect(fell.fn.name).to.equal('test-gamma');
      expect(fell.attempts.map((a) => a.error ?? a.outcome)).to.deep.equal(['test-flaky failed on request', 'latency ceiling (p50 800 ms > 500 ms)', 'already tried in this call', 'ok']);
      const err = await engineError(own.price({ pin: { name: 'test-gamma' }, context: { test_price: 'bad' }, policy: policy('default', { max_latency_ms: 500 }, { fallback_chain: ['test-flaky'] }) }), 'functions_failed');
      expect(err.details.attempts?.[1]?.error).to.equal('latency ceiling (p50 1000 ms > 500 ms (failures count as the timeout))');
    } finally {
      await own.close();
    }
  });

  it('lists each excluded candidate with its reason: cost ceiling, latency ceiling, breaker open, rule miss, unreachable, not active', async () => {
    recordLatency(h, 'fn_test_gamma', 900);
    h.parts.breakers.record('fn_test_flaky', CALLER_WS, false);
    h.parts.breakers.record('fn_test_flaky', CALLER_WS, false);
    const p = policy('policy', {
      rules: [
        { when: { x: 1 }, use: 'test-ok' },
        { when: { x: 2 }, use: 'test-gamma' },
        { when: { x: 3 }, use: 'test-flaky' },
        { when: { x: 4 }, use: 'nowhere' },
        { when: { x: 5 }, use: 'test-throw' },
      ],
      default_function: 'test-alpha',
      max_cost_per_unit: '0.01',
      max_latency_ms: 100,
    });
    // Rule 0 holds but its function is above the cost ceiling: no silent pick of another function.
    const err = await engineError(h.price({ policy: p, context: { x: 1 } }), 'no_eligible_function');
    expect(err.message).to.match(/Rule 0 matched/);
    const byName = Object.fromEntries((err.details.candidates ?? []).map((c) => [c.function, c.reason]));
    expect(byName).to.deep.equal({
      'test-ok': 'cost ceiling',
      'test-gamma': 'latency ceiling',
      'test-flaky': 'breaker open',
      nowhere: 'unreachable',
      'test-throw': 'not active',
      'test-alpha': 'rule miss',
    });
    expect((err.details.candidates ?? []).every((c) => !c.kept)).to.equal(true);
    // test-flaky's breaker will let a trial through, but this context goes to test-ok: no retry time, and only test-ok's
    // reason is a lever.
    expect(err.details.retryAfterS).to.equal(undefined);
    expect((err.details.decisive ?? []).map((c) => c.reason)).to.deep.equal(['cost ceiling']);
    // The context rule 2 sends to test-flaky: only its breaker keeps it out, so the answer is the wait (a 502 a retry
    // after the breaker's trial may see answered), still listing every candidate and why.
    const flaky = await engineError(h.price({ policy: p, context: { x: 3 } }), 'functions_failed');
    expect(flaky.message).to.match(/^Rule 2 matched, but its function test-flaky is not eligible \(breaker open\); default_function applies only when no rule matches\. The first lets a trial call through in \d+ s\.$/);
    expect(flaky.details.retryAfterS).to.be.a('number').and.at.least(1);
    expect((flaky.details.candidates ?? []).map((c) => c.reason)).to.include.members(['cost ceiling', 'breaker open', 'unreachable']);
  });
});
