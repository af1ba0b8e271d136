import { expect } from 'chai';
import { anchored } from '../../engine/builtins/anchored';
import { charm } from '../../engine/builtins/charm';
import { competitive } from '../../engine/builtins/competitive';
import { costPlus } from '../../engine/builtins/cost-plus';
import { elasticityOptimum } from '../../engine/builtins/elasticity';
import { D, methodResult, percent, quote } from '../../engine/builtins/inputs';
import { MethodNotApplicable } from '../../engine/builtins/types';
import type { Context, MethodResult, PricingMethod } from '../../engine/builtins/types';
import { engineError, harness } from './harness';

const run = (method: PricingMethod, ctx: Context) => method(ctx) as MethodResult;

function notApplicable(method: PricingMethod, ctx: Context): MethodNotApplicable {
  try {
    run(method, ctx);
  } catch (err) {
    expect(err).to.be.instanceOf(MethodNotApplicable);
    return err as MethodNotApplicable;
  }
  expect.fail('expected MethodNotApplicable');
}

describe('engine: built-in pricing methods', () => {
  describe('cost-plus', () => {
    it('details show the cost as computed, not rounded to cents: 10.004 stays 10.004 (the floor its note names), 0.0055 stays 0.0055', () => {
      expect(run(costPlus, { unit_cost: 10.004, markup: 0 }).details).to.deep.include({ unit_cost_with_fixed: '10.004', markup_applied: 0 });
      expect(run(costPlus, { unit_cost: 0.0055, markup: 0 }).details).to.deep.include({ unit_cost_with_fixed: '0.0055' });
      expect(run(costPlus, { unit_cost: 2, fixed_costs: 1, expected_volume: 3, markup: 0.1 }).details).to.deep.include({ unit_cost_with_fixed: '2.33333333', markup_applied: 0.1 });
      expect(run(costPlus, { unit_cost: 2 }).details).to.deep.include({ unit_cost_with_fixed: '2.00' });
    });

    it('margin is profit over price: cost 100 at a 30% margin is 142.86', () => {
      const r = run(costPlus, { unit_cost: 100, target_margin: 0.3 });
      expect(r.price).to.equal('142.86');
      expect(r.confidence).to.equal(0.5);
    });

    it('markup is profit over cost: cost 100 at a 30% markup is 130.00', () => {
      expect(run(costPlus, { unit_cost: 100, markup: 0.3 }).price).to.equal('130.00');
    });

    it('spreads fixed costs over the expected volume', () => {
      // (10 + 1000/100) / (1 − 0.5) = 40
      expect(run(costPlus, { unit_cost: 10, fixed_costs: 1000, expected_volume: 100, target_margin: 0.5 }).price).to.equal('40.00');
    });

    it('a default margin gives lower confidence, and an ambiguous "30" margin is refused', () => {
      const r = run(costPlus, { unit_cost: 100 });
      expect(r.price).to.equal('142.86');
      expect(r.confidence).to.equal(0.35);
      expect(notApplicable(costPlus, { unit_cost: 100, target_margin: 30 }).missing).to.deep.equal(['target_margin']);
      expect(notApplicable(costPlus, { unit_cost: 100, target_margin: 1 }).missing).to.deep.equal(['target_margin']);
      expect(notApplicable(costPlus, { current_price: 5 }).missing).to.deep.equal(['unit_cost']);
    });
  });

  describe('rates and markups', () => {
    it('a markup may be 1 or more (150% is 2.5 × cost) up to 10; markup may be negative above -1, min_markup may not be negative; each refusal names the input', () => {
      expect(run(costPlus, { unit_cost: 5, markup: 1.5 }).price).to.equal('12.50');
      expect(run(costPlus, { unit_cost: 5, markup: 10 }).price).to.equal('55.00');
      expect(run(costPlus, { unit_cost: 10, markup: -0.5 }).price).to.equal('5.00');
      const floored = run(competitive, { competitor_prices: [10], unit_cost: 5, min_markup: 1.5 });
      expect(floored.price).to.equal('12.50');
      expect(floored.notes).to.include('match not possible above the floor (unit_cost with min_markup 12.5): the floor binds');
      // The inputs that made the floor, by their names in the context.
      expect(floored.inputs_used).to.deep.equal(['competitor_prices', 'unit_cost', 'min_markup']);
      expect(run(competitive, { competitor_prices: [10, 11, 12], min_price: 12.5 }).inputs_used).to.deep.equal(['competitor_prices', 'min_price']);
      expect(run(competitive, { competitor_prices: [10], unit_cost: 5, min_markup: 0 }).price).to.equal('10.00');
      const refusals: Array<[PricingMethod, Context, string]> = [
        [costPlus, { unit_cost: 5, markup: 10.5 }, 'markup must be a markup over cost above -1 up to 10 (0.3 means 30%, 1.5 means 150%), got 10.5.'],
        [costPlus, { unit_cost: 5, markup: -1 }, 'markup must be a markup over cost above -1 up to 10 (0.3 means 30%, 1.5 means 150%), got -1.'],
        [competitive, { competitor_prices: [10], unit_cost: 5, min_markup: -0.5 }, 'min_markup must be a markup over cost from 0 up to 10 (0.3 means 30%, 1.5 means 150%), got -0.5.'],
        [competitive, { competitor_prices: [10], unit_cost: 5, min_markup: 11 }, 'min_markup must be a markup over cost from 0 up to 10 (0.3 means 30%, 1.5 means 150%), got 11.'],
        [anchored, { current_price: 10, competitor_prices: [10], unit_cost: 5, min_markup: -0.5 }, 'min_markup must be a markup over cost from 0 up to 10 (0.3 means 30%, 1.5 means 150%), got -0.5.'],
      ];
      for (const [method, ctx, message] of refusals) {
        const err = notApplicable(method, ctx);
        expect(err.message).to.equal(message);
        expect(err.missing).to.deep.equal([message.split(' ')[0]]);
      }
    });
  });

  describe('elasticity-optimum', () => {
    it('Lerner: ε = 2 gives twice the cost, whatever the sign', () => {
      expect(run(elasticityOptimum, { unit_cost: 10, elasticity: 2 }).price).to.equal('20.00');
      expect(run(elasticityOptimum, { unit_cost: 10, elasticity: -3 }).price).to.equal('15.00');
    });

    it('caps the multiple when ε is close to 1, and refuses inelastic demand', () => {
      const capped = run(elasticityOptimum, { unit_cost: 10, elasticity: 1.1 });
      expect(capped.price).to.equal('50.00');
      expect(capped.confidence_factors).to.have.property('capped');
      expect(notApplicable(elasticityOptimum, { unit_cost: 10, elasticity: 0.8 }).missing).to.deep.equal(['elasticity']);
    });

    it('with unit_cost alone, lists in missing every input its refusal names: elasticity, price_history, demand_intercept and demand_slope', () => {
      const err = notApplicable(elasticityOptimum, { unit_cost: 10 });
      expect(err.message).to.equal('the elasticity optimum needs elasticity, price_history, or demand_intercept with demand_slope.');
      expect(err.missing).to.deep.equal(['elasticity', 'price_history', 'demand_intercept', 'demand_slope']);
    });

    it('max_markup_multiple must be above 1: a cap of 1 or less is refused by name (not read as missing), never a price at or below cost', () => {
      for (const cap of [0.5, 1, 0, -1, '0.9']) {
        const err = notApplicable(elasticityOptimum, { unit_cost: 10, elasticity: 1.1, max_markup_multiple: cap });
        expect(err.missing).to.deep.equal(['max_markup_multiple']);
        expect(err.refused, 'a refusal, as for any value given that cannot be used').to.equal(true);
        expect(err.message).to.match(new RegExp(`^max_markup_multiple must be above 1, got ${Number(cap)}: it caps the price at that multiple of unit_cost`));
      }
      const capped = run(elasticityOptimum, { unit_cost: 10, elasticity: 1.1, max_markup_multiple: 1.5 });
      expect(capped.price).to.equal('15.00');
      expect(capped.notes).to.include('ε close to 1 gives 11× cost; capped at 1.5×');
      expect(run(elasticityOptimum, { unit_cost: 10, elasticity: 2, max_markup_multiple: 1.01 }).price).to.equal('10.10');
    });

    it('linear demand q = a − b·p: the optimum is (a/b + c)/2', () => {
      // a = 100, b = 2, c = 10 → (50 + 10)/2 = 30
      const r = run(elasticityOptimum, { unit_cost: 10, demand_intercept: 100, demand_slope: 2 });
      expect(r.price).to.equal('30.00');
      expect(r.details).to.deep.include({ expected_quantity: 40 });
      expect(notApplicable(elasticityOptimum, { unit_cost: 60, demand_intercept: 100, demand_slope: 2 }).missing).to.include('demand_intercept');
    });

    it('estimates ε from price history (log-log least squares)', () => {
      const history = [5, 6, 7, 8, 9, 10].map((p) => ({ price: p, quantity: 1000 / (p * p) }));
      const r = run(elasticityOptimum, { unit_cost: 10, price_history: history });
      expect(r.details).to.deep.include({ elasticity: 2 });
      expect(r.price).to.equal('20.00');
      expect(r.inputs_used).to.deep.equal(['unit_cost', 'price_history']);
    });

    it('leaves price_history rows in another currency out of the estimate, with a note', () => {
      const history = [5, 6, 7, 8, 9, 10].map((p) => ({ price: p, quantity: 1000 / (p * p), currency: 'USD' }));
      const r = run(elasticityOptimum, { unit_cost: 10, price_history: [...history, { price: 900, quantity: 1000 / 81, currency: 'JPY' }, { price: 1000, quantity: 10, currency: 'JPY' }] });
      expect(r.details, 'elasticity estimated from USD and JPY rows together').to.deep.include({ elasticity: 2 });
      expect(r.notes).to.include('price_history rows in another currency than USD were dropped (2 in JPY): prices are never mixed across currencies');
    });
  });

  describe('competitive-position', () => {
    // Source a lists three times: per-source medians a = 11, b = 20, c = 30; reference = 20 (not 12).
    const prices = [
      { price: 10, source: 'a' },
      { price: 11, source: 'a' },
      { price: 12, source: 'a' },
      { price: 20, source: 'b' },
      { price: 30, source: 'c' },
    ];

    it('matches the median of per-source medians', () => {
      const r = run(competitive, { competitor_prices: prices });
      expect(r.price).to.equal('20.00');
      expect(r.details).to.deep.include({ reference_price: '20.00', sources: 3 });
      // amount 3/(3+3) = 0.5 × agreement 1/(1 + 1.4826·9/20) ≈ 0.6
      expect(r.confidence).to.equal(0.3);
    });

    it('undercuts and adds a premium by the given fraction', () => {
      expect(run(competitive, { competitor_prices: prices, position: 'undercut', undercut_pct: 0.1 }).price).to.equal('18.00');
      expect(run(competitive, { competitor_prices: prices, position: 'premium', premium_pct: 0.1 }).price).to.equal('22.00');
    });

    it('keeps the floor and says so when the undercut would cross it', () => {
      const r = run(competitive, { competitor_prices: prices, position: 'undercut', undercut_pct: 0.1, unit_cost: 19.5 });
      expect(r.price).to.equal('19.50');
      expect(r.notes.join(' ')).to.match(/not possible above the floor/);
      expect(notApplicable(competitive, { competitor_prices: prices, min_price: 30, max_price: 25 }).missing).to.deep.equal(['min_price', 'max_price']);
    });

    it('drops competitor prices in another currency, counted in a note, never reading yen as dollars', () => {
      const mixed = [{ price: 10, currency: 'USD', source: 'a' }, { price: 12, currency: 'usd', source: 'b' }, { price: 1500, currency: 'JPY', source: 'c' }, { price: 1600, currency: 'JPY', source: 'd' }, { price: 9, currency: 'EUR', source: 'e' }];
      const r = run(competitive, { currency: 'USD', competitor_prices: mixed });
      expect(r.price, 'price in USD built from JPY competitor prices').to.equal('11.00');
      expect(r.details).to.deep.include({ sources: 2 });
      expect(r.notes).to.include('3 competitor price(s) in another currency than USD were dropped (2 in JPY, 1 in EUR): prices are never mixed across currencies');
      // Without a currency the context is USD; an item without one is taken to be in the context's.
      expect(run(competitive, { competitor_prices: [10, { price: 12 }, { price: 1500, currency: 'JPY' }] }).price).to.equal('11.00');
      expect(run(competitive, { currency: 'jpy', competitor_prices: mixed }).price).to.equal('1550');
    });

    it('is not applicable, naming the currencies, when no competitor price is in the context\'s currency', () => {
      const e = notApplicable(competitive, { currency: 'USD', competitor_prices: [{ price: 1500, currency: 'JPY' }] });
      expect(e.missing).to.deep.equal(['competitor_prices']);
      expect(e.message).to.match(/No competitor price is in the context's currency USD \(1 in JPY\)/);
      // anchored-adjustment's competitive target reads them the same way.
      const a = run(anchored, { current_price: 11, competitor_prices: [{ price: 11.5, currency: 'USD' }, { price: 1500, currency: 'JPY' }] });
      expect(a.price).to.equal('11.50');
      expect(a.notes.join(' ')).to.match(/1 competitor price\(s\) in another currency than USD were dropped/);
    });

    it('halves confidence when every price comes from one source', () => {
      const r = run(competitive, { competitor_prices: [{ price: 10, source: 'x' }, { price: 10, source: 'x' }] });
      expect(r.confidence_factors).to.deep.include({ independence: 0.5 });
    });
  });

  describe('charm-pricing', () => {
    it('details show the base as read: a target of 19.995 under max_price 19.5 is base_price 19.995, not 20.00 (over the ceiling)', () => {
      const r = run(charm, { target_price: 19.995, max_price: 19.5 });
      expect(r.price).to.equal('19.50');
      expect(r.details).to.deep.equal({ base_price: '19.995' });
    });

    it('moves to the nearest .99/.95 ending within the 2% tolerance', () => {
      expect(run(charm, { target_price: 20.1 }).price).to.equal('19.99');
      expect(run(charm, { target_price: 152 }).price).to.equal('149.00');
      expect(run(charm, { target_price: 1210 }).price).to.equal('1199.00');
    });

    it('keeps the base price when no ending lies within the tolerance', () => {
      const r = run(charm, { target_price: 20.5 });
      expect(r.price).to.equal('20.50');
      expect(r.notes.join(' ')).to.match(/no charm ending within 2%/);
      expect(run(charm, { target_price: 20.5, charm_tolerance: 0.03 }).price).to.equal('20.95');
    });

    it('never crosses a floor, and keeps the base confidence', () => {
      expect(run(charm, { target_price: 20.1, min_price: 20 }).price).to.equal('20.10');
      expect(run(charm, { current_price: 20.1 }).confidence).to.equal(0.3);
    });

    it('never rounds a cost-plus base below unit_cost: cost 10 at a 1% markup stays 10.10, and says why', () => {
      const r = run(charm, { unit_cost: 10, markup: 0.01, currency: 'USD' });
      expect(r.details).to.deep.include({ base_price: '10.10' });
      expect(r.price, 'charm price below unit_cost').to.equal('10.10');
      expect(r.notes.join(' ')).to.match(/charm ending 9\.99 would cross the floor \(unit_cost 10\).*base price kept/);
    });

    it('takes the nearest ending above the floor when the nearest one lies under it, if within the tolerance', () => {
      const r = run(charm, { target_price: 101, unit_cost: 99.97 });
      expect(r.price).to.equal('99.99');
      expect(r.notes.join(' ')).to.match(/charm ending 99\.00 would cross the floor \(unit_cost 99\.97\): the nearest ending above it taken/);
      expect(run(charm, { target_price: 10.2, unit_cost: 10, charm_tolerance: 0.1 }).price).to.equal('10.95');
      expect(run(charm, { target_price: 10.05, unit_cost: 9.99 }).price, 'an ending equal to the floor does not cross it').to.equal('9.99');
    });

    it('charm_tolerance is a rate in [0, 1): 1 or more, or below 0, is not applicable naming it', () => {
      for (const tolerance of [1.5, 1, -1, -0.01, '2']) {
        const err = notApplicable(charm, { target_price: 20.1, charm_tolerance: tolerance });
        expect(err.missing).to.deep.equal(['charm_tolerance']);
        expect(err.message).to.equal(`charm_tolerance must be a fraction from 0 to below 1 (0.3 means 30%), got ${Number(tolerance)}.`);
      }
      expect(run(charm, { target_price: 20.1, charm_tolerance: 0 }).price).to.equal('20.10');
      expect(run(charm, { target_price: 19.99, charm_tolerance: 0 }).notes).to.include('already charm-ended');
      expect(run(charm, { target_price: 20.5, charm_tolerance: 0.5 }).price).to.equal('20.95');
    });

    it('a base asked below cost (negative markup) is rounded as usual: cost is no floor for it', () => {
      const r = run(charm, { unit_cost: 10, markup: -0.01 });
      expect(r.details).to.deep.include({ base_price: '9.90' });
      expect(r.price).to.equal('9.95');
    });
  });

  describe('anchored-adjustment', () => {
    it('bounds the step from current_price (default 10%)', () => {
      const r = run(anchored, { current_price: 100, target_price: 150 });
      expect(r.price).to.equal('110.00');
      expect(r.notes).to.include('step limited to +10%');
      expect(run(anchored, { current_price: 100, target_price: 150, max_step_pct: 0.2 }).price).to.equal('120.00');
      expect(run(anchored, { current_price: 100, target_price: 50 }).price).to.equal('90.00');
    });

    it('holds inside the 1% dead band', () => {
      const r = run(anchored, { current_price: 100, target_price: 100.8 });
      expect(r.price).to.equal('100.00');
      expect(r.notes).to.include('change under 1%: held');
      expect(run(anchored, { current_price: 100, target_price: 101.5 }).price).to.equal('101.50');
    });

    it('marks down when selling behind a linear plan', () => {
      // 10 of 100 sold at mid-season: pace 0.2 → one step down.
      expect(run(anchored, { current_price: 100, units_sold: 10, units_received: 100, season_elapsed: 0.5 }).price).to.equal('90.00');
    });

    it('a negative units_sold is not applicable naming it, never a NaN price nor a negative volume factor', () => {
      const ctx = { current_price: 10, units_sold: -5, units_received: 100, season_elapsed: 0.5 };
      for (const c of [{ ...ctx, elasticity: 2 }, ctx, { ...ctx, units_sold: -20 }, { ...ctx, units_sold: '-5' }]) {
        const err = notApplicable(anchored, c);
        expect(err.missing).to.deep.equal(['units_sold']);
        expect(err.message).to.equal(`units_sold must be a count of 0 or more, got ${Number(c.units_sold)}.`);
      }
    });

    it('paces against units_received above 0, else inventory_start, and names the one it used', () => {
      const ctx = { current_price: 10, units_sold: 5, season_elapsed: 0.5 };
      for (const received of [0, -1]) {
        const r = run(anchored, { ...ctx, units_received: received, inventory_start: 100 });
        expect(r.price).to.equal('9.00');
        expect(r.inputs_used).to.deep.equal(['current_price', 'units_sold', 'inventory_start', 'season_elapsed']);
        expect(r.notes).to.include(`units_received ${received} is no stock to pace against: inventory_start 100 used`);
      }
      // A count that is not a number is the caller's mistake, named, not a missing value to pass over.
      const word = notApplicable(anchored, { ...ctx, units_received: 'none', inventory_start: 100 });
      expect(word).to.include({ refused: true, message: 'units_received must be a number (got "none").' });
      expect(run(anchored, { ...ctx, inventory_start: 100 }).inputs_used).to.include('inventory_start');
      const none = notApplicable(anchored, { ...ctx, units_received: 0, inventory_start: -3 });
      expect(none.missing).to.deep.equal(['units_received', 'inventory_start']);
      expect(none.message).to.equal('Sell-through pacing needs the stock sold from above 0 (units_received, or inventory_start), got units_received 0 and inventory_start -3.');
      expect(notApplicable(anchored, { ...ctx, units_received: -10 }).missing).to.deep.equal(['units_received']);
    });

    it('season_elapsed outside [0, 1] is not applicable naming it; at 0 there is no sell-through signal yet', () => {
      const ctx = { current_price: 10, units_sold: 5, units_received: 100 };
      for (const elapsed of [-0.5, 1.5]) {
        const err = notApplicable(anchored, { ...ctx, season_elapsed: elapsed });
        expect(err.missing).to.deep.equal(['season_elapsed']);
        expect(err.message).to.match(/^season_elapsed must be the fraction of the season gone, from 0 to 1/);
      }
      const start = run(anchored, { ...ctx, season_elapsed: 0 });
      expect(start.price).to.equal('10.00');
      expect(start.notes[0]).to.equal('season_elapsed 0: the season has not begun, no sell-through signal yet');
      expect(start.confidence).to.equal(0.15);
    });

    it('pacing by elasticity names elasticity, keeps every confidence factor within [0, 1], and its move stays within the step', () => {
      const behind = run(anchored, { current_price: 10, units_sold: 0, units_received: 100, season_elapsed: 0.5, elasticity: 2 });
      expect(behind.price).to.equal('9.00');
      expect(behind.inputs_used).to.deep.equal(['current_price', 'units_sold', 'units_received', 'season_elapsed', 'elasticity']);
      const ahead = run(anchored, { current_price: 10, units_sold: 500, units_received: 100, season_elapsed: 0.5, elasticity: 0.001 });
      expect(ahead.price).to.equal('11.00');
      for (const r of [behind, ahead]) for (const f of Object.values(r.confidence_factors)) expect(f).to.be.within(0, 1);
      // On plan the elasticity moves nothing, and is not listed.
      expect(run(anchored, { current_price: 10, units_sold: 50, units_received: 100, season_elapsed: 0.5, elasticity: 2 }).inputs_used).to.not.include('elasticity');
    });

    it('a price that is not a finite number is not applicable naming the inputs it came from; factors are kept within [0, 1]', () => {
      for (const value of [new D(NaN), new D(Infinity), new D(-Infinity)]) {
        const err = (() => {
          try {
            quote(value, 'USD', ['units_sold', 'elasticity']);
          } catch (e) {
            return e as MethodNotApplicable;
          }
          return expect.fail(`quoted ${value.toString()}`);
        })();
        expect(err).to.be.instanceOf(MethodNotApplicable);
        expect(err.missing).to.deep.equal(['units_sold', 'elasticity']);
        expect(err.message).to.equal(`These inputs (units_sold, elasticity) give no finite price (${value.toString()} USD): check their values.`);
      }
      expect(() => methodResult(new D(NaN), 'USD', { x: 1 }, ['current_price'], [], {})).to.throw(MethodNotApplicable, /These inputs \(current_price\) give no finite price/);
      const r = methodResult(new D(10), 'USD', { volume: -0.333, wide: 1.5, broken: NaN, fine: 0.5 }, ['current_price'], [], {});
      expect(r.confidence_factors).to.deep.equal({ volume: 0, wide: 1, broken: 0, fine: 0.5 });
      expect(r.confidence).to.equal(0);
    });

    it('competitor_prices that give no reference (empty, none usable, none in the currency) leave the target to cost-plus, with a note saying why', () => {
      const cases: Array<[unknown, string]> = [
        [[], 'the list is empty'],
        [[-1, 'x', { price: 0 }], 'none of the 3 is a positive number'],
        [[{ price: 9, currency: 'JPY' }, { price: 9.5, currency: 'eur' }], "none is in the context's currency USD (1 in JPY, 1 in EUR), and prices are never mixed across currencies"],
        [[{ price: 5, currency: { x: 1 } }], 'none is in the context\'s currency USD (1 in a currency that is not a code: {"x":1}), and prices are never mixed across currencies'],
        ['10', 'it is not a list'],
      ];
      for (const [competitorPrices, why] of cases) {
        const r = run(anchored, { current_price: 10, competitor_prices: competitorPrices, unit_cost: 8 });
        // cost-plus at the default 30% margin: 8 / 0.7 = 11.43, one step (+10%) from 10.
        expect(r.price, JSON.stringify(competitorPrices)).to.equal('11.00');
        expect(r.inputs_used).to.deep.equal(['current_price', 'unit_cost']);
        expect(r.notes.slice(0, 2)).to.deep.equal([`competitor_prices gave no reference: ${why}; the next target in the order is used`, 'target 11.43 from cost-plus']);
        expect(r.notes).to.include('step limited to +10%');
        expect(r.confidence_factors).to.deep.equal({ input_quality: 0.35, bounds: 1, anchored: 1 });
      }
    });

    it('competitor_prices that give no reference fall through to sell-through pacing, else the echo; other refusals of the competitive target still refuse', () => {
      const paced = run(anchored, { current_price: 100, competitor_prices: [], units_sold: 10, units_received: 100, season_elapsed: 0.5 });
      expect(paced.price).to.equal('90.00');
      expect(paced.inputs_used).to.deep.equal(['current_price', 'units_sold', 'units_received', 'season_elapsed']);
      const echoed = run(anchored, { current_price: 42.5, competitor_prices: [{ price: 40, currency: 'GBP' }] });
      expect(echoed.price).to.equal('42.50');
      expect(echoed.confidence).to.equal(0.15);
      expect(echoed.notes[0]).to.match(/^competitor_prices gave no reference: none is in the context's currency USD \(1 in GBP\)/);
      // Usable competitor prices with an invalid position are the context's fault, not a missing reference.
      expect(notApplicable(anchored, { current_price: 10, competitor_prices: [11], position: 'bogus', unit_cost: 8 }).missing).to.deep.equal(['position']);
    });

    it('competitive-position refuses sent competitor_prices that give no reference, saying why', () => {
      expect(notApplicable(competitive, { competitor_prices: [] }).message).to.equal('competitive positioning needs competitor_prices (positive numbers or {price, source}); the list is empty.');
      expect(notApplicable(competitive, { competitor_prices: [-1, 'x'] }).message).to.equal('competitive positioning needs competitor_prices (positive numbers or {price, source}); none of the 2 is a positive number.');
      expect(notApplicable(competitive, { competitor_prices: { a: 1 } }).message).to.equal('competitive positioning needs competitor_prices (positive numbers or {price, source}) as a list; got object.');
    });

    it('notes print percentages without float noise (step limited to +7%, not +7.000000000000001%)', () => {
      expect(run(anchored, { current_price: 100, target_price: 150, max_step_pct: 0.07 }).notes).to.deep.equal(['step limited to +7%']);
      expect(run(anchored, { current_price: 100, target_price: 50, max_step_pct: 0.07 }).notes).to.deep.equal(['step limited to -7%']);
      expect(run(charm, { target_price: 20.5, charm_tolerance: 0.0007 }).notes).to.deep.equal(['no charm ending within 0.07% (or inside the bounds): base price kept']);
      expect(run(charm, { unit_cost: 10, markup: 0.01, charm_tolerance: 0.07 }).notes.join(' ')).to.match(/no ending above it lies within 7%: base price kept$/);
      expect([0.07, 0.1 + 0.2, 0.0007, 0.123456, 0.5].map(percent)).to.deep.equal(['7%', '30%', '0.07%', '12.3456%', '50%']);
    });

    it('with only current_price it echoes it, labelled, at confidence 0.15', () => {
      const r = run(anchored, { current_price: 42.5 });
      expect(r.price).to.equal('42.50');
      expect(r.confidence).to.equal(0.15);
      expect(r.notes.join(' ')).to.match(/current price echoed/);
    });
  });

  describe('confidence', () => {
    const cases: Array<[string, PricingMethod, Context]> = [
      ['cost-plus with a margin', costPlus, { unit_cost: 100, target_margin: 0.3 }],
      ['cost-plus raised by min_price', costPlus, { unit_cost: 1, min_price: 5 }],
      ['competitive with two sources', competitive, { competitor_prices: [{ price: 10, source: 'a' }, { price: 12, source: 'b' }, 11] }],
      ['competitive under a ceiling', competitive, { competitor_prices: [10, 11, 12], max_price: 9 }],
      ['elasticity capped near 1', elasticityOptimum, { unit_cost: 10, elasticity: -1.05 }],
      ['elasticity from history', elasticityOptimum, { unit_cost: 2, price_history: [5, 6, 7, 8, 9].map((price) => ({ price, quantity: Math.round(1000 * price ** -2.2) })) }],
      ['charm of a target price', charm, { target_price: 10.03 }],
      ['charm over cost-plus', charm, { unit_cost: 2, target_margin: 0.5 }],
      ['anchored behind plan', anchored, { current_price: 100, units_sold: 10, units_received: 100, season_elapsed: 0.5 }],
      ['anchored echo', anchored, { current_price: 42.5 }],
    ];
    for (const [name, method, ctx] of cases) {
      it(`is the product of the confidence factors the method reports (${name})`, () => {
        const r = run(method, ctx);
        const factors = Object.values(r.confidence_factors);
        expect(factors.length).to.be.above(0);
        for (const f of factors) expect(f).to.be.within(0, 1);
        expect(r.confidence).to.be.above(0);
        expect(r.confidence).to.be.closeTo(factors.reduce((a, f) => a * f, 1), 0.0005);
      });
    }
  });

  describe('values given but unusable', () => {
    const refusedBy = (method: PricingMethod, ctx: Context) => {
      const err = notApplicable(method, ctx);
      expect(err.refused, err.message).to.equal(true);
      return err;
    };

    it('a negative cost or price is refused by name in every method that reads it, not read as absent', () => {
      for (const [method, ctx, key, got] of [
        [costPlus, { unit_cost: -4 }, 'unit_cost', '-4'],
        [costPlus, { unit_cost: 4, min_price: '-1.50' }, 'min_price', '"-1.50"'],
        [anchored, { current_price: -10 }, 'current_price', '-10'],
        [charm, { target_price: -2, current_price: 10 }, 'target_price', '-2'],
        [charm, { current_price: 10, max_price: -1 }, 'max_price', '-1'],
        [competitive, { competitor_prices: [10, 11], unit_cost: -3 }, 'unit_cost', '-3'],
        [elasticityOptimum, { unit_cost: -1, elasticity: -2 }, 'unit_cost', '-1'],
      ] as Array<[PricingMethod, Context, string, string]>) {
        const err = refusedBy(method, ctx);
        expect(err.message).to.equal(`${key} must not be negative (got ${got}).`);
        expect(err.missing).to.deep.equal([key]);
      }
    });

    it('an amount that is not a number or decimal string is refused by name, quoting what was sent', () => {
      for (const [ctx, key, got] of [
        [{ unit_cost: 'ten' }, 'unit_cost', '"ten"'],
        [{ unit_cost: '$12' }, 'unit_cost', '"$12"'],
        [{ unit_cost: '1e3' }, 'unit_cost', '"1e3"'],
        [{ unit_cost: true }, 'unit_cost', 'true'],
        [{ unit_cost: { amount: 4 } }, 'unit_cost', '{"amount":4}'],
        [{ unit_cost: 4, fixed_costs: [100] }, 'fixed_costs', '[100]'],
      ] as Array<[Context, string, string]>) {
        const err = refusedBy(costPlus, ctx);
        expect(err.message).to.equal(`${key} must be an amount: a number or a decimal string such as "12.50" (got ${got}).`);
        expect(err.missing).to.deep.equal([key]);
      }
      expect(run(costPlus, { unit_cost: '+4', markup: 0.5 }).price).to.equal('6.00');
    });

    it('bounds that contradict each other (a floor above max_price) are refused naming both, with their values', () => {
      const byMin = refusedBy(competitive, { competitor_prices: [10, 12], min_price: 20, max_price: 15 });
      expect(byMin.message).to.equal('The floor (min_price: 20.00) is above max_price (15.00): no price satisfies both.');
      expect(byMin.missing).to.deep.equal(['min_price', 'max_price']);
      const byCost = refusedBy(competitive, { competitor_prices: [10, 12], unit_cost: 10, min_markup: 0.6, max_price: 15 });
      expect(byCost.message).to.equal('The floor (unit_cost with min_markup: 16.00) is above max_price (15.00): no price satisfies both.');
      expect(byCost.missing).to.deep.equal(['unit_cost', 'min_markup', 'max_price']);
    });

    it('a count or rate that is not a number is refused by name', () => {
      const err = refusedBy(elasticityOptimum, { unit_cost: 4, elasticity: 'high' });
      expect(err.message).to.equal('elasticity must be a number (got "high").');
      expect(refusedBy(costPlus, { unit_cost: 4, target_margin: '30%' }).message).to.equal('target_margin must be a number (got "30%").');
      expect(refusedBy(costPlus, { unit_cost: 4, fixed_costs: 100, expected_volume: 'many' }).missing).to.deep.equal(['expected_volume']);
    });

    it('null reads as absent, like a missing key', () => {
      expect(run(costPlus, { unit_cost: 4, target_margin: null, markup: null, min_price: null }).price).to.equal('5.71');
      expect(notApplicable(costPlus, { unit_cost: null }).message).to.equal('cost-plus needs unit_cost (a positive amount).');
    });

    it('a zero cost or price is not refused but named in the method\'s own "needs" message', () => {
      for (const [method, ctx, message] of [
        [costPlus, { unit_cost: 0 }, 'cost-plus needs unit_cost (a positive amount); got unit_cost 0, which must be above 0.'],
        [anchored, { current_price: '0.00' }, 'anchored adjustment needs current_price; got current_price "0.00", which must be above 0.'],
        [elasticityOptimum, { unit_cost: 0, elasticity: -2 }, 'the elasticity optimum needs unit_cost (marginal cost); got unit_cost 0, which must be above 0.'],
        [charm, { target_price: 0, current_price: 0 }, 'charm pricing needs a base: target_price, current_price or unit_cost; got target_price 0 and current_price 0, which must be above 0.'],
      ] as Array<[PricingMethod, Context, string]>) {
        const err = notApplicable(method, ctx);
        expect(err.refused, message).to.equal(false);
        expect(err.message).to.equal(message);
      }
      // Another method that can use the rest of the context still prices it.
      expect(run(charm, { current_price: 0, unit_cost: 4 }).inputs_used).to.include('unit_cost');
    });
  });

  describe('amounts out of range', () => {
    const methods: Array<[string, PricingMethod, Context]> = [
      ['cost-plus', costPlus, { unit_cost: 1e308, target_margin: 0.3 }],
      ['competitive-position', competitive, { competitor_prices: [10, 11], unit_cost: '2000000000000000' }],
      ['elasticity-optimum', elasticityOptimum, { unit_cost: 1.7976931348623157e308, elasticity: -2 }],
      ['charm-pricing', charm, { current_price: 10, max_price: 1e300 }],
      ['anchored-adjustment', anchored, { current_price: -1e16 }],
    ];
    for (const [name, method, ctx] of methods) {
      it(`an amount beyond 10^15 is refused by name, not priced (${name})`, () => {
        const err = notApplicable(method, ctx);
        expect(err.message).to.match(/^\w+ must not exceed 1000000000000000 in size \(got /);
        expect(err.missing).to.have.length(1);
      });
    }

    it('competitor prices beyond 10^15 are dropped like unusable ones', () => {
      const r = run(competitive, { competitor_prices: [10, 10.2, 1e300] });
      expect(r.price).to.equal('10.10');
    });

    it('a competitor price beyond 10^15 is dropped with a note saying it was too large, apart from those that were not positive numbers', () => {
      const r = run(competitive, { competitor_prices: [10, 10.2, 1e300, '2000000000000000', { price: '1e16' }, -1, 'x'] });
      expect(r.price).to.equal('10.10');
      expect(r.notes).to.deep.equal(['2 competitor price(s) were not positive numbers and were dropped', '3 competitor price(s) were above 1000000000000000, too large to be a price, and were dropped']);
      expect(run(competitive, { competitor_prices: [10, 1e300] }).notes[0]).to.equal('1 competitor price(s) were above 1000000000000000, too large to be a price, and were dropped');
      const none = notApplicable(competitive, { competitor_prices: [1e300, -1] });
      expect(none.message).to.equal('competitive positioning needs competitor_prices (positive numbers or {price, source}); none of the 2 is usable (1 not a positive number, 1 above 1000000000000000, too large to be a price).');
      expect(run(anchored, { current_price: 10, competitor_prices: [1e300], unit_cost: 8 }).notes[0]).to.equal(
        'competitor_prices gave no reference: none of the 1 is usable (1 above 1000000000000000, too large to be a price); the next target in the order is used',
      );
    });

    it('a price that rounds to nothing in the currency is not applicable, with the reason; in USDC the same inputs are priced', () => {
      const err = notApplicable(anchored, { current_price: 0.001 });
      expect(err.message).to.equal("These inputs give a price of 0.001 USD, which rounds to nothing in USD's smallest unit (0.01); price a larger quantity, or use a currency with finer units (USDC has 6 decimals).");
      expect(run(anchored, { current_price: 0.001, currency: 'USDC' }).price).to.equal('0.001000');
      expect(notApplicable(costPlus, { unit_cost: 0.0001, markup: 0.1 }).message).to.match(/rounds to nothing/);
    });

    it('odd amounts through the engine are insufficient_context and never count against the breaker', async () => {
      const h = await harness({ engine: { breakerMinCalls: 2, breakerFailureRatio: 0.5 } });
      try {
        for (const context of [{ current_price: 1e-9 }, { current_price: 5e-324 }, { current_price: 1e300 }, { current_price: '9999999999999999999' }]) {
          const err = await engineError(h.price({ context, pin: { name: 'anchored-adjustment' } }), 'insufficient_context');
          expect(err.details.attempts?.[0]).to.include({ function: 'anchored-adjustment', outcome: 'not_applicable' });
        }
        const tiny = await engineError(h.price({ context: { current_price: 0.001 }, pin: { name: 'anchored-adjustment' } }), 'insufficient_context');
        expect(tiny.message).to.equal(
          "The context cannot be priced by anchored-adjustment: These inputs give a price of 0.001 USD, which rounds to nothing in USD's smallest unit (0.01); price a larger quantity, or use a currency with finer units (USDC has 6 decimals).",
        );
        expect(h.parts.breakers.view('fn_builtin_anchored')).to.include({ state: 'closed', calls: 0, failures: 0 });
        expect((await h.price({ context: { current_price: 4.5 }, pin: { name: 'anchored-adjustment' } })).result.price).to.equal('4.50');
      } finally {
        await h.close();
      }
    });
  });

  describe('invalid sell-through counts through the engine', function () {
    this.timeout(10_000);

    it('a negative units_sold is insufficient_context naming it, and several such calls never count against the breaker', async () => {
      const h = await harness({ engine: { breakerMinCalls: 2, breakerFailureRatio: 0.5, cacheTtlMs: 0 } });
      try {
        const bad = { current_price: 10, units_sold: -5, units_received: 100, season_elapsed: 0.5, elasticity: 2 };
        for (let i = 0; i < 5; i++) {
          const err = await engineError(h.price({ context: { ...bad, n: i }, pin: { name: 'anchored-adjustment' } }), 'insufficient_context');
          expect(err.message).to.equal('The context cannot be priced by anchored-adjustment: units_sold must be a count of 0 or more, got -5.');
          expect(err.details.attempts?.[0]).to.include({ function: 'anchored-adjustment', outcome: 'not_applicable' });
        }
        expect(h.parts.breakers.view('fn_builtin_anchored')).to.include({ state: 'closed', calls: 0, failures: 0 });
        const ok = await h.price({ context: { ...bad, units_sold: 5 }, pin: { name: 'anchored-adjustment' } });
        expect(ok.result.price).to.equal('9.00');
        expect(h.parts.breakers.view('fn_builtin_anchored')).to.include({ state: 'closed', calls: 1, failures: 0 });
      } finally {
        await h.close();
      }
    });
  });

  describe('anchored-adjustment through the engine', function () {
    this.timeout(10_000);

    it('pinned with an empty competitor_prices and a unit_cost, it moves towards the cost-plus target within the step (was 422)', async () => {
      const h = await harness({ engine: { cacheTtlMs: 0 } });
      try {
        const out = await h.price({ context: { current_price: 10, competitor_prices: [], unit_cost: 8 }, pin: { name: 'anchored-adjustment' } });
        expect(out.result.price).to.equal('11.00');
        expect(out.result.notes).to.include('competitor_prices gave no reference: the list is empty; the next target in the order is used');
        expect(out.attempts.map((a) => [a.function, a.outcome])).to.deep.equal([['anchored-adjustment', 'ok']]);
      } finally {
        await h.close();
      }
    });
  });

  describe('cold start through the engine', function () {
    this.timeout(10_000);

    it('a context with no history, only current_price, still gets a price, with lower confidence', async () => {
      const h = await harness();
      try {
        const cold = await h.price({ context: { product_type: 'coffee', currency: 'USD', current_price: 4.5 } });
        expect(cold.result.price).to.equal('4.50');
        expect(cold.result.confidence).to.equal(0.15);
        const informed = await h.price({ context: { product_type: 'coffee', currency: 'USD', unit_cost: 1.2, target_margin: 0.6 } });
        expect(cold.result.confidence).to.be.below(informed.result.confidence);
      } finally {
        await h.close();
      }
    });
  });
});
