import { ApiError } from '../../../core/errors';
import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { sandboxRefusal } from '../../identity';
import { callerScopeOf, marketplaceOutsidePlan } from '../../pricing';
import * as s from '../schemas';
import { catalogueListResponse, catalogueReadResponse } from '../responses';
import { filterTags } from '../services/catalogue';
import type { Catalogue } from '../services/catalogue';


/** Identical for a missing function and one out of the caller's sight, so existence does not leak. */
export const catalogueNotFound = (sandbox = false): ApiError =>
  new ApiError('function_not_found', 'No pricing function with this id or name is available to you.', {
    hint: sandbox
      ? 'GET /api/catalog lists the functions an unclaimed sandbox can see: the built-ins (claimed, it sees its own and the marketplace too).'
      : 'GET /api/catalog lists the functions you can see: built-ins, your own, and public marketplace functions.',
  });

export function catalogueRoutes(catalogue: Catalogue, claimable: boolean): RouteSpec[] {
  return [
    defineRoute({
      id: 'catalog.list',
      method: 'get',
      path: '/api/catalog',
      summary: 'Browse pricing functions: without a credential the built-ins and public marketplace functions; with one, what that caller can reach.',
      description:
        'Each entry shows name, description, tags, cost per unit, cost multiplier and average latency ("no data" when never timed), labelled built-in, yours or marketplace. Filters: search (name, description, tags; case-insensitive) and tag (repeatable or a comma list; every tag must match).',
      tags: ['Catalogue'],
      auth: 'optional',
      sandbox: true,
      query: s.catalogueQuery,
      responses: { 200: { description: 'A page of catalogue entries.', schema: catalogueListResponse } },
      handler: ({ principal, query }) => {
        const tags = filterTags(query.tag);
        return ok(catalogue.browse(principal, { search: query.search, tags, limit: query.limit, cursor: query.cursor }));
      },
    }),
    defineRoute({
      id: 'catalog.read',
      method: 'get',
      path: '/api/catalog/:id',
      summary: 'One catalogue entry by function id or name; a function out of your reach answers the same 404 as a missing one.',
      tags: ['Catalogue'],
      auth: 'optional',
      sandbox: true,
      params: s.catalogueParams,
      responses: { 200: { description: 'The entry.', schema: catalogueReadResponse }, 403: marketplaceOutsidePlan },
      handler: ({ principal, params }) => {
        const entry = catalogue.entry(params.id, principal);
        if (!entry && catalogue.outsidePlan(params.id, principal)) throw sandboxRefusal('price with marketplace functions', claimable);
        if (!entry) throw catalogueNotFound(principal !== null && callerScopeOf(principal).builtInsOnly);
        return ok({ function: entry });
      },
    }),
  ];
}
