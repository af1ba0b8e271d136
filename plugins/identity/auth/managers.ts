import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
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
  if (p.kind === 'person') {
    if (id.role === 'owner' || id.role === 'admin') return;
    throw roleTooLow(`Only owners and admins ${action}.`);
  }
  if (p.kind === 'api_key' && id.keyKind === 'person' && !p.agentId) {
    const role = id.creatorPersonId ? await workspaces.roleOf(p.workspaceId, id.creatorPersonId) : null;
    if (role === 'owner' || role === 'admin') return;
    throw roleTooLow(`Only owners and admins ${action}, and a key only while its creator is one; this key's creator is not.`);
  }
  // SPEC: the key an agent kept at its workspace's claim has "full access of an API key in that workspace until
  // revoked". Only such a key is of a registration's kind in a claimed workspace; its access tokens stay an agent's.
  if (p.kind === 'api_key' && id.claimedAt && !id.sandbox && (id.keyKind === 'sandbox' || id.keyKind === 'oauth_client')) return;
  throw new ApiError('forbidden', `Agent keys${p.kind === 'access_token' ? ' and their access tokens' : ''} cannot ${action}; use a workspace key or a person's session.`, {
    hint: 'Create a workspace key (POST /api/api-keys, person only) or sign in.',
    fields: { reason: 'agent-bound key' },
  });
}

const MANAGING_ROLES: ReadonlySet<string> = new Set(['owner', 'admin']);

/**
 * What assertManagesWorkspace would answer, judged from the credential as it was read (a key's creator's role as of the
 * key's lookup), without a database read: for what a response offers (next actions), never for what is allowed.
 */
export function seemsToManageWorkspace(p: Principal): boolean {
  const id = identityOf(p);
  if (p.kind === 'person') return MANAGING_ROLES.has(id.role ?? '');
  if (p.kind === 'api_key' && id.keyKind === 'person' && !p.agentId) return MANAGING_ROLES.has(id.creatorRole ?? '');
  return p.kind === 'api_key' && Boolean(id.claimedAt) && !id.sandbox && (id.keyKind === 'sandbox' || id.keyKind === 'oauth_client');
}
