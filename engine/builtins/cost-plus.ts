import { D, confidenceOf, currencyOf, fraction, lacking, markupFraction, num, percent, positiveMoney, round3, shownAmount, toPrice, methodResult, callerBounds } from './inputs';
import type { Bound, Dec } from './inputs';
import { networkReferencePrice } from './competitive';
import { MethodNotApplicable } from './types';
import type { Context, MarketEvidence, MethodResult } from './types';

export const DEFAULT_TARGET_MARGIN = 0.3;
/** What a price inside the network's band adds to the input quality, and the factor one outside it is lowered by (pricing-methods §1: "raise it a little … lower it when outside"). */
export const INSIDE_NETWORK_BAND_RAISE = 0.05;
export const OUTSIDE_NETWORK_BAND = 0.7;

/**
 * Cost-plus with a target margin: p = c / (1 − g), or with a markup: p = c · (1 + m). Fixed costs
 * are spread over the expected volume. Confidence reflects input quality only (the method ignores
 * demand and competitors): 0.5 when the caller gives the margin, 0.35 on the default margin; raised a
 * little when the price lies within the network's band of the product type, lowered outside it (placeOnNetwork).
 */
export function costPlus(ctx: Context, market?: MarketEvidence): MethodResult {
  const currency = currencyOf(ctx);
  const unitCost = positiveMoney(ctx, 'unit_cost');
  if (!unitCost) throw new MethodNotApplicable(`cost-plus needs unit_cost (a positive amount)${lacking(ctx, 'unit_cost')}.`, ['unit_cost']);
  const used = ['unit_cost'];
  const notes: string[] = [];
  let cost: Dec = unitCost;
  const fixed = positiveMoney(ctx, 'fixed_costs');
  const volume = num(ctx, 'expected_volume');
  if (fixed && volume !== undefined && volume > 0) {
    cost = cost.plus(fixed.div(volume));
    used.push('fixed_costs', 'expected_volume');
  } else if (fixed) notes.push('fixed_costs ignored: expected_volume is missing or not positive');

  const margin = fraction(ctx, 'target_margin', { allowNegative: true });
  const markup = markupFraction(ctx, 'markup', { allowNegative: true });
  let price: Dec;
  let inputQuality: number;
  if (margin !== undefined) {
    price = cost.div(new D(1).minus(margin));
    used.push('target_margin');
    inputQuality = 0.5;
    if (markup !== undefined && Math.abs(margin / (1 - margin) - markup) > 1e-6) notes.push(`target_margin ${margin} and markup ${markup} disagree; target_margin wins`);
  } else if (markup !== undefined) {
    price = cost.times(new D(1).plus(markup));
    used.push('markup');
    inputQuality = 0.5;
  } else {
    price = cost.div(1 - DEFAULT_TARGET_MARGIN);
    inputQuality = 0.35;
    notes.push(`no target_margin or markup given: default target margin ${percent(DEFAULT_TARGET_MARGIN)}`);
  }
  // The rate applied, not one the other outranked: a negative markup beside the margin that wins prices nothing below cost.
  const belowCost = (margin ?? markup ?? 0) < 0;
  if (belowCost) notes.push(`negative ${margin !== undefined ? 'target_margin' : 'markup'}: the price is below cost, as requested`);
  // Rounding to the currency's units keeps to the floor: min_price, and the cost itself unless a price below it was asked for.
  const costFloor: Bound[] = belowCost ? [] : [{ value: cost, name: used.includes('fixed_costs') ? 'unit_cost with fixed costs' : 'unit_cost', keys: used.filter((k) => ['unit_cost', 'fixed_costs', 'expected_volume'].includes(k)) }];
  const bounded = callerBounds(ctx, price, currency, notes, used, { roundingFloors: () => costFloor });
  price = bounded.price;
  if (price.lt(cost) && !belowCost) notes.push(`max_price holds the price below cost (${toPrice(cost, currency)})`);
  const factors = { input_quality: inputQuality, bounds: bounded.factor };
  const result = methodResult(price, currency, factors, used, notes, { unit_cost_with_fixed: shownAmount(cost, currency), markup_applied: round3(price.div(cost).minus(1).toNumber()) }, bounded.bounds);
  if (market) placeOnNetwork(result, ctx, market);
  return result;
}

/** A bound of the network's band as a verdict shows it: as given, to 8 decimals at most. */
const bandBound = (x: number): string => new D(x).toDecimalPlaces(8).toFixed();

/**
 * Where the price answered sits against the network's observations of the product type: inside, above or below the
 * band a verdict on it would use (bounds inclusive, as the verdict reads them), or, with no band given, how far from
 * the reference. Only the confidence follows (pricing-methods §1); the price stays cost-based, so the observations are
 * not among `inputs_used`: an accepted outcome of this price is new evidence, not the network's echoed back.
 */
function placeOnNetwork(result: MethodResult, ctx: Context, market: MarketEvidence): void {
  const network = networkReferencePrice(ctx, market);
  if (!network) return;
  const { currency } = result;
  const p = new D(result.price);
  const reference = toPrice(network.price, currency);
  const index = round3(p.div(network.price).times(100).toNumber());
  const of = `${network.observations} price observation(s) of "${market.product_type}" in ${currency} from ${network.sources} source(s)`;
  const band = market.band;
  if (!band || !(band.upper > 0) || !(band.lower <= band.upper)) {
    const off = p.div(network.price).minus(1);
    const where = off.isZero() ? 'at' : `${off.abs().times(100).toDecimalPlaces(1).toFixed()}% ${off.gt(0) ? 'above' : 'below'}`;
    result.notes.push(`the price ${result.price} is ${where} the network's reference ${reference} (${of}); no band was given to judge it against: confidence unchanged, the price stays cost-based`);
    result.details = { ...result.details, network: { reference_price: reference, observations: network.observations, sources: network.sources, price_index: index } };
    return;
  }
  const lower = new D(band.lower);
  const upper = new D(band.upper);
  const position = p.lt(lower) ? 'below' : p.gt(upper) ? 'above' : 'inside';
  const shown = `${lower.isZero() ? '(open below' : `[${bandBound(band.lower)}`}, ${bandBound(band.upper)}]`;
  const factors = result.confidence_factors;
  if (position === 'inside') {
    const before = factors.input_quality ?? 0;
    factors.input_quality = round3(Math.min(1, before + INSIDE_NETWORK_BAND_RAISE));
    result.notes.push(`the price ${result.price} lies within the network's band ${shown} around its reference ${reference} (${of}): input_quality raised from ${before} to ${factors.input_quality}`);
  } else {
    factors.network_band = OUTSIDE_NETWORK_BAND;
    result.notes.push(`the price ${result.price} is ${position} the network's band ${shown} around its reference ${reference} (${of}): confidence × ${OUTSIDE_NETWORK_BAND} (network_band); the price stays cost-based`);
  }
  result.confidence = confidenceOf(factors);
  result.details = { ...result.details, network: { reference_price: reference, observations: network.observations, sources: network.sources, price_index: index, band: [bandBound(band.lower), bandBound(band.upper)], position } };
}
