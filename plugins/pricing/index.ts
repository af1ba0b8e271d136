import type { PluginDefinition } from '../../core/plugin';
import { newId } from '../../core/ids';
import { TOKENS } from '../../core/tokens';
import type { RouteTable } from '../../core/http/pipeline';
import { createEngine } from '../../engine';
import { IDENTITY, claimOffered, loadOrCreateSecret } from '../identity';
import type { IdempotencyKeys, Workspaces } from '../identity';
import { keylessCallsSince, USAGE } from '../usage';
import type { CallReplays, UsageRecorder } from '../usage';
import { DEMO_WORKSPACE_ID, pricingSchema } from './migrations/0001-pricing-schema';
import { functionTestRuns } from './migrations/0002-function-test-runs';
import { functionSigning } from './migrations/0003-function-signing';
import { computeRoutes } from './routes/compute';
import { functionRoutes } from './routes/functions';
import { functionSigningRoutes } from './routes/function-signing';
import { operationRoutes } from './routes/operations';
import { policyRoutes } from './routes/policies';
import { ComputeService } from './services/compute';
import { DemoBudgetGuard } from './services/demo-budget';
import { FunctionStore } from './services/function-store';
import { MarketEvidenceSlot } from './services/market-evidence';
import { PolicyStore } from './services/policy-store';
import { RequestSigning } from './services/request-signing';
import { TestRunQuota } from './services/test-run-quota';
import { callSchemas } from './schemas';
import { PRICING } from './tokens';

export { PRICING } from './tokens';
export type { ComputeService } from './services/compute';
export type { ComputeCall, ComputeResult } from './services/compute-call';
export { callIdempotency, idempotencyKeyReused } from './services/compute-call';
export { KeyedTurns } from './services/keyed-turns';
export { DEMO_WORKSPACE_ID } from './migrations/0001-pricing-schema';
export { DemoBudgetGuard } from './services/demo-budget';
export { callSchemas, contextSchemaOf, computeExample } from './schemas';
export { callExampleFor } from './routes/call-example';
export type { CallSchemas, ComputeBody, ContextSchema } from './schemas';
export { demoFields, idempotencyHeaders, idempotentReplayField } from './responses';
export { keyedCall } from './routes/request-key';
export { functionViewSchema } from './responses-functions';
export { FUNCTION_SORT_KEY, functionSortKey, functionView } from './routes/functions';
export { mayCall } from './services/next-actions';
export { marketplaceOutsidePlan } from './services/engine-errors';
export { callerScopeOf, healthCallerOfPrincipal } from './services/caller-scope';
export type { MarketEvidenceSlot, MarketEvidenceSource, MarketLookup } from './services/market-evidence';

/**
 * HTTP over the pricing engine: compute, batch, the price router, the keyless demo, workspace
 * functions, routing policies, pipelines (listed, not executed) and breaker health.
 */
export const pricingPlugin: PluginDefinition = {
  name: 'pricing',
  description: 'Compute API, functions, routing policies.',
  dependsOn: ['identity', 'usage'],
  migrations: [pricingSchema, functionTestRuns, functionSigning],
  async register(ctx) {
    const { config, sql, kv, clock, metrics, container, hooks } = ctx;
    const store = new FunctionStore(sql, config.limits.perWorkspace.functions);
    // Every instance on the database signs with the same key (kept like the other server secrets).
    const signing = new RequestSigning(await loadOrCreateSecret(sql, 'function_signing_key', undefined), () => clock.now());
    const parts = createEngine({ config, kv, clock, metrics, source: store, signer: signing.signer });
    await parts.start();
    const policies = new PolicyStore(sql, kv, clock, config.limits.perWorkspace.routingPolicies, config.engine.policyCacheMaxEntries);
    await policies.start();
    ctx.onClose(async () => {
      await policies.stop();
      await parts.close();
    });
    ctx.readiness('pricing_pool', async () => {
      if (parts.pool.queueSize > config.engine.maxQueue * 0.9) throw new Error(`pool queue at ${parts.pool.queueSize}`);
    });
    const recorder = container.resolve<UsageRecorder>(USAGE.Recorder);
    const idempotency = container.resolve<IdempotencyKeys>(IDENTITY.Idempotency);
    const routes = container.resolve<RouteTable>(TOKENS.Routes);
    const market = new MarketEvidenceSlot({ enabled: config.engine.marketEvidence, timeoutMs: config.engine.marketLookupTimeoutMs }, ctx.log, metrics);
    container.register(PRICING.MarketEvidence, { useValue: market });
    const compute = new ComputeService(parts.engine, policies, hooks, recorder, routes, config, ctx.publicUrl, market, container.resolve<CallReplays>(USAGE.Replays), ctx.kv);
    container.register(PRICING.Engine, { useValue: parts.engine });
    container.register(PRICING.Registry, { useValue: parts.registry });
    container.register(PRICING.Latency, { useValue: parts.latency });
    container.register(PRICING.Breakers, { useValue: parts.breakers });
    container.register(PRICING.Pool, { useValue: parts.pool });
    container.register(PRICING.Compute, { useValue: compute });
    container.register(PRICING.Outbound, { useValue: parts.outbound });
    const schemas = callSchemas(config.limits.computeContextMaxBytes);
    container.register(PRICING.Schemas, { useValue: schemas });

    const demoBudget = new DemoBudgetGuard(
      kv,
      () => config.limits.demo.callsPerHour,
      () => clock.now(),
      (ip, since) => keylessCallsSince(sql, ip, DEMO_WORKSPACE_ID, since),
      () => config.limits.rateLimit.ipv6Prefix,
      // The registration route's own rule (paused, or this address's registrations spent): an in-process lookup.
      (ip) => !routes.find('agents.register')?.closed?.(ip),
    );
    container.register(PRICING.DemoBudget, { useValue: demoBudget });
    hooks.addGuard(demoBudget);
    // This service among the instances behind one address: breakers and latency statistics are kept per
    // instance, so a caller comparing two readings can tell whether they came from the same one. Random,
    // so it names nothing of the host.
    const instanceId = newId('inst');
    const functionDeps = { store, registry: parts.registry, engine: parts.engine, market, latency: parts.latency, breakers: parts.breakers, outbound: parts.outbound, commissionPct: () => config.limits.marketplaceCommissionPct, maxCallCost: () => config.limits.functionMaxCallCost, callMaxMs: () => config.engine.callMaxMs, idempotency, workspaces: container.resolve<Workspaces>(IDENTITY.Workspaces), instanceId, testFunctionBody: schemas.testFunctionBody, testRuns: new TestRunQuota(sql, clock, ctx.log, config.limits.functionTestRunsPerDay), signing, claimOffered: claimOffered(config) };
    const routeSpecs = [
      ...computeRoutes(compute, schemas, config.limits.batchMaxItems, config.log.repeatIntervalMs),
      ...functionRoutes(functionDeps),
      ...functionSigningRoutes(functionDeps),
      ...policyRoutes(policies, parts.registry, idempotency, functionDeps.workspaces),
      ...operationRoutes(parts.registry, parts.breakers, parts.latency, instanceId),
    ];
    for (const r of routeSpecs) ctx.route(r);
  },
};
