import type { MissingMethod, RequestContext, RouteSpec } from '../../../core/http/route';
import type { FunctionRegistry } from '../../../engine';
import { readOnlyRefusal, seemsToManageWorkspace } from '../../identity';
import { callerScopeOf } from '../services/caller-scope';
import { mayCall } from '../services/next-actions';

/** Why no DELETE: said in every answer of it. */
const NEVER_DELETED = 'Functions are never deleted (usage records and routing policies name them for good)';

/**
 * The documented answer, and the one for a caller the function is not shown to (no credential, an id nobody holds or one
 * out of the caller's reach, alike: existence is not told): who withdraws a function, and how, without an example to send.
 */
export const WITHDRAWAL_BY_OWNERS = `${NEVER_DELETED}: the owners and admins of a function's workspace withdraw it from routing and the marketplace with a PATCH of this path, {"status":"inactive"}, and bring it back with {"status":"active"}; built-in functions are never withdrawn.`;

/** Who may send the withdrawing PATCH among those who reach a function (docs/routing.md: owners and admins, with full access). */
const FULL_ACCESS_CREDENTIAL = 'your session, or a key created with no scopes';

/**
 * The 405 of DELETE /api/functions/{id}, for the caller who asked: the withdrawing PATCH as example only to a caller who may
 * send it (its own function, active, and a credential allowed the PATCH); a built-in or another workspace's marketplace
 * function is told why the caller cannot withdraw it, and the rest the documented answer. No database is read: the
 * credential as authenticated and the registry decide, as what a response offers (next actions) is decided.
 */
export function functionDeletion(registry: FunctionRegistry, update: () => RouteSpec): MissingMethod {
  return {
    hint: WITHDRAWAL_BY_OWNERS,
    forCaller: ({ principal, params }: RequestContext) => {
      const p = principal;
      // The path's id as sent (a 405 validates nothing): by id or name, as the PATCH takes it; anything else finds nothing.
      const id = (params as { id?: unknown } | undefined)?.id;
      const fn = p && typeof id === 'string' ? registry.resolve(id, callerScopeOf(p)) : undefined;
      if (!p || !fn) return { hint: WITHDRAWAL_BY_OWNERS };
      if (fn.builtIn) return { hint: `${NEVER_DELETED}, and ${fn.name} is a built-in function: built-ins are never withdrawn or changed. To stop using it, route around it with a routing policy.` };
      if (fn.workspaceId !== p.workspaceId) {
        return { hint: `${NEVER_DELETED}, and ${fn.name} is another workspace's function, listed on the marketplace: only its owners and admins can withdraw it. To stop using it, route around it with a routing policy.` };
      }
      const path = `PATCH /api/functions/${fn.id}`;
      if (fn.status === 'draft') return { hint: `${NEVER_DELETED}. ${fn.name} is a draft: it has never been active, so it is out of routing and off the marketplace already; leave it a draft to keep it unused.` };
      if (fn.status === 'inactive') return { hint: `${NEVER_DELETED}. ${fn.name} is withdrawn already (inactive): out of routing and off the marketplace; ${path} {"status":"active"} would bring it back.` };
      if (!seemsToManageWorkspace(p)) return { hint: `${NEVER_DELETED}: an owner or admin of this workspace withdraws ${fn.name} with ${path} {"status":"inactive"}; this credential may not, so ask one of them.` };
      // A suspended account may only read: its PATCH would be refused whatever its credential.
      const restricted = readOnlyRefusal(p);
      if (restricted) return { hint: `${NEVER_DELETED}. ${restricted.message}` };
      if (!mayCall(p, update())) {
        return { hint: `${NEVER_DELETED}: ${fn.name} is withdrawn with ${path} {"status":"inactive"}, sent with a credential of full access (${FULL_ACCESS_CREDENTIAL}); this one was narrowed by its scopes.` };
      }
      return { hint: `${NEVER_DELETED}: a PATCH of this path with example {"status":"inactive"} withdraws ${fn.name} from routing and the marketplace; {"status":"active"} brings it back.`, example: { status: 'inactive' } };
    },
  };
}
