import Decimal from 'decimal.js';
import type { Context, MethodResult } from './types';
import { MethodNotApplicable } from './types';

const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });
export type Dec = InstanceType<typeof D>;
export { D };

/**
 * Minor-unit digits of currencies that do not use two: ISO 4217's exponents (its list of 0, 3 and 4), and USDC's 6.
 * Any other code is priced in two.
 */
const MINOR_UNITS: Record<string, number> = {
  ...Object.fromEntries(['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF'].map((c) => [c, 0])),
  ...Object.fromEntries(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND'].map((c) => [c, 3])),
  CLF: 4,
  UYW: 4,
  USDC: 6,
};

export function minorUnits(currency: string): number {
  return MINOR_UNITS[currency.toUpperCase()] ?? 2;
}

export function currencyOf(ctx: Context): string {
  const c = ctx.currency;
  return typeof c === 'string' && /^[A-Za-z]{3,5}$/.test(c) ? c.toUpperCase() : 'USD';
}

/**
 * The largest amount a built-in reads or quotes (10^15 in any currency). Past it a number is not a
 * price but a probe, and would round-trip as a decimal string of hundreds of digits.
 */
export const MAX_AMOUNT = new D('1e15');
export const MAX_AMOUNT_NUMBER = MAX_AMOUNT.toNumber();

/** How a refused value is shown in its message: strings quoted, anything else as JSON. */
function shown(v: unknown): string {
  return typeof v === 'number' ? String(v) : (JSON.stringify(v) ?? String(v));
}

/** Whether the context gives `key` at all: null is read as absent, like a missing key. */
export function given(ctx: Context, key: string): boolean {
  return ctx[key] !== undefined && ctx[key] !== null;
}

/**
 * A money amount from the context (JSON number or decimal string); undefined when absent. A value
 * that is not an amount ("ten", "$12", true) or one beyond ±MAX_AMOUNT is refused by name rather
 * than read as absent: the caller meant something by it, and another function's price would hide
 * the mistake.
 */
export function money(ctx: Context, key: string): Dec | undefined {
  if (!given(ctx, key)) return undefined;
  const v = ctx[key];
  let m: Dec | undefined;
  if (typeof v === 'number' && Number.isFinite(v)) m = new D(v);
  else if (typeof v === 'string' && /^[-+]?\d+(\.\d+)?$/.test(v.trim())) m = new D(v.trim());
  // A JSON number beyond a double's range (1e400) arrives as ±Infinity: it was a number, too large to read.
  if (typeof v === 'number' && !Number.isFinite(v)) throw new MethodNotApplicable(`${key} must not exceed ${MAX_AMOUNT.toFixed()} in size (got a number too large to represent).`, [key], true);
  if (!m) throw new MethodNotApplicable(`${key} must be an amount: a number or a decimal string such as "12.50" (got ${shown(v)}).`, [key], true);
  if (m.abs().gt(MAX_AMOUNT)) throw new MethodNotApplicable(`${key} must not exceed ${MAX_AMOUNT.toFixed()} in size (got ${shown(v)}).`, [key], true);
  return m;
}

/**
 * An amount that must be above 0 to be used (a cost, a price, a bound). A negative one is refused by
 * name; 0 is a real value (a free product, a cost already sunk) that these methods cannot price
 * from, so it reads as not given and `lacking` says so in the method's own refusal.
 */
export function positiveMoney(ctx: Context, key: string): Dec | undefined {
  const m = money(ctx, key);
  if (m?.lt(0)) throw new MethodNotApplicable(`${key} must not be negative (got ${shown(ctx[key])}).`, [key], true);
  return m && m.gt(0) ? m : undefined;
}

/**
 * What a method's "needs …" refusal adds about values the context gave for `keys`: "" when none was
 * given, else which and why they could not be used (after positiveMoney only 0 is left for that).
 */
export function lacking(ctx: Context, ...keys: string[]): string {
  const zero = keys.filter((k) => given(ctx, k));
  if (!zero.length) return '';
  return `; got ${zero.map((k) => `${k} ${shown(ctx[k])}`).join(' and ')}, which must be above 0`;
}

/** A number from the context (JSON number or numeric string); undefined when absent, refused by name when not a number. */
export function num(ctx: Context, key: string): number | undefined {
  if (!given(ctx, key)) return undefined;
  const v = ctx[key];
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  if (typeof v === 'number') throw new MethodNotApplicable(`${key} must be a finite number (got a number too large to represent).`, [key], true);
  throw new MethodNotApplicable(`${key} must be a number (got ${shown(v)}).`, [key], true);
}

/**
 * A rate given as a fraction (0.3 = 30%): a margin, a percentage off or on, a tolerance. One of 1
 * or more (30 meant as 30%) is refused rather than guessed, as is a negative one unless allowed.
 */
export function fraction(ctx: Context, key: string, opts: { allowNegative?: boolean; maxExclusive?: number } = {}): number | undefined {
  const v = num(ctx, key);
  if (v === undefined) return undefined;
  const max = opts.maxExclusive ?? 1;
  if (v >= max || (!opts.allowNegative && v < 0)) {
    throw new MethodNotApplicable(`${key} must be a fraction ${opts.allowNegative ? '' : 'from 0 to '}below ${max} (0.3 means 30%), got ${v}.`, [key], true);
  }
  return v;
}

/** The largest markup over cost a built-in reads: 10 (1000%, eleven times the cost). */
export const MAX_MARKUP = 10;

/**
 * A markup over cost given as a fraction (0.3 = 30%, price = cost × 1.3). Unlike a rate it may be 1
 * or more (1.5 = 150%, 2.5 × cost), up to MAX_MARKUP; below 0 only when allowed (a price below
 * cost, as asked), and never down to −1 (a price of nothing).
 */
export function markupFraction(ctx: Context, key: string, opts: { allowNegative?: boolean } = {}): number | undefined {
  const v = num(ctx, key);
  if (v === undefined) return undefined;
  if (v > MAX_MARKUP || (opts.allowNegative ? v <= -1 : v < 0)) {
    throw new MethodNotApplicable(`${key} must be a markup over cost ${opts.allowNegative ? 'above -1' : 'from 0'} up to ${MAX_MARKUP} (0.3 means 30%, 1.5 means 150%), got ${v}.`, [key], true);
  }
  return v;
}

const roundToMinor = (value: Dec, digits: number): Dec => value.toDecimalPlaces(digits, Decimal.ROUND_HALF_UP);

/** Past this share of a price, rounding it to the currency's unit is a change worth saying (anchored's dead band is 1% too). */
const NOTICEABLE_SHIFT = 0.01;

/** A currency's smallest unit, made once per count of digits: quote runs on every compute. */
interface SmallestUnit {
  value: Dec;
  text: string;
  /** 50 units: only a price under it can move by NOTICEABLE_SHIFT or more when rounded (half a unit is 1% of 50). */
  coarse: Dec;
  /** The way out of a unit too coarse, while a finer currency exists. */
  finer: string;
}
const UNITS: SmallestUnit[] = [];
function smallestUnit(digits: number): SmallestUnit {
  let unit = UNITS[digits];
  if (!unit) {
    const value = new D(10).pow(-digits);
    unit = { value, text: value.toFixed(digits), coarse: value.times(50), finer: digits < 6 ? ', or use a currency with finer units (USDC has 6 decimals)' : '' };
    UNITS[digits] = unit;
  }
  return unit;
}

/** Rounds to the currency's minor units and returns the decimal string. */
export function toPrice(value: Dec, currency: string): string {
  const digits = minorUnits(currency);
  return roundToMinor(value, digits).toFixed(digits);
}

/** The currency's smallest unit as written (0.01 USD, 1 JPY), for refusals. */
export const smallestUnitText = (currency: string): string => smallestUnit(minorUnits(currency)).text;

/** A bound of a price for details, rounded as a price is but never under one unit: no answer is (one rounding to nothing is refused). */
export function toQuotable(value: Dec, currency: string): string {
  const digits = minorUnits(currency);
  const rounded = roundToMinor(value, digits);
  return (rounded.lte(0) ? smallestUnit(digits).value : rounded).toFixed(digits);
}

/** An amount the caller gave, for details: in the currency's digits, or its own when finer (0.005 USD is not shown as 0.01), at most 8. */
export function shownAmount(value: Dec, currency: string): string {
  const digits = minorUnits(currency);
  return value.decimalPlaces() > digits ? value.toDecimalPlaces(8).toFixed() : value.toFixed(digits);
}

/**
 * The caller's hard bounds on a method's price: a floor (min_price, unit_cost…) and a ceiling
 * (max_price), each with the input it came from for notes. Rounding to minor units keeps within them.
 */
export interface Bound {
  value: Dec;
  /** The bound as a note names it: `min_price`, `unit_cost with min_markup`. */
  name: string;
  /** The context keys it comes from, when not just `name`. */
  keys?: string[];
}
export interface PriceBounds {
  floor?: Bound | undefined;
  ceiling?: Bound | undefined;
}

/** The binding floor of several (the highest; the first of equals), or undefined when there is none. */
export function highestFloor(floors: readonly Bound[]): Bound | undefined {
  return floors.reduce<Bound | undefined>((a, b) => (a && a.value.gte(b.value) ? a : b), undefined);
}

/** Bounds of the caller's that contradict each other: its mistake, named, not a missing input another function could stand in for. */
export function floorAboveCeiling(floor: Bound, ceiling: Dec, currency: string): MethodNotApplicable {
  return new MethodNotApplicable(`The floor (${floor.name}: ${toPrice(floor.value, currency)}) is above max_price (${toPrice(ceiling, currency)}): no price satisfies both.`, [...(floor.keys ?? [floor.name]), 'max_price'], true);
}

/** How a method says which of the caller's bounds moved its price. */
export interface BoundNotes {
  raised: (minPrice: Dec) => string;
  lowered: (maxPrice: Dec) => string;
}

const PLAIN_BOUND_NOTES: BoundNotes = { raised: () => 'min_price raised the price', lowered: () => 'max_price lowered the price' };

/**
 * The caller's `min_price` and `max_price` applied to a method's price, said in `notes` and named in `used`: a price
 * below the floor is raised to it, one above the ceiling lowered to it (bounds factor 0.9), and a floor above the
 * ceiling is refused naming both. `roundingFloors` (a cost not to be rounded below), given the bounded price, keep it
 * at or above them in rounding while they are not above the ceiling. The bounds returned are for `methodResult`.
 */
export function callerBounds(
  ctx: Context,
  price: Dec,
  currency: string,
  notes: string[],
  used: string[],
  opts: { roundingFloors?: (bounded: Dec) => readonly Bound[]; said?: BoundNotes } = {},
): { price: Dec; factor: number; bounds: PriceBounds } {
  const minPrice = positiveMoney(ctx, 'min_price');
  const maxPrice = positiveMoney(ctx, 'max_price');
  if (minPrice && maxPrice && minPrice.gt(maxPrice)) throw floorAboveCeiling({ value: minPrice, name: 'min_price' }, maxPrice, currency);
  const said = opts.said ?? PLAIN_BOUND_NOTES;
  let bounded = price;
  let factor = 1;
  if (minPrice && bounded.lt(minPrice)) {
    bounded = minPrice;
    factor = 0.9;
    used.push('min_price');
    notes.push(said.raised(minPrice));
  } else if (maxPrice && bounded.gt(maxPrice)) {
    bounded = maxPrice;
    factor = 0.9;
    used.push('max_price');
    notes.push(said.lowered(maxPrice));
  }
  const roundingFloors = (opts.roundingFloors?.(bounded) ?? []).filter((f) => !maxPrice || f.value.lte(maxPrice));
  const floors = [...(minPrice ? [{ value: minPrice, name: 'min_price' }] : []), ...roundingFloors];
  return { price: bounded, factor, bounds: { floor: highestFloor(floors), ceiling: maxPrice ? { value: maxPrice, name: 'max_price' } : undefined } };
}

/** A bound as given, to 8 decimals at most (a cost with fixed costs spread can have forty). */
const shownBound = (b: Bound): string => b.value.toDecimalPlaces(8).toFixed();

/**
 * `rounded` kept within `bounds` in whole minor units: a floor with finer digits than the currency
 * (min_price 13.001) is met by rounding up (13.01), a ceiling by rounding down, since half-up rounding
 * of a price on the bound would cross it. A note says so; no minor-unit price between the two is refused.
 */
function keptWithin(rounded: Dec, digits: number, currency: string, bounds: PriceBounds, notes: string[] | undefined): Dec {
  const { floor, ceiling } = bounds;
  let price = rounded;
  if (floor && price.lt(floor.value)) {
    price = floor.value.toDecimalPlaces(digits, Decimal.ROUND_CEIL);
    notes?.push(`rounded up to ${price.toFixed(digits)} ${currency}, not to the nearest unit: ${floor.name} ${shownBound(floor)} is a floor`);
  }
  if (ceiling && price.gt(ceiling.value)) {
    price = ceiling.value.toDecimalPlaces(digits, Decimal.ROUND_FLOOR);
    notes?.push(`rounded down to ${price.toFixed(digits)} ${currency}, not to the nearest unit: ${ceiling.name} ${shownBound(ceiling)} is a ceiling`);
  }
  // Only a ceiling can bring it back under the floor: both inside one minor unit (13.001 to 13.009).
  if (floor && ceiling && price.lt(floor.value)) {
    throw new MethodNotApplicable(
      `No price in ${currency}'s smallest unit lies between ${floor.name} ${shownBound(floor)} and ${ceiling.name} ${shownBound(ceiling)}: widen them, or use a currency with finer units.`,
      [...(floor.keys ?? [floor.name]), ...(ceiling.keys ?? [ceiling.name])],
      true,
    );
  }
  // A ceiling under one unit: rounding down leaves 0, no price but an unusable answer counted against the method.
  if (ceiling && price.lte(0)) {
    const unit = smallestUnit(digits);
    throw new MethodNotApplicable(
      `No price in ${currency}'s smallest unit (${unit.text}) lies at or under ${ceiling.name} ${shownBound(ceiling)}: raise it to ${unit.text} or more${unit.finer}.`,
      [...(ceiling.keys ?? [ceiling.name])],
      true,
    );
  }
  return price;
}

/** Says a price rounding to the unit moved by NOTICEABLE_SHIFT or more (0.005 to 0.01 is +100%): the answer is not the price computed. */
function noteShift(value: Dec, nearest: Dec, currency: string, digits: number, notes: string[]): void {
  const shift = nearest.div(value).minus(1);
  if (shift.abs().lt(NOTICEABLE_SHIFT)) return;
  notes.push(`the price computed, ${value.toSignificantDigits(6).toString()} ${currency}, is finer than ${currency}'s smallest unit (${smallestUnit(digits).text}): rounded to ${nearest.toFixed(digits)}, ${percent(shift.abs().toNumber())} ${shift.gt(0) ? 'above' : 'below'} it`);
}

/**
 * The price a method answers: `value` rounded to the currency's minor units, refused (not
 * applicable: the inputs, not the method, are at fault) when it is not a finite number, rounds to
 * nothing or passes MAX_AMOUNT, so odd inputs never make a built-in fail and count against its
 * breaker. `inputs` are the context keys the value was computed from, named in the refusal.
 */
export function quote(value: Dec, currency: string, inputs: readonly string[] = [], bounds: PriceBounds = {}, notes?: string[]): string {
  if (!value.isFinite()) {
    // NaN compares false with everything: without this it would pass both checks below and be quoted as "NaN".
    const from = inputs.length ? ` (${inputs.join(', ')})` : '';
    throw new MethodNotApplicable(`These inputs${from} give no finite price (${value.toString()} ${currency}): check their values.`, [...inputs]);
  }
  const digits = minorUnits(currency);
  const nearest = roundToMinor(value, digits);
  const unit = smallestUnit(digits);
  // A price under half a unit is refused as such before any floor could lift it to a whole unit (0.00011 to 0.01).
  if (nearest.lte(0)) {
    throw new MethodNotApplicable(`These inputs give a price of ${value.toSignificantDigits(6).toString()} ${currency}, which rounds to nothing in ${currency}'s smallest unit (${unit.text}); price a larger quantity${unit.finer}.`, []);
  }
  const rounded = keptWithin(nearest, digits, currency, bounds, notes);
  if (rounded.gt(MAX_AMOUNT)) throw new MethodNotApplicable(`These inputs give a price of ${value.toSignificantDigits(6).toString()} ${currency}, above the largest quotable amount (${MAX_AMOUNT.toFixed()}).`, []);
  // Only under 50 units can the rounding be noticeable, so an ordinary price costs one comparison; a bound's rounding says itself.
  if (notes && value.lt(unit.coarse) && rounded.eq(nearest)) noteShift(value, nearest, currency, digits, notes);
  return rounded.toFixed(digits);
}

/**
 * A fraction as a percentage for notes, computed in decimal so no float noise shows: 0.07 → "7%"
 * (not "7.000000000000001%"), 0.0007 → "0.07%"; at most 4 decimals.
 */
export function percent(x: number): string {
  return `${new D(x).times(100).toDecimalPlaces(4).toFixed()}%`;
}

export function clamp01(x: number): number {
  return Math.max(0, Math.min(1, Number.isFinite(x) ? x : 0));
}

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** A method's confidence: the product of its factors (each in [0, 1]), clamped and rounded (docs/functions.md). */
export function confidenceOf(factors: Readonly<Record<string, number>>): number {
  return round3(clamp01(Object.values(factors).reduce((acc, f) => acc * f, 1)));
}

/**
 * A method's answer: the quoted price (refused, naming `inputsUsed`, when it is not finite), and the
 * confidence as the product of the factors it reports, each kept within [0, 1].
 */
export function methodResult(price: Dec, currency: string, factors: Record<string, number>, inputsUsed: string[], notes: string[], details: Record<string, unknown>, bounds: PriceBounds = {}): MethodResult {
  const bounded = Object.fromEntries(Object.entries(factors).map(([k, f]) => [k, clamp01(f)]));
  return { price: quote(price, currency, inputsUsed, bounds, notes), currency, confidence: confidenceOf(bounded), confidence_factors: bounded, inputs_used: inputsUsed, notes, details };
}

export interface Observation {
  price: number;
  source: string | null;
  observedAt: number | null;
}

/**
 * Whether a listed item ({price, currency?, …}) is in `currency`: an item without a currency is taken to be in the
 * context's; another currency, in any case, is not (amounts are never mixed across currencies, nor converted here).
 */
export function sameCurrency(item: Record<string, unknown>, currency: string): boolean {
  const c = item.currency;
  return c === undefined || c === null || (typeof c === 'string' && c.trim().toUpperCase() === currency);
}

/**
 * Competitor or reference prices in the context's currency: numbers, decimal strings, or {price, source?, observed_at?,
 * currency?}. `dropped` counts every item left out; `tooLarge` those of them above MAX_AMOUNT, `otherCurrency` those in
 * another currency, by currency (the rest are not positive numbers).
 */
export function observations(ctx: Context, key: string): { usable: Observation[]; dropped: number; tooLarge: number; otherCurrency: Map<string, number> } {
  const raw = ctx[key];
  const otherCurrency = new Map<string, number>();
  if (!Array.isArray(raw)) return { usable: [], dropped: 0, tooLarge: 0, otherCurrency };
  const currency = currencyOf(ctx);
  const usable: Observation[] = [];
  let dropped = 0;
  let tooLarge = 0;
  for (const item of raw) {
    let price: number | undefined;
    let source: string | null = null;
    let observedAt: number | null = null;
    if (typeof item === 'number') price = item;
    else if (typeof item === 'string' && /^\d+(\.\d+)?$/.test(item)) price = Number(item);
    else if (item && typeof item === 'object') {
      const o = item as Record<string, unknown>;
      if (!sameCurrency(o, currency)) {
        const c = currencyLabel(o.currency);
        otherCurrency.set(c, (otherCurrency.get(c) ?? 0) + 1);
        dropped++;
        continue;
      }
      price = typeof o.price === 'number' ? o.price : typeof o.price === 'string' ? Number(o.price) : undefined;
      source = typeof o.source === 'string' ? o.source : typeof o.seller === 'string' ? o.seller : null;
      observedAt = typeof o.observed_at === 'string' && !Number.isNaN(Date.parse(o.observed_at)) ? Date.parse(o.observed_at) : null;
    }
    if (price !== undefined && Number.isFinite(price) && price > 0 && price <= MAX_AMOUNT_NUMBER) usable.push({ price, source, observedAt });
    else {
      dropped++;
      if (price !== undefined && price > MAX_AMOUNT_NUMBER) tooLarge++;
    }
  }
  return { usable, dropped, tooLarge, otherCurrency };
}

/** "3 in JPY, 1 in EUR": what `observations` left out for its currency. */
/** An observation's currency as a note names it: a code in capitals, anything else said to be no code. */
export function currencyLabel(value: unknown): string {
  return typeof value === 'string' ? value.trim().toUpperCase() : `a currency that is not a code: ${(JSON.stringify(value) ?? String(value)).slice(0, 40)}`;
}

export function describeCurrencies(counts: ReadonlyMap<string, number>): string {
  return [...counts].map(([c, n]) => `${n} in ${c}`).join(', ');
}

/**
 * The median of amounts in exact decimal: the mean of the middle two of an even count is taken on
 * their decimal values (1.13 and 1.14 → 1.135, which rounds half-up to 1.14), not in binary
 * floating point (1.1349999…, which rounds to 1.13).
 */
export function exactMedian(values: number[]): Dec {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? new D(s[mid] as number) : new D(s[mid - 1] as number).plus(s[mid] as number).div(2);
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Median absolute deviation (unscaled). */
export function mad(values: number[]): number {
  const m = median(values);
  return median(values.map((v) => Math.abs(v - m)));
}
