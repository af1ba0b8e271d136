import { z } from 'zod';
import type { RouteTable } from '../../../core/http/pipeline';
import { checkedIdempotencyKey } from '../../identity';
import { callExampleFor, callIdempotency, computeExample } from '../../pricing';
import type { CallSchemas, ComputeBody, ComputeService, DemoBudgetGuard } from '../../pricing';
import { admitToolCall, demoFields } from './admission';
import type { McpTool } from './types';
import { jsonSchema } from './json-schema';

export const priceOutput = z.looseObject({ price: z.string(), currency: z.string(), confidence: z.number(), receipt: z.looseObject({ usage_event_id: z.string() }) });

/** compute_price: the same engine call and usage recording as POST /api/compute/price, channel MCP. */
export function computeTool(compute: ComputeService, demo: DemoBudgetGuard, routes: RouteTable, schemas: CallSchemas): McpTool {
  const twin = { keyed: 'compute.price', keyless: 'demo.compute' };
  const computeBody = schemas.computeBody;
  return {
    descriptor: {
      name: 'compute_price',
      title: 'Compute a price',
      description:
        'Computes a price for a context (product_type, current_price, currency, unit_cost, competitor_prices…). Without a key it runs on the demo tenant with built-in functions and an hourly budget per address; with a key it prices as your workspace under your routing policy. With a key, send params._meta.idempotency_key (a UUID) to make a retry safe: the same key and arguments answer the first result, not charged again; a key already used for another request (other arguments, or a REST batch) is refused with idempotency_key_reused. Keyless demo calls keep no keys: each retry is a new demo call.',
      inputSchema: jsonSchema(computeBody),
      outputSchema: jsonSchema(priceOutput, 'output'),
      requiresKey: false,
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    twin,
    admit: (ctx) => admitToolCall(ctx, demo, routes, twin.keyed),
    input: computeBody,
    example: computeExample,
    exampleFor: callExampleFor(computeBody, computeExample),
    run: async (args, ctx) => {
      const a = args as ComputeBody;
      const p = ctx.principal;
      // A retried tool call (after the 30 s timeout, which SPEC says to retry once) is answered, not charged again. The key
      // and fingerprint are POST /api/compute/price's: the same call retried over REST is the same call. The demo keeps none.
      // A key of the wrong shape is refused keyless too, as documented, rather than silently ignored.
      const key = ctx.idempotencyKey !== undefined ? checkedIdempotencyKey(ctx.idempotencyKey, '_meta.idempotency_key') : undefined;
      const idempotency = p && key !== undefined ? callIdempotency(key, 'compute.price', a) : undefined;
      ctx.progress(0.5, 1, 'pricing');
      const r = await compute.compute({
        principal: p,
        channel: 'mcp',
        operation: p ? 'compute' : 'demo',
        context: a.context,
        functionId: a.function_id,
        preference: a.routing_preference,
        req: ctx.req,
        requestId: ctx.requestId,
        ...(ctx.startedAt !== undefined ? { startedAt: ctx.startedAt } : {}),
        rateLimit: ctx.rateLimit,
        idempotency,
        demoBudgetLeft: ctx.demoBudget?.remaining,
      });
      return { ...r.body, ...demoFields(ctx), request_id: ctx.requestId };
    },
  };
}
