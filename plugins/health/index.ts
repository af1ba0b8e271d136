import type { PluginDefinition } from '../../core/plugin';
import { healthRoutes, registerDependencyGauge } from './routes';

/** Liveness, readiness and the Prometheus scrape endpoint. */
export const healthPlugin: PluginDefinition = {
  name: 'health',
  description: 'GET /healthz, GET /readyz and GET /metrics.',
  register(ctx) {
    for (const route of healthRoutes(ctx)) ctx.route(route);
    registerDependencyGauge(ctx);
  },
};
