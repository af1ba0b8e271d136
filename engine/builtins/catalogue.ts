import { anchored } from './anchored';
import { charm } from './charm';
import { competitive, hasNetworkReference } from './competitive';
import { costPlus } from './cost-plus';
import { elasticityOptimum } from './elasticity';
import { MAX_AMOUNT_NUMBER, given as has, positiveMoney } from './inputs';
import type { Context, MarketEvidence, PricingMethod } from './types';

/**
 * An amount the method can price from: a number or numeric string above 0. The methods read 0 as
 * not given (positiveMoney) and refuse what is not an amount, so neither could have priced the call.
 */
const amount = (ctx: Context, key: string): boolean => {
  const v = ctx[key];
  // The common case without a Decimal (this runs for every built-in on every routed call): positiveMoney's answer for a number.
  if (typeof v === 'number') return Number.isFinite(v) && v > 0 && v <= MAX_AMOUNT_NUMBER;
  if (v === undefined || v === null) return false;
  try {
    return positiveMoney(ctx, key) !== undefined;
  } catch {
    // Refused by name (not an amount, negative, over the bound): the method could not have priced from it.
    return false;
  }
};

/**
 * An elasticity the optimum exists for (|ε| > 1): inelastic demand is refused, so such a context is no saving to compare
 * with. Anything but a number is left to the method to refuse by name.
 */
const elastic = (ctx: Context): boolean => {
  const v = ctx.elasticity;
  if (v === undefined || v === null) return false;
  const e = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN;
  return !Number.isFinite(e) || Math.abs(e) > 1;
};

/** A list input (competitor prices, price history) the method can read: an array with something in it. */
const listed = (ctx: Context, key: string): boolean => Array.isArray(ctx[key]) && (ctx[key] as unknown[]).length > 0;

export interface BuiltinSpec {
  id: string;
  name: string;
  description: string;
  tags: string[];
  /** USDC per call, decimal string. */
  costPerUnit: string;
  costMultiplier: string;
  /** Context keys the method reads (documented in docs/functions.md). */
  inputs: string[];
  /**
   * Whether the context carries what the method cannot price without: a necessary condition read
   * without running it (the method may still refuse the values). Savings compare only against
   * functions that could have priced the call.
   */
  mayPrice: (ctx: Context, market?: MarketEvidence) => boolean;
  /** A context the method prices, offered where a caller's did not do (a test run that could not price). */
  example: Context;
  method: PricingMethod;
}

/** The built-in pricing methods. Their names are reserved across the network. */
export const BUILTINS: readonly BuiltinSpec[] = [
  {
    id: 'fn_builtin_cost_plus',
    name: 'cost-plus',
    description: 'Cost-plus pricing with a target margin or markup; spreads fixed costs over expected volume.',
    tags: ['cost', 'margin', 'cold-start'],
    costPerUnit: '0.001',
    costMultiplier: '1',
    inputs: ['unit_cost', 'target_margin', 'markup', 'fixed_costs', 'expected_volume', 'min_price', 'max_price', 'product_type', 'currency'],
    mayPrice: (ctx) => amount(ctx, 'unit_cost'),
    example: { unit_cost: 4.2, target_margin: 0.3, currency: 'USD' },
    method: costPlus,
  },
  {
    id: 'fn_builtin_competitive',
    name: 'competitive-position',
    description: 'Positions the price against observed competitor prices (the caller\'s, else the network\'s observations of the product type): match, undercut, premium or lowest, within floors and ceilings.',
    tags: ['market', 'competitors'],
    costPerUnit: '0.0015',
    costMultiplier: '1',
    inputs: ['competitor_prices', 'product_type', 'position', 'undercut_pct', 'premium_pct', 'min_price', 'max_price', 'unit_cost', 'min_markup', 'currency'],
    mayPrice: (ctx, market) => listed(ctx, 'competitor_prices') || hasNetworkReference(ctx, market),
    example: { competitor_prices: [9.99, 10.49, 10.25], position: 'undercut', undercut_pct: 0.02, currency: 'USD' },
    method: competitive,
  },
  {
    id: 'fn_builtin_elasticity',
    name: 'elasticity-optimum',
    description: 'Profit-maximising price from demand elasticity (given or estimated from price history) or a linear demand curve.',
    tags: ['demand', 'elasticity', 'optimisation'],
    costPerUnit: '0.002',
    costMultiplier: '1',
    inputs: ['unit_cost', 'elasticity', 'price_history', 'demand_intercept', 'demand_slope', 'max_markup_multiple', 'min_price', 'max_price', 'currency'],
    mayPrice: (ctx) => amount(ctx, 'unit_cost') && (elastic(ctx) || listed(ctx, 'price_history') || (has(ctx, 'demand_intercept') && has(ctx, 'demand_slope'))),
    example: { unit_cost: 4.2, elasticity: -2.5, currency: 'USD' },
    method: elasticityOptimum,
  },
  {
    id: 'fn_builtin_charm',
    name: 'charm-pricing',
    description: 'Psychological (charm) rounding of a target, current or cost-plus price, within a tolerance and the bounds.',
    tags: ['presentation', 'rounding'],
    costPerUnit: '0.0008',
    costMultiplier: '1',
    inputs: ['target_price', 'current_price', 'unit_cost', 'charm_tolerance', 'min_price', 'max_price', 'currency'],
    mayPrice: (ctx) => amount(ctx, 'target_price') || amount(ctx, 'current_price') || amount(ctx, 'unit_cost'),
    example: { target_price: 20.2, currency: 'USD' },
    method: charm,
  },
  {
    id: 'fn_builtin_anchored',
    name: 'anchored-adjustment',
    description: 'Moves current_price towards a target or by sell-through pace, in bounded steps; echoes it when nothing else is known.',
    tags: ['current-price', 'inventory', 'cold-start'],
    costPerUnit: '0.001',
    costMultiplier: '1',
    inputs: ['current_price', 'target_price', 'competitor_prices', 'unit_cost', 'target_margin', 'markup', 'min_price', 'max_price', 'max_step_pct', 'units_sold', 'units_received', 'inventory_start', 'season_elapsed', 'elasticity', 'product_type', 'currency'],
    mayPrice: (ctx) => amount(ctx, 'current_price'),
    example: { current_price: 10, target_price: 11, currency: 'USD' },
    method: anchored,
  },
];

export const BUILTIN_METHODS: Readonly<Record<string, PricingMethod>> = Object.fromEntries(BUILTINS.map((b) => [b.name, b.method]));

const BUILTIN_BY_NAME: ReadonlyMap<string, BuiltinSpec> = new Map(BUILTINS.map((b) => [b.name, b]));

/** The catalogue entry of a built-in function; undefined for any other. */
export function builtinOf(fn: { builtIn: boolean; name: string }): BuiltinSpec | undefined {
  return fn.builtIn ? BUILTIN_BY_NAME.get(fn.name) : undefined;
}

/** Whether a function could price the context, as far as is known without running it: a built-in by its inputs, any other function always. */
export function mayPrice(fn: { builtIn: boolean; name: string }, ctx: Context, market?: MarketEvidence): boolean {
  return builtinOf(fn)?.mayPrice(ctx, market) ?? true;
}
