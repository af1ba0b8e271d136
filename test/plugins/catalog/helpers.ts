import { expect } from 'chai';
import { newId } from '../../../core/ids';
import { client } from '../../support/http';
import type { TestService } from '../../support/service';

export const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

let seq = 0;
export const uniqueName = (label: string): string => `${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

export interface FunctionSpec {
  label?: string;
  description?: string;
  tags?: string[];
  isPublic?: boolean;
  /** Default: active. */
  status?: 'draft' | 'active' | 'inactive';
  endpointUrl?: string;
  costPerUnit?: string;
  pipeline?: boolean;
}

/**
 * Registers a workspace function and brings it to `status`: external_api at `endpointUrl`, or at an address that never
 * answers when none is given (these tests rank and list it, never call it); a pipeline only when asked for (`pipeline`),
 * since one is never ranked (it cannot run).
 */
export async function createFunction(svc: TestService, key: string, spec: FunctionSpec = {}): Promise<{ id: string; name: string }> {
  const api = client(svc.url, { 'x-api-key': key });
  const name = uniqueName(spec.label ?? 'fn');
  const res = await api.post<Record<string, any>>('/api/functions', {
    name,
    description: spec.description ?? `Test function ${name}`,
    tags: spec.tags ?? [],
    execution_type: spec.pipeline ? 'pipeline' : 'external_api',
    ...(spec.pipeline ? {} : { endpoint_url: spec.endpointUrl ?? 'https://pricing.example.invalid/price' }),
    cost_per_unit: spec.costPerUnit ?? '0.003',
    is_public: spec.isPublic ?? false,
  });
  expect(res.status, res.text).to.equal(201);
  const id = res.body.function.id as string;
  const status = spec.status ?? 'active';
  if (status !== 'draft') {
    const act = await api.patch(`/api/functions/${id}`, { status: 'active' });
    expect(act.status, act.text).to.equal(200);
    if (status === 'inactive') expect((await api.patch(`/api/functions/${id}`, { status: 'inactive' })).status).to.equal(200);
  }
  return { id, name };
}

export interface EventSpec {
  functionId: string;
  workspaceId: string;
  status?: 'ok' | 'error';
  errorCode?: string | null;
  outcome?: 'accepted' | 'rejected' | null;
  quality?: number | null;
  confidence?: number | null;
  channel?: 'api' | 'mcp' | 'demo';
  operation?: 'compute' | 'batch_item' | 'router' | 'demo' | 'verify' | 'test';
  /** Default: now. */
  createdAt?: Date;
  /** Answered from the result cache. Default: false. */
  cached?: boolean;
}

/** Writes usage events straight into the table, as the usage recorder and the outcome PATCH would. */
export async function insertEvents(svc: TestService, events: EventSpec[]): Promise<void> {
  for (const e of events) {
    await svc.sequelize.query(
      `INSERT INTO usage_events (id, workspace_id, operation, channel, status, function_id, confidence, outcome, quality_score, classification, created_at, error_code, cached)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'mine', $10, $11, $12)`,
      {
        bind: [
          newId('use'),
          e.workspaceId,
          e.operation ?? 'compute',
          e.channel ?? 'api',
          e.status ?? 'ok',
          e.functionId,
          e.confidence === undefined ? ((e.status ?? 'ok') === 'ok' ? 0.8 : null) : e.confidence,
          e.outcome ?? null,
          e.quality ?? null,
          (e.createdAt ?? new Date()).toISOString(),
          e.errorCode ?? null,
          e.cached ?? false,
        ],
      },
    );
  }
}

/** Counts statements sent through Sequelize and the node-postgres pool while `work` runs. */
export async function countQueries(svc: TestService, pool: { query: (...args: never[]) => unknown }, work: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const original = svc.sequelize.query.bind(svc.sequelize);
  svc.sequelize.query = ((...args: Parameters<typeof original>) => {
    const sql: unknown = args[0];
    seen.push(typeof sql === 'string' ? sql : JSON.stringify(sql));
    return original(...args);
  }) as typeof original;
  const poolQuery = pool.query;
  pool.query = (...args: never[]) => {
    const first: unknown = args[0];
    seen.push(typeof first === 'string' ? first : JSON.stringify(first));
    return poolQuery.apply(pool, args);
  };
  try {
    await work();
  } finally {
    svc.sequelize.query = original;
    pool.query = poolQuery;
  }
  return seen;
}
