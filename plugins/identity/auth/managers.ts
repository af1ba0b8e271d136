import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { openApiPath } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import type { Role } from '../domain';
import type { Workspaces } from '../services/workspaces';
import { identityOf } from './principal';

const roleTooLow = (message: string) => new ApiError('forbidden', message, { hint: 'Ask an owner or admin of this workspace.', fields: { reason: 'role too low' } });

/**
 * Who may manage a workspace's configuration that members only read (tester tags, functions):
 * owners and admins, and full-access API keys an owner or admin created for the workspace, while
 * their creator still is one (a member's key does no more than the member), and the key an agent
 * kept when its workspace was claimed. Other agent-bound and OAuth client keys, and the access tokens
 * minted from them, act for one agent, not for the workspace's configuration. `action` completes "Only owners and admins …" (e.g. "change tester tags").
 */
export async function assertManagesWorkspace(p: Principal, workspaces: Pick<Workspaces, 'roleOf'>, action: string): Promise<void> {
  const id = identityOf(p);
  // A person key acts by its creator's role now, read afresh: the one the key was read with may be stale.
  const creatorRole = actsByCreatorRole(p) && id.creatorPersonId ? await workspaces.roleOf(p.workspaceId, id.creatorPersonId) : null;
  switch (managingStanding(p, creatorRole)) {
    case 'manages':
      return;
    case 'role too low':
      throw roleTooLow(`Only owners and admins ${action}.`);
    case 'creator role too low':
      throw roleTooLow(`Only owners and admins ${action}, and a key only while its creator is one; this key's creator is not.`);
    case 'agent-bound':
      throw new ApiError('forbidden', `Agent keys${p.kind === 'access_token' ? ' and their access tokens' : ''} cannot ${action}; use a workspace key or a person's session.`, {
        hint: 'Create a workspace key (POST /api/api-keys, person only) or sign in.',
        fields: { reason: 'agent-bound key' },
      });
  }
}

/**
 * What assertManagesWorkspace would answer, judged from the credential as it was read (a key's creator's role as of the
 * key's lookup), without a database read: for what a response offers (next actions), never for what is allowed.
 */
export function seemsToManageWorkspace(p: Principal): boolean {
  return managingStanding(p, identityOf(p).creatorRole ?? null) === 'manages';
}

const MANAGING_ROLES: ReadonlySet<string> = new Set(['owner', 'admin']);

/** A full-access person key, not bound to an agent: it does what its creator's role allows. */
const actsByCreatorRole = (p: Principal): boolean => p.kind === 'api_key' && identityOf(p).keyKind === 'person' && !p.agentId;

/** The one rule both answer by; `creatorRole` is the role of a person key's creator in the workspace. */
function managingStanding(p: Principal, creatorRole: Role | null): 'manages' | 'role too low' | 'creator role too low' | 'agent-bound' {
  const id = identityOf(p);
  if (p.kind === 'person') return MANAGING_ROLES.has(id.role ?? '') ? 'manages' : 'role too low';
  if (actsByCreatorRole(p)) return MANAGING_ROLES.has(creatorRole ?? '') ? 'manages' : 'creator role too low';
  // SPEC: the key an agent kept at its workspace's claim has "full access of an API key in that workspace until
  // revoked". Only such a key is of a registration's kind in a claimed workspace; its access tokens stay an agent's.
  if (p.kind === 'api_key' && id.claimedAt && !id.sandbox && (id.keyKind === 'sandbox' || id.keyKind === 'oauth_client')) return 'manages';
  return 'agent-bound';
}

/**
 * The routes assertManagesWorkspace guards: those declared fullAccess (workspace configuration no named scope covers:
 * functions, routing policies, tester tags) that take an API key. The other fullAccess routes take people alone (their
 * own account, keys, agents, team), whom their role or the record decides. The OpenAPI document and the refusals
 * /api/me and capabilities report read this one rule (test/plugins/identity/managers.test.ts holds every such route
 * to it).
 */
export function configuresWorkspace(route: RouteSpec): boolean {
  return route.fullAccess === true && (!route.accepts || route.accepts.includes('api_key'));
}

/** An operation of workspace configuration a credential is refused, as /api/me and capabilities report it. */
export interface RefusedOperation {
  operation: string;
  status: 401 | 403;
  reason: string;
}

/**
 * The workspace configuration `p` is refused though its scopes may allow it (an agent's key or token other than the key
 * kept at a claim, a member, a member's key), judged as seemsToManageWorkspace judges: for what an answer reports,
 * never for what is allowed. A sandbox's plan refuses these first, and its capabilities say so: none here.
 */
export function refusedConfiguration(p: Principal, routes: readonly RouteSpec[]): RefusedOperation[] {
  const id = identityOf(p);
  if (id.sandbox) return [];
  const standing = managingStanding(p, id.creatorRole ?? null);
  if (standing === 'manages') return [];
  return routes.filter(configuresWorkspace).map((r) => {
    const operation = `${r.method.toUpperCase()} ${openApiPath(r.path)}`;
    // A route that does not take the credential's kind (tester tags and access tokens) answers 401 before any rule.
    if (r.accepts && !r.accepts.includes(p.kind)) return { operation, status: 401, reason: 'credential kind not accepted' };
    return { operation, status: 403, reason: standing === 'agent-bound' ? 'agent-bound key' : 'role too low' };
  });
}
