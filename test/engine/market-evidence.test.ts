import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { anchored } from '../../engine/builtins/anchored';
import { competitive, NETWORK_PROVENANCE } from '../../engine/builtins/competitive';
import { MethodNotApplicable } from '../../engine/builtins/types';
import type { Context, MarketEvidence, MethodResult } from '../../engine/builtins/types';
import { harness } from './harness';
import type { Harness } from './harness';

/** Three sources' medians 10, 12 and 14 from three workspaces: reference 12. */
const market = (over: Partial<MarketEvidence> = {}): MarketEvidence => ({ product_type: 'coffee', currency: 'USD', observations: 7, source_prices: [10, 12, 14], workspaces: 3, ...over });

function refused(fn: () => unknown): MethodNotApplicable {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(MethodNotApplicable);
    return err as MethodNotApplicable;
  }
  expect.fail('expected MethodNotApplicable');
}

const run = (method: (c: Context, m?: MarketEvidence) => unknown, ctx: Context, m?: MarketEvidence) => method(ctx, m) as MethodResult;

describe('engine: built-ins positioned on the network\'s price observations (market evidence)', () => {
  it('competitive-position with no competitor_prices takes the median of the network\'s per-source prices, labelled, with a provenance factor', () => {
    const r = run(competitive, { product_type: 'coffee', currency: 'USD' }, market());
    expect(r.price).to.equal('12.00');
    expect(r.inputs_used).to.deep.equal(['product_type', 'network_observations']);
    expect(r.details).to.deep.include({ reference_price: '12.00', sources: 3, reference: 'network_observations', observations: 7 });
    expect(r.confidence_factors).to.deep.include({ provenance: NETWORK_PROVENANCE, independence: 1 });
    // amount 3/6 (three workspaces) × agreement 1/(1 + 1.4826·2/12) × provenance 0.6 = 0.3 × 0.802 ≈ 0.241
    expect(r.confidence).to.be.closeTo(0.241, 0.002);
    expect(r.notes.join(' ')).to.match(/7 price observation\(s\) of "coffee" in USD from 3 source\(s\) on the network/);
  });

  it('the amount of network evidence counts workspaces, as a verdict does: three sources of two workspaces are amount 2/5, not 3/6, and a note says so', () => {
    const r = run(competitive, { product_type: 'coffee', currency: 'USD' }, market({ workspaces: 2 }));
    expect(r.confidence_factors).to.deep.include({ amount: 0.4 });
    expect(r.details).to.deep.include({ sources: 3 });
    expect(r.notes).to.include('the amount of evidence counts the 2 workspace(s) behind the 3 sources: a workspace counts once, however many labels it quotes under');
  });

  it("prices a product_type alone at the confidence docs/functions.md states: 0.6 × n/(n + 3) × agreement × independence, 0.075 to under 0.6", () => {
    const doc = readFileSync(path.resolve(__dirname, '../../../docs/functions.md'), 'utf8').replace(/\s+/g, ' ');
    expect(doc).to.contain('0.6 × n/(n + 3) × agreement × independence');
    const agreeing = (n: number, workspaces = n) => run(competitive, { product_type: 'coffee' }, market({ source_prices: Array.from({ length: n }, () => 12), workspaces })).confidence;
    // Each value the docs give for agreeing sources, with the words they give it in.
    for (const [n, confidence, said] of [[2, 0.24, '0.24 with 2 sources'], [4, 0.343, '0.34 with 4'], [5, 0.375, '0.375 with 5'], [7, 0.42, '0.42 with 7'], [10, 0.461, '0.46 with 10'], [200, 0.591, '0.59 at the 200 sources']] as const) {
      expect(agreeing(n), `${n} sources`).to.equal(confidence);
      expect(doc).to.contain(said);
    }
    expect(agreeing(1, 1)).to.equal(0.075);
    expect(doc).to.contain("one workspace's single source gives 0.075");
    // Sources that disagree give less: the docs' values are the most each count gives.
    expect(run(competitive, { product_type: 'coffee' }, market({ source_prices: [11, 12, 12.5, 13] })).confidence).to.be.below(agreeing(4));
  });

  it('a reference the provider computed (the service: verification\'s time-weighted statistic) is used as given', () => {
    const r = run(competitive, { product_type: 'coffee' }, market({ reference_price: 13 }));
    expect(r.price).to.equal('13.00');
    expect(r.details).to.deep.include({ reference_price: '13.00', sources: 3 });
  });

  it('network prices past 10^15 are dropped like a caller\'s, and a reference computed with them is not used', () => {
    const r = run(competitive, { product_type: 'coffee' }, market({ source_prices: [10, 12, 2e18], reference_price: 12 }));
    expect(r.price).to.equal('11.00');
    expect(r.details).to.deep.include({ sources: 2 });
    expect(r.notes).to.include('1 of the network\'s source price(s) were above 1000000000000000, the largest price the service quotes, and were dropped');
  });

  it('network observations all past 10^15 leave no reference, and the refusal says so rather than that the network holds none', () => {
    const err = refused(() => competitive({ product_type: 'huge' }, market({ product_type: 'huge', observations: 6, source_prices: [9.4e17, 9.5e17, 9.6e17], reference_price: 9.5e17, workspaces: 3 })));
    expect(err.missing).to.deep.equal(['competitor_prices']);
    expect(err.refused).to.equal(false);
    expect(err.message).to.match(/; the network holds 6 price observation\(s\) of "huge" in USD, but every source's price is above 1000000000000000, the largest price the service quotes, so none is a reference\.$/);
    // No observations at all: the refusal as before.
    expect(refused(() => competitive({ product_type: 'huge' })).message).to.not.match(/largest price/);
  });

  it('one source carrying over half the weight lowers confidence as verification does (factor 1 − (share − 0.5)), and it says so', () => {
    const r = run(competitive, { product_type: 'coffee' }, market({ largest_source_share: 0.8 }));
    expect(r.confidence_factors).to.deep.include({ dominance: 0.7 });
    expect(r.notes.join(' ')).to.match(/one source carries 80% of the observations' weight/);
    expect(run(competitive, { product_type: 'coffee' }, market({ largest_source_share: 0.5 })).confidence_factors).to.not.have.property('dominance');
  });

  it('the caller\'s own competitor_prices always win over the network\'s, and an empty list is the caller\'s choice too', () => {
    const r = run(competitive, { product_type: 'coffee', competitor_prices: [20, 22] }, market());
    expect(r.price).to.equal('21.00');
    expect(r.inputs_used).to.deep.equal(['competitor_prices']);
    expect(r.confidence_factors).to.not.have.property('provenance');
    expect(refused(() => competitive({ product_type: 'coffee', competitor_prices: [] }, market())).missing).to.deep.equal(['competitor_prices']);
  });

  it('observations in another currency are not a reference, and with none the refusal names both ways in', () => {
    const err = refused(() => competitive({ product_type: 'coffee', currency: 'EUR' }, market()));
    expect(err.message).to.match(/competitor_prices .*or a product_type the network holds price observations of/);
    refused(() => competitive({ product_type: 'coffee' }));
  });

  it('observations that all come from one workspace are not independent (factor 0.5), and it says so', () => {
    const r = run(competitive, { product_type: 'coffee' }, market({ workspaces: 1 }));
    expect(r.confidence_factors).to.deep.include({ independence: 0.5 });
    expect(r.notes.join(' ')).to.match(/one workspace: evidence is not independent/);
  });

  it('positions (undercut) and keeps the caller\'s floor on the network reference', () => {
    expect(run(competitive, { product_type: 'coffee', position: 'undercut', undercut_pct: 0.1 }, market()).price).to.equal('10.80');
    const floored = run(competitive, { product_type: 'coffee', position: 'undercut', min_price: 11.5 }, market());
    expect(floored.price).to.equal('11.50');
    expect(floored.confidence_factors).to.deep.include({ bounds: 0.8 });
  });

  it('anchored-adjustment moves current_price towards the network reference within its step instead of echoing it', () => {
    const moved = run(anchored, { product_type: 'coffee', current_price: 15 }, market());
    expect(moved.price).to.equal('13.50');
    expect(moved.inputs_used).to.deep.equal(['current_price', 'product_type', 'network_observations']);
    expect(moved.notes).to.include('target 12.00 from competitive positioning on network observations');
    expect(moved.notes).to.include('step limited to -10%');
    expect(run(anchored, { product_type: 'coffee', current_price: 15 }).notes.join(' ')).to.match(/current price echoed/);
  });

  it('anchored-adjustment prefers the caller\'s own signals: a target_price, or a unit_cost with its own margin or markup, beats the network', () => {
    expect(run(anchored, { product_type: 'coffee', current_price: 15, target_price: 16 }, market()).price).to.equal('16.00');
    const cost = run(anchored, { product_type: 'coffee', current_price: 15, unit_cost: 10, target_margin: 0.4 }, market());
    expect(cost.inputs_used).to.not.include('network_observations');
    expect(cost.notes).to.include('target 16.67 from cost-plus');
    expect(run(anchored, { product_type: 'coffee', current_price: 15, unit_cost: 10, markup: 0.5 }, market()).notes).to.include('target 15.00 from cost-plus');
  });

  it('anchored-adjustment with a unit_cost but no margin of the caller\'s moves towards the network reference, not a default-margin price, the cost its floor', () => {
    // The walk's case: a current price at the market is not moved below it towards cost / 0.7 = 14.29.
    const atMarket = run(anchored, { product_type: 'coffee', current_price: 11.5, unit_cost: 5 }, market());
    expect(atMarket.price).to.equal('12.00');
    expect(atMarket.inputs_used).to.deep.equal(['current_price', 'product_type', 'network_observations', 'unit_cost']);
    expect(atMarket.notes[0]).to.equal('target 12.00 from competitive positioning on network observations: no target_margin or markup given, so the network\'s observations rather than a default 30% margin on unit_cost (the floor)');
    expect(atMarket.details).to.deep.include({ reference: 'network_observations', reference_price: '12.00', target_price: '12.00' });
    // Never below unit_cost: a cost above the reference is the target.
    const overCost = run(anchored, { product_type: 'coffee', current_price: 12, unit_cost: 12.6 }, market());
    expect(overCost.price).to.equal('12.60');
    expect(overCost.notes.join(' ')).to.match(/match not possible above the floor \(unit_cost 12\.6\): the floor binds/);
    // The caller's min_price and max_price still win.
    expect(run(anchored, { product_type: 'coffee', current_price: 12, unit_cost: 5, min_price: 12.4 }, market()).price).to.equal('12.40');
    expect(run(anchored, { product_type: 'coffee', current_price: 12.5, unit_cost: 5, max_price: 11.8 }, market()).price).to.equal('11.80');
    // Without network evidence the default-margin cost-plus target is as before.
    expect(run(anchored, { product_type: 'coffee', current_price: 11.5, unit_cost: 5 }).notes[0]).to.equal('target 7.14 from cost-plus');
  });
});

describe('engine: the default order beside the network\'s observations of the product type', function () {
  this.timeout(20_000);
  let h: Harness;
  before(async () => {
    h = await harness({ engine: { cacheTtlMs: 0 } });
  });
  after(() => h.close());

  it('tries competitive-position first, so the network\'s observations answer in one attempt', async () => {
    const out = await h.price({ context: { product_type: 'coffee', currency: 'USD' }, market: market() });
    expect(out.fn.name).to.equal('competitive-position');
    expect(out.attempts.map((a) => [a.function, a.outcome])).to.deep.equal([['competitive-position', 'ok']]);
  });

  it('a unit_cost without a margin of the caller\'s is positioned on the network\'s observations first, the cost its floor; with a margin, or no evidence, cost-plus comes first as before', async () => {
    const positioned = await h.price({ context: { product_type: 'coffee', unit_cost: 5 }, market: market() });
    expect(positioned.fn.name).to.equal('competitive-position');
    expect(positioned.result.price).to.equal('12.00');
    expect(positioned.decision?.statistic?.order).to.deep.equal(['competitive-position', 'cost-plus', 'anchored-adjustment', 'elasticity-optimum', 'charm-pricing']);
    const floored = await h.price({ context: { product_type: 'coffee', unit_cost: 12.6 }, market: market() });
    expect(floored.fn.name).to.equal('competitive-position');
    expect(floored.result.price).to.equal('12.60');
    for (const margin of [{ target_margin: 0.3 }, { markup: 0.4 }]) {
      const own = await h.price({ context: { product_type: 'coffee', unit_cost: 5, ...margin }, market: market() });
      expect(own.fn.name).to.equal('cost-plus');
      expect(own.result.price).to.equal(margin.markup ? '7.00' : '7.14');
    }
    expect((await h.price({ context: { product_type: 'coffee', unit_cost: 5 } })).fn.name).to.equal('cost-plus');
    expect((await h.price({ context: { product_type: 'coffee', unit_cost: 5, currency: 'EUR' }, market: market() })).fn.name).to.equal('cost-plus');
  });

  it('with a number of the caller\'s own, the order is as before (a current price is the anchor)', async () => {
    const out = await h.price({ context: { product_type: 'coffee', current_price: 15 }, market: market() });
    expect(out.fn.name).to.equal('anchored-adjustment');
    expect(out.attempts).to.have.length(1);
  });
});
