import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { pageByKey } from '../../../core/pagination';
import * as s from '../schemas';
import { leaderboardResponse, scoringResponse } from '../responses';
import type { Leaderboard, LeaderboardEntry } from '../services/leaderboard';
import { PRIORS, SCORING_DESCRIPTION, SCORING_METHOD_VERSION, WEIGHTS } from '../services/scoring';

export interface LeaderboardRouteDeps {
  leaderboard: Leaderboard;
  publicUrl: () => string;
  refreshMs: number;
  windowDays: number;
}

const SCORING_PATH = '/api/public/leaderboard/scoring';

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** What a ranking key looks like: a cursor whose sort value is anything else was not issued here. */
const RANKING_KEY = /^\d{12}:./;

/**
 * An entry's place in the ranking as a key ordered as the ranking is (score descending, then name), so a cursor resumes
 * after the last entry served wherever the ranking has moved it. Scores lie in [0, 100] with at most a few decimals.
 */
const rankingKey = (e: LeaderboardEntry): string => `${String(Math.round((1000 - e.score) * 1e6)).padStart(12, '0')}:${e.function.name}`;

export function leaderboardRoutes(d: LeaderboardRouteDeps): RouteSpec[] {
  const rules = d.leaderboard.rules;
  const scoring = () => ({ method_version: SCORING_METHOD_VERSION, description: SCORING_DESCRIPTION, documentation: `${d.publicUrl()}${SCORING_PATH}` });
  const maxAge = Math.max(1, Math.min(60, Math.floor(d.refreshMs / 1000)));
  return [
    defineRoute({
      id: 'leaderboard.read',
      method: 'get',
      path: '/api/public/leaderboard',
      summary: 'Public ranking of pricing functions (built-ins and active public marketplace functions), scored by method version 3.',
      description:
        'Served from an aggregate refreshed in the background (computed_at says when). Usage is published only with enough distinct consumers (a person counts once across their workspaces); average confidence has its own customer floor and is rounded.',
      tags: ['Leaderboard'],
      auth: 'public',
      query: s.leaderboardQuery,
      responses: { 200: { description: 'A page of the ranking, with the aggregate it rests on and the thresholds in force.', schema: leaderboardResponse } },
      handler: async ({ query }) => {
        const { snapshot, entries } = await d.leaderboard.ranking();
        // Paged by the ranking's own order (score, then name) rather than by position: the ranking moves at each refresh and
        // listing change, and a position would then skip or repeat entries between pages.
        const page = pageByKey(entries, rankingKey, (e) => e.function.id, query, (e) => e, RANKING_KEY);
        return ok(
          {
            scoring: scoring(),
            computed_at: iso(snapshot?.computedAt),
            aggregate_status: snapshot ? 'ready' : 'pending',
            refresh_interval_ms: d.refreshMs,
            window: { days: snapshot?.windowDays ?? d.windowDays, from: iso(snapshot?.windowFrom), to: iso(snapshot?.computedAt) },
            thresholds: { min_distinct_consumers: rules.minDistinctConsumers, confidence_min_customers: rules.confidenceMinCustomers, confidence_rounding: rules.confidenceRounding },
            ...page,
          },
          { 'Cache-Control': `public, max-age=${maxAge}` },
        );
      },
    }),
    defineRoute({
      id: 'leaderboard.scoring',
      method: 'get',
      path: SCORING_PATH,
      summary: 'How the leaderboard scores and what it publishes: scoring method version 3, its formula, priors, weights and thresholds.',
      tags: ['Leaderboard'],
      auth: 'public',
      responses: { 200: { description: 'The scoring method and the publication rules in force.', schema: scoringResponse } },
      handler: () =>
        ok({
          method_version: SCORING_METHOD_VERSION,
          description: SCORING_DESCRIPTION,
          formula: {
            score: '100 × (0.5 × A + 0.3 × Q + 0.2 × R), rounded to 2 decimals',
            acceptance: "A = (sum of each consumer's accepted share + 2) / (consumers who reported outcomes + 4), over the outcomes reported on answered calls: one consumer, one view, however many reports it sends",
            quality: "Q = (sum of each consumer's mean quality score + 0.5 × 4) / (consumers who reported scores + 4), over the scores reported on answered calls",
            reliability: "R = (successful calls + 9) / (calls + 10), over the consumers' calls",
            below_threshold: 'components at their prior means: A = 0.5, Q = 0.5, R = 0.9, score 58.00',
            order: 'score descending, then name',
          },
          priors: PRIORS,
          weights: WEIGHTS,
          counted_calls:
            'compute, batch items and price-router calls (API and MCP) that name the function: answered by it, or failed with it as the chosen function; and a failed call of every other function tried and failed during a call (the chosen function of a call a fallback rescued, a fallback that failed). Keyless demo calls (demo tenant), function test runs, price verifications, and functions skipped or never called are not counted.',
          consumers:
            'a person counts once across all their workspaces: the owner of the calling workspace, or of its parent for claimed agent and test workspaces; a workspace no person owns (an unclaimed agent sandbox) counts as itself. The function\'s publisher (its workspace mapped the same way) is never a consumer: its calls count towards total_invocations only, never towards outcomes, quality, reliability, confidence or the consumer thresholds.',
          publication: {
            min_distinct_consumers: rules.minDistinctConsumers,
            below_threshold: 'total_invocations, distinct_consumers and the usage-derived stats are null, stats.usage_status is below_threshold, and the score uses the priors only',
            confidence_min_customers: rules.confidenceMinCustomers,
            confidence_rounding: rules.confidenceRounding,
          },
          aggregate: { refresh_interval_ms: d.refreshMs, window_days: d.windowDays },
          source: 'docs/leaderboard.md',
        }),
    }),
  ];
}
