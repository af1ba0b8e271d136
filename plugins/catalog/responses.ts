import { z } from 'zod';
import { listEnvelopeSchema } from '../../core/http/reply-fields';
import { functionViewSchema } from '../pricing';

/**
 * The 200 bodies of the catalogue and leaderboard routes (routes/catalogue.ts, routes/leaderboard.ts),
 * for the OpenAPI document (docs/catalogue.md, docs/leaderboard.md). A catalogue entry is the
 * pricing plugin's function view, described there.
 */

export const catalogueListResponse = listEnvelopeSchema(
  functionViewSchema,
  'The functions the caller sees that match search and tag, built-ins first, then by name: without a credential the built-ins and active public marketplace functions; with one, what the workspace reaches (a sandbox: built-ins only).',
);

export const catalogueReadResponse = z.object({ function: functionViewSchema });

const weightCount = (what: string) =>
  z.object({ mean: z.number().describe(`The prior mean of ${what}.`), weight: z.number().describe('How many observations the prior weighs as.') }).describe(`The prior of ${what}.`);

const components = (what: string) =>
  z.object({
    acceptance: z.number().describe(`${what} of acceptance (A).`),
    quality: z.number().describe(`${what} of quality (Q).`),
    reliability: z.number().describe(`${what} of reliability (R).`),
  });

const nullWhenBelow = 'null while usage is below the publication threshold';

/** A ranked function (services/leaderboard.ts LeaderboardEntry): what may be published of its usage. */
const leaderboardEntry = z
  .object({
    rank: z.number().int().describe('Its position, from 1: score descending, then name.'),
    function: z
      .object({
        id: z.string().describe("The function's id."),
        name: z.string().describe('Its name.'),
        label: z.enum(['built-in', 'marketplace']).describe('built-in, or marketplace for a workspace\'s public function.'),
        built_in: z.boolean().describe("Whether it is one of the service's built-in functions."),
        description: z.string().describe('Its description.'),
        tags: z.array(z.string()).describe('Its tags.'),
        cost_per_unit: z.string().describe('USDC per call before the multiplier, a decimal string.'),
        cost_multiplier: z.string().describe('The multiplier, a decimal string.'),
      })
      .describe('The function ranked.'),
    score: z.number().describe('Scoring method 3: 100 x (0.5 A + 0.3 Q + 0.2 R), 2 decimals; 58.00 on the priors alone.'),
    total_invocations: z.number().int().nullable().describe(`Calls counted in the window, the publisher's own included; ${nullWhenBelow}.`),
    distinct_consumers: z.number().int().nullable().describe(`Distinct consumers in the window (a person counts once); ${nullWhenBelow}.`),
    stats: z
      .object({
        usage_status: z.enum(['published', 'below_threshold']).describe('Whether its usage has enough distinct consumers to be published.'),
        score_basis: z.enum(['usage', 'priors_only']).describe('What the score rests on: its usage, or the priors alone (below the threshold).'),
        components: components('The smoothed value, 4 decimals,').describe('The score\'s components.'),
        reported_outcomes: z.number().int().nullable().describe(`Outcomes its consumers reported (accepted plus rejected; the publisher's own left out); ${nullWhenBelow}.`),
        acceptance_rate: z.number().nullable().describe(`Mean over the consumers who reported outcomes of each one's accepted share, 4 decimals; null without any, or ${nullWhenBelow}.`),
        mean_quality_score: z.number().nullable().describe(`Mean over the consumers who reported quality scores of each one's mean score, 4 decimals; null without any, or ${nullWhenBelow}.`),
        success_rate: z.number().nullable().describe(`Answered share of the consumers' calls (the publisher's left out), 4 decimals; ${nullWhenBelow}.`),
        average_confidence: z.number().nullable().describe('Mean confidence of the consumers\' answered calls, rounded to LEADERBOARD_CONFIDENCE_ROUNDING; null unless confidence_status is published.'),
        confidence_status: z
          .enum(['published', 'below_threshold', 'no_data'])
          .describe('published; below_threshold (fewer consumers than LEADERBOARD_CONFIDENCE_MIN_CUSTOMERS, or usage not published); no_data (floor met, no answered call carried a confidence).'),
      })
      .describe('What may be published of its usage in the window.'),
  })
  .meta({ id: 'LeaderboardEntry', description: 'A ranked function and what may be published of its usage.' });

const scoringRef = z
  .object({
    method_version: z.number().int().describe('The scoring method version (3).'),
    description: z.string().describe('The formula, in words.'),
    documentation: z.string().describe('Where the method is stated as JSON: GET /api/public/leaderboard/scoring.'),
  })
  .describe('How the functions are scored.');

export const leaderboardResponse = listEnvelopeSchema(leaderboardEntry, 'The ranked functions of this page: built-ins and active public marketplace functions.').extend({
  scoring: scoringRef,
  computed_at: z.string().nullable().describe('When the aggregate served was computed (ISO 8601); null while the first one is pending.'),
  aggregate_status: z.enum(['ready', 'pending']).describe('pending until the instance has computed its first aggregate: everything then ranks on the priors.'),
  refresh_interval_ms: z.number().int().describe('How often the aggregate is recomputed, in milliseconds (LEADERBOARD_REFRESH_MS).'),
  window: z
    .object({
      days: z.number().int().describe('Days of usage the aggregate covers (LEADERBOARD_WINDOW_DAYS).'),
      from: z.string().nullable().describe('Its start (ISO 8601); null while pending.'),
      to: z.string().nullable().describe('Its end, computed_at (ISO 8601); null while pending.'),
    })
    .describe('The period of usage counted.'),
  thresholds: z
    .object({
      min_distinct_consumers: z.number().int().describe('Distinct consumers before usage is published (LEADERBOARD_MIN_DISTINCT_CONSUMERS).'),
      confidence_min_customers: z.number().int().describe('Distinct consumers before average confidence is published (LEADERBOARD_CONFIDENCE_MIN_CUSTOMERS).'),
      confidence_rounding: z.number().describe('The step average confidence is rounded to (LEADERBOARD_CONFIDENCE_ROUNDING).'),
    })
    .describe('The publication thresholds in force.'),
});

export const scoringResponse = z.object({
  method_version: z.number().int().describe('The scoring method version (3).'),
  description: z.string().describe('The formula, in words.'),
  formula: z
    .object({
      score: z.string().describe('How the score combines the components.'),
      acceptance: z.string().describe('How A is computed.'),
      quality: z.string().describe('How Q is computed.'),
      reliability: z.string().describe('How R is computed.'),
      below_threshold: z.string().describe('What a function below the publication threshold is scored on.'),
      order: z.string().describe('How the ranking is ordered.'),
    })
    .describe('The formula, part by part, in words.'),
  priors: z
    .object({ acceptance: weightCount('acceptance'), quality: weightCount('quality'), reliability: weightCount('reliability') })
    .describe('The priors each component starts from.'),
  weights: components('The weight in the score').describe('The weights of the components (they sum to 1).'),
  counted_calls: z.string().describe('Which calls count, in words.'),
  consumers: z.string().describe('Who counts as a distinct consumer, in words.'),
  publication: z
    .object({
      min_distinct_consumers: z.number().int().describe('Distinct consumers before usage is published.'),
      below_threshold: z.string().describe('What a function below it shows, in words.'),
      confidence_min_customers: z.number().int().describe('Distinct consumers before average confidence is published.'),
      confidence_rounding: z.number().describe('The step average confidence is rounded to.'),
    })
    .describe('The publication rules in force.'),
  aggregate: z
    .object({
      refresh_interval_ms: z.number().int().describe('How often the aggregate is recomputed, in milliseconds.'),
      window_days: z.number().int().describe('Days of usage it covers.'),
    })
    .describe('The aggregate the leaderboard is served from.'),
  source: z.string().describe('The document stating the method (docs/leaderboard.md).'),
});
