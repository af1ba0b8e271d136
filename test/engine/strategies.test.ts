import { expect } from 'chai';
import type { CandidateReport, FunctionDescriptor, PriceOutcome } from '../../engine';
import { BUILTINS } from '../../engine';
import { CALLER_WS, FIXTURE_WS, SCOPE, engineError, fixture, harness, policy, recordLatency, stage } from './harness';
import type { Harness } from './harness';

const ALPHA = fixture('test-alpha', { costPerUnit: '0.002' });
const BETA = fixture('test-beta', { costPerUnit: '0.002' });
const GAMMA = fixture('test-gamma', { costPerUnit: '0.002' });
const OK = fixture('test-ok', { costPerUnit: '0.005' });

const routeOf = (out: PriceOutcome) => stage(out, 'route');
const candidatesOf = (out: PriceOutcome) => routeOf(out).candidates as CandidateReport[];
const report = (out: PriceOutcome, name: string) => candidatesOf(out).find((c) => c.function === name);

/** The fixtures' own workspace: it reads their call volume. */
const OWNER = { workspaceId: FIXTURE_WS, builtInsOnly: false };

describe('engine: routing strategies', function () {
  this.timeout(20_000);

  describe('default: a context-based choice among built-ins and own functions', () => {
    let h: Harness;
    before(async () => {
      h = await harness({ functions: [ALPHA, fixture('test-beta', { workspaceId: CALLER_WS })] });
    });
    after(() => h.close());

    it('with only current_price it anchors on the live price', async () => {
      const out = await h.price({ context: { current_price: 20 } });
      expect(out.strategy).to.equal('default');
      expect(out.fn.name).to.equal('anchored-adjustment');
      expect(routeOf(out).statistic).to.deep.include({ name: 'context-based choice' });
      // The whole order it would try, not its first three.
      expect((routeOf(out).statistic as { order: string[] }).order).to.have.length.at.least(5);
      expect((routeOf(out).statistic as { order: string[] }).order.slice(0, 2)).to.deep.equal(['anchored-adjustment', 'cost-plus']);
    });

    it('with unit_cost only it prices cost-plus', async () => {
      const out = await h.price({ context: { unit_cost: 10 } });
      expect(out.fn.name).to.equal('cost-plus');
      expect(out.result.price).to.equal('14.29');
    });

    it('with competitor prices it positions against them', async () => {
      const out = await h.price({ context: { competitor_prices: [10, 12, 14] } });
      expect(out.fn.name).to.equal('competitive-position');
    });

    it('with unit_cost and elasticity it takes the elasticity optimum', async () => {
      const out = await h.price({ context: { unit_cost: 10, elasticity: -2 } });
      expect(out.fn.name).to.equal('elasticity-optimum');
      expect(out.result.price).to.equal('20.00');
    });

    it('chooses among built-ins and the caller\'s own functions; marketplace functions only when named', async () => {
      const out = await h.price({ context: { current_price: 20 } });
      const names = candidatesOf(out).map((c) => c.function);
      expect(names).to.include.members([...BUILTINS.map((b) => b.name), 'test-beta']);
      expect(names).to.not.include('test-alpha');
    });
  });

  describe('policy: ordered rules over the context', () => {
    let h: Harness;
    before(async () => {
      h = await harness({ functions: [ALPHA, BETA, GAMMA, OK] });
    });
    after(() => h.close());

    const rules = policy('policy', {
      rules: [
        { name: 'gold sku', when: { 'customer.tier': 'gold', 'items.0.sku': { starts_with: 'SKU-' } }, use: 'test-alpha' },
        { when: { quantity: { gt: 5 } }, use: 'test-beta' },
        { when: { 'context.quantity': { eq: 3 } }, use: 'test-gamma' },
        { when: { 'customer.tier': 'gold' }, use: 'test-beta' },
      ],
      default_function: 'test-ok',
    });

    it('reads deep paths (customer.tier, items.0.sku) and names the matched rule in the trace', async () => {
      const out = await h.price({ policy: rules, context: { customer: { tier: 'gold' }, items: [{ sku: 'SKU-1' }, { sku: 'X' }] } });
      expect(out.strategy).to.equal('policy');
      expect(out.fn.name).to.equal('test-alpha');
      expect(routeOf(out).rule).to.deep.include({ index: 0, name: 'gold sku', use: 'test-alpha' });
      expect(routeOf(out).policy_id).to.equal('rp_test');
    });

    it('every key of a rule must hold: a rule with one failing key does not match', async () => {
      const out = await h.price({ policy: rules, context: { customer: { tier: 'gold' }, items: [{ sku: 'OTHER' }] } });
      expect(out.fn.name).to.equal('test-beta');
      expect(routeOf(out).rule).to.deep.include({ index: 3 });
    });

    it('comparisons are typed: gt on a string never matches, eq 3 never matches "3"', async () => {
      const out = await h.price({ policy: rules, context: { quantity: '10', customer: { tier: 'silver' } } });
      expect(out.fn.name).to.equal('test-ok');
      expect(routeOf(out).rule).to.deep.equal({ index: -1, default_function: 'test-ok' });
      const asString = await h.price({ policy: rules, context: { quantity: '3' } });
      expect(asString.fn.name).to.equal('test-ok');
      const asNumber = await h.price({ policy: rules, context: { quantity: 3 } });
      expect(asNumber.fn.name).to.equal('test-gamma');
      expect(routeOf(asNumber).rule).to.deep.include({ index: 2 });
    });

    it('the first matching rule wins', async () => {
      // Rules 1 and 3 both hold; rule 1 comes first.
      const out = await h.price({ policy: rules, context: { quantity: 9, customer: { tier: 'gold' } } });
      expect(out.fn.name).to.equal('test-beta');
      expect(routeOf(out).rule).to.deep.include({ index: 1 });
    });

    it('falls back to default_function when no rule holds', async () => {
      const out = await h.price({ policy: rules, context: { product_type: 'tea' } });
      expect(out.fn.name).to.equal('test-ok');
      expect(routeOf(out).rule).to.deep.equal({ index: -1, default_function: 'test-ok' });
    });

    it('reports every candidate the rules did not pick as a rule miss', async () => {
      const out = await h.price({ policy: rules, context: { quantity: 3 } });
      expect(report(out, 'test-gamma')).to.include({ kept: true });
      for (const name of ['test-alpha', 'test-beta', 'test-ok']) expect(report(out, name), name).to.include({ kept: false, reason: 'rule miss' });
    });

    it('a rule whose function is excluded refuses naming the function and why, and that default_function is not its fallback', async () => {
      const ruled = policy('policy', { rules: [{ when: { vip: true }, use: 'gone-function' }, { when: { quantity: { gte: 1 } }, use: 'test-alpha' }], default_function: 'gone-default' });
      const err = await engineError(h.price({ policy: ruled, context: { vip: true } }), 'no_eligible_function');
      expect(err.message).to.equal('Rule 0 matched, but its function gone-function is not eligible (unreachable); default_function applies only when no rule matches.');
      expect(err.details.ruleMatched).to.equal(true);
      const missed = await engineError(h.price({ policy: ruled, context: { vip: false } }), 'no_eligible_function');
      expect(missed.details).to.not.have.property('ruleMatched');
      expect(missed.details.rule).to.deep.equal({ index: -1, default_function: 'gone-default' });
      expect(missed.message).to.equal("No rule matched the context, and the policy's default_function gone-default is not eligible (unreachable).");
    });

    it('a matched rule whose function is excluded, on a policy without default_function, says nothing of a default_function', async () => {
      const ruled = policy('policy', { rules: [{ when: { vip: true }, use: 'gone-function' }] });
      const err = await engineError(h.price({ policy: ruled, context: { vip: true } }), 'no_eligible_function');
      expect(err.message).to.equal('Rule 0 matched, but its function gone-function is not eligible (unreachable).');
    });

    it('a candidate over a ceiling that no rule sends the context to lists the rule miss too: raising its ceiling alone would not let it price', async () => {
      const ceiled = policy('policy', { rules: [{ when: { tier: 'gold' }, use: 'test-alpha' }], max_cost_per_unit: '0.001' });
      const err = await engineError(h.price({ policy: ceiled, context: { quantity: 1 } }), 'no_eligible_function');
      expect(err.message).to.equal('No rule matched the context and the policy has no default_function.');
      const alpha = (err.details.candidates ?? []).find((c) => c.function === 'test-alpha');
      expect(alpha).to.deep.include({ kept: false, reason: 'cost ceiling', also: [{ reason: 'rule miss', detail: 'no rule sends this context to it' }] });
      // The rule's own function, when the rule holds: its ceiling is the decisive reason, no rule miss beside it.
      const matched = await engineError(h.price({ policy: ceiled, context: { tier: 'gold' } }), 'no_eligible_function');
      const target = (matched.details.candidates ?? []).find((c) => c.function === 'test-alpha');
      expect(target).to.include({ reason: 'cost ceiling' });
      expect(target).to.not.have.property('also');
    });

    it('with no rule holding and no default_function it refuses: no_eligible_function, every candidate a rule miss', async () => {
      const noDefault = policy('policy', { rules: [{ when: { quantity: { gte: 100 } }, use: 'test-alpha' }, { when: { vip: true }, use: 'test-beta' }] });
      const err = await engineError(h.price({ policy: noDefault, context: { quantity: 1 } }), 'no_eligible_function');
      expect((err.details.candidates ?? []).map((c) => [c.function, c.reason])).to.deep.equal([
        ['test-alpha', 'rule miss'],
        ['test-beta', 'rule miss'],
      ]);
    });
  });

  describe('cheapest', () => {
    let h: Harness;
    beforeEach(async () => {
      h = await harness({
        functions: [fixture('test-alpha', { costPerUnit: '0.002' }), fixture('test-beta', { costPerUnit: '0.001', costMultiplier: '3' }), fixture('test-gamma', { costPerUnit: '0.0015' })],
      });
    });
    afterEach(() => h.close());
    const cheapest = policy('cheapest', { candidates: ['test-alpha', 'test-beta', 'test-gamma'] });

    it('picks the lowest cost per call (cost per unit × multiplier)', async () => {
      const out = await h.price({ policy: cheapest });
      expect(out.fn.name).to.equal('test-gamma');
      expect(report(out, 'test-beta')).to.include({ cost_per_unit: '0.003', kept: true });
    });

    it('breaks a cost tie by p50 latency, then by id', async () => {
      h.source.put(fixture('test-gamma', { costPerUnit: '0.002' }));
      await h.parts.registry.changed('fn_test_gamma');
      // alpha and gamma cost 0.002, beta 0.003. Neither timed: the lower id wins.
      expect((await h.price({ policy: cheapest, context: { n: 1 } })).fn.name).to.equal('test-alpha');
      recordLatency(h, 'fn_test_alpha', 40);
      recordLatency(h, 'fn_test_gamma', 5);
      expect((await h.price({ policy: cheapest, context: { n: 2 } })).fn.name).to.equal('test-gamma');
    });

    it('tries a never-timed function of a cost tie first, so the one timed first does not keep the tie for good', async () => {
      h.source.put(fixture('test-gamma', { costPerUnit: '0.002' }));
      await h.parts.registry.changed('fn_test_gamma');
      recordLatency(h, 'fn_test_alpha', 1);
      const out = await h.price({ policy: cheapest, context: { n: 3 } });
      expect(out.fn.name).to.equal('test-gamma');
      expect(stage(out, 'route').statistic).to.deep.include({ tie_break: 'cold first (fewer than 3 latency samples), the fewest samples first, so never timed before timed; then latency p50; then id' });
      // Timed, and slower: the tie goes by p50.
      recordLatency(h, 'fn_test_gamma', 80);
      expect((await h.price({ policy: cheapest, context: { n: 4 } })).fn.name).to.equal('test-alpha');
    });
  });

  describe('cheapest: a cost tie among cold functions', () => {
    let h: Harness;
    beforeEach(async () => {
      h = await harness({ functions: [fixture('test-alpha', { costPerUnit: '0.002' }), fixture('test-gamma', { costPerUnit: '0.002' })], engine: { latencyColdBelow: 3 } });
    });
    afterEach(() => h.close());
    const cheapest = policy('cheapest', { candidates: ['test-alpha', 'test-gamma'] });

    it('goes to a never-timed function before one timed fewer times than the cold threshold, as the trace says', async () => {
      // alpha is timed twice, still cold (3 samples make a function warm); gamma was never timed. By id alpha would win.
      recordLatency(h, 'fn_test_alpha', 27, 2);
      const out = await h.price({ policy: cheapest, context: { n: 1 } });
      expect(out.fn.name).to.equal('test-gamma');
      expect(stage(out, 'route').statistic).to.deep.include({ tie_break: 'cold first (fewer than 3 latency samples), the fewest samples first, so never timed before timed; then latency p50; then id' });
      // Each call times what it ran. Both timed, both still cold: the fewer samples first (gamma 1, alpha 2), then id (2 and 2).
      const samples = () => ['fn_test_alpha', 'fn_test_gamma'].map((id) => h.parts.latency.snapshot(id).samples);
      expect(samples()).to.deep.equal([2, 1]);
      expect((await h.price({ policy: cheapest, context: { n: 2 } })).fn.name).to.equal('test-gamma');
      expect(samples()).to.deep.equal([2, 2]);
      expect((await h.price({ policy: cheapest, context: { n: 3 } })).fn.name).to.equal('test-alpha');
      // Cold before warm, whatever the warm one's p50: alpha is warm now (3 samples), gamma still cold.
      expect(samples()).to.deep.equal([3, 2]);
      expect((await h.price({ policy: cheapest, context: { n: 4 } })).fn.name).to.equal('test-gamma');
    });
  });

  describe('fastest', () => {
    let h: Harness;
    const fastest = (cfg: Record<string, unknown> = {}) => policy('fastest', { candidates: ['test-alpha', 'test-beta', 'test-gamma'], ...cfg });
    beforeEach(async () => {
      h = await harness({ functions: [ALPHA, BETA, GAMMA], engine: { latencyColdBelow: 3, latencyWindowMs: 60_000, latencyMaxSamples: 1000 } });
    });
    afterEach(() => h.close());

    it('explores cold functions first, and reports never-timed ones as "no data"', async () => {
      recordLatency(h, 'fn_test_alpha', 1);
      recordLatency(h, 'fn_test_gamma', 2);
      // As the functions' owner, who reads their sample counts (another workspace reads null: see the volume test below).
      const out = await h.price({ policy: fastest(), scope: OWNER });
      expect(out.fn.name).to.equal('test-beta');
      expect(routeOf(out).statistic).to.deep.include({ name: 'exploring cold function', samples: 0 });
      expect(report(out, 'test-beta')?.latency_p50_ms).to.equal('no data');
      expect(report(out, 'test-alpha')?.latency_p50_ms).to.equal(1);
    });

    it('picks the lowest windowed p50 when every function is warm', async () => {
      recordLatency(h, 'fn_test_alpha', 30, 20);
      recordLatency(h, 'fn_test_beta', 10, 20);
      recordLatency(h, 'fn_test_gamma', 20, 20);
      const out = await h.price({ policy: fastest({ tie_band_pct: 0 }), scope: OWNER });
      expect(out.fn.name).to.equal('test-beta');
      expect(routeOf(out).statistic).to.deep.include({ name: 'windowed p50 latency', p50_ms: 10, samples: 20, window_ms: 60_000 });
    });

    it("withholds another workspace's function's sample count (its call volume) from the trace until LEADERBOARD_MIN_DISTINCT_CONSUMERS callers besides its owner are in its breaker window", async () => {
      recordLatency(h, 'fn_test_alpha', 30, 20);
      recordLatency(h, 'fn_test_beta', 10, 20);
      recordLatency(h, 'fn_test_gamma', 20, 20);
      // Contexts of their own: an answer from the result cache adds no sample.
      const hidden = await h.price({ policy: fastest({ tie_band_pct: 0 }), context: { volume: 1 } });
      expect(routeOf(hidden).statistic).to.deep.include({ name: 'windowed p50 latency', p50_ms: 10, samples: null });
      // That call made the caller one; the owner's own calls are no consumer's; a second consumer, then a third.
      for (const caller of [FIXTURE_WS, 'ws_consumer_1']) h.parts.breakers.record('fn_test_beta', caller, true);
      expect(routeOf(await h.price({ policy: fastest({ tie_band_pct: 0 }), context: { volume: 2 } })).statistic).to.deep.include({ samples: null });
      h.parts.breakers.record('fn_test_beta', 'ws_consumer_2', true);
      // 20 recorded, and the two calls above.
      expect(routeOf(await h.price({ policy: fastest({ tie_band_pct: 0 }), context: { volume: 3 } })).statistic).to.deep.include({ samples: 22 });
    });

    it('shares traffic among functions within the tie band, never beyond it', async () => {
      recordLatency(h, 'fn_test_alpha', 10, 20);
      recordLatency(h, 'fn_test_beta', 10.5, 20);
      recordLatency(h, 'fn_test_gamma', 30, 20);
      const counts: Record<string, number> = {};
      for (let i = 0; i < 60; i++) {
        // Same context: after the first answer of each function the cache answers, so no new samples move the p50.
        const out = await h.price({ policy: fastest() });
        counts[out.fn.name] = (counts[out.fn.name] ?? 0) + 1;
        if (i === 0) expect(routeOf(out).statistic).to.deep.include({ tie_band_pct: 10, in_band: ['test-alpha', 'test-beta'] });
      }
      expect(counts['test-alpha'] ?? 0).to.be.at.least(10);
      expect(counts['test-beta'] ?? 0).to.be.at.least(10);
      expect(counts['test-gamma'] ?? 0).to.equal(0);
    });

    it('uses a window that rolls: samples older than the window stop counting', async () => {
      recordLatency(h, 'fn_test_alpha', 50);
      h.clock.advance(30_000);
      recordLatency(h, 'fn_test_alpha', 5);
      recordLatency(h, 'fn_test_beta', 20);
      recordLatency(h, 'fn_test_gamma', 40);
      // alpha: five samples at 50 ms and five at 5 ms, p50 27.5: beta is faster.
      expect(h.parts.latency.snapshot('fn_test_alpha')).to.include({ samples: 10, p50_ms: 27.5 });
      expect((await h.price({ policy: fastest({ tie_band_pct: 0 }), context: { n: 1 } })).fn.name).to.equal('test-beta');
      h.clock.advance(30_001);
      // The 50 ms samples left the window; the 5 ms ones remain.
      expect(h.parts.latency.snapshot('fn_test_alpha')).to.include({ samples: 5, p50_ms: 5 });
      expect((await h.price({ policy: fastest({ tie_band_pct: 0 }), context: { n: 2 } })).fn.name).to.equal('test-alpha');
    });
  });

  describe('round_robin', () => {
    const rr = (id = 'rp_test') => policy('round_robin', { candidates: ['test-gamma', 'test-alpha', 'test-beta'] }, { id });

    async function cycle(h: Harness, n: number, id?: string): Promise<string[]> {
      const names: string[] = [];
      for (let i = 0; i < n; i++) names.push((await h.price({ policy: rr(id) })).fn.name);
      return names;
    }

    it('cycles through the eligible functions in id order, with a counter per policy on the store', async () => {
      const h = await harness({ functions: [ALPHA, BETA, GAMMA] });
      try {
        expect(await cycle(h, 6)).to.deep.equal(['test-alpha', 'test-beta', 'test-gamma', 'test-alpha', 'test-beta', 'test-gamma']);
        expect(await h.kv.get('rr:rp_test')).to.equal('6');
        // Another policy keeps its own counter.
        expect(await cycle(h, 2, 'rp_other')).to.deep.equal(['test-alpha', 'test-beta']);
        expect(await h.kv.get('rr:rp_other')).to.equal('2');
        const out = await h.price({ policy: rr() });
        // The 7th turn over 3 functions lands on the first of the cycle.
        expect(routeOf(out).statistic).to.deep.equal({ name: 'round-robin turn', counter: 7, of: 3, position: 1, cycle: ['test-alpha', 'test-beta', 'test-gamma'] });
        expect(out.fn.name).to.equal('test-alpha');
      } finally {
        await h.close();
      }
    });

    it('orders the cycle by id in code units, not by locale: an upper-case id comes before a lower-case one on every instance', async () => {
      // Generated workspace ids mix cases; locale order would put fn_alpha before fn_Beta, and differ between processes' locales.
      const h = await harness({ functions: [fixture('test-alpha', { id: 'fn_alpha' }), fixture('test-beta', { id: 'fn_Beta' })] });
      try {
        const out = await h.price({ policy: policy('round_robin', { candidates: ['test-alpha', 'test-beta'] }) });
        expect(routeOf(out).statistic).to.deep.include({ cycle: ['test-beta', 'test-alpha'], position: 1 });
        expect(out.fn.name).to.equal('test-beta');
      } finally {
        await h.close();
      }
    });

    it('is reproducible: a fresh store gives the same cycle', async () => {
      const first = await harness({ functions: [ALPHA, BETA, GAMMA] });
      const second = await harness({ functions: [ALPHA, BETA, GAMMA] });
      try {
        expect(await cycle(first, 5)).to.deep.equal(await cycle(second, 5));
      } finally {
        await first.close();
        await second.close();
      }
    });
  });

  describe('weighted', () => {
    const weighted = (weights: Record<string, number>) => policy('weighted', { weights });

    it('weights naming one function by name and by id add up, in any key order', async () => {
      const h = await harness({ functions: [ALPHA, BETA, GAMMA] });
      try {
        for (const weights of [{ 'test-alpha': 0, fn_test_alpha: 5 }, { fn_test_alpha: 5, 'test-alpha': 0 }]) {
          const out = await h.price({ policy: weighted(weights) });
          expect(out.fn.id, JSON.stringify(weights)).to.equal('fn_test_alpha');
        }
      } finally {
        await h.close();
      }
    });

    it('a weighted preference on a policy whose weights are all zero spreads evenly over its candidates (no 422)', async () => {
      const h = await harness({ functions: [ALPHA, BETA, GAMMA] });
      try {
        const out = await h.price({ policy: policy('cheapest', { candidates: ['fn_test_alpha', 'fn_test_beta'], weights: { 'test-alpha': 0 } }), preference: 'weighted' });
        expect(['fn_test_alpha', 'fn_test_beta']).to.include(out.fn.id);
      } finally {
        await h.close();
      }
    });

    it('a weighted preference on a policy of another strategy ignores weights it still holds: they are not its weights, its candidates are', async () => {
      const h = await harness({ functions: [ALPHA, BETA, GAMMA] });
      try {
        const seen = new Set<string>();
        for (let i = 0; i < 24; i++) seen.add((await h.price({ policy: policy('cheapest', { candidates: ['fn_test_alpha', 'fn_test_beta'], weights: { 'test-gamma': 1 } }), preference: 'weighted' })).fn.id);
        expect([...seen].sort()).to.deep.equal(['fn_test_alpha', 'fn_test_beta']);
      } finally {
        await h.close();
      }
    });

    it('an exclusion under a routing_preference names the saved policy\'s own strategy too (what names its candidates)', async () => {
      const h = await harness({ functions: [ALPHA, BETA, GAMMA] });
      try {
        const err = await engineError(h.price({ policy: policy('priority', { order: ['test-alpha'], max_cost_per_unit: '0.001' }), preference: 'cheapest' }), 'no_eligible_function');
        expect(err.details).to.include({ strategy: 'cheapest', policyStrategy: 'priority' });
      } finally {
        await h.close();
      }
    });

    async function draws(h: Harness, n: number, weights: Record<string, number>): Promise<string[]> {
      const names: string[] = [];
      for (let i = 0; i < n; i++) names.push((await h.price({ policy: weighted(weights) })).fn.name);
      return names;
    }

    it('is reproducible with a seed', async () => {
      const weights = { 'test-alpha': 1, 'test-beta': 1, 'test-gamma': 1 };
      const a = await harness({ functions: [ALPHA, BETA, GAMMA], engine: { randomSeed: 7 } });
      const b = await harness({ functions: [ALPHA, BETA, GAMMA], engine: { randomSeed: 7 } });
      try {
        const first = await draws(a, 30, weights);
        expect(first).to.deep.equal(await draws(b, 30, weights));
        expect(new Set(first).size).to.equal(3);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('follows the weights over many draws; a zero weight is never chosen', async () => {
      const h = await harness({ functions: [ALPHA, BETA, GAMMA], engine: { randomSeed: 1234 } });
      try {
        const names = await draws(h, 400, { 'test-alpha': 3, fn_test_beta: 1, 'test-gamma': 0 });
        const share = names.filter((n) => n === 'test-alpha').length / names.length;
        expect(share).to.be.within(0.68, 0.82);
        expect(names).to.not.include('test-gamma');
        const out = await h.price({ policy: weighted({ 'test-alpha': 3, fn_test_beta: 1, 'test-gamma': 0 }) });
        expect(report(out, 'test-gamma')).to.include({ kept: false, reason: 'no weight' });
        expect(routeOf(out).statistic).to.have.property('total_weight', 4);
      } finally {
        await h.close();
      }
    });
  });

  describe('priority (the seventh strategy)', () => {
    let h: Harness;
    before(async () => {
      h = await harness({ functions: [ALPHA, BETA, fixture('test-gamma', { costPerUnit: '0.5' })] });
    });
    after(() => h.close());

    it('takes the first eligible function of config.order', async () => {
      const out = await h.price({ policy: policy('priority', { order: ['nowhere', 'test-gamma', 'test-beta', 'test-alpha'], max_cost_per_unit: '0.01' }) });
      expect(out.strategy).to.equal('priority');
      expect(out.fn.name).to.equal('test-beta');
      expect(report(out, 'nowhere')).to.include({ reason: 'unreachable' });
      expect(report(out, 'test-gamma')).to.include({ reason: 'cost ceiling' });
      expect(routeOf(out).statistic).to.deep.equal({ rank: 2 });
    });
  });

  describe('explicit pin and routing_preference', () => {
    let h: Harness;
    const draft: FunctionDescriptor = fixture('test-throw', { status: 'draft', workspaceId: CALLER_WS });
    const inactive: FunctionDescriptor = fixture('test-hang', { status: 'inactive', workspaceId: CALLER_WS });
    before(async () => {
      h = await harness({ functions: [ALPHA, BETA, GAMMA, draft, inactive, fixture('test-ok', { isPublic: false, workspaceId: 'ws_other' })] });
    });
    after(() => h.close());

    it('pins by id over the default policy: strategy explicit, no routing decision', async () => {
      const out = await h.price({ pin: { id: 'fn_test_beta' }, policy: policy('cheapest', { candidates: ['test-alpha'] }) });
      expect(out.strategy).to.equal('explicit');
      expect(out.fn.name).to.equal('test-beta');
      expect(out.decision).to.equal(null);
      expect(stage(out, 'resolve')).to.include({ explicit: true, function_id: 'fn_test_beta' });
    });

    it('pins by name, case-insensitively', async () => {
      const out = await h.price({ pin: { name: 'TEST-Gamma' } });
      expect(out.fn.id).to.equal('fn_test_gamma');
    });

    it('refuses drafts (naming the PATCH that activates), inactive, missing and out-of-reach functions', async () => {
      const d = await engineError(h.price({ pin: { id: draft.id } }), 'function_draft');
      expect(d.message).to.include(`PATCH /api/functions/${draft.id}`);
      const i = await engineError(h.price({ pin: { id: inactive.id } }), 'function_inactive');
      expect(i.message).to.not.include('PATCH');
      await engineError(h.price({ pin: { id: 'fn_missing' } }), 'function_not_found');
      await engineError(h.price({ pin: { name: 'test-ok' } }), 'function_not_found');
    });

    it('never resolves a name shaped like a function id (a legacy "fn_builtin_charm" of another workspace) by name', async () => {
      const legacy = fixture('test-ok', { id: 'fn_legacy_lookalike', name: 'fn_builtin_charm', workspaceId: 'ws_other', isPublic: true });
      h.source.put(legacy);
      await h.parts.registry.changed(legacy.id);
      await engineError(h.price({ pin: { name: 'fn_builtin_charm' } }), 'function_not_found');
      await engineError(h.price({ pin: { name: 'FN_BUILTIN_CHARM' } }), 'function_not_found');
      // By its own id it stays reachable (public); the built-in keeps its id.
      expect(h.parts.registry.resolve(legacy.id, SCOPE, 'id')?.name).to.equal('fn_builtin_charm');
      expect((await h.price({ pin: { id: 'fn_builtin_charm' }, context: { target_price: 10 } })).fn.name).to.equal('charm-pricing');
    });

    it('a policy reference to a function id means that function, never an own legacy function named like it (priority order and rules)', async () => {
      const legacy = fixture('test-ok', { id: 'fn_own_lookalike', name: 'fn_builtin_charm', workspaceId: SCOPE.workspaceId, isPublic: false });
      h.source.put(legacy);
      await h.parts.registry.changed(legacy.id);
      const context = { target_price: 10, tier: 'gold' };
      // Priority: the legacy function (listed by its id) fails; the next in order is the built-in, not the legacy one again.
      const ranked = await h.price({ context, policy: policy('priority', { order: [legacy.id, 'fn_builtin_charm'] }) });
      expect(ranked.fn.id).to.equal('fn_builtin_charm');
      expect(ranked.attempts.map((a) => [a.id, a.outcome])).to.deep.equal([
        [legacy.id, 'failed'],
        ['fn_builtin_charm', 'ok'],
      ]);
      // Rules: the rule naming the built-in's id runs the built-in.
      const ruled = await h.price({ context, policy: policy('policy', { rules: [{ when: { tier: 'silver' }, use: legacy.id }, { when: { tier: 'gold' }, use: 'fn_builtin_charm' }] }) });
      expect(ruled.fn.id).to.equal('fn_builtin_charm');
    });

    it('routing_preference explicit without a function is refused', async () => {
      await engineError(h.price({ preference: 'explicit' }), 'explicit_without_function');
    });

    it('routing_preference replaces the policy strategy but keeps its candidates and ceilings', async () => {
      const p = policy('round_robin', { candidates: ['test-alpha', 'test-beta'], max_cost_per_unit: '0.01' });
      recordLatency(h, 'fn_test_alpha', 9);
      recordLatency(h, 'fn_test_beta', 3);
      const out = await h.price({ policy: p, preference: 'fastest' });
      expect(out.strategy).to.equal('fastest');
      expect(out.fn.name).to.equal('test-beta');
      expect(routeOf(out)).to.include({ strategy: 'fastest', policy_id: 'rp_test' });
      expect(candidatesOf(out).map((c) => c.function)).to.deep.equal(['test-alpha', 'test-beta']);
    });

    for (const [strategy, p, named] of [
      ['priority', policy('priority', { order: ['test-gamma', 'test-beta'] }), ['test-gamma', 'test-beta']],
      ['weighted', policy('weighted', { weights: { 'test-gamma': 1 } }), ['test-gamma']],
      ['policy', policy('policy', { rules: [{ when: { tier: { eq: 'gold' } }, use: 'test-gamma' }], default_function: 'test-beta' }), ['test-gamma', 'test-beta']],
    ] as const) {
      it(`a routing_preference on a ${strategy} policy chooses among the functions it names, not the built-ins and the workspace's own`, async () => {
        for (const preference of ['cheapest', 'fastest', 'round_robin', 'weighted'] as const) {
          const out = await h.price({ policy: p, preference });
          expect(out.strategy, preference).to.equal(preference);
          expect(named, preference).to.include(out.fn.name);
          expect(candidatesOf(out).map((c) => c.function), preference).to.have.members([...named]);
        }
      });
    }
  });
});
