import type { Request } from 'express';
import { ApiError } from '../../core/errors';
import type { Principal } from '../../core/auth';
import type { RouteSpec } from '../../core/http/route';
import { credentialOf, emptyApiKey, otherAuthorizationScheme } from './auth/authenticators';
import { invalidCredentials, missingCredentials, missingPersonCredentials, WHERE_TO_GET_A_CREDENTIAL, WHERE_TO_GET_A_WORKSPACE_CREDENTIAL, wrongKindOfCredential } from './errors';

/**
 * The 401 for a credential that was sent and that no authenticator takes (a bearer value or key no
 * authenticator recognises, an Authorization header this service does not read), naming what was
 * sent; null when none was sent. The same on every route that is not public, a credential required
 * or optional.
 */
export function unrecognisedCredential(req: Request): ApiError | null {
  if (credentialOf(req)) return invalidCredentials('The credential sent is not one this service recognises.');
  // A credential was sent, in a form this service does not read: saying none was sent would mislead.
  const scheme = otherAuthorizationScheme(req);
  // The hint of every 401 names the accepted forms.
  if (scheme === 'Bearer') return invalidCredentials('The Authorization header carries the Bearer scheme and no token (an empty variable?).');
  if (emptyApiKey(req)) return invalidCredentials('The x-api-key header is empty (an empty variable?).');
  if (scheme === '') return invalidCredentials('The Authorization header carries no scheme (Bearer).');
  if (scheme !== null) return invalidCredentials(`The Authorization scheme "${scheme}" is not accepted here; only Bearer is.`);
  return null;
}

/**
 * SPEC's 401 shapes for requests without an accepted credential, and the 403s for agent tokens
 * on person-only routes.
 */
export function identityUnauthorized(route: RouteSpec, reason: 'missing' | 'wrong_kind', ctx: { req: Request; principal: Principal | null }): ApiError {
  // A credential sent and not recognised is refused by authentication (refuseUnrecognised), counted; this is for none sent.
  const personOnly = route.accepts?.length === 1 && route.accepts[0] === 'person';
  if (reason === 'missing') {
    // A route an unclaimed sandbox is refused offers no registration: the key it would give is refused here too.
    // The pipeline puts the route's keylessTwin in place of try_demo, here as on a refused credential's 401.
    const next = route.sandbox ? WHERE_TO_GET_A_CREDENTIAL : WHERE_TO_GET_A_WORKSPACE_CREDENTIAL;
    return unrecognisedCredential(ctx.req) ?? (personOnly ? missingPersonCredentials() : missingCredentials(undefined, next));
  }
  const principal = ctx.principal;
  // SPEC: an agent token on key management is 403 agent_cannot_manage_keys, rotation (which takes the key itself) included.
  if (principal?.kind === 'access_token' && route.keyManagement) {
    return new ApiError('agent_cannot_manage_keys', 'Agent tokens cannot manage API keys.', {
      hint: personOnly
        ? 'A person manages keys in Settings (session or person token); an agent rotates its own key with POST /api/api-keys/rotate.'
        : 'Send the sandbox or agent key itself in x-api-key to rotate it; a token made from the key cannot.',
    });
  }
  // A token where the key itself is taken (a sandbox's claim link): the credential is good, a token of it is not enough.
  const keyItself = route.accepts?.length === 1 && route.accepts[0] === 'api_key';
  if (principal?.kind === 'access_token' && keyItself) {
    return new ApiError('forbidden', route.wrongCredentialMessage ?? 'This route takes the key itself; a token made from the key is refused.', {
      hint: route.wrongCredentialHint ?? 'Send the key itself in x-api-key.',
      fields: { reason: 'the key itself' },
    });
  }
  if (principal?.kind === 'access_token' && personOnly) {
    return new ApiError('forbidden', 'Agent tokens cannot use this route; it accepts person credentials only.', {
      hint: "This route is for a person signed in to the workspace (session or person token); an agent's token reaches only its agent's own capabilities.",
      fields: { reason: 'person credentials only' },
    });
  }
  const message = route.wrongCredentialMessage ?? (personOnly ? 'This route accepts a person\'s session or person token only; API keys are not accepted here.' : 'This route does not accept this kind of credential.');
  const hint =
    route.wrongCredentialHint ??
    (personOnly ? 'Sign in (POST /api/auth/signin) and send the session cookie or Authorization: Bearer <person token>.' : 'See the route description in /api/openapi.json for the credentials it takes.');
  return wrongKindOfCredential(message, hint, route.wrongCredentialNext ?? (personOnly ? [] : WHERE_TO_GET_A_CREDENTIAL));
}
