import { D, callerBounds, clamp01, currencyLabel, currencyOf, describeCurrencies, lacking, num, positiveMoney, round3, methodResult, sameCurrency } from './inputs';
import type { Dec } from './inputs';
import { MethodNotApplicable } from './types';
import type { Context, MethodResult } from './types';

const DEFAULT_MAX_MULTIPLE = 5;
// Two-sided 97.5% Student t quantiles for small degrees of freedom (then ~1.96).
const T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086];

interface Estimate {
  /** Rows left out for being in another currency than the context's. */
  otherCurrency: Map<string, number>;
  /** Rows left out for a price or quantity that is not a number above 0 (ln cannot take them). */
  unusable: number;
  epsilon: number;
  se: number;
  r2: number;
  n: number;
  lowerEpsilon: number;
}

/** OLS of ln q on ln p; ε̂ = −β̂ with its standard error and 95% interval. */
export function estimateElasticity(history: unknown, currency: string): Estimate | { problem: string } {
  if (!Array.isArray(history)) return { problem: 'price_history must be a list of {price, quantity}' };
  const otherCurrency = new Map<string, number>();
  let pts = history
    .map((h) => (h && typeof h === 'object' ? (h as Record<string, unknown>) : {}))
    // Prices in two currencies would shift ln p between rows and fake a slope.
    .filter((h) => {
      if (sameCurrency(h, currency)) return true;
      const c = currencyLabel(h.currency);
      otherCurrency.set(c, (otherCurrency.get(c) ?? 0) + 1);
      return false;
    })
    .map((h) => ({ p: Number(h.price), q: Number(h.quantity) }));
  const inCurrency = pts.length;
  pts = pts.filter((x) => Number.isFinite(x.p) && Number.isFinite(x.q) && x.p > 0 && x.q > 0);
  const n = pts.length;
  const unusable = inCurrency - n;
  const foreign = otherCurrency.size ? ` in ${currency}; ${describeCurrencies(otherCurrency)} left out` : '';
  if (n < 5) return { problem: `price_history needs at least 5 usable points with price and quantity above 0${foreign} (has ${n})` };
  if (new Set(pts.map((x) => x.p)).size < 3) return { problem: 'price_history needs at least three distinct prices' };
  const xs = pts.map((x) => Math.log(x.p));
  const ys = pts.map((x) => Math.log(x.q));
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] as number) - mx;
    const dy = (ys[i] as number) - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx < 1e-6) return { problem: 'prices in price_history barely vary: the slope cannot be estimated' };
  const beta = sxy / sxx;
  const rss = Math.max(0, syy - beta * sxy);
  const se = Math.sqrt(rss / (n - 2)) / Math.sqrt(sxx);
  const r2 = syy > 0 ? 1 - rss / syy : 0;
  if (beta >= 0) return { problem: 'quantity does not fall as price rises in price_history: no usable elasticity' };
  if (se > 0 && Math.abs(beta) / se < 2) return { problem: 'the elasticity estimate is not distinguishable from zero (|t| < 2)' };
  const t = T975[Math.min(n - 2, T975.length - 1)] ?? 1.96;
  return { otherCurrency, unusable, epsilon: -beta, se, r2, n, lowerEpsilon: -beta - t * se };
}

/**
 * Profit-maximising price under demand elasticity. Constant elasticity (Lerner): p* = c·ε/(ε − 1),
 * only for ε > 1, capped at `max_markup_multiple` × cost. Linear demand q = a − b·p:
 * p* = (a/b + c)/2. ε comes from `elasticity` (either sign) or is estimated from `price_history`.
 */
export function elasticityOptimum(ctx: Context): MethodResult {
  const currency = currencyOf(ctx);
  const cost = positiveMoney(ctx, 'unit_cost');
  if (!cost) throw new MethodNotApplicable(`the elasticity optimum needs unit_cost (marginal cost)${lacking(ctx, 'unit_cost')}.`, ['unit_cost']);
  const notes: string[] = [];
  const a = num(ctx, 'demand_intercept');
  const b = num(ctx, 'demand_slope');
  if (a !== undefined && b !== undefined) {
    const slope = Math.abs(b);
    if (slope === 0 || a / slope <= cost.toNumber()) throw new MethodNotApplicable('Linear demand: the choke price a/b must be above unit_cost.', ['demand_intercept', 'demand_slope']);
    const price = new D(a).div(slope).plus(cost).div(2);
    const linearNotes = ['linear demand optimum (a/b + c)/2'];
    const linearUsed = ['unit_cost', 'demand_intercept', 'demand_slope'];
    // Either sign means the same fall of demand with price (q = a − b·p, b > 0), as elasticity's sign does; said, not silently flipped.
    if (b < 0) linearNotes.push(`demand_slope ${b} read as ${slope}: demand q = a − b·p falls as price rises`);
    const ignored = ['elasticity', 'price_history'].filter((k) => ctx[k] != null);
    if (ignored.length) linearNotes.push(`${ignored.join(' and ')} not used: the linear demand curve (demand_intercept, demand_slope) was given and outranks them`);
    const bounded = callerBounds(ctx, price, currency, linearNotes, linearUsed, { roundingFloors: () => [{ value: cost, name: 'unit_cost' }] });
    return methodResult(bounded.price, currency, { model_supplied: 0.45, ...(bounded.factor < 1 ? { bounds: bounded.factor } : {}) }, linearUsed, linearNotes, { expected_quantity: round3(a - slope * bounded.price.toNumber()) }, bounded.bounds);
  }
  let epsilon: number;
  let factors: Record<string, number>;
  let used: string[];
  const given = num(ctx, 'elasticity');
  if (given !== undefined) {
    epsilon = Math.abs(given);
    factors = { supplied_elasticity: 0.5 };
    used = ['unit_cost', 'elasticity'];
  } else if (ctx.price_history !== undefined) {
    const est = estimateElasticity(ctx.price_history, currency);
    if ('problem' in est) throw new MethodNotApplicable(`Cannot estimate elasticity: ${est.problem}.`, ['price_history']);
    epsilon = est.epsilon;
    factors = { precision: round3(clamp01(1 - est.se / est.epsilon)), amount: round3(est.n / (est.n + 10)), fit: round3(clamp01(est.r2)) };
    if (est.lowerEpsilon <= 1) {
      factors.interval_reaches_inelastic = 0.3;
      notes.push('the 95% interval reaches ε ≤ 1: the optimum is fragile');
    }
    used = ['unit_cost', 'price_history'];
    if (est.unusable) notes.push(`${est.unusable} price_history row(s) with a price or quantity that is not a number above 0 were dropped (a log-log fit cannot take them; zero-sale periods need a count model)`);
    if (est.otherCurrency.size) notes.push(`price_history rows in another currency than ${currency} were dropped (${describeCurrencies(est.otherCurrency)}): prices are never mixed across currencies`);
    notes.push(`estimated ε = ${round3(epsilon)} from ${est.n} points (R² ${round3(est.r2)})`);
  } else throw new MethodNotApplicable('the elasticity optimum needs elasticity, price_history, or demand_intercept with demand_slope.', ['elasticity', 'price_history', 'demand_intercept', 'demand_slope']);

  if (epsilon <= 1) throw new MethodNotApplicable(`Demand is inelastic (ε = ${round3(epsilon)} ≤ 1): no profit-maximising price exists; raise prices in small steps instead (anchored-adjustment).`, ['elasticity']);
  const maxMultiple = num(ctx, 'max_markup_multiple') ?? DEFAULT_MAX_MULTIPLE;
  if (maxMultiple <= 1) {
    throw new MethodNotApplicable(
      `max_markup_multiple must be above 1, got ${maxMultiple}: it caps the price at that multiple of unit_cost, and the optimum ε/(ε − 1) × cost is always above cost (a cap of 1 or less would price at or below cost).`,
      ['max_markup_multiple'],
      // A value the caller gave and meant: refused by name, not read as missing (another function's price would hide it).
      true,
    );
  }
  let multiple = epsilon / (epsilon - 1);
  if (multiple > maxMultiple) {
    notes.push(`ε close to 1 gives ${round3(multiple)}× cost; capped at ${maxMultiple}×`);
    multiple = maxMultiple;
    factors.capped = 0.6;
  }
  if (given !== undefined && ctx.price_history != null) notes.push('price_history not used: elasticity was given and outranks an estimate');
  const bounded = callerBounds(ctx, cost.times(multiple), currency, notes, used, { roundingFloors: () => [{ value: cost, name: 'unit_cost' }] });
  if (bounded.factor < 1) factors.bounds = bounded.factor;
  const price: Dec = bounded.price;
  return methodResult(price, currency, factors, used, notes, { elasticity: round3(epsilon), markup_multiple: round3(price.div(cost).toNumber()) }, bounded.bounds);
}
