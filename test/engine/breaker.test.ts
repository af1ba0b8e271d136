import { expect } from 'chai';
import type { CandidateReport } from '../../engine';
import { breakerGauge, CALLER_WS, engineError, fixture, harness, policy, SCOPE, stage } from './harness';
import type { Harness } from './harness';

const COOLDOWN_MS = 10_000;
const FAIL = { fail: true };

describe('engine: circuit breaker', function () {
  this.timeout(20_000);
  let h: Harness;

  beforeEach(async () => {
    h = await harness({
      functions: [fixture('test-flaky', { costPerUnit: '0.001' }), fixture('test-ok', { costPerUnit: '0.002' }), fixture('test-slow')],
      engine: { breakerMinCalls: 4, breakerFailureRatio: 0.5, breakerCooldownMs: COOLDOWN_MS, breakerWindowMs: 60_000, cacheTtlMs: 0 },
    });
  });
  afterEach(() => h.close());

  /** Pinned to test-flaky with test-ok as the policy's fallback function. */
  const callFlaky = (context: Record<string, unknown>) => h.price({ pin: { name: 'test-flaky' }, context, policy: policy('default', {}, { fallback_function: 'test-ok' }) });
  const state = () => h.parts.breakers.state('fn_test_flaky');

  async function open(): Promise<void> {
    for (let i = 0; i < 4; i++) await callFlaky(FAIL);
    expect(state()).to.equal('open');
  }

  it('shows every built-in\'s breaker (closed, 0) and its fallback and cache-hit counters (0) before any call: alerts read 0, not no data', async () => {
    for (const name of ['cost-plus', 'competitive-position', 'elasticity-optimum', 'charm-pricing', 'anchored-adjustment']) {
      expect(await breakerGauge(h.metrics, name), name).to.equal(0);
      for (const metric of ['pricing_fallbacks_total', 'pricing_cache_hits_total']) {
        const values = (await h.metrics.registry.getSingleMetric(metric)?.get())?.values ?? [];
        expect(values.find((v) => v.labels.function === name)?.value, `${metric} ${name}`).to.equal(0);
      }
    }
    // A workspace function appears with its first call, as before.
    expect(await breakerGauge(h.metrics, 'fn_test_flaky')).to.equal(undefined);
  });

  it('stays closed below minCalls, then opens once the failure ratio is reached', async () => {
    for (let i = 0; i < 3; i++) await callFlaky(FAIL);
    expect(state()).to.equal('closed');
    expect(await breakerGauge(h.metrics, 'fn_test_flaky')).to.not.equal(2);
    await callFlaky(FAIL);
    expect(state()).to.equal('open');
    expect(await breakerGauge(h.metrics, 'fn_test_flaky')).to.equal(2);
    expect(h.parts.breakers.view('fn_test_flaky')).to.include({ state: 'open', calls: 4, failures: 4 });
  });

  it('never opens on a success: failures below minCalls then an answer keep it closed (the function is answering again); the next failure opens it', async () => {
    for (let i = 0; i < 3; i++) await callFlaky(FAIL);
    const answered = await callFlaky({ unit_cost: 2 });
    expect(answered.fn.name).to.equal('test-flaky');
    // The window now holds 3 failures in 4 calls, over the ratio: still no reason to shut callers out on an answer.
    expect(state()).to.equal('closed');
    expect(h.parts.breakers.view('fn_test_flaky')).to.include({ state: 'closed', calls: 4, failures: 3 });
    await callFlaky(FAIL);
    expect(state()).to.equal('open');
  });

  it('test runs (POST /api/functions/{id}/test) neither open the breaker nor add latency samples: anyone may test a public function', async () => {
    const fn = h.parts.registry.resolve('test-flaky', { workspaceId: 'ws_test', builtInsOnly: false }, 'name');
    if (!fn) throw new Error('test-flaky is not registered');
    for (let i = 0; i < 8; i++) expect((await h.parts.engine.test(fn, FAIL, null, 'ws_test')).ok).to.equal(false);
    expect(state()).to.equal('closed');
    expect(h.parts.breakers.view('fn_test_flaky')).to.include({ calls: 0, failures: 0 });
    // The same failures routed for real do open it.
    await open();
  });

  it('does not open while the failure share stays below the ratio', async () => {
    await callFlaky(FAIL);
    for (let i = 0; i < 4; i++) await callFlaky({});
    await callFlaky(FAIL);
    expect(state()).to.equal('closed');
  });

  it('an open breaker removes its function from routing, with reason "breaker open"', async () => {
    await open();
    const out = await h.price({ policy: policy('cheapest', { candidates: ['test-flaky', 'test-ok'] }) });
    expect(out.fn.name).to.equal('test-ok');
    const reports = stage(out, 'route').candidates as CandidateReport[];
    expect(reports.find((c) => c.function === 'test-flaky')).to.include({ kept: false, reason: 'breaker open' });
  });

  it('an open breaker skips a pinned function without calling it; the fallback answers', async () => {
    await open();
    const calls = async () => (await h.metrics.registry.getSingleMetric('pricing_function_calls_total')?.get())?.values.filter((v) => v.labels.function === 'fn_test_flaky').reduce((s, v) => s + v.value, 0);
    const before = await calls();
    expect(before, 'the calls that opened it were counted').to.be.above(0);
    const out = await callFlaky({});
    expect(out.fn.name).to.equal('test-ok');
    expect(out.attempts[0]).to.include({ function: 'test-flaky', outcome: 'skipped', error: 'breaker open' });
    expect(await calls()).to.equal(before);
  });

  it('a call with nothing to run but functions behind open breakers says when the first lets a trial through', async () => {
    await open();
    const err = await engineError(h.price({ pin: { name: 'test-flaky' }, context: {}, policy: policy('default', {}, {}) }), 'functions_failed');
    expect(err.details.attempts?.map((a) => [a.function, a.outcome, a.error])).to.deep.equal([['test-flaky', 'skipped', 'breaker open']]);
    expect(err.details.retryAfterS).to.be.within(1, COOLDOWN_MS / 1000);
    expect(err.message).to.equal(`Every function that could answer has its circuit breaker open after recent failures; the first lets a trial call through in ${err.details.retryAfterS} s.`);
  });

  it('a routed call whose only candidate is behind an open breaker gets the pinned call\'s answer: functions_failed with retry_after, listing each candidate', async () => {
    const routed = policy('priority', { order: ['test-flaky'] });
    // Its failures open the breaker as a pinned call's do: the opening call already names the wait.
    for (let i = 0; i < 3; i++) await engineError(h.price({ policy: routed, context: FAIL }), 'functions_failed');
    const opening = await engineError(h.price({ policy: routed, context: FAIL }), 'functions_failed');
    expect(state()).to.equal('open');
    expect(opening.details.retryAfterS).to.equal(COOLDOWN_MS / 1000);
    h.clock.advance(3_000);
    // Routing now leaves it out: still the transient answer (not a 422 the caller should change the call for), with the candidates.
    const kept = await engineError(h.price({ policy: routed, context: FAIL }), 'functions_failed');
    expect(kept.details.retryAfterS).to.equal(COOLDOWN_MS / 1000 - 3);
    expect((kept.details.candidates ?? []).map((c) => [c.function, c.reason])).to.deep.equal([['test-flaky', 'breaker open']]);
    expect(kept.details.attempts).to.deep.equal([]);
    expect(kept.details).to.include({ strategy: 'priority', policyId: 'rp_test' });
    expect(kept.message).to.equal(`No candidate function can run under strategy priority now: test-flaky has its circuit breaker open after recent failures. The first lets a trial call through in ${COOLDOWN_MS / 1000 - 3} s.`);
  });

  it('every candidate excluded, one by a ceiling and one by its open breaker: the wait is the answer; by ceilings alone it stays no_eligible_function', async () => {
    await open();
    const both = policy('cheapest', { candidates: ['test-flaky', 'test-ok'], max_cost_per_unit: '0.0015' });
    const waiting = await engineError(h.price({ policy: both }), 'functions_failed');
    expect((waiting.details.candidates ?? []).map((c) => [c.function, c.reason])).to.deep.equal([['test-flaky', 'breaker open'], ['test-ok', 'cost ceiling']]);
    expect(waiting.details.retryAfterS).to.be.within(1, COOLDOWN_MS / 1000);
    expect(waiting.message).to.match(/^No candidate function can run under strategy cheapest now: test-flaky has its circuit breaker open after recent failures; every other candidate is excluded \(candidates gives each reason\)\. The first lets a trial call through in \d+ s\.$/);
    // The ceilings alone: no retry changes that.
    const ceiled = await engineError(h.price({ policy: policy('cheapest', { candidates: ['test-ok'], max_cost_per_unit: '0.0015' }) }), 'no_eligible_function');
    expect(ceiled.details.retryAfterS).to.equal(undefined);
    // A fallback behind its breaker is a wait too: once it lets a trial through, it runs.
    const fellBack = await engineError(h.price({ policy: policy('cheapest', { candidates: ['test-ok'], max_cost_per_unit: '0.0015' }, { fallback_function: 'test-flaky' }) }), 'functions_failed');
    expect(fellBack.details.attempts?.map((a) => [a.function, a.role, a.error])).to.deep.equal([['test-flaky', 'fallback_function', 'breaker open']]);
    expect(fellBack.details.retryAfterS).to.be.within(1, COOLDOWN_MS / 1000);
    expect(fellBack.message).to.match(/^No candidate function is eligible under strategy cheapest\. Nor could a fallback of the policy run: test-flaky \(breaker open\)\. The first lets a trial call through in \d+ s\.$/);
  });

  it('the call whose failure opens the breaker says when a trial is let through, as the calls after it do; the failures before it name no wait', async () => {
    const alone = () => engineError(h.price({ pin: { name: 'test-flaky' }, context: FAIL, policy: policy('default', {}, {}) }), 'functions_failed');
    for (let i = 0; i < 3; i++) {
      const before = await alone();
      expect(before.details.retryAfterS, `failure ${i + 1}, breaker closed`).to.equal(undefined);
    }
    const opening = await alone();
    expect(state()).to.equal('open');
    expect(opening.details.attempts?.map((a) => [a.function, a.outcome])).to.deep.equal([['test-flaky', 'failed']]);
    expect(opening.details.retryAfterS).to.equal(COOLDOWN_MS / 1000);
    expect(opening.message).to.equal(`Every function tried failed (the function named in the request), each now behind an open circuit breaker: the soonest in ${COOLDOWN_MS / 1000} s.`);
    h.clock.advance(4_000);
    const next = await alone();
    expect(next.details.retryAfterS).to.equal(COOLDOWN_MS / 1000 - 4);
  });

  it('a routed context no function could price answers 422 in every breaker state, naming the function that failed or is behind its breaker', async () => {
    const routed = policy('default', { candidates: ['cost-plus', 'test-flaky'] });
    const call = () => engineError(h.price({ policy: routed, context: FAIL }), 'insufficient_context');
    for (let i = 0; i < 4; i++) expect((await call()).message, `call ${i + 1}, breaker closed`).to.match(/^The context cannot be priced by cost-plus, and test-flaky failed: cost-plus: .+ test-flaky: test-flaky failed on request/);
    expect(state()).to.equal('open');
    const kept = await call();
    expect(kept.message).to.match(/^The context cannot be priced by cost-plus, and test-flaky is behind an open circuit breaker: /);
    expect(kept.details.missing).to.include('unit_cost');
    h.clock.advance(COOLDOWN_MS);
    expect(state()).to.equal('half_open');
    const trial = await call();
    expect(trial.message).to.match(/^The context cannot be priced by cost-plus, and test-flaky failed: /);
    expect(state()).to.equal('open');
  });

  it('half-opens after the cooldown and lets one trial through; its success closes the breaker', async () => {
    await open();
    h.clock.advance(COOLDOWN_MS - 1);
    expect(state()).to.equal('open');
    h.clock.advance(1);
    expect(state()).to.equal('half_open');
    expect(await breakerGauge(h.metrics, 'fn_test_flaky'), 'the gauge reads half-open too').to.equal(1);
    // Two calls at once: the first is the trial, the second is still kept away.
    const [trial, second] = await Promise.all([callFlaky({}), callFlaky({})]);
    expect(trial.fn.name).to.equal('test-flaky');
    expect(second.fn.name).to.equal('test-ok');
    expect(second.attempts[0]).to.include({ outcome: 'skipped', error: 'breaker open' });
    expect(state()).to.equal('closed');
    expect(await breakerGauge(h.metrics, 'fn_test_flaky')).to.equal(0);
    expect(h.parts.breakers.view('fn_test_flaky')).to.include({ state: 'closed', retry_at: null });
    expect((await callFlaky({})).fn.name).to.equal('test-flaky');
  });

  it('a failed trial opens the breaker again for another cooldown', async () => {
    await open();
    h.clock.advance(COOLDOWN_MS);
    const out = await callFlaky(FAIL);
    expect(out.attempts[0]).to.include({ function: 'test-flaky', outcome: 'failed' });
    expect(state()).to.equal('open');
    expect(await breakerGauge(h.metrics, 'fn_test_flaky')).to.equal(2);
    expect(h.parts.breakers.view('fn_test_flaky').retry_at).to.equal(new Date(h.clock.now() + COOLDOWN_MS).toISOString());
    h.clock.advance(COOLDOWN_MS - 1);
    expect(state()).to.equal('open');
  });

  it('a failed trial after the failures that opened the breaker left the window reads as the failure it is, not an open breaker with 0 calls', async () => {
    await open();
    h.clock.advance(60_001);
    await callFlaky(FAIL);
    expect(state()).to.equal('open');
    expect(h.parts.breakers.view('fn_test_flaky')).to.include({ state: 'open', calls: 1, failures: 1 });
  });

  it('a trial that cannot price its context releases the half-open slot; the next call is the trial', async () => {
    for (let i = 0; i < 4; i++) h.parts.breakers.record('fn_builtin_cost_plus', CALLER_WS, false);
    h.clock.advance(COOLDOWN_MS);
    const fallback = policy('default', {}, { fallback_function: 'test-ok' });
    // No unit_cost: cost-plus is not applicable, which says nothing about its health.
    await engineError(h.price({ pin: { name: 'cost-plus' }, context: { current_price: 5 } }), 'insufficient_context');
    expect(h.parts.breakers.state('fn_builtin_cost_plus')).to.equal('half_open');
    const trial = await h.price({ pin: { name: 'cost-plus' }, context: { unit_cost: 10 }, policy: fallback });
    expect(trial.fn.name).to.equal('cost-plus');
    expect(h.parts.breakers.state('fn_builtin_cost_plus')).to.equal('closed');
  });

  it('failures older than the window no longer count', async () => {
    for (let i = 0; i < 3; i++) await callFlaky(FAIL);
    h.clock.advance(60_001);
    await callFlaky(FAIL);
    expect(state()).to.equal('closed');
    expect(h.parts.breakers.view('fn_test_flaky')).to.include({ calls: 1, failures: 1 });
  });
});

describe('engine: circuit breaker and calls answering late', function () {
  this.timeout(20_000);
  let h: Harness;

  beforeEach(async () => {
    h = await harness({
      functions: [fixture('test-slow')],
      engine: { threads: 3, breakerMinCalls: 2, breakerFailureRatio: 0.5, breakerCooldownMs: COOLDOWN_MS, breakerWindowMs: 60_000, cacheTtlMs: 0, functionTimeoutMs: 3000 },
    });
  });
  afterEach(() => h.close());

  const BAD = { test_price: 'bad' };
  const state = () => h.parts.breakers.state('fn_test_slow');
  const call = (context: Record<string, unknown>) => h.price({ pin: { name: 'test-slow' }, context }).then((o) => o.result.price, (e: Error) => `error: ${e.message}`);
  const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  /**
   * Starts a call while the breaker is closed that answers after 1 s, opens the breaker with two quick failures,
   * half-opens it and starts the trial (answering after 2.5 s): the late call answers while the trial is in flight.
   */
  async function lateCallDuringTrial(late: Record<string, unknown>, trialContext: Record<string, unknown>): Promise<{ late: Promise<string>; trial: Promise<string> }> {
    let lateDone = false;
    const pending = call({ ...late, sleep_ms: 1000 }).finally(() => {
      lateDone = true;
    });
    await tick(50);
    await call({ ...BAD, n: 1 });
    await call({ ...BAD, n: 2 });
    expect(state()).to.equal('open');
    h.clock.advance(COOLDOWN_MS);
    const trial = call({ ...trialContext, sleep_ms: 2500 });
    await tick(50);
    expect(lateDone, 'the late call is still in flight when the trial starts').to.equal(false);
    expect(state()).to.equal('half_open');
    return { late: pending, trial };
  }

  it('a success of a call admitted before the breaker opened does not close it in place of the failing trial', async () => {
    const { late, trial } = await lateCallDuringTrial({}, BAD);
    expect(await late).to.equal('10.00');
    expect(state(), 'the late success closed the breaker while the trial was in flight').to.equal('half_open');
    expect(await trial).to.match(/^error/);
    expect(state(), 'the failed trial opens the breaker again').to.equal('open');
    expect(h.parts.breakers.view('fn_test_slow').retry_at).to.equal(new Date(h.clock.now() + COOLDOWN_MS).toISOString());
  });

  it('a failure of a call admitted before the breaker opened does not reopen it while a good trial is in flight', async () => {
    const { late, trial } = await lateCallDuringTrial(BAD, {});
    expect(await late).to.match(/^error/);
    expect(state(), 'the late failure reopened the breaker while the trial was in flight').to.equal('half_open');
    expect(await trial).to.equal('10.00');
    expect(state(), 'the successful trial closes the breaker').to.equal('closed');
    expect(h.parts.breakers.view('fn_test_slow')).to.include({ state: 'closed', retry_at: null });
  });

  it('a half-open breaker whose trial call is in flight keeps other callers away as an open one does: 502 saying when to retry, about the function timeout', async () => {
    await call({ ...BAD, n: 1 });
    await call({ ...BAD, n: 2 });
    h.clock.advance(COOLDOWN_MS);
    const trial = call({ sleep_ms: 600 });
    await tick(50);
    expect(state()).to.equal('half_open');
    // The trial may take up to the function timeout (3 s); a second later, 2 s of it are left.
    h.clock.advance(1000);
    const err = await engineError(h.price({ pin: { name: 'test-slow' }, context: {} }), 'functions_failed');
    expect(err.details.attempts?.map((a) => [a.function, a.outcome, a.error])).to.deep.equal([['test-slow', 'skipped', 'breaker open']]);
    expect(err.details.retryAfterS).to.equal(2);
    expect(err.message).to.equal('Every function that could answer has its circuit breaker open after recent failures, or half-open with its one trial call in flight; retry in 2 s.');
    expect(await trial).to.equal('10.00');
    expect(state()).to.equal('closed');
  });

  it('failures of calls admitted before the breaker closed, answering after it closed, do not reopen it', async () => {
    const late = [call({ ...BAD, n: 'late-1', sleep_ms: 1500 }), call({ ...BAD, n: 'late-2', sleep_ms: 1500 })];
    await tick(50);
    await call({ ...BAD, n: 1 });
    await call({ ...BAD, n: 2 });
    expect(state()).to.equal('open');
    h.clock.advance(COOLDOWN_MS);
    expect(await call({})).to.equal('10.00');
    expect(state(), 'the successful trial closes the breaker').to.equal('closed');
    for (const outcome of await Promise.all(late)) expect(outcome).to.match(/^error/);
    expect(state(), 'failures from before the recovery reopened the breaker').to.equal('closed');
    expect(h.parts.breakers.view('fn_test_slow')).to.include({ calls: 0, failures: 0 });
    // Failures after the recovery count as ever.
    await call({ ...BAD, n: 3 });
    await call({ ...BAD, n: 4 });
    expect(state()).to.equal('open');
  });
});

/** Breakers as several workspaces meet them: 4 calls in the window, half failing, from at least 2 workspaces (BREAKER_MIN_FAILING_CALLERS). */
function callerBreakersHarness(): Promise<Harness> {
  return harness({
    functions: [fixture('test-flaky', { costPerUnit: '0.001' }), fixture('test-ok', { costPerUnit: '0.002' })],
    engine: { breakerMinCalls: 4, breakerFailureRatio: 0.5, breakerCooldownMs: COOLDOWN_MS, breakerWindowMs: 60_000, breakerMinFailingCallers: 2, cacheTtlMs: 0 },
  });
}

describe('engine: circuit breakers per function and per caller workspace (BREAKER_MIN_FAILING_CALLERS)', function () {
  this.timeout(20_000);
  let h: Harness;
  const FLAKY = 'fn_test_flaky';

  beforeEach(async () => {
    h = await callerBreakersHarness();
  });
  afterEach(() => h.close());

  const as = (workspaceId: string) => ({ ...SCOPE, workspaceId });
  const callFlakyAs = (workspaceId: string, context: Record<string, unknown>) =>
    h.price({ scope: as(workspaceId), pin: { name: 'test-flaky' }, context, policy: policy('default', {}, { fallback_function: 'test-ok' }) });
  const fail = (caller: string, n: number) => {
    for (let i = 0; i < n; i++) h.parts.breakers.record(FLAKY, caller, false);
  };

  it("one workspace's failing calls open its own breaker only: the function is skipped for it, and still reached by the others", async () => {
    for (let i = 0; i < 4; i++) await callFlakyAs(CALLER_WS, FAIL);
    expect(h.parts.breakers.state(FLAKY), "the function's breaker").to.equal('closed');
    expect(await breakerGauge(h.metrics, FLAKY)).to.not.equal(2);
    expect(h.parts.breakers.state(FLAKY, CALLER_WS)).to.equal('open');
    expect(h.parts.breakers.view(FLAKY, CALLER_WS)).to.include({ function_id: FLAKY, state: 'open', calls: 4, failures: 4, callers: 1, failing_callers: 1, applies_to: 'this_workspace' });
    expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'closed', calls: 4, failures: 4, callers: 1, failing_callers: 1, applies_to: 'everyone' });

    // The failing workspace's next call skips it without calling it; the fallback answers.
    const skipped = await callFlakyAs(CALLER_WS, {});
    expect(skipped.fn.name).to.equal('test-ok');
    expect(skipped.attempts[0]).to.include({ function: 'test-flaky', outcome: 'skipped', error: 'breaker open' });
    const routed = await h.price({ scope: SCOPE, policy: policy('cheapest', { candidates: ['test-flaky', 'test-ok'] }) });
    const report = (stage(routed, 'route').candidates as CandidateReport[]).find((c) => c.function === 'test-flaky');
    expect(report).to.include({ kept: false, reason: 'breaker open' });
    expect(report?.detail).to.match(/^open for this workspace's calls, which kept failing; other workspaces' calls still reach it; a trial call from /);

    // Pinned with nothing else to run, the refusal says whose breaker it is.
    const alone = await engineError(h.price({ scope: SCOPE, pin: { name: 'test-flaky' }, context: {}, policy: policy('default', {}, {}) }), 'functions_failed');
    expect(alone.message).to.equal(`Every function that could answer has a circuit breaker open for this workspace: its calls to them kept failing (other workspaces' calls still reach them); the first lets a trial call of this workspace through in ${COOLDOWN_MS / 1000} s.`);
    expect(alone.details.retryAfterS).to.equal(COOLDOWN_MS / 1000);

    // Another workspace reaches it and is answered by it.
    const other = await callFlakyAs('ws_other', {});
    expect(other.fn.name).to.equal('test-flaky');
    expect(h.parts.breakers.view(FLAKY, 'ws_other')).to.include({ state: 'closed', applies_to: 'everyone' });

    // After the cooldown the failing workspace's trial goes through, and its success closes its breaker.
    h.clock.advance(COOLDOWN_MS);
    expect(h.parts.breakers.state(FLAKY, CALLER_WS)).to.equal('half_open');
    expect((await callFlakyAs(CALLER_WS, {})).fn.name).to.equal('test-flaky');
    expect(h.parts.breakers.state(FLAKY, CALLER_WS)).to.equal('closed');
  });

  it("the function's breaker opens for everyone only once enough workspaces fail: BREAKER_MIN_FAILING_CALLERS, and the failure ratio of the workspaces calling", async () => {
    fail('ws_a', 4);
    expect(h.parts.breakers.state(FLAKY), 'one failing workspace').to.equal('closed');
    for (const ok of ['ws_c', 'ws_d', 'ws_e', 'ws_f']) h.parts.breakers.record(FLAKY, ok, true);
    fail('ws_b', 4);
    // 8 of 12 calls failed, but only 2 of the 6 workspaces calling fail: most of its callers are served.
    expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'closed', calls: 12, failures: 8, callers: 6, failing_callers: 2 });
    fail('ws_g', 4);
    fail('ws_h', 4);
    expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'open', callers: 8, failing_callers: 4, applies_to: 'everyone' });
    expect(await breakerGauge(h.metrics, FLAKY)).to.equal(2);
    // Now a workspace that never failed is kept out too.
    const served = await callFlakyAs('ws_c', {});
    expect(served.fn.name).to.equal('test-ok');
    expect(served.attempts[0]).to.include({ function: 'test-flaky', outcome: 'skipped', error: 'breaker open' });
    expect(h.parts.breakers.view(FLAKY, 'ws_c')).to.include({ state: 'open', applies_to: 'everyone' });
  });

  it("a workspace kept out by its own breaker frees the function's half-open trial for another workspace", async () => {
    fail('ws_a', 4);
    fail('ws_b', 4);
    expect(h.parts.breakers.state(FLAKY)).to.equal('open');
    h.clock.advance(COOLDOWN_MS);
    // ws_a's own breaker (opened with the function's) is half-open too: its call is the trial of both.
    expect(h.parts.breakers.state(FLAKY, 'ws_a')).to.equal('half_open');
    fail('ws_c', 4);
    // ws_c's own breaker is open and keeps it out; the function's trial slot is not taken by it.
    expect(h.parts.breakers.allow(FLAKY, 'ws_c')).to.equal(null);
    const trial = h.parts.breakers.allow(FLAKY, 'ws_d');
    expect(trial, 'another workspace takes the trial').to.not.equal(null);
    expect(trial?.network.trial).to.be.a('number');
  });

  describe('what one workspace cannot do to a function the others use', () => {
    const trial = (caller: string, ok: boolean) => {
      const admission = h.parts.breakers.allow(FLAKY, caller);
      expect(admission, `${caller} is let through`).to.not.equal(null);
      h.parts.breakers.record(FLAKY, caller, ok, admission ?? undefined);
    };

    it('count a second workspace as failing after one failed call (its test workspace, say): it needs BREAKER_MIN_CALLS of its own', () => {
      fail('ws_a', 4);
      fail('ws_a_test', 1);
      expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'closed', callers: 2, failing_callers: 1 });
      fail('ws_a_test', 3);
      expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'open', failing_callers: 2 });
    });

    it('reads, while open or half-open, the window it opened on: no zero counts for a breaker that still keeps callers out', () => {
      fail('ws_a', 4);
      fail('ws_b', 4);
      h.clock.advance(61_000);
      expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'half_open', calls: 8, failures: 8, callers: 2, failing_callers: 2 });
      trial('ws_c', true);
      expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'closed', calls: 0, failures: 0 });
    });

    it("keep the function's breaker open by failing its half-open trials once the failures that opened it have left the window", () => {
      fail('ws_a', 4);
      fail('ws_b', 4);
      expect(h.parts.breakers.state(FLAKY)).to.equal('open');
      // Within the window, a failed trial reopens it: the failing workspaces are still there.
      h.clock.advance(COOLDOWN_MS);
      trial('ws_c', false);
      expect(h.parts.breakers.state(FLAKY)).to.equal('open');
      // Past the window, one workspace's failed trial alone leaves it half-open, and the next call is the trial.
      h.clock.advance(61_000);
      expect(h.parts.breakers.state(FLAKY)).to.equal('half_open');
      trial('ws_a', false);
      expect(h.parts.breakers.state(FLAKY)).to.equal('half_open');
      expect(h.parts.breakers.state(FLAKY, 'ws_a'), 'its own breaker reopens').to.equal('open');
      trial('ws_d', true);
      expect(h.parts.breakers.state(FLAKY)).to.equal('closed');
    });

    it('make the function look slow to the others: its failures weigh as one latency sample, its latest', async () => {
      for (let i = 0; i < 3; i++) h.parts.latency.record(FLAKY, 5, false);
      for (let i = 0; i < 7; i++) h.parts.latency.record(FLAKY, 1000, true, 'ws_a');
      expect(h.parts.latency.snapshot(FLAKY)).to.include({ samples: 4, p50_ms: 5 });
      expect(h.parts.latency.failures(FLAKY)).to.equal(1);
      const routed = await h.price({ policy: policy('cheapest', { candidates: ['test-flaky', 'test-ok'], max_latency_ms: 500 }) });
      expect(routed.fn.name).to.equal('test-flaky');
      // Failures of several workspaces each count: with the routed call's, 4 fast samples against 5 failures.
      for (const caller of ['ws_b', 'ws_c', 'ws_d', 'ws_e']) h.parts.latency.record(FLAKY, 1000, true, caller);
      expect(h.parts.latency.snapshot(FLAKY)).to.include({ samples: 9, p50_ms: 1000 });
    });
  });
});

describe('engine: a breaker window holds at most BREAKER_WINDOW_MAX_CALLS calls', function () {
  let h: Harness;
  const FLAKY = 'fn_test_flaky';
  beforeEach(async () => {
    h = await harness({ functions: [fixture('test-flaky')], engine: { breakerMinCalls: 4, breakerFailureRatio: 0.5, breakerWindowMs: 60_000, breakerWindowMaxCalls: 6, cacheTtlMs: 0 } });
  });
  afterEach(() => h.close());
  const record = (ok: boolean, n: number, caller = CALLER_WS) => {
    for (let i = 0; i < n; i++) h.parts.breakers.record(FLAKY, caller, ok);
  };

  it('judges the latest calls only: failures among a busy function\'s last calls open it, however many successes came before', async () => {
    record(true, 100);
    expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'closed', calls: 6, failures: 0 });
    record(false, 2);
    expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'closed', calls: 6, failures: 2 });
    // 3 of the latest 6 failed: open (over all 103 calls of the window, 3 failures would have been nothing).
    record(false, 1);
    expect(h.parts.breakers.view(FLAKY)).to.include({ state: 'open', calls: 6, failures: 3 });
  });

  it("a workspace's own breaker holds its last BREAKER_CALLER_WINDOW_MAX_CALLS calls", async () => {
    const own = await harness({
      functions: [fixture('test-flaky')],
      engine: { breakerMinCalls: 4, breakerFailureRatio: 0.5, breakerWindowMaxCalls: 1000, breakerCallerWindowMaxCalls: 4, breakerMinFailingCallers: 2, cacheTtlMs: 0 },
    });
    try {
      for (let i = 0; i < 100; i++) own.parts.breakers.record(FLAKY, CALLER_WS, true);
      for (let i = 0; i < 2; i++) own.parts.breakers.record(FLAKY, CALLER_WS, false);
      // Its last 4 calls are half failures: its own breaker opens; the function's holds 102 calls, 2 failed.
      expect(own.parts.breakers.view(FLAKY, CALLER_WS)).to.include({ state: 'open', calls: 4, failures: 2, applies_to: 'this_workspace' });
      expect(own.parts.breakers.view(FLAKY)).to.include({ state: 'closed', calls: 102, failures: 2 });
    } finally {
      await own.close();
    }
  });

  it('keeps its memory bounded under any traffic: the window holds the cap, the callers of those calls only', async () => {
    record(true, 5000);
    record(true, 5000, 'ws_other');
    expect(h.parts.breakers.view(FLAKY)).to.include({ calls: 6, callers: 1 });
  });
});
