import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { credentialIgnored, requestRateOf } from '../../identity';
import { idempotencyHeaders, keyedCall } from '../../pricing';
import { sandboxQuotaRefusal } from '../../usage';
import * as s from '../schemas';
import { demoVerifyResponse, verifyResponse } from '../responses';
import type { VerificationService } from '../services/verification';
import { verifyExampleFor } from './verify-example';

const proposedOf = (b: s.VerifyBody): string | number => b.proposed_price ?? b.price ?? 0;
/** The amounts a JSON number may carry: one whose text a double cannot hold exactly is refused (RouteSpec.exactNumbers). */
const EXACT_NUMBERS = ['proposed_price', 'price', 'context.unit_cost', 'context.min_price', 'context.max_price'] as const;

/** Said to a demo caller that sent a credential, in the compute demo's words, on answers and refusals. */
const DEMO_CREDENTIAL = credentialIgnored(
  'The demo verifies every call as the keyless demo tenant and did not check the credential sent; send it to POST /api/price-router/verify to verify as your workspace.',
  { method: 'POST', path: '/api/price-router/verify' },
);

const DESCRIPTION =
  'Body: the context plus proposed_price (price is accepted as an alias only when proposed_price is absent). Answers a verdict (reasonable, high, low or unknown) with its evidence: the reference (time-weighted median of per-source medians of stored observations), the band and its bounds, whether the evidence is independent, the confidence and the thresholds used.';

export function verifyRoutes(service: VerificationService, verifyBody: s.VerifyBodySchema): RouteSpec[] {
  return [
    defineRoute({
      id: 'verify.price',
      recordsCallsOnly: true,
      method: 'post',
      path: '/api/price-router/verify',
      summary: 'Verify a proposed price against stored observations and the context\'s floor and ceiling.',
      description: DESCRIPTION,
      tags: ['Verification'],
      scopes: ['price:compute'],
      sandbox: true,
      keylessTwin: { action: 'try_demo', method: 'POST', path: '/api/public/price-router/verify', body: s.verifyExample, description: 'Keyless verification, rate limited per address.' },
      body: verifyBody,
      exactNumbers: EXACT_NUMBERS,
      example: s.verifyExample,
      exampleFor: verifyExampleFor(verifyBody, s.verifyExample),
      headers: idempotencyHeaders,
      responses: { 200: { description: 'The verdict with its evidence and the usage record; a retry under an answered Idempotency-Key repeats it (Idempotent-Replayed: true), counted once.', schema: verifyResponse }, 429: sandboxQuotaRefusal },
      handler: async (ctx) => {
        const idempotency = keyedCall(ctx, 'verify.price', ctx.body);
        const r = await service.verify({
          principal: ctx.principal,
          channel: ctx.channel,
          context: ctx.body.context,
          proposedPrice: proposedOf(ctx.body),
          req: ctx.req,
          requestId: ctx.requestId,
          rateLimit: requestRateOf(ctx),
          idempotency,
          holdTurn: idempotency !== undefined,
        });
        const reply = { ...ok({ ...r.body, request_id: ctx.requestId }, r.headers), ...(r.releaseTurn ? { afterReply: r.releaseTurn } : {}) };
        // A replay's reply that reaches nobody leaves the call it repeats as recorded (answered before).
        return r.reservation === null ? reply : { ...reply, notDelivered: () => service.notDelivered(r.usageEventId, r.reservation) };
      },
    }),
    defineRoute({
      id: 'demo.verify',
      recordsCallsOnly: true,
      method: 'post',
      path: '/api/public/price-router/verify',
      summary: 'Keyless price verification on the demo tenant, within the demo\'s hourly budget per caller address.',
      description: DESCRIPTION,
      tags: ['Public demo'],
      // As the compute demo: a GET answers 405 with Allow: POST and a hint, declared so OpenAPI shows it.
      missingMethods: { get: { hint: 'Use POST on this path; example is a body it takes.', example: s.verifyExample } },
      auth: 'public',
      channel: 'demo',
      rateLimit: 'demo',
      body: verifyBody,
      exactNumbers: EXACT_NUMBERS,
      example: s.verifyExample,
      exampleFor: verifyExampleFor(verifyBody, s.verifyExample),
      responses: { 200: { description: 'The verdict on the demo tenant, with the hourly budget left.', schema: demoVerifyResponse } },
      refusal: DEMO_CREDENTIAL.refusal,
      handler: async (ctx) => {
        const r = await service.verify({
          principal: null,
          channel: 'demo',
          context: ctx.body.context,
          proposedPrice: proposedOf(ctx.body),
          req: ctx.req,
          requestId: ctx.requestId,
        });
        // Always the demo tenant, whatever credential comes along (public routes resolve none).
        return ok({ ...r.body, demo: true, budget: ctx.state.demoBudget, ...DEMO_CREDENTIAL.fields(ctx.req), request_id: ctx.requestId }, r.headers);
      },
    }),
  ];
}
