import type { PluginDefinition } from '../../core/plugin';
import type { RouteTable } from '../../core/http/pipeline';
import { TOKENS } from '../../core/tokens';
import { AccessTokenAuthenticator, ApiKeyAuthenticator, credentialOf, emptyApiKey, otherAuthorizationScheme } from './auth/authenticators';
import { clientIp } from '../../core/address';
import { IdentityAuthorizer } from './auth/authorizer';
import { FailedAuthGuard } from './auth/failed-auth';
import { RateLimitGuard } from './auth/rate-limit-guard';
import { identitySchema } from './migrations/0001-identity-schema';
import { identityIdempotencyKeys } from './migrations/0002-idempotency-keys';
import { identityRegistrationAddress } from './migrations/0003-registration-address';
import { identitySignupAddress } from './migrations/0004-signup-address';
import { meRoutes } from './routes/me';
import { oauthRoutes } from './routes/oauth';
import { onboardingRoutes } from './routes/onboarding';
import { AuditLog } from './services/audit';
import { IdempotencyKeys } from './services/idempotency';
import { KeyCache } from './services/key-cache';
import { KeyService } from './services/key-service';
import { OAuthService } from './services/oauth';
import { Onboarding } from './services/onboarding';
import { SpentRegistrations } from './services/spent-registrations';
import { loadOrCreateSecret, checkPepperUnchanged, checkTokenSecretUnchanged } from './services/secrets';
import { Workspaces } from './services/workspaces';
import { IDENTITY } from './tokens';
import { invalidCredentials } from './errors';
import { claimOffered } from './limits';
import { identityUnauthorized, unrecognisedCredential } from './unauthorized';

export { IDENTITY } from './tokens';
export { loadOrCreateSecret } from './services/secrets';
export { requestRateOf, bindingRate } from './auth/rate-limit-guard';
export type { RequestRate } from './auth/rate-limit-guard';
export { FailedAuthGuard } from './auth/failed-auth';
export { credentialKind, identityOf, lackingFullAccess, personPrincipal, workspaceAttributes } from './auth/principal';
export { assertManagesWorkspace, configuresWorkspace, seemsToManageWorkspace } from './auth/managers';
export { credentialOf, looksLikeJwt } from './auth/authenticators';
export { credentialIgnored } from './auth/credential-ignored';
export { missingScopeHint, readOnlyRefusal } from './auth/authorizer';
export { apiKeySchema, createIdempotencyHeaders, issuedApiKeySchema, sandboxLimitsSchema, workspaceSchema } from './responses';
export { invalidCredentials, notAMember, emptyWorkspaceHeader, signInRefused, missingCredentials, wrongKindOfCredential, insufficientScope, fullAccessRequired, sandboxRefusal, claimStep, WHERE_TO_GET_A_CREDENTIAL } from './errors';
export { NAMED_SCOPES, NAME_ONLY_SCOPES, LEGACY_SCOPES, FULL_ACCESS, CONFIGURATION_ACCESS, effectiveScopes, unknownScopes, isLegacyReadOnly } from './scopes';
export { sandboxLimits, registrationLimits, AGENT_STARTER_PLAN, changelogFeedUrl, claimOffered } from './limits';
export { keyView } from './services/key-service';
export { MEMBERSHIP_WORKSPACE, workspaceView } from './services/workspaces';
export type { KeyService, NewKey } from './services/key-service';
export type { Workspaces } from './services/workspaces';
export type { AuditLog, AuditEntry } from './services/audit';
export { IDEMPOTENCY_HEADER, REPLAYED_HEADER, checkedIdempotencyKey, idempotencyKeyOf, requestFingerprint } from './services/idempotency';
export type { IdempotencyKeys, IdempotencyClaim, TakeClaim } from './services/idempotency';
export type { Onboarding } from './services/onboarding';
export { assertWorkspaceRoom, lockWorkspace, workspaceLimitReached } from './services/workspace-limits';
export type { WorkspaceLimit } from './services/workspace-limits';
export type { IdentityAttributes, Role, Plan, KeyKind, WorkspaceRow, ApiKeyRow, AuthMethod, AgentRow } from './domain';
export { ROLE_RANK } from './domain';

/**
 * Addresses whose spent registrations are remembered (about 100 bytes each): each took REGISTRATIONS_PER_ADDRESS_PER_DAY
 * registrations to get in, and past the bound the oldest is forgotten, which only offers it registration again.
 */
const SPENT_REGISTRATION_ADDRESSES = 10_000;

/**
 * Workspaces, API keys and scopes, agent self-registration, claims, OAuth client credentials,
 * /api/me, and the authentication, authorization and rate-limit hooks every other plugin relies on.
 */
export const identityPlugin: PluginDefinition = {
  name: 'identity',
  description: 'Workspaces, API keys, scopes, agent sandboxes and claims, OAuth client credentials, rate limits.',
  migrations: [identitySchema, identityIdempotencyKeys, identityRegistrationAddress, identitySignupAddress],
  async register(ctx) {
    const { config, sql, kv, clock, events, hooks, container } = ctx;
    const pepper = await loadOrCreateSecret(sql, 'api_key_pepper', config.identity.apiKeyPepper);
    await checkPepperUnchanged(sql, pepper, ctx.log);
    const tokenSecretText = await loadOrCreateSecret(sql, 'token_secret', config.identity.tokenSecret);
    await checkTokenSecretUnchanged(sql, tokenSecretText, ctx.log);
    const tokenSecret = new TextEncoder().encode(tokenSecretText);

    const cache = new KeyCache(kv, clock, config.identity.keyCacheTtlMs, config.identity.credentialCacheMaxEntries);
    await cache.start();
    const keys = new KeyService(sql, cache, clock, ctx.log, pepper, config.limits.perWorkspace.apiKeys);
    keys.start();
    const workspaces = new Workspaces(sql);
    const idempotency = new IdempotencyKeys(sql, clock, ctx.log, config.limits.idempotencyKeyTtlHours);
    const audit = new AuditLog(sql);
    const spentRegistrations = new SpentRegistrations(kv, clock, () => config.limits.rateLimit.ipv6Prefix, SPENT_REGISTRATION_ADDRESSES);
    await spentRegistrations.start();
    const onboarding = new Onboarding(sql, kv, clock, config, keys, workspaces, audit, events, spentRegistrations);
    const failures = new FailedAuthGuard(kv, config.limits.rateLimit.failedAuthPerAddressPer15Min, config.limits.rateLimit.ipv6Prefix);
    const oauth = new OAuthService(sql, keys, onboarding, clock, config, tokenSecret, failures);
    ctx.onClose(async () => {
      await keys.stop();
      await cache.stop();
      await spentRegistrations.stop();
    });

    container.register(IDENTITY.Keys, { useValue: keys });
    container.register(IDENTITY.Workspaces, { useValue: workspaces });
    container.register(IDENTITY.Onboarding, { useValue: onboarding });
    container.register(IDENTITY.Audit, { useValue: audit });
    container.register(IDENTITY.Idempotency, { useValue: idempotency });
    container.register(IDENTITY.TokenSecret, { useValue: tokenSecret });

    hooks.addAuthenticator(new ApiKeyAuthenticator(keys, failures, clock));
    hooks.addAuthenticator(new AccessTokenAuthenticator(keys, failures, clock, tokenSecret));
    hooks.addAuthorizer(new IdentityAuthorizer(sql, claimOffered(config)));
    hooks.addGuard(new RateLimitGuard(kv, config.limits.rateLimit));
    hooks.unauthorized = identityUnauthorized;
    // An Authorization header this service cannot read (another scheme, none, Bearer without a token) was sent all the
    // same: an optional route answers it the 401 a required route gives, never as a keyless caller.
    hooks.credentialSent = (req) => credentialOf(req) !== null || otherAuthorizationScheme(req) !== null || emptyApiKey(req);
    // A credential sent that no authenticator takes is a rejected credential like any other: refused (429) from an
    // address that sent too many, counted otherwise.
    hooks.refuseUnrecognised = (req) => failures.refuse(clientIp(req), unrecognisedCredential(req) ?? invalidCredentials('The credential sent is not one this service recognises.'));

    const table = container.resolve<RouteTable>(TOKENS.Routes);
    const deps = { config, sql, keys, workspaces, onboarding, oauth, audit, spentRegistrations, publicUrl: ctx.publicUrl, routes: () => table.all().map((r) => r.spec) };
    for (const route of [...onboardingRoutes(deps), ...meRoutes(deps), ...oauthRoutes(deps)]) ctx.route(route);
  },
};
