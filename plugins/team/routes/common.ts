import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { TEAM_ADMIN } from '../services/actors';

/** Team routes take persons (by role) and API keys naming team:admin; the services decide. */
export const TEAM_TAGS = ['Team'];

export function principalOf(p: Principal | null): Principal {
  if (!p) throw new ApiError('unauthorized', 'Send a credential.');
  return p;
}

export const PERSON_ONLY = {
  accepts: ['person'] as const,
  wrongCredentialMessage: 'This route accepts a person\'s session or person token only, not an API key.',
  wrongCredentialHint: 'Sign in (POST /api/auth/signin) and use the session cookie or Authorization: Bearer <person token>.',
};

/** Routes a person calls by role and a key only when it names team:admin (Actors.resolve checks it), for the OpenAPI document. */
export const TEAM_ADMIN_KEY = { handlerScopes: [TEAM_ADMIN] };
