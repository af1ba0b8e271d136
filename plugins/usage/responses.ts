import { z } from 'zod';
import { listEnvelopeSchema } from '../../core/http/reply-fields';
import { AI_FEATURES, CHANNELS, CLASSIFICATIONS, KEY_SOURCES, OPERATIONS, OUTCOMES, PAID_VIA } from './schemas';

/**
 * One usage event as a viewing workspace sees it (services/event-view.ts `eventView`): the same in
 * the list, GET /api/usage/events/{id}, the outcome PATCH and a priced call's receipt. Named, so the
 * document holds it once.
 */
export const usageEventSchema = z
  .object({
    object: z.literal('usage_event').describe('The kind of object.'),
    id: z.string().describe('The event\'s id (use_…); it opens at GET /api/usage/events/{id}.'),
    created_at: z.string().describe('When the call was recorded (ISO 8601, UTC).'),
    classification: z.enum(CLASSIFICATIONS).describe('Relative to the viewing workspace, at read time: mine (its own call), testers (a keyless call one of its tester tags matches) or others (anyone else\'s call to one of its functions).'),
    tester_tag: z.string().optional().describe('Testers only: the label of the first tester tag the call matches.'),
    channel: z.enum(CHANNELS).describe('How the call came: api, mcp, or demo (a keyless public demo).'),
    operation: z.enum(OPERATIONS).describe('The kind of call: compute, batch_item, router, demo (the keyless compute demo) or verify.'),
    status: z.enum(['ok', 'error']).describe('Whether the call answered a price (ok) or failed (error).'),
    error_code: z.string().nullable().describe('A failed call\'s error code (as its answer\'s `code`); null when it succeeded.'),
    caller: z
      .object({
        type: z.enum(['agent', 'api_key', 'person', 'anonymous']).describe('agent when the key or token is bound to an agent, else api_key or person; anonymous for a keyless call.'),
        agent_id: z.string().nullable().describe('Mine only: the agent the credential is bound to; null otherwise, and always for testers and others.'),
        key_id: z.string().nullable().describe('Mine only: the API key the call was made with (an access token names its key); null otherwise.'),
        person_id: z.string().nullable().describe('Mine only: the person who made the call; null otherwise.'),
        user_agent: z.string().nullable().describe('The User-Agent the caller sent (at most 300 characters), as sent; null when none was.'),
        verified: z.boolean().describe('Whether the caller was authenticated: true only for mine; testers and others are what they sent, unverified.'),
      })
      .describe('Who made the call, as far as the viewing workspace may know.'),
    function: z
      .object({ id: z.string().nullable().describe('The function\'s id (fn_…).'), name: z.string().nullable().describe('Its name.') })
      .nullable()
      .describe('The function that answered; for a call where every function failed, the chosen one; null for a call that reached none (a refused or verify call).'),
    strategy: z.string().nullable().describe('How the function was chosen (explicit, cheapest, default…); null when none was.'),
    price: z.string().nullable().describe('The price answered (or, for a verification, the price proposed), a decimal string with its currency\'s minor units (JPY "1500", KWD "1.500"), as the compute response wrote it; null when the call failed.'),
    currency: z.string().nullable().describe('The currency of price; null when there is no price.'),
    confidence: z.number().nullable().describe('The confidence of the answer, 0 to 1; null when none was given.'),
    cost: z.string().describe('What the call cost, a decimal string of USDC (up to 8 decimals, at least 2).'),
    cost_currency: z.literal('USDC').describe('The currency of cost.'),
    billable: z.boolean().describe('Whether the cost is billed to the workspace: false when paid at call time, for a keyless demo call, and for a failed call.'),
    paid_via: z.enum(PAID_VIA).nullable().describe('How the call was paid at call time (x402, day_pass, balance); null when it was not.'),
    outcome: z.enum(OUTCOMES).nullable().describe('What became of the price, as last reported by PATCH …/outcome; null until reported.'),
    quality_score: z.number().nullable().describe('The quality score of the last report, 0 to 1; null when it gave none or there is none.'),
    outcome_at: z.string().nullable().describe('When the last outcome was reported (ISO 8601); null until then.'),
    cached: z.boolean().describe('Whether the answer came from the cache.'),
    fallback_used: z.boolean().describe('Whether a fallback answered instead of the function first chosen.'),
    network_evidence: z.boolean().describe('Whether the price was positioned on the network\'s price observations (docs/functions.md).'),
    latency_ms: z.number().nullable().describe('The call\'s time in the service, in milliseconds; null when not measured.'),
    request_id: z.string().nullable().optional().describe('Mine only: the request id of the call\'s answer (its X-Request-Id); null when none was recorded.'),
    context: z
      .object({
        product_type: z.string().optional().describe('The context\'s product_type.'),
        currency: z.string().optional().describe('Its currency (for a verification, the one it was judged in: USD when none was sent).'),
        category: z.string().optional().describe('Its category.'),
        product_id: z.string().optional().describe('Its product_id.'),
      })
      .optional()
      .describe('Mine only: the identifying strings of the call\'s context that were recorded (product_type, currency, category, product_id, each at most 100 characters), those sent.'),
    links: z
      .object({
        self: z.string().describe('This event: /api/usage/events/{id}.'),
        outcome: z.string().describe('Where its outcome is reported: PATCH /api/usage/events/{id}/outcome.'),
      })
      .optional()
      .describe('Mine only: where the event opens and where its outcome is reported.'),
  })
  .meta({ id: 'UsageEvent', description: 'One priced call as the viewing workspace sees it; ids, request id, context and links only on its own calls (mine).' });

/**
 * Response schemas of the parts every priced or verified call's reply shares (services/reply.ts),
 * for the OpenAPI document. Named (meta `id`) so the document holds each once and refers to it.
 */

export const receiptSchema = z
  .object({
    usage_event_id: z.string().describe('The id of the usage event this call wrote (use_…).'),
    url: z.string().describe('Where the usage event opens: GET /api/usage/events/{id} (not for the keyless demo tenant, nor for an unclaimed sandbox until it is claimed).'),
    recorded_at: z.string().describe('When the event was recorded (ISO 8601, the database\'s time).'),
    // No .describe() here: the generator would inline a described copy instead of referring to the component.
    usage_event: usageEventSchema,
    hint: z.string().optional().describe('Keyless demo and unclaimed sandbox calls only: why the record cannot be opened yet, and how it can.'),
  })
  .meta({ id: 'Receipt', description: 'The usage record of the call, written before the answer; usage_event is the event exactly as GET /api/usage/events/{id} shows it to the calling workspace (for a keyless demo call, as Others see it: no ids, no tester tag).' });

export const remainingSchema = z
  .looseObject({
    daily_compute_calls: z
      .looseObject({
        limit: z.number().describe('Priced calls allowed per UTC day.'),
        remaining: z.number().describe('Calls left today.'),
        resets_at: z.string().describe('When the day\'s count starts again (ISO 8601).'),
      })
      .optional()
      .describe('Sandboxes: the daily allowance of priced calls.'),
    request_rate: z
      .object({
        limit_per_minute: z.number().describe('Requests allowed per minute by the binding count.'),
        remaining: z.number().describe('Requests left in the current minute.'),
        resets_at: z.string().describe('When the allowance is whole again (ISO 8601).'),
        scope: z.enum(['workspace', 'address']).describe('Which count binds: the workspace\'s or the caller address\'s (as the X-RateLimit-* headers report).'),
      })
      .optional()
      .describe('Sandboxes: the request-rate allowance.'),
  })
  .meta({ id: 'Remaining', description: 'What the caller has left: for sandboxes the daily calls and request rate; otherwise what the payment path reports (a day pass, a balance), when it reports anything.' });

/** GET /api/usage/events. */
export const eventsListResponse = listEnvelopeSchema(usageEventSchema, 'Usage events the workspace sees, newest first (created_at, then id).');

/** GET /api/usage/events/{id}. */
export const eventReadResponse = z.object({ usage_event: usageEventSchema });

/** PATCH /api/usage/events/{id}/outcome. */
export const outcomeResponse = z.object({
  usage_event: usageEventSchema,
  previous: z
    .object({
      outcome: z.enum(OUTCOMES).describe('The outcome replaced.'),
      quality_score: z.number().nullable().describe('Its quality score; null when it gave none.'),
      recorded_at: z.string().describe('When it was reported (ISO 8601).'),
    })
    .nullable()
    .describe('The report this one replaced (the last report wins); null when the event had none.'),
});

const aiTotals = z.object({
  calls: z.number().int().describe('Calls made.'),
  tokens: z.number().int().describe('Model tokens used.'),
  cost: z.string().describe('Their cost, a decimal string of USDC.'),
});

const period = z.object({ from: z.string().describe('Inclusive start (ISO 8601).'), to: z.string().describe('Exclusive end (ISO 8601).') });

/** Counts keyed by each value of a column, every value present (0 when none). */
const countsOf = (values: readonly string[], what: (v: string) => string) =>
  z.object(Object.fromEntries(values.map((v) => [v, z.number().int().describe(what(v))])));

/** GET /api/usage/summary (services/summary.ts; docs/usage.md, "Summary"). */
export const summaryResponse = z.object({
  object: z.literal('usage_summary').describe('The kind of object.'),
  period: period.describe('The period summarised: from (default the start of this calendar month, UTC) to (default now).'),
  currency: z.literal('USDC').describe('The currency of every cost here.'),
  requests: z.number().int().describe('Every call the workspace made in the period (succeeded_requests + failed_requests); paid calls count.'),
  succeeded_requests: z.number().int().describe('Calls that answered.'),
  failed_requests: z.number().int().describe('Calls that failed.'),
  prepaid_requests: z.number().int().describe('Calls paid for at call time (x402, day pass or balance).'),
  prepaid_cost: z.string().describe('Their cost, a decimal string.'),
  billable_requests: z.number().int().describe('Billable calls not paid at call time (calls under a sandbox\'s free daily allowance included).'),
  billable_cost: z.string().describe('Their cost, a decimal string: the cost still to bill.'),
  free_requests: z.number().int().describe('Calls neither paid nor billable (failed calls, cost 0).'),
  total_cost: z.string().describe('prepaid_cost + billable_cost, a decimal string.'),
  current_period: period.describe('This calendar month (UTC) by the service clock, whatever from and to say.'),
  current_period_cost: z.string().describe('This month\'s billable cost, a decimal string; 0.00 when every call was paid for.'),
  by_channel: countsOf(CHANNELS, (v) => `Calls over ${v}.`).describe('Calls by channel.'),
  by_outcome: countsOf([...OUTCOMES, 'none'], (v) => (v === 'none' ? 'Calls with no outcome reported.' : `Calls reported ${v}.`)).describe('Calls by reported outcome; none: no outcome reported.'),
  by_paid_via: countsOf([...PAID_VIA, 'none'], (v) => (v === 'none' ? 'Calls not paid at call time.' : `Calls paid via ${v}.`)).describe('Calls by how they were paid at call time; none: not paid then.'),
  ai_features: aiTotals
    .extend({
      by_key: z.object(Object.fromEntries(KEY_SOURCES.map((k) => [k, aiTotals])) as Record<(typeof KEY_SOURCES)[number], typeof aiTotals>).describe('By which key paid the model: own_provider_key or platform_key.'),
      by_feature: z.object(Object.fromEntries(AI_FEATURES.map((f) => [f, aiTotals])) as Record<(typeof AI_FEATURES)[number], typeof aiTotals>).describe('By feature: agent_generation or task_estimation.'),
      offered_features: z.array(z.enum(AI_FEATURES)).describe('The AI features this service runs; empty: none is offered yet, so the figures are zeros because nothing writes them, not because they went unused.'),
    })
    .describe('AI-feature usage over the same period, apart from compute requests and costs (zeros until a feature writes any).'),
});

const testerTagSchema = z
  .object({
    id: z.string().describe('The tag\'s id (ttag_…); send it back with PUT to keep the tag and its stored address.'),
    label: z.string().describe('The label its matching calls show as tester_tag.'),
    user_agent_contains: z.string().nullable().describe('The part of the User-Agent it matches (case-insensitive); null when it matches by address only.'),
    address: z.string().nullable().describe('The caller address it matches, masked (203.0.*.*, 2001:db8:*): only a hash of the address is kept; null when it matches by User-Agent only.'),
  })
  .meta({ id: 'TesterTag', description: 'A private tester tag: keyless calls it matches appear as testers in the workspace\'s usage (it grants nothing).' });

/** GET and PUT /api/settings/tester-tags: GET answers exactly what PUT accepts. */
export const testerTagsResponse = z.object({ tags: z.array(testerTagSchema).describe('The workspace\'s tester tags, in order.') });
