import { z } from 'zod';
import { listEnvelopeSchema, nextRequestSchema, noticesField } from '../../core/http/reply-fields';
import { FAILURE_KINDS } from '../../engine';

/**
 * The 2xx bodies of the function routes (routes/functions.ts) and of GET /api/routing/health
 * (routes/operations.ts), for the OpenAPI document (docs/routing.md). The function view is also the
 * catalogue's entry (plugins/catalog), so both describe it with the one schema.
 */

const NO_DATA_NOTE = 'the string "no data" when the function was not timed in the window on this instance';
const latencyFigure = (what: string) => z.union([z.number(), z.literal('no data')]).describe(`${what} in milliseconds; ${NO_DATA_NOTE}.`);

const breakerState = z.enum(['closed', 'open', 'half_open']);

/** functionView (routes/functions.ts): what GET /api/functions, the create and PATCH answers and the catalogue show of a function. */
export const functionViewSchema = z
  .object({
    id: z.string().describe("The function's id: fn_builtin_… for built-ins, fn_… for workspace functions."),
    name: z.string().describe("Its name, unique across the network (lowercase)."),
    built_in: z.boolean().describe("Whether it is one of the service's built-in functions."),
    label: z
      .enum(['built-in', 'yours', 'marketplace'])
      .describe("built-in for the service's functions, yours for the caller's workspace's own, marketplace for another workspace's public one (every workspace function reads marketplace without a credential)."),
    status: z.enum(['draft', 'active', 'inactive']).describe('draft until its owner activates it (PATCH status active); inactive once deactivated. Built-ins are always active.'),
    execution_type: z.enum(['builtin', 'external_api', 'pipeline']).describe('How it runs: builtin (in the service), external_api (the service calls its endpoint) or pipeline (listed, never run: 501).'),
    is_public: z.boolean().describe('Whether it is listed on the marketplace (reachable by every workspace once active). Built-ins read true.'),
    description: z.string().describe('Its description, as registered (may be empty).'),
    tags: z.array(z.string()).describe('Its tags, as registered.'),
    cost_per_unit: z.string().describe('USDC per call before the multiplier, a decimal string with 2 to 8 decimals ("0.001", "1.50").'),
    cost_multiplier: z.string().describe('The multiplier, a decimal string in its shortest form ("1", "1.5").'),
    effective_cost_per_call: z.string().describe('What one call is charged: cost_per_unit x cost_multiplier, USDC, a decimal string with 2 to 8 decimals.'),
    average_latency_ms: latencyFigure('Mean latency of its answered calls in the latency window (LATENCY_WINDOW_MS), else since the instance started'),
    latency: z
      .object({
        p50_ms: latencyFigure('Median latency'),
        p95_ms: latencyFigure('95th percentile latency'),
        samples: z.number().int().nullable().describe("Calls timed in the window; null: withheld, as another workspace's function called by fewer than LEADERBOARD_MIN_DISTINCT_CONSUMERS distinct consumers in the breaker window (BREAKER_WINDOW_MS) on this instance (the leaderboard withholds its usage the same way)."),
        window_ms: z.number().int().describe('The latency window, in milliseconds (LATENCY_WINDOW_MS).'),
      })
      .describe('Latency statistics of the window, as this instance keeps them.'),
    breaker: breakerState.describe("This instance's circuit breaker state for it (an open one past its cooldown reads half_open); GET /api/functions/{id} and GET /api/routing/health give its counts."),
    endpoint_url: z.string().optional().describe("Only on the caller's own external_api functions: the address the service POSTs {context, function} to."),
    timeout_ms: z.number().int().nullable().optional().describe('Only with endpoint_url: its call time limit in milliseconds; null for the service default (ENGINE_FUNCTION_TIMEOUT_MS).'),
    commission_pct: z
      .string()
      .nullable()
      .optional()
      .describe("Only on the caller's own workspace functions: the marketplace commission its listing keeps for good, in percent (\"30\"); null while never listed."),
  })
  .meta({ id: 'PricingFunction', description: 'A pricing function as a caller who can reach it sees it.' });

const pipelineWarnings = z
  .array(z.string())
  .optional()
  .describe('Pipeline functions only: pipeline execution is not available (a compute, test run or policy naming it answers 501 or skips it).');

export const functionsListResponse = listEnvelopeSchema(functionViewSchema, 'The functions the caller can reach (built-ins, its own in any status, active public ones; a sandbox: built-ins only), built-ins first, then by name.').extend({
  notices: noticesField,
});

/** CircuitBreakers.view (engine/stats/function-breakers.ts): one function's breaker as this instance keeps it. */
const breakerView = {
  function_id: z.string().describe("The function's id."),
  state: breakerState.describe('closed: calls go through; open: calls are skipped until retry_at; half_open: one trial call is let through.'),
  calls: z.number().int().nullable().describe("Calls recorded in the breaker window (BREAKER_WINDOW_MS); while open or half-open, the window it opened on and what came after. This and the three counts after it are null: withheld, as another workspace's function called by fewer than LEADERBOARD_MIN_DISTINCT_CONSUMERS distinct consumers in the breaker window (BREAKER_WINDOW_MS) on this instance (the leaderboard withholds its usage the same way)."),
  failures: z.number().int().nullable().describe('Of those, the failed ones (null: withheld, as calls).'),
  callers: z.number().int().nullable().describe('Distinct workspaces whose calls those are (1 for a breaker of your workspace\'s own calls; null: withheld, as calls).'),
  failing_callers: z.number().int().nullable().describe('Of those, the workspaces whose own calls failed at least BREAKER_FAILURE_RATIO of the time (null: withheld, as calls).'),
  opened_at: z.string().nullable().describe('While open or half-open: when it opened (ISO 8601); null while closed.'),
  retry_at: z.string().nullable().describe('While open or half-open: when its cooldown (BREAKER_COOLDOWN_MS) ends and one trial call is let through (ISO 8601); null while closed.'),
  applies_to: z
    .enum(['everyone', 'this_workspace'])
    .describe(
      "everyone: the function's breaker, over every workspace's calls (it opens only once BREAKER_MIN_FAILING_CALLERS workspaces' calls fail). this_workspace: your workspace's own breaker for the function, open or half-open on your calls' failures alone while the function's is closed; other workspaces' calls still reach it.",
    ),
};

export const breakerViewSchema = z.object(breakerView).meta({ id: 'CircuitBreaker', description: "A function's circuit breaker, as the instance that answers keeps it." });

const keptPerInstance = {
  instance: z.string().describe('The id of the instance that answered (inst_…): breakers and latency are kept per instance.'),
  kept_per: z.literal('instance').describe('Always instance: another instance may read differently.'),
};

export const functionReadResponse = z.object({
  function: functionViewSchema,
  breaker: z
    .object({
      ...breakerView,
      ...keptPerInstance,
      recent_failures: z
        .array(z.object({ at: z.string().describe('When (ISO 8601).'), reason: z.string().describe("Why, in the owner's words (the endpoint's address included).") }))
        .optional()
        .describe("Only for the function's owner: its last failures on this instance (at most 5, newest first), whoever made the call; a refused context is not a failure."),
    })
    .describe("The function's circuit breaker on the instance that answered."),
});

/** An external function's signing secret, shown to its owner (services/request-signing.ts). */
const signingFields = {
  signing_secret: z
    .string()
    .optional()
    .describe("An external_api function's signing secret (pcs_fsig_…): every request to its endpoint carries X-Pricing-Timestamp and X-Pricing-Signature made with it. Shown to its owner here (and on a rotation); keep it with the endpoint. A replay of the registration under its Idempotency-Key shows it only while it has not been rotated."),
  signing: z
    .object({
      timestamp_header: z.string().describe('The header carrying the Unix time of the request, in seconds.'),
      signature_header: z.string().describe('The header carrying the signature.'),
      signature: z.string().describe('How the signature is made.'),
      verify: z.string().describe('How the endpoint checks it.'),
      rotate: z.string().describe('How to get a new secret.'),
    })
    .optional()
    .describe('How requests are signed with signing_secret (with it, external_api functions only).'),
};

export const functionCreateResponse = z.object({
  function: functionViewSchema,
  ...signingFields,
  warnings: pipelineWarnings,
  next: z
    .array(
      nextRequestSchema('activate', 'PATCH', 'Its path, /api/functions/{id}.', { body: z.object({ status: z.literal('active') }).describe('Its body.') }),
    )
    .optional()
    .describe('While the function is a draft (also on a replay under the same Idempotency-Key): the request that activates it.'),
});

export const functionUpdateResponse = z.object({ function: functionViewSchema, warnings: pipelineWarnings });

/** A method's answer (engine/builtins/types.ts MethodResult), as a test run shows it whole. */
const methodResult = z
  .object({
    price: z.string().describe('The price, a decimal string rounded to the currency\'s minor units.'),
    currency: z.string().describe('Its currency (the context\'s, else USD).'),
    confidence: z.number().describe('How much the function trusts the price, 0 to 1.'),
    confidence_factors: z.record(z.string(), z.number()).describe('The factors, each 0 to 1, the confidence is made of (an external function: reported_by_function).'),
    inputs_used: z.array(z.string()).describe('The context keys and evidence the function read (empty for an external function).'),
    notes: z.array(z.string()).describe('How the price was reached, in words.'),
    details: z.record(z.string(), z.unknown()).optional().describe("The function's own figures, which vary by function; absent when an external function sent none."),
  })
  .describe('Only when ok: the price and how it was reached.');

export const functionTestResponse = z.object({
  function: z
    .object({ id: z.string().describe("The function's id."), name: z.string().describe('Its name.'), status: z.enum(['draft', 'active', 'inactive']).describe('Its status (a draft of your own can be tested).') })
    .describe('The function run.'),
  ok: z.boolean().describe('Whether it priced the context.'),
  result: methodResult.optional(),
  error: z.string().optional().describe("Only when not ok: why it could not price (another workspace's function's failure never names its address)."),
  failure: z.enum(FAILURE_KINDS).optional().describe("Only when it failed (not when it could not price the context as given): why, for machines, as a compute attempt's failure says it."),
  retry_after: z.number().int().optional().describe('Only when its endpoint failed asking to be called again later: its Retry-After, in seconds (at most 300), as a compute attempt carries it.'),
  missing: z.array(z.string()).optional().describe('Only when it could not price for want of inputs: the context keys it needs.'),
  refused: z.array(z.string()).optional().describe('Only when the context gave a value it refuses to read (a rate of 30 meant as 30 %), or one an external endpoint would not price (it answered in another currency): the keys refused.'),
  example: z
    .object({ context: z.record(z.string(), z.unknown()).describe('A context the built-in prices; open-ended, as a context is.') })
    .optional()
    .describe('Only when a built-in could not price: a body it prices, to send as is.'),
  ms: z.number().describe('How long the run took, in milliseconds.'),
  test_runs: z
    .object({
      test_runs_per_day: z.number().int().describe('Test runs of functions this workspace does not own allowed per UTC day (FUNCTION_TEST_RUNS_PER_DAY).'),
      remaining: z.number().int().describe('How many are left today after this one.'),
      resets_at: z.string().describe('When the count starts again (ISO 8601, the next 00:00 UTC).'),
    })
    .optional()
    .describe("Only on a run of a built-in or another workspace's function: the day's allowance of such runs. Runs of your own functions are not counted."),
});

export const routingHealthResponse = listEnvelopeSchema(
  z.object({
    function: z.object({ id: z.string().describe("The function's id."), name: z.string().describe('Its name.') }).describe('The function.'),
    breaker: breakerViewSchema,
    latency: z
      .object({
        samples: z.number().int().nullable().describe("Calls timed in the window; null: withheld, as another workspace's function called by fewer than LEADERBOARD_MIN_DISTINCT_CONSUMERS distinct consumers in the breaker window (BREAKER_WINDOW_MS) on this instance (the leaderboard withholds its usage the same way)."),
        p50_ms: latencyFigure('Median latency'),
        p95_ms: latencyFigure('95th percentile latency'),
        ewma_ms: latencyFigure('Exponentially weighted mean latency (recent calls weigh most)'),
        window_ms: z.number().int().describe('The latency window, in milliseconds (LATENCY_WINDOW_MS).'),
        cold: z.boolean().describe('Fewer samples than LATENCY_COLD_BELOW: the fastest strategy explores it first.'),
      })
      .describe('Its latency statistics on this instance.'),
  }),
  'Every function the caller can reach, with its breaker and latency on the instance that answered; one page holds them all.',
).extend(keptPerInstance);

/** POST /api/functions/{id}/signing-secret. */
export const signingRotationResponse = z.object({
  function: functionViewSchema,
  signing_secret: z.string().describe('The new signing secret (pcs_fsig_…): requests are signed with it from now on, and the previous one ends.'),
  signing: signingFields.signing.unwrap(),
});
