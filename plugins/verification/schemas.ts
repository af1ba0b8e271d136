import { z } from 'zod';
import { CURRENCY_CODE, dec, NON_NEGATIVE_DECIMAL_PATTERN } from '../../core/money';
import { listQuery } from '../../core/pagination';
import type { ContextSchema } from '../pricing';

/** observed_at may lead the server clock by this much (client clock skew), never more. */
export const OBSERVED_AT_SKEW_MS = 5 * 60_000;

/** A positive decimal string: up to 18 integer and 18 fractional digits, greater than zero. */
const POSITIVE_DECIMAL = /^(0|[1-9]\d{0,17})(\.\d{1,18})?$/;
const isPositiveDecimal = (s: string): boolean => POSITIVE_DECIMAL.test(s) && /[1-9]/.test(s);
/** A JSON number whose plain decimal form is such a string (1e308 and 5e-324 are not: hundreds of digits). */
const isPositiveDecimalNumber = (n: number): boolean => Number.isFinite(n) && n > 0 && isPositiveDecimal(dec(n).toFixed());
/** A string that is no decimal at all ("abc", "2,000", " 20 ") is told so, not that it must be greater than 0. */
const DECIMAL_SHAPE = /^-?\d+(\.\d+)?$/;
const NOT_A_DECIMAL = 'must be a decimal number: digits with at most one point and digits after it, such as "12.50" (no spaces, signs, exponents or thousands separators)';
/**
 * What a refused amount is, when that is not the rule of its sign and size: a string that is no decimal, one with a
 * leading zero (refused as core/money's decimal strings and function costs refuse it, naming the plain form), or a
 * value of another JSON type than number or string. Undefined: the sign-and-size message applies.
 */
function amountReason(v: unknown, numbers: boolean): string | undefined {
  const expected = numbers ? 'a number or a decimal string, such as 12.5 or "12.50"' : 'a decimal string such as "12.50"';
  if (typeof v === 'string') {
    if (!DECIMAL_SHAPE.test(v)) return NOT_A_DECIMAL;
    if (/^0\d/.test(v) && /[1-9]/.test(v)) return `must not start with a leading zero: "${v.replace(/^0+(?=\d)/, '')}"`;
    return undefined;
  }
  if (typeof v === 'number') return numbers ? undefined : `must be ${expected}, not a number: send it in quotes`;
  const kind = v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : typeof v === 'boolean' ? `a boolean (${String(v)})` : typeof v;
  return `must be ${expected}, not ${kind}`;
}
/** A double keeps 15 significant digits exactly: a longer number may not be the one sent (core/http/json-numbers.ts). */
const EXACT_DIGITS = 15;
/**
 * The positive amount a refused value plainly means, as a decimal string, for an example made from what was sent:
 * a number in its plain decimal form (20 → "20") when it arrived exactly, a string without its surrounding spaces or
 * leading zeros ("0020.10" → "20.10"). undefined when that cannot be read: "2,000" could be two thousand or two, and
 * 0, a negative or a missing amount has no price to keep.
 */
export function amountMeant(v: unknown): string | undefined {
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v <= 0) return undefined;
    const plain = dec(v).toFixed();
    return plain.replace(/[.-]/g, '').replace(/^0+/, '').replace(/0+$/, '').length <= EXACT_DIGITS && isPositiveDecimal(plain) ? plain : undefined;
  }
  if (typeof v !== 'string') return undefined;
  const plain = v.trim().replace(/^0+(?=\d)/, '');
  return isPositiveDecimal(plain) ? plain : undefined;
}
const CONTEXT_KEY = /^[a-z][a-z0-9_]{0,39}$/;
const RESERVED_CONTEXT_KEYS = ['product_type', 'currency', 'amount', 'price', 'observed_at', 'source'];
// The C0 and C1 controls (Unicode Cc) spelled as ranges: a regexp with flags cannot be stated as an OpenAPI pattern.
// `*`, not `+`: an empty value is told only that it must not be empty (.min(1)), not also that it holds control characters.
// eslint-disable-next-line no-control-regex -- refusing control characters is the point
const NO_CONTROL_CHARS = /^[^\u0000-\u001F\u007F-\u009F]*$/;

const PRODUCT_TYPE_MAX = 100;
/** Said of an empty or blank product_type, by observations and verify alike. */
const EMPTY_PRODUCT_TYPE = 'product_type must not be empty';
const productType = z.string().trim().min(1, EMPTY_PRODUCT_TYPE).max(PRODUCT_TYPE_MAX).regex(NO_CONTROL_CHARS, 'product_type must not contain control characters');
const currency = z
  .string()
  // As a compute context's currency, so USDC can be observed as it can be priced.
  .regex(CURRENCY_CODE, 'currency must be a code of 3 to 5 letters such as USD or USDC')
  .transform((c) => c.toUpperCase());

const contextKey = z
  .string()
  .regex(CONTEXT_KEY, 'context keys are lowercase letters, digits and "_", starting with a letter (at most 40)')
  .refine((k) => !RESERVED_CONTEXT_KEYS.includes(k), { message: 'this key belongs at the top level of the observation, not in context' });

/** An ISO date-time `h` hours before `now`, to the second: the form observed_at is shown in. */
export const isoHoursAgo = (now: () => number, h: number): string => new Date(now() - h * 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * observed_at: an ISO 8601 date-time with a time zone, not in the future, and within the retention
 * (OBSERVATIONS_RETENTION_DAYS): an older one would be deleted by the next prune after being "stored". The form's
 * suggestion is a time an hour before the refusal, read when it is made: a fixed date would itself age out of the
 * retention, and a caller sending it back would be refused again.
 */
function observedAt(now: () => number, retentionDays: number) {
  return z.iso
    .datetime({ offset: true, error: () => `observed_at must be an ISO 8601 date-time with a time zone, such as ${isoHoursAgo(now, 1)}` })
    // Judged only as a date-time that passed: "2026-02-30T21:00:00Z" is refused as no date-time, and not also as too old
    // because Date.parse rolls it over to March (one issue per field).
    .refine((s) => !(Date.parse(s) > now() + OBSERVED_AT_SKEW_MS), { message: 'observed_at must not be in the future', when: (payload) => payload.issues.length === 0 })
    .refine((s) => !(Date.parse(s) < now() - retentionDays * 86_400_000), {
      message: `observed_at must be within the last ${retentionDays} days (OBSERVATIONS_RETENTION_DAYS): older observations are not kept`,
      when: (payload) => payload.issues.length === 0,
    });
}

/** `retentionDays`: OBSERVATIONS_RETENTION_DAYS (no bound when omitted). */
export function observationItem(now: () => number, retentionDays = Number.POSITIVE_INFINITY) {
  return z.strictObject({
    product_type: productType,
    currency,
    amount: z
      .string({ error: (iss) => `amount ${amountReason(iss.input, false) ?? 'must be a decimal string such as "12.50"'}` })
      .refine(isPositiveDecimal, { error: (iss) => `amount ${amountReason(iss.input, false) ?? 'must be a decimal string greater than 0, such as "12.50" (at most 18 digits before and after the point)'}` }),
    observed_at: observedAt(now, retentionDays),
    source: z.string().trim().min(1, 'source must not be empty').max(100).regex(NO_CONTROL_CHARS, 'source must not contain control characters').describe('A label for where the price was seen, such as "shelf-scan" or "competitor-site".'),
    context: z
      .record(contextKey, z.string({ message: 'context values must be strings' }).max(200, 'context values must be at most 200 characters'), {
        error: (iss) => (iss.code === 'invalid_key' ? (iss.issues?.[0]?.message ?? 'invalid context key') : undefined),
      })
      .refine((ctx) => Object.keys(ctx).length <= 20, { message: 'context may hold at most 20 keys' })
      .optional()
      .describe('Other string keys such as category or region.'),
  });
}

/** `maxPerRequest`: OBSERVATIONS_MAX_PER_REQUEST (stated as maxItems in the OpenAPI document). */
export function observationsBody(now: () => number, maxPerRequest: number, retentionDays?: number) {
  return z.strictObject({
    observations: z
      .array(observationItem(now, retentionDays))
      .min(1, 'send at least one observation')
      .max(maxPerRequest, `send at most ${maxPerRequest} observations per request (OBSERVATIONS_MAX_PER_REQUEST)`),
  });
}
export type ObservationInput = z.output<ReturnType<typeof observationItem>>;

/**
 * What an example puts where the caller gave no product type or source: text that names itself as a placeholder, so an
 * example posted as given is stored under it, never as evidence about a real product (pricing-methods §0: no number
 * is made up for a product someone prices).
 */
export const EXAMPLE_PRODUCT_TYPE = 'example-product (replace with your product type)';
export const EXAMPLE_SOURCE = 'example-source (replace with where the price was seen)';

/**
 * The stock example, for a body from which no observation can be made: one observation of a product type and source
 * that name themselves as placeholders (its amount prices nothing anyone computes or verifies). observed_at is read
 * when the example is served (a getter), an hour before `now`: a fixed date would age out of the verification window
 * and be stored yet ignored by verify.
 */
export function observationsExample(now: () => number) {
  return {
    observations: [
      {
        product_type: EXAMPLE_PRODUCT_TYPE,
        currency: 'USD',
        amount: '1.00',
        get observed_at() {
          return isoHoursAgo(now, 1);
        },
        source: EXAMPLE_SOURCE,
        context: { category: 'example-category' },
      },
    ],
  };
}

export const observationsQuery = z.object({
  ...listQuery,
  product_type: z.string().trim().min(1).max(100).optional().describe('Case-insensitive match.'),
  currency: currency.optional(),
  origin: z.enum(['contribution', 'accepted_outcome']).optional(),
});

/** A proposed price: a positive number or a positive decimal string. */
const PRICE_MESSAGE = 'must be greater than 0, with at most 18 digits before and after the point: a number or a decimal string, such as 12.5 or "12.50"';
/**
 * A JSON number past 2^53 with more than 15 significant digits may reach the service already rounded
 * (123456789012345678 arrives as …680, 999999999999999999 as 1e18), so judging it could judge another price: one
 * the 18-digit limit would allow is refused asking for a decimal string, which is kept digit for digit. Up to 15
 * significant digits (1e17, 1.25e17) a number arrives exactly; past the limit, the limit is what is said.
 */
const arrivesRounded = (n: number): boolean =>
  Math.abs(n) === 1e18 || (Math.abs(n) > Number.MAX_SAFE_INTEGER && Math.abs(n) < 1e18 && dec(n).toFixed().replace(/0+$/, '').replace(/^-/, '').length > 15);
const ROUNDED_NUMBER = `is too large to arrive exactly as a JSON number (above ${Number.MAX_SAFE_INTEGER}, digits are rounded away): send it as a decimal string, such as "123456789012345678"`;
const BOUND_MESSAGE = 'must be greater than 0, with at most 18 digits before and after the point: a number or a decimal string';

/**
 * A positive amount, a number or a decimal string, refused in the words given (led by `lead`: a context key names
 * itself). Its sign and its string's shape are checks JSON Schema states (exclusiveMinimum, pattern), so a published
 * schema refuses what they refuse; a number's digit limit and its rounding past 2^53 are refinements it cannot state.
 * Every failure, of a branch or of the union, is told by one reading of the value sent, so a value gets one reason.
 */
function positiveAmount(lead: string, message: string) {
  const said = (v: unknown): string => lead + (typeof v === 'number' && arrivesRounded(v) ? ROUNDED_NUMBER : (amountReason(v, true) ?? message));
  const error = (iss: { input?: unknown }) => said(iss.input);
  // `abort` stays inside the union: a branch's issues reach the body only when the other branch took the type, and
  // those are never aborted ones, so the body's `when` refinements still run.
  return z.union(
    [
      z
        .number()
        .positive({ error, abort: true })
        .refine((n) => isPositiveDecimalNumber(n) && !arrivesRounded(n), { error }),
      z.string().regex(POSITIVE_DECIMAL, { error, abort: true }).regex(/[1-9]/, { error }),
    ],
    { error },
  );
}
const priceValue = positiveAmount('', PRICE_MESSAGE);

/**
 * current_price beyond what the compute context checks (a non-negative number): here it must also have a plain
 * decimal form within the amount bounds (it marks circular evidence, compared as an amount). 0 is allowed, as in compute.
 */
const CURRENT_PRICE_BOUND = 'current_price must be a non-negative number with at most 18 digits before and after the point';

export const ALIAS_MISSING_MESSAGE = 'proposed_price is required: a positive number or decimal string (the alias price is accepted when proposed_price is absent)';

const isObject = (payload: { value: unknown }): boolean => typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value);

/**
 * The verify context: the compute context, with the floor and ceiling keys (and the current price, which marks
 * circular evidence) type-checked, declared as fields so the published JSON Schema states them too.
 */
function verifyContextOf(contextSchema: ContextSchema) {
  const { product_type: productType, current_price: currentPrice } = contextSchema.shape;
  // null reads as absent, as compute's methods read these keys (docs/functions.md).
  const bound = (key: string) => positiveAmount(`${key} `, BOUND_MESSAGE).nullish();
  const extended = contextSchema.safeExtend({
    // Judged against observations, stored under at most 100 characters and never empty: a longer name matches none, and
    // would be echoed and recorded whole; an empty or blank one matches none either, and would spend a call on an
    // unknown verdict. Refused by a pattern, not trimmed, so the JSON Schema states it and the name is judged as sent.
    product_type: productType
      .unwrap()
      .regex(/\S/, EMPTY_PRODUCT_TYPE)
      .max(PRODUCT_TYPE_MAX, `product_type is at most ${PRODUCT_TYPE_MAX} characters, as observations store it (a longer one matches none)`)
      .optional(),
    // The digit limit only where the sign and size checks passed, so a value gets one reason (and no `abort`: an
    // explicitly aborted issue stops every later `when` refinement up the body, such as the context's size).
    current_price: currentPrice
      .unwrap()
      .lt(1e18, CURRENT_PRICE_BOUND)
      .refine((v) => NON_NEGATIVE_DECIMAL_PATTERN.test(dec(v).toFixed()), { error: CURRENT_PRICE_BOUND, when: (p) => typeof p.value === 'number' && p.value >= 0 && p.value < 1e18 })
      .optional(),
    unit_cost: bound('unit_cost'),
    min_price: bound('min_price'),
    max_price: bound('max_price'),
  });
  // An extended schema is a new one, without the description the compute context carries.
  return contextSchema.description === undefined ? extended : extended.describe(contextSchema.description);
}

/** A price field that is sent: null reads as absent, as in a compute context (docs/functions.md). */
const isSent = (v: unknown): boolean => v !== undefined && v !== null;
/** Sent, in JSON Schema: present and not null. */
const sentSchema = (key: string) => ({ required: [key], properties: { [key]: { not: { type: 'null' } } } });

/**
 * `{context, proposed_price}`; `price` is an alias accepted only when proposed_price is absent (null reads as absent,
 * so `{"proposed_price": null, "price": 4}` is judged on 4). The alias rules run even when other fields fail, so
 * every problem is reported at once. The context is the compute context of the service's configured size (pricing's
 * callSchemas).
 */
export function verifyBodyOf(contextSchema: ContextSchema) {
  return (
    z
      .strictObject({
        context: verifyContextOf(contextSchema),
        proposed_price: priceValue.nullish().describe('The price to judge (null reads as absent).'),
        price: priceValue.nullish().describe('Alias of proposed_price, accepted only when proposed_price is absent or null.'),
      })
      .refine((b) => isSent(b.proposed_price) || isSent(b.price), { path: ['proposed_price'], message: ALIAS_MISSING_MESSAGE, when: isObject })
      .refine((b) => !(isSent(b.proposed_price) && isSent(b.price)), {
        path: ['price'],
        message: 'send proposed_price or its alias price, not both: price is accepted only when proposed_price is absent',
        when: isObject,
      })
      // What the refinements require, said in JSON Schema for OpenAPI and MCP's inputSchema (which cannot show a refinement):
      // exactly one of the two sent, as both sent match both branches.
      .meta({ oneOf: [sentSchema('proposed_price'), sentSchema('price')] })
  );
}
export type VerifyBodySchema = ReturnType<typeof verifyBodyOf>;
export type VerifyBody = z.output<VerifyBodySchema>;

export const verifyExample = { context: { product_type: 'coffee', currency: 'USD', unit_cost: 1.2 }, proposed_price: '4.50' };
