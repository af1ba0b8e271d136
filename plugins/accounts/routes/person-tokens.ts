import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { created, defineRoute } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { effectiveScopes, FULL_ACCESS, insufficientScope, NAME_ONLY_SCOPES, unknownScopes } from '../../identity';
import * as r from '../responses';
import * as s from '../schemas';
import type { AccountsDeps } from './deps';
import { unknownScopesRefusal } from './keys';

/**
 * The scopes a person token may be narrowed to: named ones only; never a permission granted by name only (a token
 * made from a credential is refused where those count); never more than the asking credential holds.
 */
function narrowedScopes(principal: Principal, requested: readonly string[]): string[] {
  const names = [...new Set(requested)];
  const unknown = unknownScopes(names);
  const nameOnly = names.filter((n) => (NAME_ONLY_SCOPES as readonly string[]).includes(n));
  // Each refused scope is named at once, at the place it was sent.
  const nameOnlyIssues = nameOnly.map((n) => ({ path: `scopes.${requested.indexOf(n)}`, reason: `"${n}" is granted by name only, on a key` }));
  if (unknown.length > 0) {
    const refusal = unknownScopesRefusal(requested, unknown, { hint: `Valid scopes: ${FULL_ACCESS.join(', ')}.`, example: s.personTokenExample });
    throw nameOnly.length > 0 ? refusal.with({ issues: [...(refusal.extras.issues ?? []), ...nameOnlyIssues] }) : refusal;
  }
  if (nameOnly.length > 0) {
    const one = nameOnly.length === 1;
    throw new ApiError('validation_error', `${nameOnly.join(' and ')} ${one ? 'counts' : 'count'} only on a key that names ${one ? 'it' : 'them'}, sent as itself: a token never carries ${one ? 'it' : 'them'}.`, {
      issues: nameOnlyIssues,
      hint: 'Create a key naming it (POST /api/api-keys, owners and admins) and send that key itself.',
      example: s.personTokenExample,
    });
  }
  const wanted = effectiveScopes(names);
  const held = principal.scopes ?? [];
  const beyond = wanted.filter((w) => !held.includes(w));
  if (beyond.length > 0) throw insufficientScope(beyond, 'A token cannot be wider than the credential asking for it: yours does not hold these scopes.');
  return wanted;
}

export function personTokenRoutes(d: AccountsDeps): RouteSpec[] {
  return [
    defineRoute({
      id: 'user.tokens.create',
      method: 'post',
      path: '/api/user/tokens',
      summary: 'A person token carrying fewer scopes, bound to your current session.',
      tags: ['People'],
      accepts: ['person'],
      returnsSecret: true,
      body: s.personTokenBody,
      example: s.personTokenExample,
      responses: { 201: { description: 'The narrower token (shown once).', schema: r.personTokenResponse } },
      handler: async ({ principal, body }) => {
        const p = principal as Principal;
        const sessionId = p.sessionId;
        if (!p.personId || !sessionId) throw new ApiError('unauthorized', 'Sign in first: a person token is bound to a session.');
        const scopes = narrowedScopes(p, body.scopes);
        const token = await d.sessions.mintToken(p.personId, sessionId, scopes);
        return created({ token: { access_token: token, token_type: 'Bearer' as const, expires_in: d.sessions.tokenLifetimeS, scope: scopes.join(' ') } });
      },
    }),
  ];
}
