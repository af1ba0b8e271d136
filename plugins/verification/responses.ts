import { z } from 'zod';
import { listEnvelopeSchema, requestIdField } from '../../core/http/reply-fields';
import { demoFields, idempotentReplayField } from '../pricing';
import { receiptSchema, remainingSchema } from '../usage';

/**
 * The 200 bodies of the verify routes (services/verification.ts, verdict-types.ts), for the OpenAPI
 * document (docs/verification.md). A test parses real answers with them, the top level strictly.
 */

const constraint = z.object({ value: z.string().describe('The bound, a decimal string.'), from: z.array(z.string()).describe('The context keys it came from (unit_cost, min_price, max_price).') });

const reference = z
  .object({
    price: z.string().describe('The reference price, a decimal string.'),
    statistic: z.literal('time_weighted_median_of_source_medians').describe('How it is computed.'),
    observations: z.number().describe('Observations it rests on.'),
    effective_n: z.number().describe('Kish effective number of the time-weighted observations.'),
    sources: z.number().describe('Distinct sources behind it.'),
    source_labels: z
      .array(
        z.object({
          label: z.string().describe('The source as shown to this caller.'),
          observations: z.number().describe('Its observations used.'),
          median: z.string().describe('Its median, a decimal string.'),
          weight_share: z.number().describe('Its share of the total weight, 0 to 1.'),
          own_workspace: z.boolean().describe('Whether the caller\'s own workspace submitted it.'),
        }),
      )
      .describe('The sources, largest weight first.'),
    sources_listed_truncated: z.boolean().describe('Whether source_labels lists only the first of them.'),
    newest_age_days: z.number().describe('Age of the newest observation used, in days.'),
    oldest_age_days: z.number().describe('Age of the oldest, in days.'),
    median_age_days: z.number().describe('Median age, in days.'),
    half_life_days: z.number().describe('Half-life of an observation\'s weight, in days.'),
    total_weight: z.number().describe('Sum of the observations\' weights.'),
  })
  .meta({ id: 'VerificationReference', description: 'The market reference the band is built around.' })
  .nullable()
  .describe('The market reference the band is built around; null without sufficient evidence.');

const band = z
  .looseObject({
    lower: z.string().nullable().describe('Lowest reasonable price, a decimal string; null when open.'),
    upper: z.string().nullable().describe('Highest reasonable price; null when open.'),
    lower_open: z.boolean().describe('Whether there is no lower bound.'),
    upper_open: z.boolean().describe('Whether there is no upper bound.'),
    method: z.string().describe('How the band was set (from observations, the caller\'s bounds, or none).'),
    formula: z.string().optional().describe('Two-sided bands: how the bounds follow from the reference.'),
    scale: z
      .object({
        sigma_log: z.number().describe('Robust standard deviation of log prices.'),
        estimator: z.enum(['mad', 'iqr', 'mean_absolute_deviation', 'none']).describe('How it was estimated.'),
        half_width_log: z.number().describe('The band\'s half-width in log price.'),
        min_half_width_applied: z.boolean().describe('Whether the minimum relative half-width widened it.'),
      })
      .optional()
      .describe('Two-sided bands: the spread the bounds rest on.'),
  })
  .meta({ id: 'VerificationBand', description: 'The range of reasonable prices.' });

const independence = z
  .object({
    independent: z.boolean().describe('Whether the evidence stands on more than one party with none of the caveats in reasons (several sources, no dominant workspace or source, none of the caller\'s own observations). It discloses; it does not decide the verdict: a verdict may be given while it is false: evidence.sufficient decides that.'),
    reasons: z.array(z.string()).describe('Why not, when it is not.'),
    sources: z.number().describe('Distinct sources.'),
    workspaces: z.number().describe('Distinct submitting workspaces: what the minimum of sources counts.'),
    largest_source_share: z.number().nullable().describe('The largest source\'s share of the weight; null without evidence.'),
    own_workspace_share: z.number().describe('The caller\'s own workspace\'s share of the weight.'),
    own_workspace_observations: z.number().describe('Observations the caller\'s workspace submitted.'),
    excluded_circular: z.number().describe('Observations of the caller\'s own workspace left out as circular: those whose amount equals the proposed price or the context\'s current_price.'),
    duplicates_removed: z.number().describe('Copies of one workspace\'s quote of one amount dropped (the freshest kept).'),
  })
  .meta({ id: 'VerificationIndependence', description: 'Whether the evidence stands on more than one party.' });

const verifyFields = {
  object: z.literal('price_verification').describe('Always price_verification.'),
  verdict: z.enum(['reasonable', 'high', 'low', 'unknown']).describe('The judgement of proposed_price.'),
  proposed_price: z.string().describe('The price judged, a decimal string.'),
  currency: z.string().describe('The currency matched (the context\'s, else USD).'),
  product_type: z.string().nullable().describe('The product type matched; null when the context has none (no observation can match).'),
  basis: z.enum(['observations', 'floor', 'ceiling', 'none']).describe('What decided the verdict: the observation band, a caller bound, or nothing.'),
  reasons: z.array(z.string()).describe('Why, in words.'),
  reference,
  band,
  independence,
  confidence: z.number().describe('Confidence in the verdict, 0 to 1.'),
  confidence_factors: z.record(z.string(), z.number()).describe('What the confidence rests on, by factor.'),
  constraints: z
    .object({ floor: constraint.nullable().describe('The larger of unit_cost and min_price; null without either.'), ceiling: constraint.nullable().describe('max_price; null without it.') })
    .describe('The hard bounds the context stated.'),
  evidence: z
    .object({
      matched: z.number().describe('Observations matching product type and currency.'),
      used: z.number().describe('Those used.'),
      ignored_older_than_max_age: z.number().describe('Matching ones older than the maximum age, not read.'),
      sufficient: z.boolean().describe('Whether the evidence meets the thresholds for a two-sided verdict.'),
    })
    .describe('How much evidence was found and used.'),
  thresholds: z
    .object({
      min_effective_observations: z.number().describe('Smallest effective n for a two-sided verdict.'),
      min_sources: z.number().describe('Smallest number of distinct workspaces for a two-sided verdict.'),
      half_life_days: z.number().describe('Half-life of an observation\'s weight, in days.'),
      max_age_days: z.number().describe('Oldest observation read, in days.'),
      band_k: z.number().describe('Band half-width in robust standard deviations of log prices.'),
      min_relative_half_width: z.number().describe('Smallest band half-width relative to the reference.'),
    })
    .describe('The thresholds used.'),
  receipt: receiptSchema,
  hint: z.string().optional().describe('Only on an unknown verdict for want of evidence: what would decide the next one.'),
  remaining: remainingSchema.optional(),
  idempotent_replay: idempotentReplayField,
  request_id: requestIdField,
};

export const verifyResponse = z.object(verifyFields).meta({ id: 'PriceVerification', description: 'The verdict on a proposed price, with its evidence and the usage record.' });

export const demoVerifyResponse = z.object({ ...verifyFields, ...demoFields }).describe('A keyless demo verification: as a verification, on the demo tenant, with the demo budget.');

/** observationView (services/observations.ts): a stored price observation. */
const observation = z
  .object({
    id: z.string().describe("The observation's id (obs_…)."),
    object: z.literal('price_observation').describe('Always price_observation.'),
    product_type: z.string().describe('The product type, as sent without surrounding spaces (matched case-insensitively).'),
    currency: z.string().describe('The currency, an upper-case code of 3 to 5 letters (USD, USDC).'),
    amount: z.string().describe('The price observed, a decimal string above 0.'),
    observed_at: z.string().describe('When the price was seen (ISO 8601).'),
    source: z.string().describe('Where it was seen, as labelled; accepted:<function name> for an accepted compute outcome.'),
    origin: z.enum(['contribution', 'accepted_outcome']).describe('contribution (POST /api/data/observations) or accepted_outcome (the price of a compute whose outcome was reported accepted).'),
    usage_event_id: z.string().nullable().describe('accepted_outcome only: the usage event of that compute; null for a contribution.'),
    context: z.record(z.string(), z.string()).describe('Other string keys (category, region…) as sent; for an accepted outcome, the string keys of the compute\'s context. Empty when none.'),
    created_at: z.string().describe('When it was stored (ISO 8601).'),
  })
  .meta({ id: 'PriceObservation', description: 'A price observation of the workspace, evidence for verification.' });

export const observationsCreateResponse = z.object({
  object: z.literal('observation_batch').describe('Always observation_batch.'),
  created: z.number().int().describe('Observations stored (all those sent).'),
  data: z.array(observation).describe('The stored observations.'),
  warnings: z
    .array(z.string())
    .optional()
    .describe('Only when items were observed more than VERIFY_MAX_AGE_DAYS ago: names them (stored, but never read as evidence).'),
  request_id: requestIdField,
});

export const observationsListResponse = listEnvelopeSchema(observation, "The workspace's observations, newest stored first.");
