import { ApiError } from '../../../core/errors';
import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import type { Principal } from '../../../core/auth';
import * as s from '../schemas';
import type { ObservationStore } from '../services/observations';

function principalOf(p: Principal | null): Principal {
  if (!p) throw new ApiError('unauthorized', 'Send a credential.');
  return p;
}

export function observationRoutes(store: ObservationStore, now: () => number): RouteSpec[] {
  return [
    defineRoute({
      id: 'observations.create',
      method: 'post',
      path: '/api/data/observations',
      summary: 'Contribute price observations (1 to 500) that verification uses as evidence.',
      description:
        'Each observation: product_type, currency, amount (decimal string > 0), observed_at (ISO date-time, not in the future), source (a label) and optional context of string keys. Stored with your workspace; every bad item is reported in issues with its index path and nothing is stored.',
      tags: ['Verification'],
      scopes: ['price:compute'],
      body: s.observationsBody(now),
      example: s.observationsExample(now),
      responses: { 201: { description: 'The stored observations.' } },
      handler: async (ctx) => {
        const p = principalOf(ctx.principal);
        const data = await store.contribute(p.workspaceId, ctx.body.observations);
        return created({ object: 'observation_batch', created: data.length, data, request_id: ctx.requestId });
      },
    }),
    defineRoute({
      id: 'observations.list',
      method: 'get',
      path: '/api/data/observations',
      summary: 'List your workspace\'s price observations, newest first (filters product_type, currency, origin).',
      tags: ['Verification'],
      scopes: ['price:compute'],
      query: s.observationsQuery,
      handler: async (ctx) => {
        const p = principalOf(ctx.principal);
        return ok(await store.list(p.workspaceId, ctx.query));
      },
    }),
  ];
}
