import { z } from 'zod';
import type { RouteTable } from '../../../core/http/pipeline';
import { ApiError } from '../../../core/errors';
import { callIdempotency } from '../../pricing';
import type { DemoBudgetGuard } from '../../pricing';
import { checkedIdempotencyKey } from '../../identity';
import { verifyBodyOf, verifyExample, verifyExampleFor } from '../../verification';
import type { VerificationService, VerifyBody } from '../../verification';
import type { ContextSchema } from '../../pricing';
import { admitToolCall, demoFields } from './admission';
import type { McpTool } from './types';
import { jsonSchema } from './json-schema';

const verdictOutput = z.looseObject({ verdict: z.enum(['reasonable', 'high', 'low', 'unknown']), receipt: z.looseObject({ usage_event_id: z.string() }) });

/** verify_price: the same verification and usage recording as the REST verify routes, channel MCP. */
export function verifyTool(verification: () => VerificationService, demo: DemoBudgetGuard, routes: RouteTable, context: ContextSchema): McpTool {
  const twin = { keyed: 'verify.price', keyless: 'demo.verify' };
  const verifyBody = verifyBodyOf(context);
  return {
    descriptor: {
      name: 'verify_price',
      title: 'Verify a proposed price',
      description:
        'Judges a proposed price for a context against stored market observations: reasonable, high, low or unknown, with the reference price, the band and whether the evidence is independent. Without a key it runs on the demo tenant within an hourly budget. With a key, send params._meta.idempotency_key (a UUID) to make a retry safe: the same key and arguments answer the first verdict, not counted again; a key already used for another request is refused with idempotency_key_reused.',
      inputSchema: jsonSchema(verifyBody),
      outputSchema: jsonSchema(verdictOutput, 'output'),
      requiresKey: false,
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    twin,
    admit: (ctx) => admitToolCall(ctx, demo, routes, twin.keyed),
    input: verifyBody,
    example: verifyExample,
    exampleFor: verifyExampleFor(verifyBody, verifyExample),
    run: async (args, ctx) => {
      const a = args as VerifyBody;
      ctx.progress(0.5, 1, 'verifying');
      // null reads as absent (the body's alias rules): proposed_price null beside a price is judged on the price.
      const proposed = a.proposed_price ?? a.price;
      if (proposed === undefined || proposed === null) throw new ApiError('validation_error', 'proposed_price is required.', { issues: [{ path: 'proposed_price', reason: 'required (alias: price)' }] });
      // As compute_price: a retried call under its key is answered, not counted again; the key and fingerprint are POST
      // /api/price-router/verify's, so a retry over REST is the same call. A key of the wrong shape is refused, keyless too.
      const key = ctx.idempotencyKey !== undefined ? checkedIdempotencyKey(ctx.idempotencyKey, '_meta.idempotency_key') : undefined;
      const idempotency = ctx.principal && key !== undefined ? callIdempotency(key, 'verify.price', a) : undefined;
      const r = await verification().verify({ principal: ctx.principal, channel: 'mcp', context: a.context, proposedPrice: proposed, req: ctx.req, requestId: ctx.requestId, rateLimit: ctx.rateLimit, idempotency });
      return { ...r.body, ...demoFields(ctx), request_id: ctx.requestId };
    },
  };
}
