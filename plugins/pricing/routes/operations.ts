import { z } from 'zod';
import { callerScopeOf } from '../services/caller-scope';
import type { Principal } from '../../../core/auth';
import { errorBodySchema } from '../../../core/errors';
import { listQuery, pageByKey } from '../../../core/pagination';
import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { latencyView } from '../../../engine';
import type { CircuitBreakers, FunctionDescriptor, FunctionRegistry, LatencyStats } from '../../../engine';
import { functionsQuery } from '../schemas';
import { pipelineUnavailable } from '../services/engine-errors';
import { FUNCTION_SORT_KEY, functionSortKey } from './functions';
import { routingHealthResponse } from '../responses-functions';
import { pipelineListResponse, pipelineStagesResponse } from '../responses-policies';

/** Running a pipeline has no success to show: 501, always. */
const PIPELINE_RUN_RESPONSES = { 501: { description: 'Always: pipeline execution is not available (pipeline_execution_unavailable).', schema: errorBodySchema } };

/** A reference list paged as every list is (limit, cursor), in its declared order. */
const referenceQuery = z.object(listQuery);
const inDeclaredOrder = <T>(rows: readonly T[], idOf: (row: T) => string, q: { limit: number; cursor?: string | undefined }) =>
  pageByKey(rows.map((row, i) => ({ row, key: String(i).padStart(6, '0') })), (x) => x.key, (x) => idOf(x.row), q, (x) => x.row, /^\d{6}$/);

/** Any id: running a pipeline is 501 whatever it names (SPEC: always). */
const anyPipelineId = z.object({ id: z.string() });

/** Reference pipelines that can be listed (execution is not available: 501). */
export const REFERENCE_PIPELINES = [
  {
    id: 'pl_cost_to_shelf',
    name: 'cost-to-shelf',
    description: 'Cost-plus price, bounded step from the current price, then charm rounding.',
    stages: ['cost-plus', 'anchored-adjustment', 'charm-pricing'],
  },
  {
    id: 'pl_market_position',
    name: 'market-position',
    description: 'Competitive position against observed prices, then charm rounding.',
    stages: ['competitive-position', 'charm-pricing'],
  },
];

export const PIPELINE_STAGES = [
  { name: 'cost-plus', kind: 'price' },
  { name: 'competitive-position', kind: 'price' },
  { name: 'elasticity-optimum', kind: 'price' },
  { name: 'anchored-adjustment', kind: 'adjust' },
  { name: 'charm-pricing', kind: 'present' },
];


export function operationRoutes(registry: FunctionRegistry, breakers: CircuitBreakers, latency: LatencyStats, instanceId: string): RouteSpec[] {
  // Another workspace's function's sample count is its call volume: withheld as the leaderboard withholds its usage.
  const readerLatency = (f: FunctionDescriptor, reader: string) => {
    const v = latencyView(latency.snapshot(f.id));
    return breakers.showsVolume(f, reader) ? v : { ...v, samples: null };
  };
  return [
    defineRoute({
      id: 'pipelines.list',
      method: 'get',
      path: '/api/pipelines',
      summary: 'Reference pipelines (listing works; execution answers 501).',
      tags: ['Pipelines'],
      sandbox: true,
      query: referenceQuery,
      responses: { 200: { description: 'A page of the reference pipelines.', schema: pipelineListResponse } },
      handler: ({ query }) => ok(inDeclaredOrder(REFERENCE_PIPELINES, (p) => p.id, query)),
    }),
    defineRoute({
      id: 'pipelines.stages',
      method: 'get',
      path: '/api/pipelines/stages',
      summary: 'Stages reference pipelines are made of.',
      tags: ['Pipelines'],
      sandbox: true,
      query: referenceQuery,
      responses: { 200: { description: 'A page of the stages.', schema: pipelineStagesResponse } },
      handler: ({ query }) => ok(inDeclaredOrder(PIPELINE_STAGES, (st) => st.name, query)),
    }),
    defineRoute({
      id: 'pipelines.run',
      method: 'post',
      path: '/api/pipelines/:id/run',
      summary: 'Run a pipeline: always 501 pipeline_execution_unavailable (credentials are checked first).',
      tags: ['Pipelines'],
      sandbox: true,
      params: anyPipelineId,
      responses: PIPELINE_RUN_RESPONSES,
      handler: () => {
        throw pipelineUnavailable();
      },
    }),
    defineRoute({
      id: 'pipelines.runPublic',
      method: 'post',
      path: '/api/public/pipelines/:id/run',
      summary: 'Run a pipeline without a key: always 501 pipeline_execution_unavailable.',
      tags: ['Pipelines'],
      auth: 'public',
      params: anyPipelineId,
      responses: PIPELINE_RUN_RESPONSES,
      handler: () => {
        throw pipelineUnavailable(true);
      },
    }),
    defineRoute({
      id: 'routing.health',
      method: 'get',
      path: '/api/routing/health',
      summary: 'Circuit breaker state and latency statistics of the functions you can use, as this instance keeps them (instance, kept_per).',
      tags: ['Routing policies'],
      sandbox: true,
      // Paged and filtered as GET /api/functions, in its order: the marketplace makes the reachable functions many.
      query: functionsQuery,
      responses: { 200: { description: 'A page of the reachable functions\' breakers and latency on the instance that answered, in the order of GET /api/functions.', schema: routingHealthResponse } },
      handler: ({ principal, query }) => {
        const p = principal as Principal;
        const scope = callerScopeOf(p);
        const fns = registry.reachable(scope).filter((f) => query.built_in === undefined || (query.built_in === 'true') === f.builtIn);
        const page = pageByKey(fns, functionSortKey, (f) => f.id, query, (f) => ({ function: { id: f.id, name: f.name }, breaker: breakers.readerView(f, scope.healthCaller, p.workspaceId), latency: readerLatency(f, p.workspaceId) }), FUNCTION_SORT_KEY);
        return ok({ ...page, instance: instanceId, kept_per: 'instance' });
      },
    }),
  ];
}
