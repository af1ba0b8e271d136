import type { Request } from 'express';
import type { Principal } from '../../../core/auth';
import { isApiError } from '../../../core/errors';
import type { Hooks } from '../../../core/hooks';
import type { RequestContext } from '../../../core/http/route';

/** Whether a request chose its workspace with `x-workspace-id` (as the person authenticator reads it: a non-empty value). */
export function choosesWorkspace(req: Request): boolean {
  const asked = req.headers['x-workspace-id'];
  return typeof asked === 'string' && asked !== '';
}

/**
 * The principal a person's request would have carried with `x-workspace-id: <workspaceId>`: the
 * request authenticated again with that header and authorized for the route, by the same
 * authenticators and authorizers as any request naming it (membership, role, account status, plan).
 * Null when the person is not a member of that workspace (the authenticator's 404), so a caller
 * learns nothing of a workspace it does not belong to. A link a browser opens carries no header;
 * this is how it is served in the workspace the record belongs to.
 */
export async function asMemberOf(hooks: Hooks, ctx: RequestContext, workspaceId: string): Promise<Principal | null> {
  const req = Object.create(ctx.req, { headers: { value: { ...ctx.req.headers, 'x-workspace-id': workspaceId }, enumerable: true } }) as Request;
  let principal: Principal | null;
  try {
    principal = await hooks.authenticate(req);
  } catch (err) {
    if (isApiError(err) && err.status === 404) return null;
    throw err;
  }
  if (principal?.kind !== 'person' || principal.workspaceId !== workspaceId) return null;
  for (const a of hooks.authorizers) await a.authorize(principal, ctx.route, req);
  return principal;
}
