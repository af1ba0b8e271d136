import { z } from 'zod';
import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { created, defineRoute } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { effectiveScopes, insufficientScope, NAME_ONLY_SCOPES, NAMED_SCOPES, unknownScopes } from '../../identity';
import type { AccountsDeps } from './deps';

export const personTokenBody = z.strictObject({
  scopes: z.array(z.string().min(1).max(64)).min(1).max(20).describe('The named scopes the token carries (legacy read, write and admin expand); at most those of the credential asking.'),
});
export const personTokenExample = { scopes: ['price:compute'] };

const personTokenResponse = z.object({
  token: z
    .object({
      access_token: z.string().describe('A person token (a JWT) bound to the session that asked: ending the session stops it.'),
      token_type: z.literal('Bearer'),
      expires_in: z.number().int().describe('Seconds the token is valid for (PERSON_TOKEN_TTL_S).'),
      scope: z.string().describe('The scopes it carries, space-separated.'),
    })
    .describe('A narrower person token, for a script that should do less than its person may.'),
});

/**
 * The scopes a person token may be narrowed to: named ones only; never a permission granted by name only (a token
 * made from a credential is refused where those count); never more than the asking credential holds.
 */
function narrowedScopes(principal: Principal, requested: readonly string[]): string[] {
  const names = [...new Set(requested)];
  const unknown = unknownScopes(names);
  if (unknown.length > 0) {
    throw new ApiError('validation_error', `Unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`, {
      issues: unknown.map((u) => ({ path: `scopes.${names.indexOf(u)}`, reason: `"${u}" is not a scope` })),
      hint: `Valid scopes: ${NAMED_SCOPES.filter((n) => !NAME_ONLY_SCOPES.includes(n)).join(', ')}.`,
      example: personTokenExample,
    });
  }
  const nameOnly = names.filter((n) => (NAME_ONLY_SCOPES as readonly string[]).includes(n));
  if (nameOnly.length > 0) {
    throw new ApiError('validation_error', `${nameOnly.join(', ')} count only on a key that names them, sent as itself: a token never carries them.`, {
      issues: nameOnly.map((n) => ({ path: `scopes.${names.indexOf(n)}`, reason: `"${n}" is granted by name only, on a key` })),
      hint: 'Create a key naming it (POST /api/api-keys, owners and admins) and send that key itself.',
      example: personTokenExample,
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
      body: personTokenBody,
      example: personTokenExample,
      responses: { 201: { description: 'The narrower token (shown once).', schema: personTokenResponse } },
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
