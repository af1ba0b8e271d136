import { ApiError, errorBodySchema } from '../../../core/errors';
import { originRefused } from '../../../core/http/origin';
import type { RequestContext } from '../../../core/http/route';
import type { IdentityDeps } from './deps';

/**
 * Before the body is read, for a POST: a page of another site is refused (403), then paused self-registration answers
 * 503 (a caller that fixed its body first would only then learn that no body is taken). Other methods go on to their 405.
 *
 * A page of another site could post a registration from each visitor's browser (a text/plain body needs no CORS
 * preflight): it would spend the visitors' per-address and the service's daily registrations without ever reading a
 * key, since the service sends no CORS headers. Programs send no Origin; pages of the service itself and of this
 * machine's loopback are allowed, and REGISTRATION_ALLOWED_ORIGINS names others.
 */
export function registrationScreen(d: IdentityDeps): (ctx: RequestContext) => undefined {
  return (ctx) => {
    if (ctx.req.method !== 'POST') return undefined;
    if (originRefused(ctx.req, d.config.identity.registrationAllowedOrigins, new URL(d.publicUrl()).origin)) {
      throw new ApiError('forbidden', 'Registration from a web page of another site is refused.', {
        hint: 'Register from your program or agent (it sends no Origin header), or from a page of this service; an operator may allow an origin with REGISTRATION_ALLOWED_ORIGINS.',
        fields: { reason: 'page of another site' },
      });
    }
    d.onboarding.assertRegistrationOpen();
    return undefined;
  };
}

/**
 * The registration routes' `closed`: while self-registration is paused, and, for one caller (`address`), while its
 * address's registrations for the day, or the service's, are spent: no answer offers it a registration it would be
 * refused. An in-process lookup (services/spent-registrations.ts), no store read.
 */
export function registrationClosed(d: IdentityDeps): (address?: string) => boolean {
  return (address) => !d.config.identity.selfRegistrationOpen || (address !== undefined && d.spentRegistrations.spent(address));
}

/** What the registration routes' 429 adds in the OpenAPI document (dailyQuotaRefusal's `after`). */
export const REGISTRATION_QUOTA_NEXT = '; next: try_demo, sign_up';

/** The registration routes' 503 in the OpenAPI document. */
export const pausedRegistrationRefusal = {
  description: 'self_registration_closed: self-registration is paused (SELF_REGISTRATION_OPEN=false); retry after Retry-After (SELF_REGISTRATION_RETRY_AFTER_S), or have a person sign up.',
  schema: errorBodySchema,
};

/** The registration routes' 403 for a page of another site, in the OpenAPI document. */
export const crossSiteRegistrationRefusal = {
  description: 'forbidden (reason "page of another site"): the request came from a web page of another site (its Origin is not the service\'s, a loopback page or one in REGISTRATION_ALLOWED_ORIGINS).',
  schema: errorBodySchema,
};
