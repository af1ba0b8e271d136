import { z } from 'zod';
import { FAILURE_KINDS } from '../../engine';
import { errorBodySchema } from '../../core/errors';
import { noticesField, requestIdField } from '../../core/http/reply-fields';
import { receiptSchema, remainingSchema } from '../usage';

/**
 * The 200 bodies of the priced routes (services/compute.ts, routes/compute.ts), for the OpenAPI
 * document (docs/routing.md, "Compute response"). A test parses real answers with them, the top
 * level strictly, so a field cannot be added without its schema.
 */

const chosenFunction = z.object({ id: z.string().describe('The function\'s id (fn_…).'), name: z.string().describe('The function\'s name.') });

const charged = z
  .object({
    amount: z.string().describe('What this call cost, a decimal string (0.00 on the demo; 0 on a replay).'),
    currency: z.literal('USDC').describe('The currency the service charges in.'),
    paid_via: z.string().nullable().describe('How it was paid when not billed to the workspace (a day pass, x402…); null when billed, or nothing was charged.'),
    billable: z.boolean().describe('Whether the call is billed to the workspace.'),
  })
  .describe('What the call was charged.');

const attempt = z
  .looseObject({
    function: z.string().describe('The function tried (its name).'),
    id: z.string().nullable().describe('Its id; null for a reference out of your reach (skipped, "out of reach").'),
    role: z.enum(['chosen', 'alternate', 'fallback_chain', 'fallback_function']).describe('Why it was tried.'),
    outcome: z.enum(['ok', 'failed', 'skipped', 'not_applicable', 'pool_busy']).describe('How the try ended.'),
    error: z.string().optional().describe('Why it did not answer.'),
    failure: z
      .enum(FAILURE_KINDS)
      .optional()
      .describe(
        'On a failed attempt, why, for machines: timeout, threw (a built-in raised an error), crashed (its worker died), unusable_result (no usable price or confidence), http_status, redirect, not_json, too_large, connection (reset, refused, DNS, TLS), address_refused (the outbound guard will not call its address).',
      ),
    retryable: z.literal(false).optional().describe('Present on a failure no retry can change (an address the service will not call).'),
    retry_after: z.number().int().optional().describe('Present on a failure whose endpoint asked to be called again later (its Retry-After, in seconds, at most 300).'),
    cut_by_budget: z.literal(true).optional().describe("Present on a timeout the call's time budget (COMPUTE_CALL_MAX_MS) imposed before the function's own: not counted against the function."),
    cached: z.literal(true).optional().describe('Present when its answer came from the result cache (the function did not run).'),
    ms: z.number().describe('Its time in milliseconds.'),
  })
  .meta({ id: 'FunctionAttempt', description: 'One function tried, in order.' });

const trace = z
  .object({
    stages: z
      .array(z.looseObject({ stage: z.string().describe('authenticate_and_validate, idempotency_wait (with an Idempotency-Key: waiting for a call with the same key in flight), idempotent_replay, admission, market_evidence, route, resolve, cache, execute, fallback, charge or record_usage.'), ms: z.number().describe('Its time in milliseconds.') }))
      .describe('What the call went through, in order, each with its own fields (see docs/routing.md, "Compute response").'),
    chosen_function: chosenFunction.describe('The function that answered.'),
    fallback_used: z.boolean().describe('Whether a fallback answered instead of the function first chosen.'),
    cache: z.enum(['hit', 'miss', 'disabled', 'not_consulted']).describe('Whether the answer came from the cache; not_consulted on an idempotent replay.'),
    charged,
    attempts: z.array(attempt).describe('Every function tried, in order (one whose answer came from the result cache with cached: true); empty on a replay (nothing ran).'),
    overhead_ms: z.number().describe('The service\'s own time: total_ms minus the time functions ran.'),
    total_ms: z.number().describe('The call\'s time in the service, from arrival (a batch item: from its own start).'),
  })
  .meta({ id: 'PriceTrace', description: 'How the answer was reached.' });

const savings = z
  .object({
    amount: z.string().describe('The cost saved, a decimal string.'),
    currency: z.literal('USDC').describe('The currency of amount.'),
    compared_with: z.object({ function: z.string().describe('The most expensive eligible function that could have priced the context.'), cost_per_unit: z.string().describe('Its cost per call.') }),
    chosen_cost_per_unit: z.string().describe('The cost per call of the function that answered.'),
  })
  .describe('Only when the router chose among several eligible functions that could have priced the context (not pinned, not a fallback, not cached, not a replay, not the demo).');

const nextAction = z
  .object({
    action: z.string().describe('What the request does, e.g. report_outcome, verify_price, price_cheapest.'),
    method: z.string().describe('Its HTTP method.'),
    path: z.string().describe('Its path.'),
    reason: z.string().describe('Why it is offered.'),
    example: z.unknown().describe('An example body for it.'),
  })
  .meta({ id: 'NextAction', description: 'A request this credential may make next.' });

/** What every priced call answers, whatever the route (compute, router, batch item, demo). */
/** Only on a retry with an Idempotency-Key already answered (priced calls and verifications): the first call's answer. */
export const idempotentReplayField = z
  .object({
    first_request_id: z.string().describe('The request id of the call this answer repeats.'),
    recorded_at: z.string().describe('When that call was recorded (ISO 8601).'),
  })
  .optional()
  .describe('Only on a retry with an Idempotency-Key already answered: the first call\'s answer, charged and recorded once.');

const pricedFields = {
  price: z.string().describe('The price, a decimal string.'),
  currency: z.string().describe('The price\'s currency (the context\'s, else USD).'),
  confidence: z.number().describe('How much the function trusts the price, 0 to 1.'),
  function: z
    .object({
      id: z.string().describe('The function\'s id.'),
      name: z.string().describe('The function\'s name.'),
      built_in: z.boolean().describe('Whether it is one of the service\'s built-in functions.'),
      execution_type: z.string().describe('How it runs: builtin (in the service) or external_api (its owner\'s endpoint); a pipeline function never answers.'),
    })
    .describe('The function that answered.'),
  strategy: z.string().describe('How the function was chosen (explicit, cheapest, fastest, round_robin, weighted, default…).'),
  method: z
    .looseObject({
      confidence_factors: z.record(z.string(), z.unknown()).describe('What the confidence rests on, by factor.'),
      inputs_used: z.array(z.string()).describe('The context keys and evidence the function read (network_observations when it used the network\'s).'),
      notes: z.array(z.string()).describe('How the price was reached, in words.'),
      details: z.record(z.string(), z.unknown()).optional().describe('The function\'s own figures; they vary by function.'),
    })
    .describe('How the function reached the price.'),
  trace,
  savings: savings.optional(),
  next_actions: z.array(nextAction).describe('At most NEXT_ACTIONS_MAX (3) requests this credential may make next.'),
  receipt: receiptSchema,
  remaining: remainingSchema.optional(),
  idempotent_replay: idempotentReplayField,
};

/** A priced call's answer (POST /api/compute/price, POST /api/price-router). */
export const priceResponse = z.object({ ...pricedFields, notices: noticesField, request_id: requestIdField }).meta({ id: 'PriceResult', description: 'A priced call: the price, who answered and how, the trace, what is left, and the usage record.' });

/** A batch item's result: a priced call's answer without the request id (the batch's is at the top). */
const batchItemResult = z.object(pricedFields).meta({ id: 'BatchItemResult', description: 'The item\'s answer (priced items, status 200, only), as a single priced call\'s without request_id.' });

/** An item's error is not an HTTP body: the common shape without request_id (the batch's is at the top). */
const batchItemError = errorBodySchema
  .omit({ request_id: true })
  .describe('Failed items only: the common error shape without request_id (a validation error names the item: items[2].context…).');

export const batchResponse = z
  .object({
    object: z.literal('batch').describe('Always batch.'),
    items: z
      .array(
        z.object({
          index: z.number().describe('The item\'s position in the request, from 0.'),
          status: z.number().describe('The item\'s own status: 200 priced, else its error\'s.'),
          // No describe() here: it would make an unnamed copy, and the document would lose the BatchItemResult component.
          result: batchItemResult.optional(),
          error: batchItemError.optional(),
        }),
      )
      .describe('One per item, in the request\'s order.'),
    summary: z
      .object({
        total: z.number().describe('Items in the batch.'),
        succeeded: z.number().describe('Items priced (status 200).'),
        failed: z.number().describe('Items that answered an error.'),
        replayed: z.number().describe('Items answered from an earlier run of the batch under the same Idempotency-Key.'),
      })
      .describe('Counts of the items.'),
    notices: noticesField,
    request_id: requestIdField,
  })
  .describe('Every item priced as one call; an item that failed answers its own error inside the 200.');

/** The demo's hourly budget per caller address (services/demo-budget.ts). */
export const demoBudgetSchema = z
  .object({
    limit_per_hour: z.number().describe('Demo calls allowed per caller address and UTC clock hour.'),
    remaining: z.number().describe('Calls left this hour.'),
    resets_at: z.string().describe('When the whole budget is back (ISO 8601, the next hour).'),
  })
  .meta({ id: 'DemoBudget', description: 'The keyless demo\'s hourly budget for this caller address, as the X-Demo-Budget-* headers report.' });

export const demoFields = {
  demo: z.literal(true).describe('Always true: the call ran as the keyless demo tenant.'),
  budget: demoBudgetSchema,
  credential_ignored: z.string().optional().describe('Only when a credential came along: it was neither checked nor used, and where to send it instead.'),
};

export const demoPriceResponse = z.object({ ...pricedFields, ...demoFields, request_id: requestIdField }).describe('A keyless demo priced call: as a priced call, built-ins only, charging nothing, with the demo budget.');

/** The Idempotency-Key request header of the priced routes that keep keys (docs/routing.md). */
export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .optional()
    .describe('1 to 255 printable ASCII characters without spaces (a UUID): a retry with the same key and body answers the first call\'s result (Idempotent-Replayed: true), neither charged nor recorded again; another body or route under it: 422 idempotency_key_reused; another shape: 400.'),
});
