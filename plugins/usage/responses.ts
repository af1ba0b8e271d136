import { z } from 'zod';

/**
 * Response schemas of the parts every priced or verified call's reply shares (services/reply.ts),
 * for the OpenAPI document. Named (meta `id`) so the document holds each once and refers to it.
 */

export const receiptSchema = z
  .object({
    usage_event_id: z.string().describe('The id of the usage event this call wrote (use_…).'),
    url: z.string().describe('Where the usage event opens: GET /api/usage/events/{id} (not for the keyless demo tenant, nor for an unclaimed sandbox until it is claimed).'),
    recorded_at: z.string().describe('When the event was recorded (ISO 8601, the database\'s time).'),
    usage_event: z
      .looseObject({})
      .describe('The event exactly as GET /api/usage/events/{id} shows it to the calling workspace; for a keyless demo call as Others see it (no ids, no tester tag).'),
    hint: z.string().optional().describe('Keyless demo and unclaimed sandbox calls only: why the record cannot be opened yet, and how it can.'),
  })
  .meta({ id: 'Receipt', description: 'The usage record of the call, written before the answer.' });

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
