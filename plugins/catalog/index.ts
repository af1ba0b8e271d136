import type { PluginDefinition } from '../../core/plugin';
import type { CircuitBreakers, FunctionRegistry, LatencyStats } from '../../engine';
import { claimOffered } from '../identity';
import { DEMO_WORKSPACE_ID, PRICING } from '../pricing';
import { catalogueRoutes } from './routes/catalogue';
import { leaderboardRoutes } from './routes/leaderboard';
import { LeaderboardAggregator } from './services/aggregate';
import { Catalogue } from './services/catalogue';
import { Leaderboard } from './services/leaderboard';
import { CATALOG } from './tokens';

export { CATALOG } from './tokens';
export { Catalogue, filterTags } from './services/catalogue';
export type { BrowseQuery, CatalogueEntry } from './services/catalogue';
export type { Leaderboard, LeaderboardEntry, Ranking } from './services/leaderboard';
export type { LeaderboardAggregator, LeaderboardSnapshot } from './services/aggregate';
export { SCORING_METHOD_VERSION, roundToStep } from './services/scoring';
export type { FunctionAggregate, PublicationRules, PublishedStats } from './services/scoring';

/**
 * The function catalogue (browse and read, keyless or with a credential) and the public
 * leaderboard, ranked by scoring method version 3 over an aggregate of usage refreshed in the
 * background (docs/catalogue.md, docs/leaderboard.md).
 */
export const catalogPlugin: PluginDefinition = {
  name: 'catalog',
  description: 'Function catalogue and public leaderboard.',
  dependsOn: ['identity', 'usage', 'pricing'],
  register(ctx) {
    const { config, container, sql, kv, clock, metrics } = ctx;
    const registry = container.resolve<FunctionRegistry>(PRICING.Registry);
    const catalogue = new Catalogue(registry, container.resolve<LatencyStats>(PRICING.Latency), container.resolve<CircuitBreakers>(PRICING.Breakers));
    const aggregator = new LeaderboardAggregator(sql, kv, clock, ctx.log, metrics, {
      refreshMs: config.catalog.leaderboardRefreshMs,
      windowDays: config.catalog.leaderboardWindowDays,
      demoWorkspaceId: DEMO_WORKSPACE_ID,
    });
    const leaderboard = new Leaderboard(registry, aggregator, {
      minDistinctConsumers: config.limits.leaderboard.minDistinctConsumers,
      confidenceMinCustomers: config.limits.leaderboard.confidenceMinCustomers,
      confidenceRounding: config.limits.leaderboard.confidenceRounding,
    });
    container.register(CATALOG.Catalogue, { useValue: catalogue });
    container.register(CATALOG.Leaderboard, { useValue: leaderboard });
    container.register(CATALOG.Aggregator, { useValue: aggregator });
    ctx.onStart(() => aggregator.start());
    ctx.onClose(() => aggregator.stop());

    const routes = [
      ...catalogueRoutes(catalogue, claimOffered(config)),
      ...leaderboardRoutes({ leaderboard, publicUrl: ctx.publicUrl, refreshMs: config.catalog.leaderboardRefreshMs, windowDays: config.catalog.leaderboardWindowDays }),
    ];
    for (const r of routes) ctx.route(r);
  },
};
