import { expect } from 'chai';
import { costPlus, INSIDE_NETWORK_BAND_RAISE, OUTSIDE_NETWORK_BAND } from '../../engine/builtins/cost-plus';
import type { MarketEvidence } from '../../engine/builtins/types';

/**
 * The walk's "widget": 7 observations from 4 sources, reference 19.80, the band a verdict on it uses
 * [18.5046, 21.1913] (verification's reference × exp(±max(k·σ, ln 1.05)), as its verdict showed it).
 */
const widget = (over: Partial<MarketEvidence> = {}): MarketEvidence => ({
  product_type: 'widget',
  currency: 'USD',
  observations: 7,
  source_prices: [19.5, 19.8, 20.1, 21],
  reference_price: 19.8,
  band: { lower: 18.5046, upper: 21.1913 },
  workspaces: 3,
  ...over,
});

describe('engine: cost-plus reads the network evidence it is given (pricing-methods §1)', () => {
  it('a default-margin price above the network band keeps its cost-based price, loses confidence and says where it sits, with the numbers', () => {
    const r = costPlus({ product_type: 'widget', unit_cost: 20 }, widget());
    expect(r.price).to.equal('28.57');
    expect(r.confidence_factors).to.deep.include({ input_quality: 0.35, network_band: OUTSIDE_NETWORK_BAND });
    expect(r.confidence).to.equal(0.245);
    expect(r.notes).to.include('the price 28.57 is above the network\'s band [18.5046, 21.1913] around its reference 19.80 (7 price observation(s) of "widget" in USD from 4 source(s)): confidence × 0.7 (network_band); the price stays cost-based');
    expect(r.details).to.deep.include({ network: { reference_price: '19.80', observations: 7, sources: 4, price_index: 144.293, band: ['18.5046', '21.1913'], position: 'above' } });
    // The price is not positioned on the observations: an accepted outcome of it is new evidence (compute's networkEvidence reads this).
    expect(r.inputs_used).to.not.include('network_observations');
  });

  it('a price inside the band raises its input quality a little; one below it is lowered as one above', () => {
    const inside = costPlus({ product_type: 'widget', unit_cost: 15, target_margin: 0.25 }, widget());
    expect(inside.price).to.equal('20.00');
    expect(inside.confidence_factors).to.deep.include({ input_quality: 0.5 + INSIDE_NETWORK_BAND_RAISE });
    expect(inside.confidence_factors).to.not.have.property('network_band');
    expect(inside.confidence).to.equal(0.55);
    expect(inside.notes.join(' ')).to.match(/the price 20\.00 lies within the network's band \[18\.5046, 21\.1913\] around its reference 19\.80 .*: input_quality raised from 0\.5 to 0\.55/);
    // A price on a bound is inside, as a verdict reads it.
    expect(costPlus({ product_type: 'widget', unit_cost: 21.19, markup: 0 }, widget({ band: { lower: 18.5, upper: 21.19 } })).details).to.deep.nested.include({ 'network.position': 'inside' });
    const below = costPlus({ product_type: 'widget', unit_cost: 10, markup: 0.5 }, widget());
    expect(below.price).to.equal('15.00');
    expect(below.confidence).to.equal(0.35);
    expect(below.notes.join(' ')).to.match(/the price 15\.00 is below the network's band/);
  });

  it('with no band given it compares with the reference alone and leaves the confidence as it is', () => {
    const r = costPlus({ product_type: 'widget', unit_cost: 20 }, widget({ band: undefined }));
    expect(r.confidence).to.equal(0.35);
    expect(r.notes).to.include('the price 28.57 is 44.3% above the network\'s reference 19.80 (7 price observation(s) of "widget" in USD from 4 source(s)); no band was given to judge it against: confidence unchanged, the price stays cost-based');
    expect(r.details).to.deep.include({ network: { reference_price: '19.80', observations: 7, sources: 4, price_index: 144.293 } });
  });

  it('evidence it would not position on (another currency, a competitor list sent) is not read; without any the answer is as before', () => {
    const plain = costPlus({ unit_cost: 20 });
    expect(costPlus({ product_type: 'widget', unit_cost: 20, currency: 'EUR' }, widget())).to.deep.equal({ ...plain, currency: 'EUR' });
    expect(costPlus({ product_type: 'widget', unit_cost: 20, competitor_prices: [19] }, widget())).to.deep.equal(plain);
    expect(plain.confidence).to.equal(0.35);
    expect(plain.details).to.not.have.property('network');
  });
});
