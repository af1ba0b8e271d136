import type { Principal } from '../../../core/auth';
import type { IdentityAttributes, Role, WorkspaceRow } from '../domain';
import { CONFIGURATION_ACCESS, effectiveScopes } from '../scopes';
import type { Scope } from '../scopes';
import type { CachedKey } from '../services/key-cache';

/** The identity plugin's view of a principal's attributes. */
export function identityOf(principal: Principal): IdentityAttributes {
  return principal.attributes as unknown as IdentityAttributes;
}

export function workspaceAttributes(w: WorkspaceRow): Pick<
  IdentityAttributes,
  'plan' | 'workspaceName' | 'workspaceStatus' | 'sandbox' | 'isTest' | 'origin' | 'createdByAgent' | 'formerSandbox' | 'claimedAt' | 'parentWorkspaceId'
> {
  return {
    plan: w.plan,
    workspaceName: w.name,
    workspaceStatus: w.status,
    sandbox: w.is_sandbox,
    isTest: w.is_test,
    origin: w.origin,
    createdByAgent: w.created_by_agent,
    formerSandbox: w.former_sandbox,
    claimedAt: w.claimed_at ? w.claimed_at.toISOString() : null,
    parentWorkspaceId: w.parent_id,
  };
}

export function principalFromKey(found: CachedKey): Principal {
  const { key, workspace } = found;
  const attributes: IdentityAttributes = {
    authMethod: 'api_key',
    ...workspaceAttributes(workspace),
    namedScopes: key.scopes,
    legacy: key.legacy,
    keyKind: key.kind,
    keyName: key.name,
    keyExpiresAt: key.expires_at ? key.expires_at.toISOString() : null,
    creatorPersonId: key.created_by_person_id,
    creatorStatus: found.creatorStatus,
    creatorRole: found.creatorRole ?? null,
    ...(found.agentName ? { agentName: found.agentName } : {}),
  };
  return {
    kind: 'api_key',
    workspaceId: workspace.id,
    scopes: effectiveScopes(key.scopes),
    keyId: key.id,
    ...(key.agent_id ? { agentId: key.agent_id } : {}),
    attributes: attributes as unknown as Record<string, unknown>,
  };
}

export function personPrincipal(opts: {
  personId: string;
  sessionId?: string;
  workspace: WorkspaceRow;
  role: Role;
  authMethod: 'session' | 'person_token';
  scopes: readonly string[];
  email?: string | null;
}): Principal {
  const attributes: IdentityAttributes = {
    authMethod: opts.authMethod,
    ...workspaceAttributes(opts.workspace),
    namedScopes: null,
    legacy: false,
    role: opts.role,
    ...(opts.email ? { email: opts.email } : {}),
  };
  return {
    kind: 'person',
    workspaceId: opts.workspace.id,
    scopes: opts.scopes,
    personId: opts.personId,
    ...(opts.sessionId ? { sessionId: opts.sessionId } : {}),
    attributes: attributes as unknown as Record<string, unknown>,
  };
}

/** Which kind of scoped credential a principal is, for the hint of a full-access refusal. */
export function credentialKind(principal: Principal): 'key' | 'access_token' | 'person_token' {
  if (principal.kind === 'access_token') return 'access_token';
  return principal.kind === 'person' ? 'person_token' : 'key';
}

/** The scopes of full access (RouteSpec.fullAccess) a scoped credential lacks; none for an unscoped one or a session. */
export function lackingFullAccess(principal: Principal): Scope[] {
  const held = principal.scopes;
  return held === null ? [] : CONFIGURATION_ACCESS.filter((s) => !held.includes(s));
}
