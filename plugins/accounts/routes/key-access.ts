import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { identityOf } from '../../identity';
import type { Role, Workspaces } from '../../identity';

export interface RevocableKey {
  id: string;
  created_by_person_id: string | null;
}

/** Who may revoke a key `creatorRole` made: the answer's hint must name someone who can. */
function askWhom(creatorRole: Role | null): string {
  if (creatorRole === 'owner') return 'Ask a workspace owner to revoke it.';
  if (creatorRole === 'admin') return 'Ask a workspace owner, or the admin who created it, to revoke it.';
  return 'Ask a workspace owner or admin to revoke it.';
}

/**
 * Refuses `p` revoking a key another person made, by the team's rule for touching people (plugins/team/README.md): a key
 * acts as its creator (team:admin, workspace:claim) and revoking it cancels the invitations it made, so an admin who may
 * not revoke an admin invitation or demote an admin must not reach them through the key either. Owners revoke any key,
 * admins the keys of members and keys no person made (an agent's own key), members none; everyone revokes their own.
 * `viaAgent` names the agent whose disabling would revoke the key.
 */
export async function assertMayRevoke(workspaces: Pick<Workspaces, 'roleOf'>, p: Principal, key: RevocableKey, viaAgent?: string): Promise<void> {
  const role = identityOf(p).role;
  if (role === 'owner' || key.created_by_person_id === p.personId) return;
  const creatorRole = key.created_by_person_id ? await workspaces.roleOf(p.workspaceId, key.created_by_person_id) : null;
  let reason: string;
  let sentence: string;
  if (role === 'admin') {
    if (creatorRole !== 'owner' && creatorRole !== 'admin') return;
    reason = creatorRole === 'owner' ? 'only owners may revoke a key an owner created' : 'only owners may revoke a key another admin created';
    sentence = `Only workspace owners can revoke an API key ${creatorRole === 'owner' ? 'an owner' : 'another admin'} created; admins revoke their own keys and those of members.`;
  } else {
    reason = 'members revoke only their own keys';
    sentence = "Members can revoke only the API keys they created; this key is another person's.";
  }
  const error = viaAgent ? `Disabling this agent would revoke its key ${key.id}, and you may not revoke that key. ${sentence}` : sentence;
  throw new ApiError('forbidden', error, {
    hint: viaAgent ? `${askWhom(creatorRole)} A workspace owner may also disable the agent.` : askWhom(creatorRole),
    fields: { reason, creator_role: creatorRole, ...(viaAgent ? { key_id: key.id, agent_id: viaAgent } : {}) },
  });
}
