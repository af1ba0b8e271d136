import { availableParallelism } from 'node:os';
import type { Config } from '../config';
import type { Clock } from '../core/clock';
import type { KvStore } from '../core/kv';
import type { Metrics } from '../core/metrics';
import { SafeHttpClient } from '../core/outbound/safe-http-client';
import { ResultCache } from './cache';
import { PricingEngine } from './engine';
import { ExternalExecutor } from './external';
import type { RequestSigner } from './external';
import { FunctionLabels, OTHER_FUNCTIONS } from './metric-labels';
import { PricingPool } from './pool';
import { BUILTIN_DESCRIPTORS, FunctionRegistry } from './registry';
import type { FunctionSource } from './registry';
import { createRng } from './rng';
import { Router } from './routing/router';
import { BreakerSet } from './stats/breaker';
import { CircuitBreakers } from './stats/function-breakers';
import type { BreakerState } from './stats/breaker';
import { LatencyStats } from './stats/latency';

export { PricingEngine } from './engine';
export { FAILURE_KINDS, usableResult } from './attempt';
export type { FailureKind } from './attempt';
export type { PriceOutcome, PriceRequest, TraceStage } from './engine';
export type { Savings } from './routing/comparisons';
export { EngineError } from './errors';
export type { AttemptReport, CandidateReport, EngineErrorCode } from './errors';
export { FunctionRegistry, BUILTIN_DESCRIPTORS } from './registry';
export type { FunctionSource } from './registry';
export { effectiveCost, healthCallerOf, isReachable } from './functions';
export type { CallerScope, ExecutionType, FunctionDescriptor, FunctionStatus } from './functions';
export { BUILTINS, builtinOf } from './builtins/catalogue';
export type { MarketEvidence, MethodResult } from './builtins/types';
export { currencyOf, minorUnits } from './builtins/inputs';
export { NETWORK_OBSERVATIONS_CLAUSE } from './builtins/competitive';
export { policySchema, policyConfigSchema, STRATEGIES, PREFERENCES } from './routing/policy';
export type { PolicyConfig, PolicyShape, Preference, RoutingPolicy, Strategy } from './routing/policy';
export { OPERATORS } from './routing/rules';
export type { BreakerView } from './stats/breaker';
export type { CircuitBreakers, CallerBreakerView, ReaderBreakerView } from './stats/function-breakers';
export type { LatencyStats, LatencySnapshot, LatencyView } from './stats/latency';
export { NO_DATA, latencyView } from './stats/latency';
export { externalAnswer, quotesRefusal } from './external';
export type { RequestSigner } from './external';
export { roundRobinKey } from './routing/router';

export interface EngineParts {
  engine: PricingEngine;
  registry: FunctionRegistry;
  pool: PricingPool;
  latency: LatencyStats;
  breakers: CircuitBreakers;
  outbound: SafeHttpClient;
  start(): Promise<void>;
  close(): Promise<void>;
}

const BREAKER_LEVEL: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

/** Builds the engine of one service instance from configuration. */
export function createEngine(deps: { config: Config; kv: KvStore; clock: Clock; metrics: Metrics; source: FunctionSource; signer?: RequestSigner }): EngineParts {
  const { config, kv, clock, metrics } = deps;
  const e = config.engine;
  const pool = new PricingPool(
    { threads: e.threads || availableParallelism(), tasksPerWorker: e.tasksPerWorker, maxQueue: e.maxQueue, maxOldGenerationSizeMb: e.workerHeapMb, extraModules: e.extraWorkerModules },
    metrics,
  );
  const registry = new FunctionRegistry(deps.source, kv);
  const latency = new LatencyStats(clock, { windowMs: e.latencyWindowMs, maxSamples: e.latencyMaxSamples, coldBelow: e.latencyColdBelow, ewmaAlpha: 0.3 });
  const labels = new FunctionLabels(config.metrics.maxFunctionLabels);
  const labelOf = (id: string): string => {
    const fn = registry.get(id);
    return fn ? labels.of(fn) : id;
  };
  metrics.gauge({
    name: 'pricing_breaker_state',
    help: 'Circuit breaker per function: 0 closed, 1 half-open, 2 open; `other` shows the most open of the functions past METRICS_MAX_FUNCTION_LABELS.',
    labelNames: ['function'],
    // An open breaker turns half-open by the clock alone, with no call to announce it: read the state at scrape time.
    collect() {
      let others: number | undefined;
      // Built-ins read closed before their first call: an alert on an open breaker sees 0, not no data.
      for (const fn of BUILTIN_DESCRIPTORS) this.set({ function: fn.name }, BREAKER_LEVEL[breakers.state(fn.id)]);
      for (const id of breakers.known()) {
        const label = labelOf(id);
        const level = BREAKER_LEVEL[breakers.state(id)];
        if (label === OTHER_FUNCTIONS) others = Math.max(others ?? 0, level);
        else this.set({ function: label }, level);
      }
      if (others !== undefined) this.set({ function: OTHER_FUNCTIONS }, others);
    },
  });
  const breakerOptions = { windowMs: e.breakerWindowMs, windowMaxCalls: Math.max(e.breakerWindowMaxCalls, e.breakerMinCalls), minCalls: e.breakerMinCalls, failureRatio: e.breakerFailureRatio, cooldownMs: e.breakerCooldownMs };
  const breakers = new CircuitBreakers(
    new BreakerSet(clock, { ...breakerOptions, minFailingCallers: e.breakerMinFailingCallers }),
    new BreakerSet(clock, { ...breakerOptions, windowMaxCalls: Math.max(e.breakerCallerWindowMaxCalls, e.breakerMinCalls), minFailingCallers: 1, maxEntries: e.breakerMaxCallerEntries }),
    config.limits.leaderboard.minDistinctConsumers,
  );
  const outbound = new SafeHttpClient({ allowList: config.outbound.allowList, httpsOnly: config.outbound.httpsOnly, allowedPorts: config.outbound.allowedPorts.includes('*') ? [] : config.outbound.allowedPorts.map(Number), maxBodyBytes: config.outbound.maxBodyBytes });
  const router = new Router(registry, latency, breakers, kv, createRng(e.randomSeed));
  const cache = new ResultCache(kv, e.cacheTtlMs);
  const engine = new PricingEngine(registry, router, pool, new ExternalExecutor(outbound, deps.signer), latency, breakers, cache, metrics, { functionTimeoutMs: e.functionTimeoutMs, callMaxMs: e.callMaxMs, labels });
  return {
    engine,
    registry,
    pool,
    latency,
    breakers,
    outbound,
    start: async () => {
      await pool.check();
      await registry.start();
    },
    close: async () => {
      await registry.stop();
      await pool.close();
    },
  };
}
