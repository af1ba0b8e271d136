import { z } from 'zod';
import { NON_NEGATIVE_DECIMAL_PATTERN } from '../../core/money';
import { ruleSchema } from './rules';

export const STRATEGIES = ['default', 'policy', 'cheapest', 'fastest', 'round_robin', 'weighted', 'priority'] as const;
export type Strategy = (typeof STRATEGIES)[number];
export const PREFERENCES = ['explicit', 'cheapest', 'fastest', 'round_robin', 'weighted'] as const;
export type Preference = (typeof PREFERENCES)[number];

const fnRef = z.string().min(1).max(100);

/**
 * The functions one of a policy's lists (`candidates`, `order`) or its `weights` may name: each is a candidate the
 * router reports on every call (in the trace, and in a 422's `candidates`), so a policy naming thousands would make every
 * answer megabytes long. Rules (100) and the fallback chain (20) have their own caps.
 */
export const POLICY_FUNCTIONS_MAX = 50;

export const policyConfigSchema = z.strictObject({
  rules: z.array(ruleSchema).max(100).optional().describe('policy: rules tried in order; the first that holds picks the function.'),
  default_function: fnRef.optional().describe('policy: the function when no rule holds.'),
  weights: z
    .record(fnRef, z.number().min(0).max(1_000_000))
    .refine((w) => Object.keys(w).length <= POLICY_FUNCTIONS_MAX, { error: (iss) => `at most ${POLICY_FUNCTIONS_MAX} functions may have a weight, got ${Object.keys(iss.input as object).length}` })
    .optional()
    .describe(`weighted: function → weight (at most ${POLICY_FUNCTIONS_MAX} functions).`),
  order: z.array(fnRef).min(1).max(POLICY_FUNCTIONS_MAX).optional().describe('priority: functions in order of preference.'),
  candidates: z.array(fnRef).min(1).max(POLICY_FUNCTIONS_MAX).optional().describe('default/cheapest/fastest/round_robin: the functions to choose among (default: built-ins and your active functions).'),
  max_cost_per_unit: z.string().regex(NON_NEGATIVE_DECIMAL_PATTERN, 'a non-negative decimal string such as "0.002"').optional(),
  max_latency_ms: z.number().positive().max(600_000).optional(),
  tie_band_pct: z.number().min(0).max(100).optional().describe('fastest: candidates within this % of the best p50 share the traffic (default 10).'),
});
export type PolicyConfig = z.infer<typeof policyConfigSchema>;

/** The shape of a routing policy as stored and as a patch produces it. */
export const policySchema = z
  .strictObject({
    name: z.string().trim().min(1).max(80),
    strategy: z.enum(STRATEGIES),
    is_default: z.boolean(),
    fallback_chain: z.array(fnRef).max(20),
    fallback_function: fnRef.nullable(),
    config: policyConfigSchema,
  })
  .superRefine((p, ctx) => {
    if (p.strategy === 'policy' && !(p.config.rules && p.config.rules.length > 0)) {
      ctx.addIssue({ code: 'custom', path: ['config', 'rules'], message: 'strategy "policy" requires config.rules (at least one rule)' });
    }
    if (p.strategy === 'weighted') {
      const weights = Object.values(p.config.weights ?? {});
      if (!weights.some((w) => w > 0)) ctx.addIssue({ code: 'custom', path: ['config', 'weights'], message: 'strategy "weighted" requires config.weights with at least one positive weight' });
    }
    if (p.strategy === 'priority' && !p.config.order) ctx.addIssue({ code: 'custom', path: ['config', 'order'], message: 'strategy "priority" requires config.order' });
  });
export type PolicyShape = z.infer<typeof policySchema>;

export interface RoutingPolicy extends PolicyShape {
  id: string;
  workspace_id: string;
  /** When it was last saved (ISO 8601): its names bind only to functions registered by then. */
  updated_at?: string;
}
