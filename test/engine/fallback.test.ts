import { expect } from 'chai';
import { usableResult } from '../../engine';
import { triedRoles } from '../../engine/errors';
import type { AttemptReport } from '../../engine/errors';
import { CALLER_WS, FIXTURE_WS, engineError, fixture, harness, policy, recordLatency, SCOPE, stage } from './harness';
import type { Harness } from './harness';

const FUNCTIONS = [
  fixture('test-throw'),
  fixture('test-hang'),
  fixture('test-oom'),
  fixture('test-bad-result'),
  fixture('test-ok'),
  fixture('test-alpha'),
  fixture('test-beta'),
  fixture('test-slow'),
  // The cheapest of all, but it can price only a context carrying test_sku.
  fixture('test-picky', { costPerUnit: '0.0001' }),
  // Another workspace's private function: out of reach for the caller.
  fixture('test-gamma', { isPublic: false, workspaceId: 'ws_someone_else' }),
  // The caller's own function, deactivated.
  fixture('test-flaky', { status: 'inactive', workspaceId: CALLER_WS }),
];

/** The chosen function is the single candidate; the policy's fallbacks follow it. */
const single = (fn: string, fallbackChain: string[] = [], fallbackFunction: string | null = null) =>
  policy('cheapest', { candidates: [fn] }, { fallback_chain: fallbackChain, fallback_function: fallbackFunction });

/**
 * Long enough for the replacement of a terminated worker to start on a busy 2-core machine (the
 * call after a hang waits for it), short enough to keep the suite quick.
 */
const TIMEOUT_MS = 600;

describe('engine: fallback order and failing functions', function () {
  this.timeout(20_000);
  let h: Harness;

  before(async () => {
    h = await harness({ functions: FUNCTIONS, engine: { functionTimeoutMs: TIMEOUT_MS, workerHeapMb: 16, cacheTtlMs: 0, breakerMinCalls: 1000 } });
  });
  after(() => h.close());

  it('walks chosen → fallback_chain (out-of-reach entries skipped) → fallback_function when the chosen function throws', async () => {
    const out = await h.price({ policy: single('test-throw', ['no-such-function', 'test-gamma'], 'test-ok') });
    expect(out.fn.name).to.equal('test-ok');
    expect(out.fallbackUsed).to.equal(true);
    expect(out.savings).to.equal(null);
    expect(out.attempts.map((a) => [a.function, a.role, a.outcome])).to.deep.equal([
      ['test-throw', 'chosen', 'failed'],
      ['no-such-function', 'fallback_chain', 'skipped'],
      ['test-gamma', 'fallback_chain', 'skipped'],
      ['test-ok', 'fallback_function', 'ok'],
    ]);
    expect(out.attempts[0]?.error).to.match(/test-throw failed on purpose/);
    expect(out.attempts[1]?.error).to.equal('out of reach');
    const fb = stage(out, 'fallback');
    expect(fb).to.include({ used: true, from: 'test-throw', to: 'test-ok' });
  });

  describe('every candidate excluded by routing', () => {
    it('tries the policy\'s fallbacks (out of reach, withdrawn candidates): fallback_function answers, the route stage says nothing was chosen', async () => {
      const p = policy('priority', { order: ['test-gamma', 'no-such-function', 'test-flaky'] }, { fallback_chain: ['test-gamma', 'test-throw'], fallback_function: 'test-ok' });
      const out = await h.price({ policy: p });
      expect(out.fn.name).to.equal('test-ok');
      expect(out.fallbackUsed).to.equal(true);
      expect(out.savings).to.equal(null);
      expect(out.decision).to.equal(null);
      const route = stage(out, 'route');
      expect(route).to.include({ strategy: 'priority', chosen: null, chosen_id: null, every_candidate_excluded: true });
      expect((route.candidates as Array<{ function: string; reason: string }>).map((c) => `${c.function}:${c.reason}`)).to.deep.equal(['test-gamma:unreachable', 'no-such-function:unreachable', 'test-flaky:not active']);
      expect(out.attempts.map((a) => `${a.function}:${a.id}:${a.role}:${a.outcome}`)).to.deep.equal([
        'test-gamma:null:fallback_chain:skipped',
        'test-throw:fn_test_throw:fallback_chain:failed',
        'test-ok:fn_test_ok:fallback_function:ok',
      ]);
      expect(stage(out, 'fallback')).to.include({ used: true, from: null, to: 'test-ok' });
    });

    it("names the policy rule that matched in the route stage when that rule's function is excluded and a fallback answers, as in the refusal without fallbacks", async () => {
      const rules = [{ when: { tier: 'gold' }, use: 'test-gamma', name: 'gold' }];
      const p = policy('policy', { rules, default_function: 'test-ok' }, { fallback_function: 'test-ok' });
      const out = await h.price({ policy: p, context: { tier: 'gold' } });
      expect(out.fn.name).to.equal('test-ok');
      expect(out.fallbackUsed).to.equal(true);
      const route = stage(out, 'route');
      expect(route).to.include({ every_candidate_excluded: true, chosen: null });
      expect(route.rule).to.deep.equal({ index: 0, name: 'gold', when: { tier: 'gold' }, use: 'test-gamma' });
      const refused = await engineError(h.price({ policy: policy('policy', { rules, default_function: 'test-ok' }), context: { tier: 'gold' } }), 'no_eligible_function');
      expect(refused.details.rule).to.deep.equal({ index: 0, name: 'gold', when: { tier: 'gold' }, use: 'test-gamma' });
      expect(refused.details.ruleMatched).to.equal(true);
    });

    it('answers no_eligible_function, listing why each fallback was skipped too, when no fallback may run; nothing runs', async () => {
      const before = (await h.metrics.registry.getSingleMetric('pricing_function_calls_total')?.get())?.values.reduce((n, v) => n + v.value, 0) ?? 0;
      const p = policy('priority', { order: ['test-gamma'] }, { fallback_chain: ['no-such-function', 'test-flaky'] });
      const err = await engineError(h.price({ policy: p }), 'no_eligible_function');
      expect(err.message).to.equal('No candidate function is eligible under strategy priority. Nor could a fallback of the policy run: no-such-function (out of reach), test-flaky (not active (inactive)).');
      expect((err.details.candidates ?? []).map((c) => `${c.function}:${c.reason}`)).to.deep.equal(['test-gamma:unreachable']);
      expect((err.details.attempts ?? []).map((a) => `${a.function}:${a.outcome}`)).to.deep.equal(['no-such-function:skipped', 'test-flaky:skipped']);
      const after = (await h.metrics.registry.getSingleMetric('pricing_function_calls_total')?.get())?.values.reduce((n, v) => n + v.value, 0) ?? 0;
      expect(after).to.equal(before);
    });

    it('without fallbacks the exclusion is the answer at once, as before', async () => {
      const err = await engineError(h.price({ policy: policy('priority', { order: ['test-gamma'] }) }), 'no_eligible_function');
      expect(err.message).to.equal('No candidate function is eligible under strategy priority.');
      expect(err.details.attempts).to.equal(undefined);
    });

    it('a failing fallback after the exclusion is a functions_failed naming the fallback chain, not the chosen function', async () => {
      const err = await engineError(h.price({ policy: policy('priority', { order: ['test-gamma'] }, { fallback_chain: ['test-throw'] }) }), 'functions_failed');
      expect(err.message).to.equal('Every function tried failed (the fallback chain).');
    });
  });

  it('uses the first fallback_chain entry that answers, before fallback_function', async () => {
    const out = await h.price({ policy: single('test-throw', ['test-bad-result', 'test-alpha', 'test-beta'], 'test-ok') });
    expect(out.fn.name).to.equal('test-alpha');
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal([
      'test-throw:chosen:failed',
      'test-bad-result:fallback_chain:failed',
      'test-alpha:fallback_chain:ok',
    ]);
  });

  it('skips an inactive fallback entry and says why', async () => {
    const out = await h.price({ policy: single('test-throw', ['test-flaky'], 'test-ok') });
    expect(out.fn.name).to.equal('test-ok');
    expect(out.attempts[1]).to.include({ function: 'test-flaky', outcome: 'skipped', error: 'not active (inactive)' });
  });

  it('shows a fallback the call already tried (the chosen function in its own chain, a name twice) as skipped, not run again', async () => {
    const out = await h.price({ policy: single('test-throw', ['test-throw', 'test-bad-result', 'test-bad-result'], 'test-ok') });
    expect(out.fn.name).to.equal('test-ok');
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}:${a.error ?? ''}`.replace(/:[^:]*failed on purpose.*$|:the function returned.*$/, ':'))).to.deep.equal([
      'test-throw:chosen:failed:',
      'test-throw:fallback_chain:skipped:already tried in this call',
      'test-bad-result:fallback_chain:failed:',
      'test-bad-result:fallback_chain:skipped:already tried in this call',
      'test-ok:fallback_function:ok:',
    ]);
  });

  it('names a fallback listed twice that was skipped the first time (not active) as already skipped, never as tried: it never ran', async () => {
    const out = await h.price({ policy: single('test-throw', ['test-flaky', 'fn_test_flaky'], 'test-ok') });
    expect(out.fn.name).to.equal('test-ok');
    expect(out.attempts.slice(1, 3).map((a) => `${a.function}:${a.outcome}:${a.error ?? ''}`)).to.deep.equal(['test-flaky:skipped:not active (inactive)', 'test-flaky:skipped:already skipped in this call']);
  });

  it('a hanging function times out, counts as a slow sample, its worker is replaced and the next call works', async () => {
    const started = performance.now();
    const out = await h.price({ policy: single('test-hang', [], 'test-ok') });
    expect(performance.now() - started).to.be.below(TIMEOUT_MS + 1500);
    expect(out.fn.name).to.equal('test-ok');
    expect(out.attempts[0]).to.include({ function: 'test-hang', outcome: 'failed' });
    expect(out.attempts[0]?.error).to.equal(`The pricing function did not answer within ${TIMEOUT_MS} ms.`);
    const lat = h.parts.latency.snapshot('fn_test_hang');
    expect(lat.samples).to.equal(1);
    expect(lat.p50_ms).to.be.at.least(TIMEOUT_MS);
    // The single worker was busy-looping; it has been replaced, so a pinned call answers.
    const next = await h.price({ pin: { name: 'test-alpha' } });
    expect(next.fn.name).to.equal('test-alpha');
    expect(next.result.price).to.equal('10.00');
  });

  it('a function that fails at once counts as slow as a timeout for fastest, not as the fastest', async () => {
    // Earlier tests of this file failed test-throw too: every one of its samples is as slow as a timeout.
    // Three workspaces' calls: each workspace's failures weigh as one sample (its latest).
    for (let i = 0; i < 3; i++) {
      const out = await h.price({ scope: { ...SCOPE, workspaceId: `ws_thrower_${i}` }, policy: single('test-throw', [], 'test-ok'), context: { n: i } });
      expect(out.attempts[0]).to.include({ function: 'test-throw', outcome: 'failed' });
    }
    const lat = h.parts.latency.snapshot('fn_test_throw');
    expect(lat.samples).to.be.at.least(3);
    expect(lat.p50_ms).to.be.at.least(TIMEOUT_MS);
    expect(lat.ewma_ms).to.be.at.least(TIMEOUT_MS);
  });

  it('a function exhausting the worker heap fails alone; the service keeps pricing', async () => {
    // Filling the heap and the collector's last tries can outlast TIMEOUT_MS on a loaded machine: a time limit of its own,
    // so the attempt fails by the memory limit it is about, not by the clock.
    const roomy = await harness({ functions: FUNCTIONS, engine: { functionTimeoutMs: 10_000, workerHeapMb: 16, cacheTtlMs: 0, breakerMinCalls: 1000 } });
    try {
      const out = await roomy.price({ policy: single('test-oom', [], 'test-ok') });
      expect(out.fn.name).to.equal('test-ok');
      expect(out.attempts[0]).to.include({ function: 'test-oom', role: 'chosen', outcome: 'failed' });
      expect(out.attempts[0]?.error).to.match(/memory limit/);
      expect(out.attempts[0]?.failure).to.equal('crashed');
      const next = await roomy.price({ pin: { id: 'fn_test_beta' } });
      expect(next.fn.name).to.equal('test-beta');
    } finally {
      await roomy.close();
    }
  });

  it('when every function fails the engine throws functions_failed listing every attempt', async () => {
    const err = await engineError(h.price({ policy: single('test-throw', ['test-bad-result', 'nowhere'], 'test-hang') }), 'functions_failed');
    // failure says why each failed, for machines; a skipped entry has none.
    expect((err.details.attempts ?? []).map((a) => `${a.function}:${a.outcome}:${a.failure ?? '-'}`)).to.deep.equal([
      'test-throw:failed:threw',
      'test-bad-result:failed:unusable_result',
      'nowhere:skipped:-',
      'test-hang:failed:timeout',
    ]);
    // Functions that ran and failed give no time to retry at (only open breakers do).
    expect(err.details.retryAfterS).to.equal(undefined);
    expect(err.message).to.equal('Every function tried failed (the chosen function, the fallback chain, the fallback function).');
    const next = await h.price({ pin: { name: 'test-ok' } });
    expect(next.fn.name).to.equal('test-ok');
    // A pinned call without a policy tried one function, and its message says no more.
    const pinned = await engineError(h.price({ pin: { name: 'test-throw' } }), 'functions_failed');
    expect(pinned.message).to.equal('Every function tried failed (the function named in the request).');
    // A chain whose every entry was skipped (out of reach) was not tried, and the message does not say it was.
    const skippedChain = await engineError(h.price({ policy: single('test-throw', ['nowhere']) }), 'functions_failed');
    expect(skippedChain.message).to.equal('Every function tried failed (the chosen function).');
  });

  it("names the strategy's alternates as such in a failure message, however many ran (not 'a warm alternate', which only fastest has)", () => {
    const attempt = (role: AttemptReport['role'], fn: string): AttemptReport => ({ function: fn, id: `fn_${fn}`, role, outcome: 'failed', ms: 1 });
    const attempts = [attempt('chosen', 'a'), attempt('alternate', 'b'), attempt('alternate', 'c'), attempt('fallback_function', 'd')];
    expect(triedRoles(attempts, false)).to.equal("the chosen function, the strategy's alternates, the fallback function");
  });

  it('when functions that could not price the context sit beside ones that failed on a pinned call, the message names the failed parts and functions, and the others apart', async () => {
    const err = await engineError(h.price({ pin: { name: 'cost-plus' }, policy: single('cost-plus', ['test-throw']), context: { current_price: 5 } }), 'functions_failed');
    expect((err.details.attempts ?? []).map((a) => `${a.function}:${a.outcome}`)).to.deep.equal(['cost-plus:not_applicable', 'test-throw:failed']);
    expect(err.message).to.equal('Every function that could price the context failed (the fallback chain: test-throw). cost-plus could not price it.');
  });

  it('a routed call whose every function either could not price the context or failed on it is insufficient_context naming what failed, not a 502 that turns 422 once the breaker opens', async () => {
    const err = await engineError(h.price({ policy: single('cost-plus', ['test-throw']), context: { current_price: 5 } }), 'insufficient_context');
    expect((err.details.attempts ?? []).map((a) => `${a.function}:${a.outcome}`)).to.deep.equal(['cost-plus:not_applicable', 'test-throw:failed']);
    expect(err.details.missing).to.include('unit_cost');
    expect(err.message).to.match(/^The context cannot be priced by cost-plus, and test-throw failed: cost-plus: .+ test-throw: .+$/);
  });

  it('when no function could price the context it is insufficient_context, even past an out-of-reach fallback', async () => {
    const err = await engineError(h.price({ policy: single('cost-plus', ['nowhere'], 'elasticity-optimum'), context: { current_price: 5 } }), 'insufficient_context');
    expect(err.details.missing).to.include('unit_cost');
    expect((err.details.attempts ?? []).map((a) => `${a.function}:${a.outcome}`)).to.deep.equal(['cost-plus:not_applicable', 'nowhere:skipped', 'elasticity-optimum:not_applicable']);
  });

  it('priority: the rest of config.order is tried before the fallback chain', async () => {
    const out = await h.price({ policy: policy('priority', { order: ['test-throw', 'test-beta', 'test-alpha'] }, { fallback_function: 'test-ok' }) });
    expect(out.strategy).to.equal('priority');
    expect(out.fn.name).to.equal('test-beta');
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-throw:chosen:failed', 'test-beta:alternate:ok']);
    expect(out.fallbackUsed).to.equal(true);
  });

  it('fastest: a cold function explored and failing gives way to the fastest warm function, not to the fallback or an error', async () => {
    // Its own engine: test-throw must be cold (never timed), which the calls above are not leaving it.
    const own = await harness({ functions: [fixture('test-throw'), fixture('test-alpha'), fixture('test-beta'), fixture('test-ok')], engine: { cacheTtlMs: 0, breakerMinCalls: 1000 } });
    try {
      recordLatency(own, 'fn_test_alpha', 5);
      recordLatency(own, 'fn_test_beta', 50);
      // test-throw was never timed: it is explored first, and fails.
      const out = await own.price({ policy: policy('fastest', { candidates: ['test-throw', 'test-alpha', 'test-beta'] }, { fallback_function: 'test-ok' }), context: { explore: 1 } });
      expect(stage(out, 'route').statistic).to.deep.include({ name: 'exploring cold function' });
      expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-throw:chosen:failed', 'test-alpha:alternate:ok']);
      expect(out.fallbackUsed).to.equal(true);
      expect(out.savings).to.equal(null);
      // A warm choice that fails still goes on to the policy's fallbacks, not to the next fastest.
      recordLatency(own, 'fn_test_throw', 1, 10);
      const warm = await own.price({ policy: policy('fastest', { candidates: ['test-throw', 'test-alpha'], tie_band_pct: 0 }, { fallback_function: 'test-ok' }), context: { explore: 2 } });
      expect(warm.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-throw:chosen:failed', 'test-ok:fallback_function:ok']);
    } finally {
      await own.close();
    }
  });

  it('fastest: a cold function that failed for this workspace is not explored for it on every call (its one failure sample keeps it cold); another workspace still explores it', async () => {
    const own = await harness({ functions: [fixture('test-throw'), fixture('test-alpha')], engine: { cacheTtlMs: 0, breakerMinCalls: 1000 } });
    try {
      recordLatency(own, 'fn_test_alpha', 5);
      const fastest = policy('fastest', { candidates: ['test-throw', 'test-alpha'] });
      const first = await own.price({ policy: fastest, context: { explore: 10 } });
      expect(first.attempts.map((a) => `${a.function}:${a.outcome}`)).to.deep.equal(['test-throw:failed', 'test-alpha:ok']);
      for (const n of [11, 12, 13]) {
        const again = await own.price({ policy: fastest, context: { explore: n } });
        expect(again.attempts.map((a) => `${a.function}:${a.outcome}`), `call ${n}`).to.deep.equal(['test-alpha:ok']);
        expect(stage(again, 'route').statistic).to.deep.include({ name: 'windowed p50 latency' });
        expect(again.fallbackUsed).to.equal(false);
      }
      // Still cold for everyone else: one workspace's failures do not decide another's exploration.
      expect(own.parts.latency.snapshot('fn_test_throw').samples).to.equal(1);
      const other = await own.price({ policy: fastest, context: { explore: 14 }, scope: { workspaceId: 'ws_other', builtInsOnly: false } });
      // Its one sample is another workspace's function's call volume: withheld below LEADERBOARD_MIN_DISTINCT_CONSUMERS consumers.
      expect(stage(other, 'route')).to.deep.include({ chosen: 'test-throw', statistic: { name: 'exploring cold function', function: 'test-throw', samples: null, cold: ['test-throw'] } });
      // Once its failure leaves the window, this workspace explores it again.
      own.clock.advance(5 * 60_000 + 1);
      recordLatency(own, 'fn_test_alpha', 5);
      const later = await own.price({ policy: fastest, context: { explore: 15 } });
      expect(stage(later, 'route')).to.deep.include({ chosen: 'test-throw' });
    } finally {
      await own.close();
    }
  });

  it('fastest: after a failed exploration the warm function tried is the fastest that may price the context, not one that would only decline it', async () => {
    const own = await harness({ functions: [fixture('test-throw')], engine: { cacheTtlMs: 0, breakerMinCalls: 1000 } });
    try {
      // anchored-adjustment is the fastest warm one, but without current_price it cannot price: cost-plus answers.
      recordLatency(own, 'fn_builtin_anchored', 1);
      recordLatency(own, 'fn_builtin_cost_plus', 9);
      const out = await own.price({ policy: policy('fastest', { candidates: ['test-throw', 'anchored-adjustment', 'cost-plus'] }), context: { unit_cost: 2.41 } });
      expect(stage(out, 'route')).to.deep.include({ chosen: 'test-throw' });
      expect(out.attempts.map((a) => `${a.function}:${a.outcome}`)).to.deep.equal(['test-throw:failed', 'cost-plus:ok']);
      expect(out.fn.name).to.equal('cost-plus');
    } finally {
      await own.close();
    }
  });

  it('fastest: a cold function explored and failing, with no warm function, gives way to the next cold one rather than an error', async () => {
    // Its own engine: every function is cold (never timed).
    const own = await harness({ functions: [fixture('test-throw'), fixture('test-alpha'), fixture('test-bad-result')], engine: { cacheTtlMs: 0, breakerMinCalls: 1000 } });
    try {
      const out = await own.price({ policy: policy('fastest', { candidates: ['test-throw', 'test-alpha'] }), context: { explore: 3 } });
      // ENGINE_RANDOM_SEED 42 explores test-throw first (the second of fn_test_alpha, fn_test_throw).
      expect(stage(out, 'route')).to.deep.include({ chosen: 'test-throw', statistic: { name: 'exploring cold function', function: 'test-throw', samples: null, cold: ['test-alpha', 'test-throw'] } });
      // Its owner reads the count: test-alpha's one answer above.
      const byOwner = await own.price({ policy: policy('fastest', { candidates: ['test-alpha'] }), context: { explore: 4 }, scope: { workspaceId: FIXTURE_WS, builtInsOnly: false } });
      expect(stage(byOwner, 'route').statistic).to.deep.include({ name: 'exploring cold function', function: 'test-alpha', samples: 1 });
      expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-throw:chosen:failed', 'test-alpha:alternate:ok']);
      expect(out.fn.name).to.equal('test-alpha');
      expect(out.fallbackUsed).to.equal(true);
      // One more exploration, not the whole cold list: when the next cold function fails too, the policy's fallbacks follow.
      const twice = await harness({ functions: [fixture('test-throw'), fixture('test-bad-result'), fixture('test-ok'), fixture('test-beta')], engine: { cacheTtlMs: 0, breakerMinCalls: 1000, randomSeed: 2 } });
      try {
        const again = await twice.price({ policy: policy('fastest', { candidates: ['test-throw', 'test-bad-result', 'test-ok'] }, { fallback_function: 'test-beta' }), context: { explore: 4 } });
        // Seed 2 explores the third of fn_test_bad_result, fn_test_ok, fn_test_throw; the next cold one is the first.
        expect(stage(again, 'route')).to.deep.include({ chosen: 'test-throw' });
        expect(again.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-throw:chosen:failed', 'test-bad-result:alternate:failed', 'test-beta:fallback_function:ok']);
      } finally {
        await twice.close();
      }
    } finally {
      await own.close();
    }
  });

  describe('cheapest, fastest, round_robin and weighted: the first function of their order that can price the context', () => {
    const candidates = ['test-picky', 'test-beta'];
    const strategies = {
      cheapest: policy('cheapest', { candidates }, { fallback_function: 'test-ok' }),
      fastest: policy('fastest', { candidates }, { fallback_function: 'test-ok' }),
      round_robin: policy('round_robin', { candidates }, { id: 'rp_picky_rr', fallback_function: 'test-ok' }),
      weighted: policy('weighted', { weights: { 'test-picky': 1000, 'test-beta': 1 } }, { fallback_function: 'test-ok' }),
    };
    for (const [name, p] of Object.entries(strategies)) {
      it(`${name}: a choice that cannot price the context gives way to the next eligible function, not to a 422 or the fallback`, async () => {
        // Several calls, so round_robin and fastest (cold functions first, chosen at random) also start on test-picky.
        let sawPickyFirst = false;
        for (let i = 0; i < 4; i++) {
          const out = await h.price({ policy: p, context: { n: i } });
          expect(out.fn.name).to.equal('test-beta');
          expect(out.fallbackUsed).to.equal(false);
          if (out.attempts.length === 2) {
            sawPickyFirst = true;
            expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-picky:chosen:not_applicable', 'test-beta:alternate:ok']);
            expect(stage(out, 'route').chosen).to.equal('test-picky');
            // Each attempt has its execute stage, with its own time.
            const executed = out.stages.filter((st) => st.stage === 'execute');
            expect(executed.map((st) => `${String(st.function)}:${String(st.role)}:${String(st.outcome)}`)).to.deep.equal(['test-picky:chosen:not_applicable', 'test-beta:alternate:ok']);
            expect(executed.every((st) => st.ms >= 0)).to.equal(true);
          } else {
            expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-beta:chosen:ok']);
          }
        }
        expect(sawPickyFirst, 'test-picky chosen first at least once').to.equal(true);
        // With the field it needs, test-picky prices it itself when chosen.
        const out = await h.price({ policy: strategies.cheapest, context: { test_sku: 'SKU-1' } });
        expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-picky:chosen:ok']);
      });
    }

    it('a failure goes on to the fallback chain, not to the strategy\'s next function (chosen → fallback_chain → fallback_function)', async () => {
      // test-throw is all but certain to be drawn first; the alternate would be test-beta.
      const out = await h.price({ policy: policy('weighted', { weights: { 'test-throw': 1e9, 'test-beta': 1 } }, { fallback_function: 'test-ok' }), context: { n: 'fail' } });
      expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-throw:chosen:failed', 'test-ok:fallback_function:ok']);
      expect(out.fallbackUsed).to.equal(true);
    });

    it('once a function failed, the rest of the order is not tried: not applicable, failed, then the fallback', async () => {
      // Heaviest first: test-picky is drawn, then test-throw and test-beta are its alternates in that order.
      const out = await h.price({ policy: policy('weighted', { weights: { 'test-picky': 1e9, 'test-throw': 1000, 'test-beta': 1 } }, { fallback_function: 'test-ok' }), context: { n: 'picky-throw' } });
      expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['test-picky:chosen:not_applicable', 'test-throw:alternate:failed', 'test-ok:fallback_function:ok']);
      expect(out.fallbackUsed).to.equal(true);
    });
  });

  describe('a function returning no usable price or confidence is a failed attempt', () => {
    for (const bad of ['price', 'zero', 'confidence', 'nan-confidence']) {
      it(`bad ${bad}: failed attempt, then the fallback answers`, async () => {
        const out = await h.price({ context: { test_bad: bad }, policy: single('test-bad-result', [], 'test-ok') });
        expect(out.fn.name).to.equal('test-ok');
        expect(out.attempts[0]).to.include({ function: 'test-bad-result', outcome: 'failed', error: 'the function returned no usable price or confidence' });
      });
    }

    it('usableResult accepts a positive decimal price with a confidence in [0, 1] only', () => {
      const good = { price: '1.50', currency: 'USD', confidence: 0.4, confidence_factors: {}, inputs_used: [], notes: [] };
      expect(usableResult(good)).to.equal(true);
      expect(usableResult({ ...good, price: 1.5 })).to.equal(false);
      expect(usableResult({ ...good, price: '-1' })).to.equal(false);
      expect(usableResult({ ...good, price: '0' })).to.equal(false);
      expect(usableResult({ ...good, confidence: undefined })).to.equal(false);
      expect(usableResult({ ...good, confidence: -0.1 })).to.equal(false);
      expect(usableResult({ ...good, confidence: Number.POSITIVE_INFINITY })).to.equal(false);
      expect(usableResult(null)).to.equal(false);
    });
  });
});
