import { errorBodySchema } from '../../../core/errors';
import type { RequestContext } from '../../../core/http/route';
import type { IdentityDeps } from './deps';

/**
 * Paused self-registration answers 503 before the body is read: a caller that fixed its body first would only then
 * learn that no body is taken. Other methods go on to their 405.
 */
export function pausedRegistrationScreen(d: IdentityDeps): (ctx: RequestContext) => undefined {
  return (ctx) => {
    if (ctx.req.method === 'POST') d.onboarding.assertRegistrationOpen();
    return undefined;
  };
}

/** The registration routes' 503 in the OpenAPI document. */
export const pausedRegistrationRefusal = {
  description: 'self_registration_closed: self-registration is paused (SELF_REGISTRATION_OPEN=false); retry after Retry-After (SELF_REGISTRATION_RETRY_AFTER_S), or have a person sign up.',
  schema: errorBodySchema,
};
