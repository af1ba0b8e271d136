import { D, currencyOf, minorUnits, num, positiveMoney, toPrice, methodResult } from './inputs';
import type { Dec } from './inputs';
import { costPlus } from './cost-plus';
import { MethodNotApplicable } from './types';
import type { Context, MethodResult } from './types';

const DEFAULT_TOLERANCE = 0.02;

/** Charm endings by magnitude: .99/.95 under 100, whole units ending in 9 under 1000, then tens ending in 99/95. */
export function charmCandidates(p: number, wholeUnitsOnly: boolean): number[] {
  if (p < 100 && !wholeUnitsOnly) {
    const f = Math.floor(p);
    return [f + 0.99, f + 0.95, f - 0.01, f - 0.05].filter((c) => c > 0);
  }
  if (p < 1000) {
    const t = Math.floor(p / 10) * 10;
    return [t + 9, t - 1, t + 19].filter((c) => c > 0);
  }
  const h = Math.floor(p / 100) * 100;
  return [h + 99, h + 95, h - 1, h - 5].filter((c) => c > 0);
}

/**
 * Psychological (charm) rounding of a base price: the candidate ending that moves the price least,
 * upward moves preferred, accepted only within `tolerance` (default 2%) and never through a floor
 * or ceiling. Cosmetic: it keeps the base's confidence and never raises it.
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
  } else throw new MethodNotApplicable('charm pricing needs a base: target_price, current_price or unit_cost.', ['target_price', 'current_price', 'unit_cost']);

  const p = base.toNumber();
  const tolerance = num(ctx, 'charm_tolerance') ?? DEFAULT_TOLERANCE;
  const min = positiveMoney(ctx, 'min_price')?.toNumber() ?? 0;
  const max = positiveMoney(ctx, 'max_price')?.toNumber() ?? Infinity;
  const candidates = charmCandidates(p, minorUnits(currency) === 0)
    .filter((c) => c >= min && c <= max)
    .sort((x, y) => Math.abs(x - p) - Math.abs(y - p) || y - x);
  const best = candidates[0];
  let price: Dec = base;
  if (best !== undefined && Math.abs(best - p) / p <= tolerance) {
    price = new D(best);
    if (Math.abs(best - p) < 1e-9) notes.push('already charm-ended');
  } else {
    notes.push(`no charm ending within ${tolerance * 100}% (or inside the bounds): base price kept`);
  }
  return methodResult(price, currency, { base: baseConfidence }, used, notes, { base_price: toPrice(base, currency) });
}
