import { expect } from 'chai';
import { mayPrice } from '../../engine/builtins/catalogue';
import { positiveMoney } from '../../engine/builtins/inputs';
import { fixture, harness, policy, recordLatency, stage } from './harness';
import type { Harness } from './harness';

const TTL_MS = 5_000;

const FUNCTIONS = [
  fixture('test-alpha', { costPerUnit: '0.001' }),
  fixture('test-beta', { costPerUnit: '0.002', costMultiplier: '2' }),
  fixture('test-gamma', { costPerUnit: '0.0025' }),
  fixture('test-ok', { costPerUnit: '0.01' }),
  fixture('test-throw', { costPerUnit: '0.0001' }),
];

describe('engine: result cache', function () {
  this.timeout(20_000);
  let h: Harness;
  beforeEach(async () => {
    h = await harness({ functions: FUNCTIONS, engine: { cacheTtlMs: TTL_MS } });
  });
  afterEach(() => h.close());

  const ctx = { product_type: 'tea', test_price: '12.00', customer: { tier: 'gold', region: 'eu' } };
  const reordered = { customer: { region: 'eu', tier: 'gold' }, test_price: '12.00', product_type: 'tea' };
  const samples = () => h.parts.latency.snapshot('fn_test_alpha').samples;

  it('answers the same function and context (keys in another order) from the cache within the TTL', async () => {
    const first = await h.price({ pin: { name: 'test-alpha' }, context: ctx });
    expect(first.cached).to.equal(false);
    expect(stage(first, 'cache')).to.include({ hit: false });
    h.clock.advance(TTL_MS - 1);
    const second = await h.price({ pin: { name: 'test-alpha' }, context: reordered });
    expect(second.cached).to.equal(true);
    expect(stage(second, 'cache')).to.include({ hit: true });
    expect(second.result).to.deep.equal(first.result);
    // The attempt that answered is listed, marked cached: the function did not run.
    expect(second.attempts).to.deep.equal([{ function: 'test-alpha', id: 'fn_test_alpha', role: 'chosen', outcome: 'ok', cached: true, ms: 0 }]);
    expect(samples(), 'the function did not run again').to.equal(1);
  });

  it('runs the function again once the TTL has passed', async () => {
    await h.price({ pin: { name: 'test-alpha' }, context: ctx });
    h.clock.advance(TTL_MS);
    const again = await h.price({ pin: { name: 'test-alpha' }, context: reordered });
    expect(again.cached).to.equal(false);
    expect(samples()).to.equal(2);
  });

  it('misses for a different context, and for another function with the same context', async () => {
    await h.price({ pin: { name: 'test-alpha' }, context: ctx });
    const other = await h.price({ pin: { name: 'test-alpha' }, context: { ...ctx, customer: { tier: 'silver', region: 'eu' } } });
    expect(other.cached).to.equal(false);
    const otherFn = await h.price({ pin: { name: 'test-beta' }, context: ctx });
    expect(otherFn.cached).to.equal(false);
    expect(otherFn.fn.name).to.equal('test-beta');
  });

  it("misses for another calling workspace: one workspace's answer never tells another that the context was just priced", async () => {
    const first = await h.price({ pin: { name: 'test-alpha' }, context: ctx });
    expect(first.cached).to.equal(false);
    const other = await h.price({ pin: { name: 'test-alpha' }, context: ctx, scope: { workspaceId: 'ws_competitor', builtInsOnly: false } });
    expect(other.cached, "another workspace's identical context").to.equal(false);
    expect(stage(other, 'cache')).to.include({ hit: false });
    expect(samples(), 'the function ran for each workspace').to.equal(2);
    const again = await h.price({ pin: { name: 'test-alpha' }, context: ctx, scope: { workspaceId: 'ws_competitor', builtInsOnly: false } });
    expect(again.cached, "the workspace's own answer is reused").to.equal(true);
  });

  it('misses once the function changed (registry.changed), on this instance and on another sharing the store', async () => {
    const one = await harness({ functions: [fixture('test-alpha')], engine: { cacheTtlMs: TTL_MS } });
    const two = await harness({ shared: { kv: one.kv, source: one.source }, clock: one.clock, engine: { cacheTtlMs: TTL_MS } });
    const byId = { pin: { id: 'fn_test_alpha' }, context: ctx };
    try {
      expect((await one.price(byId)).result.details).to.deep.include({ answered_by: 'test-alpha' });
      expect((await two.price(byId)).cached, 'the instances share the cache').to.equal(true);
      // Same id, another method behind it: as an external function whose endpoint_url was PATCHed.
      one.source.put(fixture('test-beta', { id: 'fn_test_alpha' }));
      await one.parts.registry.changed('fn_test_alpha');
      await new Promise((resolve) => setImmediate(resolve));
      const after = await one.price(byId);
      expect(after.cached, 'answered from the cache after the change').to.equal(false);
      expect(after.result.details).to.deep.include({ answered_by: 'test-beta' });
      expect((await two.price(byId)).result.details, 'the other instance answers with the new version').to.deep.include({ answered_by: 'test-beta' });
    } finally {
      await two.close();
      await one.close();
    }
  });

  it("serves the answer of the function that answered after the chosen one could not price the context: the alternate's own cached answer, not a new run", async () => {
    const p = policy('cheapest', { candidates: ['cost-plus', 'competitive-position'] });
    const context = { competitor_prices: [10, 12, 14] };
    const first = await h.price({ policy: p, context });
    expect(first.fn.name).to.equal('competitive-position');
    expect(first.cached).to.equal(false);
    const runs = () => h.parts.latency.snapshot('fn_builtin_competitive').samples;
    expect(runs()).to.equal(1);
    const second = await h.price({ policy: p, context });
    expect(second.fn.name).to.equal('competitive-position');
    expect(second.cached).to.equal(true);
    expect(second.result).to.deep.equal(first.result);
    expect(second.fallbackUsed).to.equal(false);
    expect(second.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}${a.cached ? ':cached' : ''}`)).to.deep.equal(['cost-plus:chosen:not_applicable', 'competitive-position:alternate:ok:cached']);
    const lookups = second.stages.filter((st) => st.stage === 'cache').map(({ ms: _ms, ...rest }) => rest);
    expect(lookups).to.deep.equal([
      { stage: 'cache', hit: false },
      { stage: 'cache', hit: true, function: 'competitive-position' },
    ]);
    expect(runs(), 'the alternate did not run again').to.equal(1);
  });

  it("a fallback chain's cached answer still says a fallback answered", async () => {
    const p = policy('cheapest', { candidates: ['cost-plus', 'elasticity-optimum'] }, { fallback_chain: ['anchored-adjustment'] });
    await h.price({ policy: p, context: { current_price: 10 } });
    const again = await h.price({ policy: p, context: { current_price: 10 } });
    expect(again.fn.name).to.equal('anchored-adjustment');
    expect(again.cached).to.equal(true);
    expect(again.fallbackUsed).to.equal(true);
    expect(again.savings).to.equal(null);
    expect(stage(again, 'fallback')).to.include({ used: true, from: 'cost-plus', to: 'anchored-adjustment' });
  });

  it('is reported as disabled when the TTL is 0', async () => {
    const off = await harness({ functions: FUNCTIONS, engine: { cacheTtlMs: 0 } });
    try {
      await off.price({ pin: { name: 'test-alpha' }, context: ctx });
      const out = await off.price({ pin: { name: 'test-alpha' }, context: ctx });
      expect(out.cached).to.equal(false);
      expect(stage(out, 'cache')).to.include({ hit: false, disabled: true });
    } finally {
      await off.close();
    }
  });
});

describe('engine: savings', function () {
  this.timeout(20_000);
  let h: Harness;
  beforeEach(async () => {
    h = await harness({ functions: FUNCTIONS, engine: { cacheTtlMs: TTL_MS } });
  });
  afterEach(() => h.close());

  const cheapest = (candidates: string[], extra: Record<string, unknown> = {}) => policy('cheapest', { candidates, ...extra });

  it('when the router chose among several eligible functions: most expensive eligible cost − chosen cost', async () => {
    const out = await h.price({ policy: cheapest(['test-alpha', 'test-beta', 'test-gamma']) });
    expect(out.fn.name).to.equal('test-alpha');
    expect(out.savings).to.deep.equal({ amount: '0.003', currency: 'USDC', compared_with: { function: 'test-beta', cost_per_unit: '0.004' }, chosen_cost_per_unit: '0.001' });
  });

  it('compares only with eligible functions (a function above the ceiling does not count)', async () => {
    const out = await h.price({ policy: cheapest(['test-alpha', 'test-beta', 'test-gamma', 'test-ok'], { max_cost_per_unit: '0.003' }) });
    expect(out.savings).to.deep.include({ amount: '0.0015', compared_with: { function: 'test-gamma', cost_per_unit: '0.0025' } });
  });

  it('is measured against the chosen function under other strategies too (fastest picks a dearer one: zero saved)', async () => {
    recordLatency(h, 'fn_test_alpha', 30);
    recordLatency(h, 'fn_test_beta', 5);
    const out = await h.price({ policy: policy('fastest', { candidates: ['test-alpha', 'test-beta'], tie_band_pct: 0 }) });
    expect(out.fn.name).to.equal('test-beta');
    expect(out.savings).to.deep.include({ amount: '0.00', chosen_cost_per_unit: '0.004' });
  });

  it('is absent when only one function was eligible', async () => {
    const out = await h.price({ policy: cheapest(['test-alpha', 'test-ok'], { max_cost_per_unit: '0.002' }) });
    expect(out.fn.name).to.equal('test-alpha');
    expect(out.savings).to.equal(null);
  });

  it('is absent for a pinned function', async () => {
    const out = await h.price({ pin: { name: 'test-alpha' }, policy: cheapest(['test-alpha', 'test-beta']) });
    expect(out.savings).to.equal(null);
  });

  it('is absent when a fallback answered', async () => {
    const p = policy('cheapest', { candidates: ['test-throw', 'test-alpha', 'test-beta'] }, { fallback_function: 'test-ok' });
    const out = await h.price({ policy: p });
    expect(out.fn.name).to.equal('test-ok');
    expect(out.fallbackUsed).to.equal(true);
    expect(out.savings).to.equal(null);
  });

  it('is absent when the fallback chain answered because the chosen function could not price the context', async () => {
    const p = policy('cheapest', { candidates: ['cost-plus', 'elasticity-optimum'] }, { fallback_chain: ['anchored-adjustment'] });
    const out = await h.price({ policy: p, context: { current_price: 10 } });
    expect(out.fn.name).to.equal('anchored-adjustment');
    // Neither candidate can price it (the strategy's alternate is tried first), so the chain answers.
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['cost-plus:chosen:not_applicable', 'elasticity-optimum:alternate:not_applicable', 'anchored-adjustment:fallback_chain:ok']);
    expect(out.fallbackUsed).to.equal(true);
    expect(out.savings).to.equal(null);
  });

  it('is present when the strategy\'s next function answered because its first choice could not price the context, compared with one that could have', async () => {
    const p = policy('cheapest', { candidates: ['cost-plus', 'competitive-position', 'test-beta'] });
    const out = await h.price({ policy: p, context: { competitor_prices: [10, 12, 14] } });
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['cost-plus:chosen:not_applicable', 'competitive-position:alternate:ok']);
    expect(out.fallbackUsed).to.equal(false);
    expect(out.savings).to.deep.equal({ amount: '0.0025', currency: 'USDC', compared_with: { function: 'test-beta', cost_per_unit: '0.004' }, chosen_cost_per_unit: '0.0015' });
  });

  it('compares only with functions that could have priced the context: not a built-in without the inputs it needs', async () => {
    // elasticity-optimum (0.002) needs an elasticity, a price history or a demand curve besides unit_cost.
    const out = await h.price({ policy: cheapest(['charm-pricing', 'cost-plus', 'elasticity-optimum']), context: { unit_cost: 5 } });
    expect(out.fn.name).to.equal('charm-pricing');
    expect(out.savings).to.deep.equal({ amount: '0.0002', currency: 'USDC', compared_with: { function: 'cost-plus', cost_per_unit: '0.001' }, chosen_cost_per_unit: '0.0008' });
    const priced = await h.price({ policy: cheapest(['charm-pricing', 'cost-plus', 'elasticity-optimum']), context: { unit_cost: 5, elasticity: -3 } });
    expect(priced.savings).to.deep.include({ amount: '0.0012', compared_with: { function: 'elasticity-optimum', cost_per_unit: '0.002' } });
  });

  it('does not compare with a built-in whose needed amount is 0, which it cannot price from', async () => {
    // anchored-adjustment (0.0005) prices from current_price; elasticity-optimum (0.002) needs a unit_cost above 0.
    for (const unit_cost of [0, '0.00']) {
      const out = await h.price({ policy: cheapest(['anchored-adjustment', 'elasticity-optimum']), context: { unit_cost, current_price: 5, elasticity: 3 } });
      expect(out.fn.name).to.equal('anchored-adjustment');
      expect(out.savings, JSON.stringify(unit_cost)).to.equal(null);
    }
    const priceable = await h.price({ policy: cheapest(['anchored-adjustment', 'elasticity-optimum']), context: { unit_cost: '2.50', current_price: 5, elasticity: 3 } });
    expect(priceable.savings).to.deep.include({ compared_with: { function: 'elasticity-optimum', cost_per_unit: '0.002' } });
  });

  it('judges a needed amount as the built-ins read it: not an amount, or beyond their bound, could not have priced', () => {
    const costPlus = { builtIn: true, name: 'cost-plus' };
    for (const unit_cost of ['1e3', '0x10', 1e20, -2, 0, 'ten']) expect(mayPrice(costPlus, { unit_cost }), JSON.stringify(unit_cost)).to.equal(false);
    for (const unit_cost of [2.5, '2.50', ' 4 ']) expect(mayPrice(costPlus, { unit_cost }), JSON.stringify(unit_cost)).to.equal(true);
    // Numbers take a shortcut past the Decimal reading: it must agree with positiveMoney at every edge.
    for (const unit_cost of [1e15, 1e15 + 0.5, 1e16, 5e-324, -0, Number.NaN, Number.POSITIVE_INFINITY, -1e-9, 0.1, null, true]) {
      let read: boolean;
      try {
        read = positiveMoney({ unit_cost }, 'unit_cost') !== undefined;
      } catch {
        read = false;
      }
      expect(mayPrice(costPlus, { unit_cost }), String(unit_cost)).to.equal(read);
    }
  });

  it('does not compare with competitive-position when competitor_prices is empty or not a list (and the network has no reference)', async () => {
    for (const competitor_prices of [[], 'cheap']) {
      const out = await h.price({ policy: cheapest(['anchored-adjustment', 'competitive-position']), context: { current_price: 10, competitor_prices } });
      expect(out.fn.name).to.equal('anchored-adjustment');
      expect(out.savings, JSON.stringify(competitor_prices)).to.equal(null);
    }
    const listed = await h.price({ policy: cheapest(['anchored-adjustment', 'competitive-position']), context: { current_price: 10, competitor_prices: [9, 11] } });
    expect(listed.savings).to.deep.include({ compared_with: { function: 'competitive-position', cost_per_unit: '0.0015' } });
  });

  it('is absent when no other eligible function could have priced the context', async () => {
    const p = policy('cheapest', { candidates: ['cost-plus', 'competitive-position', 'elasticity-optimum'] });
    const out = await h.price({ policy: p, context: { competitor_prices: [10, 12, 14] } });
    // cost-plus answered not applicable in this call; elasticity-optimum has no unit_cost to work from.
    expect(out.attempts.map((a) => `${a.function}:${a.role}:${a.outcome}`)).to.deep.equal(['cost-plus:chosen:not_applicable', 'competitive-position:alternate:ok']);
    expect(out.fallbackUsed).to.equal(false);
    expect(out.savings).to.equal(null);
  });

  it('is absent for a cached answer', async () => {
    const p = cheapest(['test-alpha', 'test-beta']);
    expect((await h.price({ policy: p })).savings).to.not.equal(null);
    const cached = await h.price({ policy: p });
    expect(cached.cached).to.equal(true);
    expect(cached.savings).to.equal(null);
  });
});
