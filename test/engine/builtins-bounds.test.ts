import { expect } from 'chai';
import { anchored } from '../../engine/builtins/anchored';
import { mayPrice } from '../../engine/builtins/catalogue';
import { charm } from '../../engine/builtins/charm';
import { competitive } from '../../engine/builtins/competitive';
import { costPlus } from '../../engine/builtins/cost-plus';
import { elasticityOptimum } from '../../engine/builtins/elasticity';
import { MethodNotApplicable } from '../../engine/builtins/types';
import type { Context, MethodResult, PricingMethod } from '../../engine/builtins/types';

const run = (method: PricingMethod, ctx: Context) => method(ctx) as MethodResult;
const notes = (r: MethodResult) => r.notes.join(' | ');

/** Found by a walk that priced hand-computed contexts: bounds crossed, rounding through floors, binary floating point. */
describe("engine: built-ins keep the caller's bounds and count the evidence exactly", () => {
  describe('rounding to the currency never crosses a floor or a ceiling (pricing-methods §0)', () => {
    it('cost-plus: a min_price finer than cents is met by rounding up, and says so', () => {
      for (const min of [13.001, '13.004']) {
        const r = run(costPlus, { unit_cost: 10, markup: 0.3, min_price: min });
        expect(r.price, String(min)).to.equal('13.01');
        expect(notes(r)).to.contain(`rounded up to 13.01 USD, not to the nearest unit: min_price ${min} is a floor`);
      }
    });

    it('cost-plus: a price at cost (markup 0) is never rounded below the cost; a negative markup asked for is', () => {
      expect(run(costPlus, { unit_cost: 10.004, markup: 0 }).price).to.equal('10.01');
      expect(run(costPlus, { unit_cost: 10.004, markup: -0.0001 }).price).to.equal('10.00');
    });

    it('competitive-position: the floor binds exactly, in whole cents at or above it', () => {
      expect(run(competitive, { competitor_prices: [5], min_price: 9.994 }).price).to.equal('10.00');
      expect(run(competitive, { competitor_prices: [5], unit_cost: 10.001 }).price).to.equal('10.01');
      expect(run(competitive, { competitor_prices: [50], max_price: 20.009 }).price).to.equal('20.00');
    });

    it('refuses a floor and a ceiling with no whole cent between them, naming both', () => {
      let err: unknown;
      try {
        run(competitive, { competitor_prices: [5], min_price: 13.001, max_price: 13.009 });
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(MethodNotApplicable);
      expect((err as MethodNotApplicable).message).to.equal("No price in USD's smallest unit lies between min_price 13.001 and max_price 13.009: widen them, or use a currency with finer units.");
      expect(err).to.include({ refused: true }).and.to.have.deep.property('missing', ['min_price', 'max_price']);
    });

    it('charm-pricing: a base on a floor finer than cents keeps above it', () => {
      expect(run(charm, { target_price: 10.004, unit_cost: 10.004 }).price).to.equal('10.01');
    });

    it('a price under half a unit is still refused as rounding to nothing, not lifted to a whole cent by its cost', () => {
      expect(() => run(costPlus, { unit_cost: 0.0001, markup: 0.1 })).to.throw(MethodNotApplicable, /rounds to nothing/);
    });

    it('a max_price under one unit is refused naming it and the unit, by every built-in, never quoted as 0.00', () => {
      for (const [method, ctx] of [
        [anchored, { current_price: 0.005, currency: 'USD', max_price: 0.006 }],
        [charm, { target_price: 0.005, max_price: 0.006 }],
        [competitive, { competitor_prices: [0.005, 0.006], max_price: 0.006 }],
        [costPlus, { unit_cost: 0.004, markup: 0.3, max_price: 0.006 }],
        [elasticityOptimum, { unit_cost: 0.0025, elasticity: -2, max_price: 0.006 }],
      ] as const) {
        let err: unknown;
        try {
          run(method, ctx);
        } catch (e) {
          err = e;
        }
        expect(err, `${method.name} ${JSON.stringify(ctx)}`).to.be.instanceOf(MethodNotApplicable);
        // cost-plus and elasticity keep the cost as a floor too, and name both: no whole cent lies between them.
        expect((err as MethodNotApplicable).message, method.name).to.match(/^No price in USD's smallest unit (\(0\.01\) lies at or under max_price 0\.006: raise it to 0\.01 or more|lies between unit_cost 0\.00\d+ and max_price 0\.006)/);
        expect(err).to.include({ refused: true });
        expect((err as MethodNotApplicable).missing).to.include('max_price');
      }
      const jpy = (() => {
        try {
          return run(anchored, { current_price: 0.5, currency: 'JPY', max_price: 0.9 });
        } catch (e) {
          return e as MethodNotApplicable;
        }
      })();
      expect(jpy).to.be.instanceOf(MethodNotApplicable).and.to.have.property('message', "No price in JPY's smallest unit (1) lies at or under max_price 0.9: raise it to 1 or more, or use a currency with finer units (USDC has 6 decimals).");
    });

    it('a price that rounding to the unit moves by 1% or more says so; an ordinary price gets no such note', () => {
      const r = run(competitive, { competitor_prices: [0.005, 0.006] });
      expect(r.price).to.equal('0.01');
      expect(notes(r)).to.contain("the price computed, 0.0055 USD, is finer than USD's smallest unit (0.01): rounded to 0.01, 81.8182% above it");
      expect(notes(run(costPlus, { unit_cost: 0.0149, markup: 0 }))).to.not.contain('finer than');
      expect(notes(run(charm, { target_price: 0.0149, charm_tolerance: 0 }))).to.contain("the price computed, 0.0149 USD, is finer than USD's smallest unit (0.01): rounded to 0.01, 32.8859% below it");
      expect(notes(run(costPlus, { unit_cost: 100, target_margin: 0.3 }))).to.not.contain('finer than');
      expect(notes(run(anchored, { current_price: 10.004 }))).to.not.contain('finer than');
    });
  });

  describe('a base or a target outside the bounds is brought inside them', () => {
    it('charm-pricing: a base over max_price is lowered to it, one under min_price raised, and confidence notes the bound', () => {
      const over = run(charm, { target_price: 19.995, max_price: 19.5 });
      expect(over.price).to.equal('19.50');
      expect(notes(over)).to.contain('base price 19.995 is over max_price 19.5: lowered to it');
      expect(over.confidence_factors).to.deep.equal({ base: 0.4, bounds: 0.9 });
      const under = run(charm, { target_price: 5, min_price: 8 });
      expect(Number(under.price)).to.be.at.least(8);
      expect(notes(under)).to.contain('base price 5 is under min_price 8: raised to it');
      expect(under.details).to.include({ base_price: '5.00' });
    });

    it('charm-pricing: a floor above max_price is refused naming both', () => {
      expect(() => run(charm, { target_price: 10, min_price: 12, max_price: 11 })).to.throw(MethodNotApplicable, 'The floor (min_price: 12.00) is above max_price (11.00): no price satisfies both.');
    });

    it('anchored-adjustment: max_price and min_price bound the move towards a target', () => {
      const capped = run(anchored, { current_price: 100, target_price: 120, max_price: 105 });
      expect(capped.price).to.equal('105.00');
      expect(capped.inputs_used).to.include('max_price');
      expect(notes(capped)).to.contain('max_price 105 lowered the price');
      const floored = run(anchored, { current_price: 100, target_price: 80, min_price: 95 });
      expect(floored.price).to.equal('95.00');
      expect(floored.confidence_factors).to.include({ bounds: 0.9 });
    });

    it('anchored-adjustment: a bound outranks the step limit, and says so', () => {
      const r = run(anchored, { current_price: 80, target_price: 100, min_price: 95 });
      expect(r.price).to.equal('95.00');
      expect(notes(r)).to.contain('min_price 95 raised the price, beyond the +10% step: the bound outranks it');
    });

    it('anchored-adjustment: an echo that rounding to the unit moves says so, with change_pct from the price answered, the current price as given and no bound of 0', () => {
      const usd = run(anchored, { current_price: 0.005, currency: 'USD' });
      expect(usd.price).to.equal('0.01');
      expect(usd.details).to.deep.equal({ current_price: '0.005', change_pct: 100, bounds: ['0.01', '0.01'] });
      expect(notes(usd)).to.contain("the price computed, 0.005 USD, is finer than USD's smallest unit (0.01): rounded to 0.01, 100% above it");
      const jpy = run(anchored, { current_price: 0.5, currency: 'JPY' });
      expect(jpy.price).to.equal('1');
      expect(jpy.details).to.deep.equal({ current_price: '0.5', change_pct: 100, bounds: ['1', '1'] });
      expect(notes(jpy)).to.contain("the price computed, 0.5 JPY, is finer than JPY's smallest unit (1): rounded to 1, 100% above it");
      // A rounding under 1% is no news, but change_pct is still the change answered; a price in whole units keeps its digits.
      expect(run(anchored, { current_price: 10.004 }).details).to.deep.equal({ current_price: '10.004', change_pct: -0.04, bounds: ['9.00', '11.00'] });
      expect(run(anchored, { current_price: 10.5, target_price: 12 }).details).to.deep.equal({ current_price: '10.50', change_pct: 10, bounds: ['9.45', '11.55'] });
    });

    it('anchored-adjustment: a price left below unit_cost says why', () => {
      const asked = run(anchored, { current_price: 20, target_price: 15, unit_cost: 19 });
      expect(asked.price).to.equal('18.00');
      expect(notes(asked)).to.contain('the price is below unit_cost 19: the target is under cost, as asked');
      const stepped = run(anchored, { current_price: 20, unit_cost: 25 });
      expect(stepped.price).to.equal('22.00');
      expect(notes(stepped)).to.contain('the step limit (10%) keeps it from reaching cost this call');
    });
  });

  describe('cost-plus and elasticity-optimum read min_price and max_price too', () => {
    it('max_price lowers a cost-plus price, says so, and says when it holds it below cost', () => {
      const r = run(costPlus, { unit_cost: 10, markup: 0.3, max_price: 12 });
      expect(r.price).to.equal('12.00');
      expect(r.inputs_used).to.include('max_price');
      expect(r.confidence_factors).to.include({ bounds: 0.9 });
      expect(notes(r)).to.contain('max_price lowered the price');
      expect(notes(run(costPlus, { unit_cost: 10, markup: 0.3, max_price: 9 }))).to.contain('max_price holds the price below cost (10.00)');
    });

    it('a min_price above max_price is refused naming both, by cost-plus and elasticity-optimum alike', () => {
      for (const [method, ctx] of [
        [costPlus, { unit_cost: 10, markup: 0.3, min_price: 20, max_price: 15 }],
        [elasticityOptimum, { unit_cost: 10, elasticity: -2, min_price: 20, max_price: 15 }],
      ] as const) {
        expect(() => run(method, ctx)).to.throw(MethodNotApplicable, 'The floor (min_price: 20.00) is above max_price (15.00): no price satisfies both.');
      }
    });

    it('elasticity-optimum keeps to max_price and min_price, with a bounds factor', () => {
      const capped = run(elasticityOptimum, { unit_cost: 10, elasticity: -2, max_price: 15 });
      expect(capped.price).to.equal('15.00');
      expect(capped.confidence_factors).to.include({ supplied_elasticity: 0.5, bounds: 0.9 });
      expect(capped.details).to.include({ markup_multiple: 1.5 });
      expect(run(elasticityOptimum, { unit_cost: 10, elasticity: -2, min_price: 25 }).price).to.equal('25.00');
      expect(run(elasticityOptimum, { unit_cost: 10, demand_intercept: 100, demand_slope: 2, max_price: 20 }).price).to.equal('20.00');
    });
  });

  describe('the evidence is counted as it is', () => {
    it('competitive-position: one competitor price is a single source, no more independent than two of one seller', () => {
      const one = run(competitive, { competitor_prices: [10] });
      expect(one.confidence_factors).to.include({ independence: 0.5 });
      expect(notes(one)).to.contain('one competitor price: evidence from a single source is not independent');
      const seller = run(competitive, { competitor_prices: [{ price: 10, source: 'x' }, { price: 11, source: 'x' }] });
      expect(seller.confidence_factors).to.include({ independence: 0.5 });
      expect(one.confidence).to.be.at.most(seller.confidence);
    });

    it('competitive-position takes the median of two prices in exact decimal (1.13 and 1.14 → 1.135 → 1.14), as numbers or strings', () => {
      expect(run(competitive, { competitor_prices: [1.13, 1.14] }).price).to.equal('1.14');
      expect(run(competitive, { competitor_prices: ['1.13', '1.14'] }).price).to.equal('1.14');
      expect(run(competitive, { competitor_prices: [1.13, 1.14] }).details).to.include({ reference_price: '1.14' });
    });

    it('competitive-position counts an unlabelled price repeated exactly once, and says so; labelled sellers at one price count apart', () => {
      const copies = run(competitive, { competitor_prices: [10, 10, 10, 10, 10] });
      expect(copies.confidence_factors).to.include({ amount: 0.25 });
      expect(copies.details).to.include({ sources: 1 });
      expect(notes(copies)).to.contain('4 unlabelled competitor price(s) repeated another exactly and were counted once');
      expect(copies.confidence).to.be.below(run(competitive, { competitor_prices: [10, 12, 14] }).confidence);
      const sellers = run(competitive, { competitor_prices: ['a', 'b', 'c'].map((source) => ({ price: 10, source })) });
      expect(sellers.details).to.include({ sources: 3 });
    });

    it('competitive-position reads only the rate its position uses: another is noted, not refused or applied', () => {
      const match = run(competitive, { competitor_prices: [10], position: 'match', undercut_pct: 30 });
      expect(match.price).to.equal('10.00');
      expect(notes(match)).to.contain('undercut_pct not used: position match takes no rate');
      const premium = run(competitive, { competitor_prices: [10], position: 'premium', undercut_pct: 0.2 });
      expect(premium.price).to.equal('10.50');
      expect(notes(premium)).to.contain('undercut_pct not used: position premium reads premium_pct');
      expect(() => run(competitive, { competitor_prices: [10], position: 'undercut', undercut_pct: 30 })).to.throw(MethodNotApplicable, 'undercut_pct is a fraction in [0, 1) (0.05 means 5%), got 30.');
    });

    it('anchored-adjustment: nothing sold of a large stock is a confident markdown, not a price at confidence 0', () => {
      const r = run(anchored, { current_price: 100, units_sold: 0, units_received: 100, season_elapsed: 1 });
      expect(r.price).to.equal('90.00');
      expect(r.confidence_factors).to.deep.equal({ elapsed: 1, volume: 0.833, method: 0.6 });
      expect(r.confidence).to.equal(0.5);
    });

    it('elasticity-optimum says what it read differently or left out', () => {
      const negative = run(elasticityOptimum, { unit_cost: 10, demand_intercept: 100, demand_slope: -2 });
      expect(negative.price).to.equal('30.00');
      expect(notes(negative)).to.contain('demand_slope -2 read as 2');
      expect(notes(run(elasticityOptimum, { unit_cost: 10, demand_intercept: 100, demand_slope: 2, elasticity: -3 }))).to.contain('elasticity not used: the linear demand curve');
      const history = [
        { price: 8, quantity: 130 },
        { price: 9, quantity: 100 },
        { price: 10, quantity: 81 },
        { price: 11, quantity: 67 },
        { price: 12, quantity: 56 },
        { price: 0, quantity: 10 },
        { price: 13, quantity: 0 },
      ];
      expect(notes(run(elasticityOptimum, { unit_cost: 5, price_history: history }))).to.contain('2 price_history row(s) with a price or quantity that is not a number above 0 were dropped');
      expect(notes(run(elasticityOptimum, { unit_cost: 5, elasticity: -3, price_history: history }))).to.contain('price_history not used: elasticity was given');
    });

    it('cost-plus notes a negative rate only when it is the one applied', () => {
      expect(notes(run(costPlus, { unit_cost: 100, target_margin: 0.3, markup: -0.5 }))).to.not.contain('below cost');
      expect(notes(run(costPlus, { unit_cost: 100, markup: -0.5 }))).to.contain('negative markup: the price is below cost, as requested');
    });

    it('elasticity-optimum is no saving to compare with when the elasticity given is inelastic (it would refuse)', () => {
      const fn = { builtIn: true, name: 'elasticity-optimum' };
      expect(mayPrice(fn, { unit_cost: 10, elasticity: -0.5 })).to.equal(false);
      expect(mayPrice(fn, { unit_cost: 10, elasticity: -1 })).to.equal(false);
      expect(mayPrice(fn, { unit_cost: 10, elasticity: -2 })).to.equal(true);
      expect(mayPrice(fn, { unit_cost: 10, elasticity: 'high' }), 'left to the method to refuse by name').to.equal(true);
    });
  });

  describe('a JSON number beyond the range of a double (1e400 parses as Infinity)', () => {
    const refusal = (method: PricingMethod, ctx: Context): string => {
      try {
        run(method, ctx);
      } catch (err) {
        expect(err).to.be.instanceOf(MethodNotApplicable);
        return (err as Error).message;
      }
      throw new Error('not refused');
    };

    it('is refused as too large to represent, not as "not an amount" or "not a number"', () => {
      expect(refusal(costPlus, { unit_cost: Number.POSITIVE_INFINITY })).to.match(/^unit_cost must not exceed \d+ in size \(got a number too large to represent\)\.$/);
      expect(refusal(costPlus, { unit_cost: 10, target_margin: Number.NEGATIVE_INFINITY })).to.equal('target_margin must be a finite number (got a number too large to represent).');
      expect(refusal(costPlus, { unit_cost: 'ten' })).to.match(/^unit_cost must be an amount/);
    });
  });
});

describe('built-ins: a currency is quoted in its ISO 4217 minor units', () => {
  it('rounds to none for XOF, XAF, UGX and PYG, three for IQD and LYD, four for CLF, and two for a code it does not list', () => {
    const quoted = (currency: string) => run(costPlus, { unit_cost: 10.12345, target_margin: 0.3, currency }).price;
    for (const c of ['XOF', 'XAF', 'UGX', 'PYG', 'JPY']) expect(quoted(c), c).to.match(/^\d+$/);
    for (const c of ['IQD', 'LYD', 'KWD']) expect(quoted(c), c).to.match(/^\d+\.\d{3}$/);
    expect(quoted('CLF')).to.match(/^\d+\.\d{4}$/);
    for (const c of ['EUR', 'HUF', 'XYZ']) expect(quoted(c), c).to.match(/^\d+\.\d{2}$/);
  });
});
