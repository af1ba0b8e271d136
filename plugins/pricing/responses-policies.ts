import { z } from 'zod';
import { listEnvelopeSchema } from '../../core/http/reply-fields';
import { STRATEGIES } from '../../engine';

/**
 * The 2xx bodies of the routing policy routes (routes/policies.ts) and the pipeline listings
 * (routes/operations.ts), for the OpenAPI document (docs/routing.md, "Strategies").
 */

const ref = (what: string) => z.string().describe(`${what}: a function id or name.`);

/** The config as stored: policyConfigSchema (engine/routing/policy.ts) validated it on create and PATCH. */
const policyConfig = z
  .object({
    rules: z
      .array(
        z.object({
          when: z
            .record(z.string(), z.unknown())
            .describe('Dotted context path (customer.tier) → condition: a scalar for equality, or an object of operators (eq, ne, gt, gte, lt, lte, in, nin, exists, contains, starts_with), all of which must hold.'),
          use: ref('The function the rule picks'),
          name: z.string().optional().describe("The rule's name, when given."),
        }),
      )
      .optional()
      .describe('strategy policy: rules tried in order; the first whose every condition holds picks the function.'),
    default_function: ref('strategy policy: the function when no rule holds').optional(),
    weights: z.record(z.string(), z.number()).optional().describe('strategy weighted: function id or name → weight.'),
    order: z.array(z.string()).optional().describe('strategy priority: function ids or names in order of preference.'),
    candidates: z.array(z.string()).optional().describe('The functions to choose among (default: built-ins and the workspace\'s active functions).'),
    max_cost_per_unit: z.string().optional().describe('Ceiling on what one call of a candidate costs (cost_per_unit x cost_multiplier), USDC, a decimal string.'),
    max_latency_ms: z.number().optional().describe('Ceiling on a candidate\'s p50 latency, in milliseconds (a function never timed is kept).'),
    tie_band_pct: z.number().optional().describe('strategy fastest: candidates within this % of the best p50 share the traffic (default 10).'),
  })
  .describe('The strategy\'s settings, as saved; only the keys the policy was given.');

/** policyView (services/policy-store.ts). */
export const policyViewSchema = z
  .object({
    id: z.string().describe("The policy's id (rp_…)."),
    name: z.string().describe('Its name.'),
    strategy: z.enum(STRATEGIES).describe('How it chooses a function (docs/routing.md, "Strategies").'),
    is_default: z.boolean().describe("Whether it is the workspace's default policy (one at most), which routes calls that pin no function."),
    fallback_chain: z.array(z.string()).describe('Function ids or names tried in order when the chosen one fails.'),
    fallback_function: z.string().nullable().describe('The function tried last; null when none.'),
    config: policyConfig,
    created_at: z.string().describe('When it was created (ISO 8601).'),
    updated_at: z.string().describe('When it was last changed (ISO 8601).'),
  })
  .meta({ id: 'RoutingPolicy', description: 'A routing policy of the workspace.' });

/** Create and PATCH also say which of the policy's references the workspace cannot reach now. */
const policyWithWarnings = policyViewSchema
  .extend({
    warnings: z
      .array(z.string())
      .optional()
      .describe('Only when some function the policy names is out of the workspace\'s reach now (kept, and skipped when routing), or a list (config.candidates, config.order, fallback_chain) names one function more than once (kept; each function is tried once, where it first appears), or a function it names is a draft or deactivated (kept; skipped until activated).'),
  })
  .describe('The policy as saved.');

export const policyListResponse = listEnvelopeSchema(policyViewSchema, "The workspace's routing policies, newest first.");
export const policyReadResponse = z.object({ policy: policyViewSchema });
export const policyWrittenResponse = z.object({ policy: policyWithWarnings });
export const policyDeleteResponse = z.object({
  id: z.string().describe("The deleted policy's id."),
  deleted: z.literal(true).describe('Always true.'),
});

export const pipelineListResponse = listEnvelopeSchema(
  z.object({
    id: z.string().describe("The reference pipeline's id (pl_…)."),
    name: z.string().describe('Its name.'),
    description: z.string().describe('What it does.'),
    stages: z.array(z.string()).describe('The stages it runs, in order (names from GET /api/pipelines/stages).'),
  }),
  'The reference pipelines, all on one page (running one answers 501 pipeline_execution_unavailable).',
);

export const pipelineStagesResponse = listEnvelopeSchema(
  z.object({
    name: z.string().describe("The stage's name (a built-in function's)."),
    kind: z.enum(['price', 'adjust', 'present']).describe('price computes a price, adjust moves one, present rounds it for display.'),
  }),
  'The stages reference pipelines are made of, all on one page.',
);
