import { D, currencyOf, fraction, lacking, minorUnits, percent, positiveMoney, shownAmount, toPrice, methodResult, highestFloor, floorAboveCeiling } from './inputs';
import type { Bound, Dec } from './inputs';
import { costPlus } from './cost-plus';
import { MethodNotApplicable } from './types';
import type { Context, MethodResult } from './types';

const DEFAULT_TOLERANCE = 0.02;

/** Charm endings by magnitude: .99/.95 under 100, whole units ending in 9 under 1000, then tens ending in 99/95. */
export function charmCandidates(p: Dec, wholeUnitsOnly: boolean): Dec[] {
  let endings: Dec[];
  if (p.lt(100) && !wholeUnitsOnly) {
    const f = p.floor();
    endings = [f.plus('0.99'), f.plus('0.95'), f.minus('0.01'), f.minus('0.05')];
  } else if (p.lt(1000)) {
    const t = p.div(10).floor().times(10);
    endings = [t.plus(9), t.minus(1), t.plus(19)];
  } else {
    const h = p.div(100).floor().times(100);
    endings = [h.plus(99), h.plus(95), h.minus(1), h.minus(5)];
  }
  return endings.filter((c) => c.gt(0));
}

/** The floor charm rounding may not cross: min_price, and unit_cost unless the base is already below cost as asked. */
function floorOf(ctx: Context, base: Dec): Bound | undefined {
  const floors: Bound[] = [];
  const minPrice = positiveMoney(ctx, 'min_price');
  if (minPrice) floors.push({ value: minPrice, name: 'min_price' });
  const unitCost = positiveMoney(ctx, 'unit_cost');
  // A base below cost was asked for (a negative markup, a target under cost): cost is no floor for it.
  if (unitCost && base.gte(unitCost)) floors.push({ value: unitCost, name: 'unit_cost' });
  return highestFloor(floors);
}

/**
 * Psychological (charm) rounding of a base price: the candidate ending that moves the price least,
 * upward moves preferred, accepted only within `tolerance` (default 2%) and never through a floor
 * (min_price, unit_cost) or ceiling. Cosmetic: it keeps the base's confidence and never raises it.
 */
export function charm(ctx: Context): MethodResult {
  const currency = currencyOf(ctx);
  let base: Dec | undefined = positiveMoney(ctx, 'target_price');
  let baseConfidence = 0.4;
  const used: string[] = [];
  const notes: string[] = [];
  if (base) used.push('target_price');
  else if ((base = positiveMoney(ctx, 'current_price'))) {
    used.push('current_price');
    baseConfidence = 0.3;
  } else if (positiveMoney(ctx, 'unit_cost')) {
    const cp = costPlus(ctx);
    base = new D(cp.price);
    baseConfidence = cp.confidence;
    used.push(...cp.inputs_used);
    notes.push('base price from cost-plus', ...cp.notes);
  } else throw new MethodNotApplicable(`charm pricing needs a base: target_price, current_price or unit_cost${lacking(ctx, 'target_price', 'current_price', 'unit_cost')}.`, ['target_price', 'current_price', 'unit_cost']);

  const tolerance = fraction(ctx, 'charm_tolerance') ?? DEFAULT_TOLERANCE;
  const floor = floorOf(ctx, base);
  const max = positiveMoney(ctx, 'max_price');
  if (floor && max && floor.value.gt(max)) throw floorAboveCeiling(floor, max, currency);
  // A base outside the caller's bounds is brought inside them first: rounding is cosmetic, the bounds are not.
  let p: Dec = base;
  let bounds = 1;
  if (floor && p.lt(floor.value)) {
    p = floor.value;
    bounds = 0.9;
    notes.push(`base price ${base.toFixed()} is under ${floor.name} ${floor.value.toFixed()}: raised to it`);
  } else if (max && p.gt(max)) {
    p = max;
    bounds = 0.9;
    notes.push(`base price ${base.toFixed()} is over max_price ${max.toFixed()}: lowered to it`);
  }
  const wholeUnitsOnly = minorUnits(currency) === 0;
  const withinTolerance = (c: Dec) => c.minus(p).abs().div(p).lte(tolerance);
  const inBounds = (c: Dec) => (!floor || c.gte(floor.value)) && (!max || c.lte(max));
  const byDistance = (x: Dec, y: Dec) => x.minus(p).abs().comparedTo(y.minus(p).abs()) || y.comparedTo(x);
  const endings = charmCandidates(p, wholeUnitsOnly);
  const nearest = endings.filter((c) => (!max || c.lte(max)) && withinTolerance(c)).sort(byDistance)[0];
  const crossing = floor && nearest?.lt(floor.value) ? nearest : undefined;
  // With the nearest ending under the floor, the endings just above the floor compete too (101 on a cost of 99.97 → 99.99).
  const candidates = floor && crossing ? [...endings, ...charmCandidates(floor.value, wholeUnitsOnly)] : endings;
  const best = candidates.filter(inBounds).sort(byDistance)[0];
  const crossed = floor && crossing ? `charm ending ${toPrice(crossing, currency)} would cross the floor (${floor.name} ${floor.value.toFixed()})` : undefined;
  let price: Dec = p;
  if (best && withinTolerance(best)) {
    price = best;
    if (best.eq(p)) notes.push('already charm-ended');
    if (crossed) notes.push(`${crossed}: the nearest ending above it taken`);
  } else if (crossed) notes.push(`${crossed} and no ending above it lies within ${percent(tolerance)}: base price kept`);
  else notes.push(`no charm ending within ${percent(tolerance)} (or inside the bounds): base price kept`);
  const boundBy = floor && p.eq(floor.value) ? floor.name : 'max_price';
  if (bounds < 1 && !used.includes(boundBy)) used.push(boundBy);
  return methodResult(price, currency, { base: baseConfidence, bounds }, used, notes, { base_price: shownAmount(base, currency) }, { floor, ceiling: max ? { value: max, name: 'max_price' } : undefined });
}
