import { ApiError } from '../../../core/errors';
import type { Principal } from '../../../core/auth';
import { pageByKey } from '../../../core/pagination';
import type { ListEnvelope } from '../../../core/pagination';
import { isReachable } from '../../../engine';
import type { CircuitBreakers, FunctionDescriptor, FunctionRegistry, LatencyStats } from '../../../engine';
import { FUNCTION_SORT_KEY, callerScopeOf, functionSortKey, functionView, healthCallerOfPrincipal } from '../../pricing';

export interface BrowseQuery {
  /** Case-insensitive substring of the name, the description or a tag. */
  search?: string | undefined;
  /** Every one of these tags (case-insensitive) must be on the function. */
  tags: readonly string[];
  limit: number;
  cursor?: string | undefined;
}

export type CatalogueEntry = Record<string, unknown>;

/** Most tags one filter names (a function carries at most 20, so more could match nothing). */
export const MAX_FILTER_TAGS = 20;

/** parseTags, refusing more than MAX_FILTER_TAGS: REST and MCP filter alike. */
export function filterTags(raw: string | readonly string[] | undefined): string[] {
  const tags = parseTags(raw);
  if (tags.length > MAX_FILTER_TAGS) {
    throw new ApiError('validation_error', `At most ${MAX_FILTER_TAGS} tags can be filtered on.`, { issues: [{ path: 'tag', reason: `at most ${MAX_FILTER_TAGS} tags` }], hint: 'Narrow the tag list, or use search.' });
  }
  return tags;
}

/** Splits `tag` query values (repeated and/or comma lists) into distinct lower-case tags. */
export function parseTags(raw: string | readonly string[] | undefined): string[] {
  if (raw === undefined) return [];
  const values = typeof raw === 'string' ? [raw] : raw;
  const tags = values.flatMap((v) => v.split(',')).map((t) => t.trim().toLowerCase()).filter((t) => t !== '');
  return [...new Set(tags)];
}

/**
 * The function catalogue over the in-memory registry (no database work per request): what a caller
 * can reach, or for an anonymous caller the built-ins and the active public marketplace functions.
 */
export class Catalogue {
  constructor(
    private readonly registry: FunctionRegistry,
    private readonly latency: LatencyStats,
    private readonly breakers: CircuitBreakers,
  ) {}

  /** Whether the caller sees the function: reachability for a credential, the public listing otherwise. */
  visible(fn: FunctionDescriptor, principal: Principal | null): boolean {
    if (!principal) return fn.builtIn || (fn.isPublic && fn.status === 'active');
    return isReachable(fn, callerScopeOf(principal));
  }

  view(fn: FunctionDescriptor, principal: Principal | null): CatalogueEntry {
    return functionView(fn, { latency: this.latency, breakers: this.breakers }, principal?.workspaceId ?? '', principal ? healthCallerOfPrincipal(principal) : undefined);
  }

  /** Every function the caller sees that matches the search and tags, unordered. */
  matching(principal: Principal | null, q: Pick<BrowseQuery, 'search' | 'tags'>): FunctionDescriptor[] {
    const needle = q.search?.trim().toLowerCase() ?? '';
    return this.registry
      .all()
      .filter((f) => this.visible(f, principal))
      .filter((f) => needle === '' || f.name.toLowerCase().includes(needle) || f.description.toLowerCase().includes(needle) || f.tags.some((t) => t.toLowerCase().includes(needle)))
      .filter((f) => {
        if (q.tags.length === 0) return true;
        const own = new Set(f.tags.map((t) => t.toLowerCase()));
        return q.tags.every((t) => own.has(t));
      });
  }

  /** One page of `matching`, built-ins first and then by name (the order of GET /api/functions). */
  browse(principal: Principal | null, q: BrowseQuery): ListEnvelope<CatalogueEntry> {
    return this.page(this.matching(principal, q), principal, q);
  }

  page(matches: FunctionDescriptor[], principal: Principal | null, q: Pick<BrowseQuery, 'limit' | 'cursor'>): ListEnvelope<CatalogueEntry> {
    return pageByKey(matches, functionSortKey, (f) => f.id, q, (f) => this.view(f, principal), FUNCTION_SORT_KEY);
  }

  /**
   * Whether a sandbox asks for a marketplace function (public and active, so nothing is revealed): outside its plan,
   * answered 403 plan_restricted as GET /api/functions/{id} and compute answer it, not the 404 of a missing one.
   */
  outsidePlan(ref: string, principal: Principal | null): boolean {
    if (!principal || !callerScopeOf(principal).builtInsOnly) return false;
    const fn = this.registry.find(ref);
    return !!fn && !fn.builtIn && fn.isPublic && fn.status === 'active';
  }

  /** One entry by id or name; undefined when missing and when out of the caller's sight alike. */
  entry(ref: string, principal: Principal | null): CatalogueEntry | undefined {
    const fn = this.registry.find(ref);
    return fn && this.visible(fn, principal) ? this.view(fn, principal) : undefined;
  }
}
