import { z } from 'zod';
import { shownName, shownText } from '../../core/shown-name';
import { limitParam, cursorParam } from '../../core/pagination';
import { CURRENCY_CODE, dec } from '../../core/money';
import { PREFERENCES, policyConfigSchema, STRATEGIES } from '../../engine';
import { isReservedTag } from './services/reserved-names';

/** What is wrong with a context's current_price, in the words of its refusal (it is not a non-negative finite number). */
function currentPriceProblem(value: unknown): string {
  // A number in quotes is the commonest slip: said as such, with the value to send.
  if (typeof value === 'string') return /^\s*\d+(\.\d+)?\s*$/.test(value) ? `must be a JSON number, not a string: send ${value.trim()} without quotes` : 'must be a non-negative number, not a string';
  // JSON such as 1e400 reads as Infinity: too large, not negative.
  if (typeof value === 'number' && !Number.isFinite(value)) return 'must be a finite number; this one is too large to represent';
  return 'must be a non-negative number';
}

const isPlainObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The context keys SPEC names, checked as declared fields rather than in a refinement, so the JSON Schema made from
 * this schema (OpenAPI, MCP's inputSchema) states what is refused. Other keys pass as sent. No check here may
 * `abort`: an explicitly aborted issue stops every later `when` refinement up the body (the size, verify's alias rules).
 */
const contextKeys = {
  product_type: z.string({ error: 'product_type must be a string' }).optional(),
  current_price: z
    .number({ error: (iss) => `current_price ${currentPriceProblem(iss.input)}` })
    .min(0, 'current_price must be a non-negative number')
    .optional(),
  // Upper-cased as read (overwrite keeps the JSON Schema a string), as every method and the answer read it: "usd" and
  // "USD" are one context to the cache, to an Idempotency-Key's retry and to an external function.
  currency: z
    .string({ error: 'currency must be a code such as USD' })
    .regex(CURRENCY_CODE, 'currency must be a code such as USD')
    .overwrite((c) => c.toUpperCase())
    .optional(),
};

/**
 * The compute context: any object; the three keys SPEC names are type-checked, and its JSON is at
 * most `maxBytes` long in UTF-8 (COMPUTE_CONTEXT_MAX_BYTES): it is kept in the result cache, and
 * posted to external functions with the values it came with (the declared keys first; currency upper-cased).
 */
export function contextSchemaOf(maxBytes: number) {
  return (
    z
      .looseObject(contextKeys)
      // `when`: the size is told beside a refused key too, as every problem is reported at once.
      .superRefine(
        (ctx, issue) => {
          const bytes = Buffer.byteLength(JSON.stringify(ctx));
          if (bytes > maxBytes) issue.addIssue({ code: 'custom', path: [], message: `context must be at most ${maxBytes} bytes of JSON (COMPUTE_CONTEXT_MAX_BYTES); this one is ${bytes}` });
        },
        { when: (payload) => isPlainObject(payload.value) },
      )
      .describe(`Describes the work to price: product_type, current_price, currency, and method inputs such as unit_cost, competitor_prices, elasticity. At most ${maxBytes} bytes of JSON.`)
  );
}
export type ContextSchema = ReturnType<typeof contextSchemaOf>;

// Trimmed as a registered name is (" acme.pricer" names acme.pricer), so a reference with stray spaces finds what it names.
// The JSON Schema checks the untrimmed value: `pattern` says a blank one (trimmed to nothing) is refused.
const functionRef = z.string().trim().min(1).max(100).meta({ pattern: '\\S' });

function pinRule(b: { function_id?: string | undefined; function_name?: string | undefined; routing_preference?: string | undefined }, ctx: z.RefinementCtx): void {
  if ((b.function_id || b.function_name) && b.routing_preference && b.routing_preference !== 'explicit') {
    ctx.addIssue({ code: 'custom', path: ['routing_preference'], message: 'a pinned function (function_id or function_name) routes explicitly; leave routing_preference out or set it to "explicit"' });
  }
  if (b.function_id && b.function_name) ctx.addIssue({ code: 'custom', path: ['function_name'], message: 'send function_id or function_name, not both' });
}

/**
 * What pinRule and the engine's explicit routing refuse, said in JSON Schema for OpenAPI and MCP's inputSchema (which
 * cannot show a refinement): a pin (one of `pins`) routes explicitly, routing_preference "explicit" needs a pin, and
 * with two ways to pin, not both.
 */
function pinSchema(pins: readonly [string, ...string[]]): { allOf: Array<Record<string, unknown>> } {
  const pinned = pins.length === 1 ? { required: [...pins] } : { anyOf: pins.map((p) => ({ required: [p] })) };
  return {
    allOf: [
      { if: pinned, then: { properties: { routing_preference: { const: 'explicit' } } } },
      { if: { required: ['routing_preference'], properties: { routing_preference: { const: 'explicit' } } }, then: pinned },
      ...(pins.length > 1 ? [{ not: { required: [...pins] } }] : []),
    ],
  };
}
const byId = pinSchema(['function_id']);

/** function_name sent where only an id pins: said where it is taken, instead of a bare "unknown field". */
const nameTakenElsewhereSaying = (reason: string) => ({
  error: (iss: { code: string; keys?: string[] }) => {
    if (iss.code !== 'unrecognized_keys' || !iss.keys?.includes('function_name')) return undefined;
    // Said of function_name alone: each other unknown key gets its own issue (core/validation.ts).
    return reason;
  },
});
const nameTakenElsewhere = nameTakenElsewhereSaying('"function_name" is taken by POST /api/price-router; here pin a function by its id in function_id (GET /api/functions lists ids)');
const demoNameTakenElsewhere = nameTakenElsewhereSaying('"function_name" is taken by POST /api/price-router, with a key; the demo pins a built-in by its id in function_id (GET /api/catalog lists them)');

/**
 * The bodies that carry a compute context, for a context of at most `contextMaxBytes`
 * (COMPUTE_CONTEXT_MAX_BYTES): built once per service from its configuration.
 */
export function callSchemas(contextMaxBytes: number) {
  const context = contextSchemaOf(contextMaxBytes);
  const computeFields = {
    context,
    function_id: functionRef.optional().describe('Pins one function (explicit routing).'),
    routing_preference: z.enum(PREFERENCES).optional().describe('explicit, cheapest, fastest, round_robin or weighted; absent: the default policy decides.'),
  };
  const batchItem = z
    .strictObject(computeFields, nameTakenElsewhere)
    .superRefine(pinRule)
    .meta({ id: 'BatchItem', description: 'One item: priced as one POST /api/compute/price call with this body.', ...byId });
  return {
    context,
    computeBody: z.strictObject(computeFields, nameTakenElsewhere).superRefine(pinRule).meta(byId),
    routerBody: z
      .strictObject({ ...computeFields, function_name: functionRef.optional().describe('Resolved among built-ins, your functions and public functions.') })
      .superRefine(pinRule)
      .meta(pinSchema(['function_id', 'function_name'])),
    batchItem,
    batchBody: (maxItems: number) => batchBody(batchItem, maxItems),
    demoBody: z.strictObject({ context, function_id: functionRef.optional(), routing_preference: z.enum(PREFERENCES).optional() }, demoNameTakenElsewhere).superRefine(pinRule).meta(byId),
    testFunctionBody: z.strictObject({ context }),
  };
}
export type CallSchemas = ReturnType<typeof callSchemas>;
export type ComputeBody = z.output<CallSchemas['computeBody']>;

export const computeExample = { context: { product_type: 'coffee', currency: 'USD', current_price: 4.5, unit_cost: 1.2, target_margin: 0.65 } };
export const routerExample = { context: { product_type: 'coffee', currency: 'USD', unit_cost: 1.2 }, function_name: 'cost-plus' };

/** A batch item that failed validation: answered with its own 400 inside the batch's 200, not by failing the batch. */
export class InvalidBatchItem {
  constructor(readonly raw: unknown) {}
}

function batchBody<Item extends z.ZodType>(batchItem: Item, maxItems: number) {
  return z.strictObject({
    items: z
      .array(
        z
          .union([batchItem, z.unknown().transform((raw) => new InvalidBatchItem(raw))])
          // The document states what an item should be: the catch-all branch (any other value) only lets an
          // invalid item be answered in its place instead of failing the batch, and typed as such it would make
          // every generated item type `unknown`.
          .meta({ anyOf: [{ $ref: '#/components/schemas/BatchItem' }] }),
      )
      .min(1)
      .max(maxItems)
      .describe(`1 to ${maxItems} items, each priced as one call. An item that fails validation is answered in its place with its error (a 400 status inside the batch's 200, per item); the others are priced.`),
  });
}
export const batchExample = { items: [{ context: { product_type: 'coffee', current_price: 4.5, currency: 'USD' } }, { context: { product_type: 'tea', unit_cost: 0.8, currency: 'USD' } }] };

export const demoExample = { context: { product_type: 'coffee', currency: 'USD', current_price: 4.5 } };

export const functionsQuery = z.object({
  built_in: z.enum(['true', 'false']).optional().describe('true: built-ins only; false: workspace and marketplace functions only.'),
  limit: limitParam(50),
  cursor: cursorParam,
});

/**
 * A non-negative decimal string its numeric(precision, scale) column stores exactly: no more than
 * `scale` decimal places (PostgreSQL would round the rest away, a priced function turning free) and
 * at most `precision - scale` digits before the point (more overflow the column). Trailing zeros
 * lose nothing and are accepted.
 */
function storedDecimal(precision: number, scale: number) {
  const largest = `${'9'.repeat(precision - scale)}.${'9'.repeat(scale)}`;
  const step = `0.${'0'.repeat(scale - 1)}1`;
  // Each refusal names what is wrong with the value sent, not the pattern a decimal string follows.
  return z.string().superRefine((value, ctx) => {
    const say = (message: string) => ctx.addIssue({ code: 'custom', message });
    if (value.trim() === '') return say('must be a decimal string such as "0.002", not empty');
    if (value.startsWith('-')) return say('must not be negative');
    if (value.startsWith('+')) return say(`must be written without a sign: "${value.slice(1)}"`);
    if (/^\d*\.?\d*[eE][+-]?\d+$/.test(value) && Number.isFinite(Number(value))) return say(`must be written out, without an exponent (${JSON.stringify(value)} is "${dec(Number(value)).toFixed()}")`);
    if (!/^\d+(\.\d+)?$/.test(value)) return say('must be a decimal string of digits with an optional point, such as "0.002"');
    if (/^0\d/.test(value)) return say(`must not start with a leading zero: "${value.replace(/^0+(?=\d)/, '')}"`);
    const [whole = '', fraction = ''] = value.split('.');
    if (whole.length > precision - scale) say(`must be at most ${largest}`);
    if (fraction.replace(/0+$/, '').length > scale) say(`must have at most ${scale} decimal places (the smallest step is ${step}); more would be rounded away`);
    // Trailing zeros lose nothing, but amounts are read with at most 18 decimal places.
    else if (fraction.length > 18) say(`must have at most ${scale} decimal places; drop the trailing zeros`);
  });
}
/** pricing_functions.cost_per_unit, numeric(20, 8). */
const costPerUnit = storedDecimal(20, 8);
/** pricing_functions.cost_multiplier, numeric(12, 6). */
const costMultiplier = storedDecimal(12, 6);

/**
 * Up to 20 tags; tags that differ only in case are one (tag filters match case-insensitively), the first spelling kept.
 * built-in, builtin and official are the service's to give: a workspace function carrying one would pass for its own.
 */
const functionTags = z
  .array(
    z
      .string()
      .trim()
      .min(1)
      .max(40)
      // A tag shows in the catalogue and filters it: one that reads as nothing, or as another tag, misleads.
      .refine((t) => !/\p{C}/u.test(t), 'must not contain invisible or control characters (such as a zero-width space)')
      // The catalogue's tag filter reads a comma as between two tags: a tag holding one could never be found by it.
      .refine((t) => !t.includes(','), 'must not contain a comma: the catalogue filter (?tag=a,b) reads a comma as between two tags; send two tags')
      .refine((t) => !isReservedTag(t), { error: (iss) => `the tag ${JSON.stringify(iss.input)} is reserved: only the service's own functions are built-in or official (the catalogue labels them built-in itself)` }),
  )
  .max(20)
  .transform((tags) => tags.filter((t, i) => tags.findIndex((u) => u.toLowerCase() === t.toLowerCase()) === i));

/** A fragment is never sent in a request: an address carrying one would not reach what its owner meant. */
const endpointUrl = z
  .string()
  .url()
  .max(2000)
  .refine((u) => !u.includes('#'), 'must not carry a #fragment: it is never sent to the endpoint (put what it carries in the path or query)');

/** An endpoint's time limit: its ceiling is the operator's COMPUTE_CALL_MAX_MS, checked by the route, so the schema states it in words. */
const functionTimeoutMs = z
  .number()
  .int()
  .min(50)
  .describe('external_api: how long one call to endpoint_url may take, in ms; at least 50 and at most COMPUTE_CALL_MAX_MS (25000 by default: a priced call\'s whole time budget), refused above it. Unset: ENGINE_FUNCTION_TIMEOUT_MS.');

export const registerFunctionBody = z
  .strictObject({
    name: z
      .string()
      .trim()
      .min(3)
      .max(64)
      .regex(/^[a-z0-9][a-z0-9._-]*$/, 'lowercase letters, digits, ".", "_" and "-", starting with a letter or digit')
      // A name shaped like a function id could stand in for a built-in's id where callers name functions.
      .refine((n) => !n.startsWith('fn_'), 'must not start with "fn_", the prefix of function ids'),
    description: shownText(1000).default(''),
    tags: functionTags.default([]),
    execution_type: z.enum(['external_api', 'pipeline']),
    endpoint_url: endpointUrl.optional().describe('external_api: where the service POSTs {context, function} and expects {price, confidence, currency?}.'),
    timeout_ms: functionTimeoutMs.optional(),
    cost_per_unit: costPerUnit.describe('USDC per call, decimal string: at most 8 decimal places, at most 999999999999.99999999.'),
    cost_multiplier: costMultiplier.default('1').describe('Decimal string: at most 6 decimal places, at most 999999.999999.'),
    is_public: z.boolean().default(false).describe('List on the marketplace (reachable by every workspace once active).'),
  })
  .superRefine((b, ctx) => {
    if (b.execution_type === 'external_api' && !b.endpoint_url) ctx.addIssue({ code: 'custom', path: ['endpoint_url'], message: 'external_api functions need endpoint_url' });
  });
/** The name is a placeholder to replace: names are unique across the network, so a copy sent back as is gets a 409 offering a free variant. */
export const registerFunctionExample = {
  name: 'your-company.dynamic-pricer',
  description: 'Our pricing service',
  tags: ['retail'],
  execution_type: 'external_api',
  endpoint_url: 'https://pricing.acme.example/price',
  timeout_ms: 2000,
  cost_per_unit: '0.002',
  cost_multiplier: '1',
  is_public: false,
};

/**
 * The fields a registration cannot do without, and their placeholders for a refused one's example: anything else
 * refused (a description, tags, a time limit, the listing flag) is left out, as it has a default, rather than
 * replaced by a stock value the caller never chose (a sent-back example would register it).
 */
export const registerFunctionNeeds = {
  name: registerFunctionExample.name,
  execution_type: registerFunctionExample.execution_type,
  endpoint_url: registerFunctionExample.endpoint_url,
  cost_per_unit: registerFunctionExample.cost_per_unit,
};

/** name sent to PATCH: said that names are fixed and how to get another, instead of a bare "unknown field". */
const nameFixed = {
  error: (iss: { code: string; keys?: string[] }) => {
    if (iss.code !== 'unrecognized_keys' || !iss.keys?.includes('name')) return undefined;
    // Said of name alone: each other unknown key gets its own issue (core/validation.ts).
    return '"name" cannot be changed: names are fixed once registered; register a new function (POST /api/functions) for a new name';
  },
};

export const patchFunctionBody = z.strictObject({
  status: z.enum(['active', 'inactive']).optional(),
  description: shownText(1000).optional(),
  tags: functionTags.optional(),
  is_public: z.boolean().optional(),
  cost_per_unit: costPerUnit.optional(),
  cost_multiplier: costMultiplier.optional(),
  endpoint_url: endpointUrl.optional(),
  timeout_ms: functionTimeoutMs.nullable().optional().describe(`${functionTimeoutMs.description ?? ''} null goes back to that default.`),
}, nameFixed);
/** What a PATCH body looks like (a body that is no JSON object gets it): a change of text, never an activation or listing. */

// Any id too short or long to be one is an unknown id: the same 404 as every other (SPEC's identical body), not a 400.
export const idParams = z.object({ id: z.string().max(100) });

/** Carries every built-in's inputs, so the example of a 400 on any built-in's test run prices when sent. */
export const testFunctionExample = { context: { current_price: 10, unit_cost: 6, competitor_prices: [9.5, 10.5, 11], elasticity: 2, currency: 'USD' } };

export const createPolicyBody = z.strictObject({
  name: shownName(1, 80),
  strategy: z.enum(STRATEGIES),
  is_default: z.boolean().default(false),
  fallback_chain: z.array(functionRef).max(20).default([]),
  fallback_function: functionRef.nullable().default(null),
  config: policyConfigSchema.default({}),
});
export const createPolicyExample = {
  name: 'coffee by rules',
  strategy: 'policy',
  // Not is_default: an example sent as is must not replace the workspace's default policy.
  fallback_chain: ['anchored-adjustment'],
  fallback_function: 'cost-plus',
  config: { rules: [{ when: { product_type: 'coffee', 'customer.tier': { in: ['gold', 'platinum'] } }, use: 'charm-pricing' }], default_function: 'cost-plus', max_cost_per_unit: '0.002' },
};

export const patchPolicyBody = z.strictObject({
  name: shownName(1, 80).optional(),
  strategy: z.enum(STRATEGIES).optional(),
  is_default: z.boolean().optional(),
  fallback_chain: z.array(functionRef).max(20).optional(),
  fallback_function: functionRef.nullable().optional().describe('null clears it.'),
  config: policyConfigSchema.optional().describe('Replaces the whole config.'),
});
