import type { PluginDefinition } from '../../core/plugin';
import type { RouteTable } from '../../core/http/pipeline';
import { TOKENS } from '../../core/tokens';
import type { CircuitBreakers, FunctionRegistry, LatencyStats } from '../../engine';
import { DISCOVERY } from '../discovery';
import type { Changelog } from '../discovery';
import { IDENTITY } from '../identity';
import { PRICING } from '../pricing';
import type { CallSchemas, ComputeService, DemoBudgetGuard } from '../pricing';
import { mcpRoutes } from './routes';
import { McpSessions } from './services/sessions';
import { ToolMetrics } from './services/tool-metrics';
import { catalogueTools } from './tools/catalogue-tools';
import { computeTool } from './tools/compute-tool';
import type { McpTool } from './tools/types';
import { verifyTool } from './tools/verify-tool';
import { VERIFICATION } from '../verification';
import type { VerificationService } from '../verification';

export type { McpTool, ToolContext } from './tools/types';
export { jsonSchema } from './tools/json-schema';

/**
 * The Model Context Protocol endpoint (Streamable HTTP 2025-11-25) at /api/mcp/rpc, with the tools
 * compute_price, verify_price, list_functions and browse_catalog running through the same services
 * as REST (channel MCP).
 */
export const mcpPlugin: PluginDefinition = {
  name: 'mcp',
  description: 'MCP endpoint and tools.',
  dependsOn: ['identity', 'pricing', 'discovery'],
  register(ctx) {
    const { container, config, clock } = ctx;
    const routes = container.resolve<RouteTable>(TOKENS.Routes);
    const schemas = container.resolve<CallSchemas>(PRICING.Schemas);
    const tools: McpTool[] = [
      computeTool(container.resolve<ComputeService>(PRICING.Compute), container.resolve<DemoBudgetGuard>(PRICING.DemoBudget), routes, schemas),
      // Resolved at call time: the verification plugin may register after this one.
      ...(config.plugins.enabled.includes('verification')
        ? [verifyTool(() => container.resolve<VerificationService>(VERIFICATION.Service), container.resolve<DemoBudgetGuard>(PRICING.DemoBudget), routes, schemas.context)]
        : []),
      ...catalogueTools(container.resolve<FunctionRegistry>(PRICING.Registry), container.resolve<LatencyStats>(PRICING.Latency), container.resolve<CircuitBreakers>(PRICING.Breakers)),
    ];
    container.register(DISCOVERY.McpTools, { useValue: tools.map((t) => t.descriptor) });
    const sessions = new McpSessions(container.resolve<Uint8Array>(IDENTITY.TokenSecret), config.limits.mcp.sessionTtlHours * 3_600_000, () => clock.now());
    const toolMetrics = new ToolMetrics(ctx.metrics, tools.map((t) => t.descriptor.name));
    for (const r of mcpRoutes({ config, tools, routes, sessions, changelog: container.resolve<Changelog>(DISCOVERY.Changelog), publicUrl: ctx.publicUrl, log: ctx.log, toolMetrics })) ctx.route(r);
  },
};
