import Decimal from 'decimal.js';
import { z } from 'zod';

/**
 * Money travels as decimal strings and is computed with decimal.js; never as a float. A private
 * Decimal constructor keeps precision and rounding independent of any other user of the library.
 */
const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP, toExpNeg: -40, toExpPos: 40 });
export type Dec = InstanceType<typeof D>;

export const DECIMAL_PATTERN = /^-?(0|[1-9]\d{0,17})(\.\d{1,18})?$/;
/** A currency code as the service takes one: 3 to 5 letters (ISO 4217's USD, and tokens such as USDC), any case. */
export const CURRENCY_CODE = /^[A-Za-z]{3,5}$/;
export const NON_NEGATIVE_DECIMAL_PATTERN = /^(0|[1-9]\d{0,17})(\.\d{1,18})?$/;

/** zod schema of a money amount on the wire: a non-negative decimal string such as "12.50". */
export const moneyString = z.string().regex(NON_NEGATIVE_DECIMAL_PATTERN, 'must be a non-negative decimal string such as "12.50", with at most 18 digits before the point and 18 after');

export function isDecimalString(value: string): boolean {
  return DECIMAL_PATTERN.test(value);
}

export function dec(value: string | number | Dec): Dec {
  if (typeof value === 'string' && !DECIMAL_PATTERN.test(value)) throw new RangeError(`not a decimal string: ${value}`);
  if (typeof value === 'number' && !Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  return new D(value);
}

/** Canonical string with at most `scale` fractional digits and no trailing zeros beyond `minScale`. */
export function formatMoney(value: Dec | string, scale = 6, minScale = 2): string {
  const d = typeof value === 'string' ? dec(value) : value;
  const fixed = d.toDecimalPlaces(scale, Decimal.ROUND_HALF_UP).toFixed(scale);
  const [int = '0', frac = ''] = fixed.split('.');
  let trimmed = frac.replace(/0+$/, '');
  if (trimmed.length < minScale) trimmed = trimmed.padEnd(minScale, '0');
  const out = trimmed.length > 0 ? `${int}.${trimmed}` : int;
  return out === '-0.00' || /^-0(\.0+)?$/.test(out) ? out.slice(1) : out;
}

/** A multiplier (cost_multiplier) on the wire: shortest canonical decimal string, "1", "1.5", for built-ins and workspace functions alike. */
export function formatMultiplier(value: Dec | string): string {
  return formatMoney(value, 6, 0);
}

export const money = {
  add: (a: string, b: string, scale?: number): string => formatMoney(dec(a).plus(dec(b)), scale),
  sub: (a: string, b: string, scale?: number): string => formatMoney(dec(a).minus(dec(b)), scale),
  mul: (a: string, b: string | number, scale?: number): string => formatMoney(dec(a).times(dec(b)), scale),
  sum: (values: string[], scale?: number): string => formatMoney(values.reduce((acc, v) => acc.plus(dec(v)), dec(0)), scale),
  cmp: (a: string, b: string): number => dec(a).comparedTo(dec(b)),
  isZero: (a: string): boolean => dec(a).isZero(),
  /** Converts a decimal amount to integer atomic units (e.g. USDC has 6 decimals) as a string. */
  toAtomic: (amount: string, decimals: number): string => dec(amount).times(new D(10).pow(decimals)).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toFixed(0),
  fromAtomic: (atomic: string, decimals: number): string => formatMoney(dec(atomic).dividedBy(new D(10).pow(decimals)), decimals),
  /** Applies a percentage (e.g. 20 → +20%) and returns a decimal string. */
  addPercent: (amount: string, pct: number, scale?: number): string => formatMoney(dec(amount).times(dec(100).plus(dec(pct))).dividedBy(100), scale),
};
