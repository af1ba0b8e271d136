import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { identityOf } from '../../identity';

/**
 * Changing an agent or minting its keys (POST /api/agents/{id}, its keys, or POST /api/api-keys with agent_id): members only for
 * the agents they created; owners and admins for any. `doing` completes "Members can … only".
 */
export function assertManagesAgent(p: Principal, agent: { created_by_person_id: string | null }, doing: 'manage' | 'mint keys for'): void {
  if (identityOf(p).role === 'member' && agent.created_by_person_id !== p.personId) {
    throw new ApiError('forbidden', `Members can ${doing} only the agents they created; this agent is another person's.`, {
      hint: 'Ask a workspace owner or admin to change it or mint its keys, or create an agent of your own (POST /api/agents).',
      fields: { reason: 'members manage only their own agents' },
    });
  }
}
