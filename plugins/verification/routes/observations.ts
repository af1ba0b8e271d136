import { ApiError } from '../../../core/errors';
import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import type { Principal } from '../../../core/auth';
import * as s from '../schemas';
import { observationsCreateResponse, observationsListResponse } from '../responses';
import type { ObservationStore } from '../services/observations';
import type { ObservationLimits } from '../services/observation-limits';
import { dailyQuotaRefusal } from '../../../core/daily-quota';
import { observationsExampleFor } from './observations-example';

function principalOf(p: Principal | null): Principal {
  if (!p) throw new ApiError('unauthorized', 'Send a credential.');
  return p;
}

const DAY_MS = 86_400_000;
/** Most items a warning names one by one; the rest are counted. */
const MAX_NAMED = 20;

/**
 * A contribution observed before the verification window is stored (it is a true record) but never
 * read as evidence: the answer says so, naming the items, instead of a silent 201.
 */
function windowWarnings(items: ReadonlyArray<{ observed_at: string }>, now: number, maxAgeDays: number): { warnings?: string[] } {
  const cut = now - maxAgeDays * DAY_MS;
  const old = items.flatMap((o, i) => (Date.parse(o.observed_at) < cut ? [`observations.${i}`] : []));
  if (old.length === 0) return {};
  const named = old.slice(0, MAX_NAMED);
  const rest = old.length - named.length;
  const last = named.pop() ?? '';
  const list = rest > 0 ? `${[...named, last].join(', ')} and ${rest} more` : named.length > 0 ? `${named.join(', ')} and ${last}` : last;
  const [verb, they, them] = old.length > 1 ? ['were', 'they are', 'them'] : ['was', 'it is', 'it'];
  return { warnings: [`${list} ${verb} observed more than VERIFY_MAX_AGE_DAYS (${maxAgeDays}) days ago: ${they} stored, but verification and the network reference of compute ignore ${them}.`] };
}

export interface ObservationRouteOptions {
  maxAgeDays: number;
  /** OBSERVATIONS_MAX_PER_REQUEST. */
  maxPerRequest: number;
  /** OBSERVATIONS_RETENTION_DAYS: older observed_at is refused. */
  retentionDays: number;
}

export function observationRoutes(store: ObservationStore, limits: ObservationLimits, now: () => number, { maxAgeDays, maxPerRequest, retentionDays }: ObservationRouteOptions): RouteSpec[] {
  return [
    defineRoute({
      id: 'observations.create',
      method: 'post',
      path: '/api/data/observations',
      summary: `Contribute price observations (1 to ${maxPerRequest}) that verification uses as evidence.`,
      description:
        'Each observation: product_type, currency, amount (decimal string > 0), observed_at (ISO date-time, not in the future), source (a label) and optional context of string keys. Stored with your workspace; every bad item is reported in issues with its index path and nothing is stored. A workspace contributes a bounded number of observations per UTC day: a request that would pass it is refused whole (429 daily_quota_exceeded). Observations are kept for a bounded number of days after observed_at, never fewer than verification reads.',
      tags: ['Verification'],
      scopes: ['price:compute'],
      body: s.observationsBody(now, maxPerRequest, retentionDays),
      example: s.observationsExample(now),
      exampleFor: observationsExampleFor(now, maxPerRequest, retentionDays),
      responses: {
        201: { description: 'The stored observations; warnings name items observed before the verification window (stored, never used as evidence).', schema: observationsCreateResponse },
        429: dailyQuotaRefusal("this request's observations would pass the workspace's OBSERVATIONS_PER_WORKSPACE_PER_DAY today (refused whole; limit.remaining says how many still fit)", true),
      },
      handler: async (ctx) => {
        const p = principalOf(ctx.principal);
        const undo = await limits.admit(p.workspaceId, ctx.body.observations.length);
        const data = await store.contribute(p.workspaceId, ctx.body.observations).catch(async (err: unknown) => {
          await undo();
          throw err;
        });
        limits.poke();
        return created({ object: 'observation_batch', created: data.length, data, ...windowWarnings(ctx.body.observations, now(), maxAgeDays), request_id: ctx.requestId });
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
      responses: { 200: { description: 'A page of the observations.', schema: observationsListResponse } },
      handler: async (ctx) => {
        const p = principalOf(ctx.principal);
        return ok(await store.list(p.workspaceId, ctx.query));
      },
    }),
  ];
}
