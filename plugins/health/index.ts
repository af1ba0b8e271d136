import type { PluginDefinition, ReadinessCheck } from '../../core/plugin';
import { TOKENS } from '../../core/tokens';
import { ReadinessProbe } from './readiness';
import { healthRoutes, registerDependencyGauge } from './routes';

/** Liveness, readiness and the Prometheus scrape endpoint. */
export const healthPlugin: PluginDefinition = {
  name: 'health',
  description: 'GET /healthz, GET /readyz and GET /metrics.',
  register(ctx) {
    // Read at each run: plugins registered after this one add their checks too.
    const probe = new ReadinessProbe(() => ctx.container.resolve<ReadonlyMap<string, ReadinessCheck>>(TOKENS.Readiness), ctx.config.metrics.readinessCacheMs);
    for (const route of healthRoutes(ctx, probe)) ctx.route(route);
    registerDependencyGauge(ctx, probe);
  },
};
