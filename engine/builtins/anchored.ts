import { D, callerBounds, currencyOf, given, lacking, num, percent, positiveMoney, round3, shownAmount, toQuotable, methodResult } from './inputs';
import type { Dec } from './inputs';
import { competitive, competitorPricesProblem, hasNetworkReference } from './competitive';
import { DEFAULT_TARGET_MARGIN, costPlus } from './cost-plus';
import { MethodNotApplicable } from './types';
import type { Context, MarketEvidence, MethodResult } from './types';

const DEFAULT_MAX_STEP = 0.1;
const DEAD_BAND = 0.01;
const PACE_TOLERANCE = 0.1;

/** Sell-through inputs: units sold of a stock (units_received, else inventory_start) over the season elapsed so far. */
interface Pacing {
  sold: number;
  stock: number;
  stockKey: 'units_received' | 'inventory_start';
  elapsed: number;
  notes: string[];
}

/**
 * The sell-through inputs when the context gives them all (units_sold, a stock, season_elapsed), else
 * undefined. A value given but impossible — a negative units_sold, no stock above 0, a season_elapsed
 * outside [0, 1] — is the context's fault: not applicable, naming it (the pace it gave was NaN or
 * negative). units_received of 0 or less falls back on inventory_start when that is above 0.
 */
function pacingInputs(ctx: Context): Pacing | undefined {
  const sold = num(ctx, 'units_sold');
  const received = num(ctx, 'units_received');
  const start = num(ctx, 'inventory_start');
  const elapsed = num(ctx, 'season_elapsed');
  if (sold === undefined || (received === undefined && start === undefined) || elapsed === undefined) return undefined;
  if (sold < 0) throw new MethodNotApplicable(`units_sold must be a count of 0 or more, got ${sold}.`, ['units_sold'], true);
  if (elapsed < 0 || elapsed > 1) throw new MethodNotApplicable(`season_elapsed must be the fraction of the season gone, from 0 to 1 (0.5 means half), got ${elapsed}.`, ['season_elapsed'], true);
  if (received !== undefined && received > 0) return { sold, stock: received, stockKey: 'units_received', elapsed, notes: [] };
  if (start !== undefined && start > 0) {
    const notes = received !== undefined ? [`units_received ${received} is no stock to pace against: inventory_start ${start} used`] : [];
    return { sold, stock: start, stockKey: 'inventory_start', elapsed, notes };
  }
  const given = [...(received !== undefined ? [`units_received ${received}`] : []), ...(start !== undefined ? [`inventory_start ${start}`] : [])];
  throw new MethodNotApplicable(
    `Sell-through pacing needs the stock sold from above 0 (units_received, or inventory_start), got ${given.join(' and ')}.`,
    [...(received !== undefined ? ['units_received'] : []), ...(start !== undefined ? ['inventory_start'] : [])],
  );
}

/**
 * The competitive position of the network's observations as anchored's target: its factors, the inputs it adds to
 * `used`, and what it rests on, shown as that method shows it (its notes added to `notes`, after the one naming it).
 */
function towardsNetwork(ctx: Context, market: MarketEvidence | undefined, used: string[], notes: string[], why: string): { target: Dec; factors: Record<string, number>; used: string[]; evidence: Record<string, unknown> } {
  const inner = competitive(ctx, market);
  notes.push(`target ${inner.price} from competitive positioning on network observations${why}`, ...inner.notes);
  return {
    target: new D(inner.price),
    factors: { ...inner.confidence_factors, anchored: 1 },
    used: [...used, ...inner.inputs_used],
    evidence: { reference: inner.details?.reference, observations: inner.details?.observations, reference_price: inner.details?.reference_price, target_price: inner.price },
  };
}

/**
 * Anchored adjustment of `current_price`: towards a target — `target_price`, else the competitive
 * position of `competitor_prices`, else (a `unit_cost` without the caller's margin or markup, and
 * network observations of the product type) their competitive position floored at the cost, else
 * cost-plus on `unit_cost` — or by sell-through pacing (units
 * sold against a linear plan over the season), else towards the competitive position of the
 * network's observations of the product type, never more than `max_step_pct` (default 10%) per
 * call and not at all inside a 1% dead band. With only a current price it echoes it, honestly
 * labelled, at confidence 0.15.
 */
export function anchored(ctx: Context, market?: MarketEvidence): MethodResult {
  const currency = currencyOf(ctx);
  const current = positiveMoney(ctx, 'current_price');
  if (!current) throw new MethodNotApplicable(`anchored adjustment needs current_price${lacking(ctx, 'current_price')}.`, ['current_price']);
  const step = num(ctx, 'max_step_pct') ?? DEFAULT_MAX_STEP;
  if (step <= 0 || step >= 1) throw new MethodNotApplicable('max_step_pct is a fraction in (0, 1).', ['max_step_pct'], true);
  const lower = current.times(1 - step);
  const upper = current.times(1 + step);
  const notes: string[] = [];
  let target: Dec | undefined = positiveMoney(ctx, 'target_price');
  let used = ['current_price'];
  let factors: Record<string, number>;
  /** What the target rests on, when another method proposed it from evidence (shown as that method shows it). */
  let evidence: Record<string, unknown> = {};

  // Sent competitor_prices that give no reference (empty, none usable, none in the currency) leave the target to the next in the order.
  const noCompetitors = !target && ctx.competitor_prices != null ? competitorPricesProblem(ctx) : undefined;
  if (noCompetitors) notes.push(`competitor_prices gave no reference: ${noCompetitors}; the next target in the order is used`);
  const byCompetitors = ctx.competitor_prices != null && !noCompetitors;
  // A unit_cost with no margin or markup of the caller's would take cost-plus's default margin, which no one chose: the
  // network's reference of the product type is evidence, the default a guess (pricing-methods §1, §3), so it is the
  // target, with the cost as its floor. The evidence is asked about first: a context without it pays nothing for this.
  const costOnly = market !== undefined && !target && !byCompetitors && !given(ctx, 'target_margin') && !given(ctx, 'markup') && positiveMoney(ctx, 'unit_cost') !== undefined;

  if (target) {
    used.push('target_price');
    factors = { target_supplied: 0.4 };
  } else if (costOnly && hasNetworkReference(ctx, market)) {
    ({ target, factors, used, evidence } = towardsNetwork(ctx, market, used, notes, `: no target_margin or markup given, so the network's observations rather than a default ${percent(DEFAULT_TARGET_MARGIN)} margin on unit_cost (the floor)`));
  } else if (byCompetitors || positiveMoney(ctx, 'unit_cost')) {
    // Another method proposes the target; the anchor keeps the move small.
    const inner = byCompetitors ? competitive(ctx) : costPlus(ctx);
    target = new D(inner.price);
    used = [...used, ...inner.inputs_used];
    factors = { ...inner.confidence_factors, anchored: 1 };
    notes.push(`target ${inner.price} from ${byCompetitors ? 'competitive positioning' : 'cost-plus'}`, ...inner.notes);
  } else {
    const pacing = pacingInputs(ctx);
    if (pacing && pacing.elapsed === 0) notes.push('season_elapsed 0: the season has not begun, no sell-through signal yet');
    if (pacing && pacing.elapsed > 0) {
      const { sold, stock, elapsed } = pacing;
      used = [...used, 'units_sold', pacing.stockKey, 'season_elapsed'];
      notes.push(...pacing.notes);
      const pace = sold / stock / elapsed;
      const elasticity = num(ctx, 'elasticity');
      const byElasticity = elasticity !== undefined && elasticity !== 0 && elapsed >= 0.1 && Math.abs(pace - 1) > PACE_TOLERANCE;
      if (byElasticity) used.push('elasticity');
      const moved = (fullStep: Dec) => (byElasticity ? current.times(new D(pace).pow(1 / Math.abs(elasticity))) : fullStep);
      if (elapsed < 0.1) {
        target = current;
        notes.push('too early in the season to judge the pace: hold');
      } else if (pace < 1 - PACE_TOLERANCE) {
        target = moved(lower);
        notes.push(`selling behind plan (pace ${round3(pace)}): mark down`);
      } else if (pace > 1 + PACE_TOLERANCE) {
        target = moved(upper);
        notes.push(`selling ahead of plan (pace ${round3(pace)}): mark up`);
      } else {
        target = current;
        notes.push(`on plan (pace ${round3(pace)}): hold`);
      }
      // The evidence in a pace grows with the stock it is measured on (a sell-through of 0 of 1000 says more than 0 of 5), not with
      // the units sold: nothing sold is the strongest markdown signal there is, and would otherwise give a price at confidence 0.
      factors = { elapsed: round3(Math.min(1, elapsed / 0.25)), volume: round3(stock / (stock + 20)), method: 0.6 };
    } else if (hasNetworkReference(ctx, market)) {
      // The caller's own signals come first; the network's prices of the product type beat an echo.
      ({ target, factors, used, evidence } = towardsNetwork(ctx, market, used, notes, ''));
    } else {
      target = current;
      factors = { current_price_echoed: 0.15 };
      notes.push('current price echoed: no target_price and no sell-through signal (units_sold, units_received, season_elapsed)');
    }
  }

  let price = target;
  if (price.lt(lower)) {
    price = lower;
    notes.push(`step limited to -${percent(step)}`);
  } else if (price.gt(upper)) {
    price = upper;
    notes.push(`step limited to +${percent(step)}`);
  }
  if (price.minus(current).abs().div(current).lt(DEAD_BAND) && !price.eq(current)) {
    price = current;
    notes.push('change under 1%: held');
  }
  // The caller's own bounds are hard: they outrank the step limit and the dead band (a current price outside them moves inside at once).
  const unitCost = positiveMoney(ctx, 'unit_cost');
  const bounded = callerBounds(ctx, price, currency, notes, used, {
    // Cost is kept in rounding only by a price at or above it: one below cost stays there, as its note says.
    roundingFloors: (p) => (unitCost && p.gte(unitCost) ? [{ value: unitCost, name: 'unit_cost' }] : []),
    said: {
      raised: (min) => `min_price ${min.toFixed()} raised the price${min.gt(upper) ? `, beyond the +${percent(step)} step: the bound outranks it` : ''}`,
      lowered: (max) => `max_price ${max.toFixed()} lowered the price${max.lt(lower) ? `, beyond the -${percent(step)} step: the bound outranks it` : ''}`,
    },
  });
  price = bounded.price;
  if (bounded.factor < 1) factors = { ...factors, bounds: bounded.factor };
  if (unitCost && price.lt(unitCost)) {
    if (!used.includes('unit_cost')) used.push('unit_cost');
    notes.push(`the price is below unit_cost ${unitCost.toFixed()}: ${target.lt(unitCost) ? 'the target is under cost, as asked' : `the step limit (${percent(step)}) keeps it from reaching cost this call`}`);
  }
  // The current price as given and the step's bounds as a price could be (never 0): rounded alike, an echo of 0.005 USD read as one of 0.01.
  const details = { current_price: shownAmount(current, currency), change_pct: 0, bounds: [toQuotable(lower, currency), toQuotable(upper, currency)], ...evidence };
  const result = methodResult(price, currency, factors, used, notes, details, bounded.bounds);
  // The change answered, from the price as quoted: rounding to the currency's unit can move it (an echo of 0.005 USD is 0.01, +100%).
  details.change_pct = round3(new D(result.price).div(current).minus(1).times(100).toNumber());
  return result;
}

