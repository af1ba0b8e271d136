import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../config';
import type { ConfigInput } from '../../config';
import { ManualClock } from '../../core/clock';
import { MemoryKvStore } from '../../core/kv';
import { Metrics } from '../../core/metrics';
import { EngineError, createEngine } from '../../engine';
import type { CallerScope, EngineErrorCode, EngineParts, FunctionDescriptor, FunctionSource, PolicyConfig, PriceOutcome, PriceRequest, RoutingPolicy, Strategy, TraceStage } from '../../engine';

/** The compiled fixture module (dist/test/fixtures/test-functions.js). */
export const FIXTURE_MODULE = path.join(__dirname, '..', 'fixtures', 'test-functions.js');

export const CALLER_WS = 'ws_caller';
/** Fixture functions belong to another workspace and are listed publicly: reachable, but only when named. */
export const FIXTURE_WS = 'ws_fixtures';
export const SCOPE: CallerScope = { workspaceId: CALLER_WS, builtInsOnly: false };

/** A descriptor running the fixture (or built-in) method of the same name in the worker. */
export function fixture(name: string, over: Partial<FunctionDescriptor> = {}): FunctionDescriptor {
  return {
    id: `fn_${name.replace(/-/g, '_')}`,
    name,
    workspaceId: FIXTURE_WS,
    builtIn: false,
    executionType: 'builtin',
    status: 'active',
    isPublic: true,
    costPerUnit: '0.001',
    costMultiplier: '1',
    description: `test fixture ${name}`,
    tags: ['test'],
    ...over,
  };
}

export class MemorySource implements FunctionSource {
  private readonly fns = new Map<string, FunctionDescriptor>();
  constructor(fns: readonly FunctionDescriptor[] = []) {
    for (const f of fns) this.fns.set(f.id, f);
  }
  async loadAll(): Promise<FunctionDescriptor[]> {
    return [...this.fns.values()];
  }
  async loadOne(id: string): Promise<FunctionDescriptor | null> {
    return this.fns.get(id) ?? null;
  }
  put(fn: FunctionDescriptor): void {
    this.fns.set(fn.id, fn);
  }
}

export function policy(strategy: Strategy, config: PolicyConfig = {}, extra: Partial<RoutingPolicy> = {}): RoutingPolicy {
  return { id: 'rp_test', workspace_id: CALLER_WS, name: `test ${strategy}`, strategy, is_default: true, fallback_chain: [], fallback_function: null, config, ...extra };
}

export interface Harness {
  parts: EngineParts;
  clock: ManualClock;
  kv: MemoryKvStore;
  metrics: Metrics;
  source: MemorySource;
  price(req: Partial<PriceRequest>): Promise<PriceOutcome>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  functions?: readonly FunctionDescriptor[];
  engine?: NonNullable<ConfigInput['engine']>;
  outbound?: NonNullable<ConfigInput['outbound']>;
  clock?: ManualClock;
  /** Another instance of the same service: the store and the function table it shares with the first. */
  shared?: { kv: MemoryKvStore; source: MemorySource };
}

/** An engine built like the service builds it, on a memory store, a manual clock and one worker. */
export async function harness(opts: HarnessOptions = {}): Promise<Harness> {
  const clock = opts.clock ?? new ManualClock();
  const kv = opts.shared?.kv ?? new MemoryKvStore(clock);
  const metrics = new Metrics({ defaultMetrics: false });
  const source = opts.shared?.source ?? new MemorySource(opts.functions ?? []);
  const config = loadConfig({ LOG_LEVEL: 'silent' }, { engine: { threads: 1, functionTimeoutMs: 1000, randomSeed: 42, extraWorkerModules: [FIXTURE_MODULE], breakerMinFailingCallers: 1, ...opts.engine }, ...(opts.outbound ? { outbound: opts.outbound } : {}) });
  const parts = createEngine({ config, kv, clock, metrics, source });
  await parts.start();
  return {
    parts,
    clock,
    kv,
    metrics,
    source,
    price: (req) => parts.engine.price({ context: {}, scope: SCOPE, policy: null, ...req }),
    close: async () => {
      await parts.close();
      if (!opts.shared) await kv.close();
    },
  };
}

/** The EngineError a promise rejects with (fails the test when it resolves or rejects otherwise). */
export async function engineError(work: Promise<unknown>, code: EngineErrorCode): Promise<EngineError> {
  try {
    await work;
  } catch (err) {
    expect(err, String(err)).to.be.instanceOf(EngineError);
    const e = err as EngineError;
    expect(e.code, e.message).to.equal(code);
    return e;
  }
  expect.fail(`expected EngineError ${code}, the call succeeded`);
}

export function stage(outcome: { stages: TraceStage[] }, name: string): TraceStage {
  const s = outcome.stages.find((x) => x.stage === name);
  expect(s, `trace stage ${name} in ${JSON.stringify(outcome.stages)}`).to.not.equal(undefined);
  return s as TraceStage;
}

/** Current value of the breaker gauge for one function label (a built-in's name, any other function's id). */
export async function breakerGauge(metrics: Metrics, label: string): Promise<number | undefined> {
  const gauge = metrics.registry.getSingleMetric('pricing_breaker_state');
  if (!gauge) return undefined;
  const data = await gauge.get();
  return data.values.find((v) => v.labels.function === label)?.value;
}

/** Records `n` latency samples of `ms` for a function. */
export function recordLatency(h: Harness, fnId: string, ms: number, n = 5): void {
  for (let i = 0; i < n; i++) h.parts.latency.record(fnId, ms);
}
