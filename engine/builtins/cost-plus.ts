import { D, currencyOf, fraction, lacking, markupFraction, num, percent, positiveMoney, round3, toPrice, methodResult, callerBounds } from './inputs';
import type { Bound, Dec } from './inputs';
import { MethodNotApplicable } from './types';
import type { Context, MethodResult } from './types';

export const DEFAULT_TARGET_MARGIN = 0.3;

/**
 * Cost-plus with a target margin: p = c / (1 − g), or with a markup: p = c · (1 + m). Fixed costs
 * are spread over the expected volume. Confidence reflects input quality only (the method ignores
 * demand and competitors): 0.5 when the caller gives the margin, 0.35 on the default margin.
 */
export function costPlus(ctx: Context): MethodResult {
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
  return methodResult(price, currency, factors, used, notes, { unit_cost_with_fixed: toPrice(cost, currency), markup_applied: round3(price.div(cost).minus(1).toNumber()) }, bounded.bounds);
}
