import type { Principal } from '../../../core/auth';
import type { Clock } from '../../../core/clock';
import { ApiError } from '../../../core/errors';
import type { EventBus } from '../../../core/events';
import type { Hooks } from '../../../core/hooks';
import { defineRoute, ok } from '../../../core/http/route';
import type { RequestContext, RouteSpec } from '../../../core/http/route';
import { eventReadResponse, eventsListResponse, outcomeResponse } from '../responses';
import * as s from '../schemas';
import { eventView, priceText } from '../services/event-view';
import type { EventRow } from '../services/event-view';
import type { UsageEvents } from '../services/events';
import { asMemberOf, choosesWorkspace } from './member-workspace';

/** Usage is read and reported with the workspace's keys, tokens and people (not embed tokens or payments). */
export const USAGE_CREDENTIALS = ['api_key', 'access_token', 'person'] as const;
export const USAGE_TAGS = ['Usage'];

export const principalOf = (p: Principal | null): Principal => {
  if (!p) throw new ApiError('unauthorized', 'Send a credential.');
  return p;
};

const notFound = () =>
  new ApiError('not_found', 'No usage event with this id in your workspace.', { hint: 'List your usage events with GET /api/usage/events; receipts of compute responses link to their event.' });

/**
 * The event as the viewer sees it; for a person who named no workspace (a receipt link opened in a
 * browser), failing that, as the event's own workspace sees it when the person is a member there.
 */
async function eventFor(d: { events: UsageEvents; hooks: Hooks }, ctx: RequestContext, id: string): Promise<EventRow | null> {
  const row = await d.events.visible(principalOf(ctx.principal).workspaceId, id);
  if (row) return row;
  const member = await asMemberOfEventsWorkspace(d, ctx, id);
  return member ? d.events.visible(member.workspaceId, id) : null;
}

/**
 * A person who named no workspace, acting in the workspace that made event `id` when they are a
 * member there (re-authenticated and authorized as with x-workspace-id); null otherwise.
 */
async function asMemberOfEventsWorkspace(d: { events: UsageEvents; hooks: Hooks }, ctx: RequestContext, id: string): Promise<Principal | null> {
  const p = principalOf(ctx.principal);
  if (p.kind !== 'person' || choosesWorkspace(ctx.req)) return null;
  const owner = await d.events.workspaceOf(id);
  if (!owner || owner === p.workspaceId) return null;
  return asMemberOf(d.hooks, ctx, owner);
}

const notTheCaller = (classification: string) =>
  new ApiError('forbidden', `Only the workspace that made this call reports its outcome; your workspace sees it as ${classification}.`, {
    hint: 'Report outcomes of your own calls: GET /api/usage/events?classification=mine lists them.',
    fields: { reason: 'not your call' },
  });

export function eventRoutes(d: { events: UsageEvents; bus: EventBus; clock: Clock; hooks: Hooks }): RouteSpec[] {
  return [
    defineRoute({
      id: 'usage.events.list',
      method: 'get',
      path: '/api/usage/events',
      summary: 'Usage events you can see, newest first: yours (mine), keyless callers you tagged (testers), and calls to your functions (others).',
      tags: USAGE_TAGS,
      accepts: USAGE_CREDENTIALS,
      query: s.eventsQuery,
      responses: { 200: { description: 'A page of usage events, newest first.', schema: eventsListResponse } },
      handler: async ({ principal, query }) => ok(await d.events.list(principalOf(principal).workspaceId, query)),
    }),
    defineRoute({
      id: 'usage.events.read',
      method: 'get',
      path: '/api/usage/events/:id',
      summary: 'One usage event you see in the list (Mine, Testers or Others, shown alike; the receipt link of compute responses).',
      description:
        "A person who sends no x-workspace-id also opens an event made in another workspace they are a member of, as that workspace sees it: a claimed sandbox's receipt links open in a browser.",
      tags: USAGE_TAGS,
      accepts: USAGE_CREDENTIALS,
      params: s.eventParams,
      query: s.noQuery,
      responses: { 200: { description: 'The event, as the workspace sees it in its list.', schema: eventReadResponse } },
      handler: async (ctx) => {
        const row = await eventFor(d, ctx, ctx.params.id);
        if (!row) throw notFound();
        return ok({ usage_event: eventView(row) });
      },
    }),
    defineRoute({
      id: 'usage.outcome',
      method: 'patch',
      path: '/api/usage/events/:id/outcome',
      summary: 'Report what became of a priced call: accepted or rejected, with an optional quality score from 0 to 1; the last report wins.',
      tags: USAGE_TAGS,
      accepts: USAGE_CREDENTIALS,
      scopes: ['price:compute'],
      params: s.eventParams,
      query: s.noQuery,
      body: s.outcomeBody,
      example: s.outcomeExample,
      responses: { 200: { description: 'The event with the outcome now recorded, and the report it replaced.', schema: outcomeResponse } },
      handler: async (ctx) => {
        const { params, body } = ctx;
        const p = principalOf(ctx.principal);
        const at = new Date(d.clock.now());
        const record = (workspaceId: string) => d.events.recordOutcome(workspaceId, params.id, body.outcome, body.quality_score ?? null, at);
        let change = await record(p.workspaceId);
        if (!change) {
          // An event the workspace sees (testers, others) exists for it: saying so is no leak, and truer than "no such event".
          const seen = await d.events.visible(p.workspaceId, params.id);
          if (seen) throw notTheCaller(seen.viewer_class);
          // The receipt's outcome link, followed by a person of the workspace that made the call (as GET opens it).
          const member = await asMemberOfEventsWorkspace(d, ctx, params.id);
          change = member ? await record(member.workspaceId) : null;
          if (!change) throw notFound();
        }
        const e = change.event;
        await d.bus.emit('usage.outcome_recorded', {
          eventId: e.id,
          workspaceId: e.workspace_id,
          outcome: body.outcome,
          qualityScore: body.quality_score ?? null,
          functionId: e.function_id,
          functionName: e.function_name,
          price: priceText(e.price, e.currency),
          currency: e.currency,
          contextKeys: e.context_keys,
          networkEvidence: e.network_evidence,
          at: at.toISOString(),
          calledAt: new Date(e.created_at).toISOString(),
        });
        return ok({ usage_event: eventView(e), previous: change.previous });
      },
    }),
  ];
}
