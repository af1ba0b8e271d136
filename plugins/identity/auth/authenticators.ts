import type { Request } from 'express';
import { decodeJwt, jwtVerify } from 'jose';
import type { Authenticator, Principal } from '../../../core/auth';
import type { ApiError } from '../../../core/errors';
import { clientIp } from '../../../core/address';
import type { Clock } from '../../../core/clock';
import { effectiveScopes } from '../scopes';
import type { IdentityAttributes } from '../domain';
import { emptyWorkspaceHeader, invalidCredentials, notAMember, revokedKey, revokedKeyExplained } from '../errors';
import type { KeyService } from '../services/key-service';
import type { CachedKey } from '../services/key-cache';
import type { FailedAuthGuard } from './failed-auth';
import { principalFromKey } from './principal';

export const ACCESS_TOKEN_AUDIENCE = 'pcs:access';

/**
 * The refusal of a request carrying its credential header twice, or a key and a different bearer
 * credential, or null: which one would count
 * (Node's first Authorization, or the joined x-api-key values read as one malformed key) is no basis
 * for access. One pass over the raw headers (Node keeps only the first Authorization in req.headers).
 */
export function repeatedCredentialHeader(req: Request): ApiError | null {
  let keys = 0;
  let authorizations = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]?.toLowerCase();
    if (name === 'x-api-key') keys++;
    else if (name === 'authorization') authorizations++;
  }
  if (keys > 1) return invalidCredentials(`This request carries ${keys} x-api-key headers; send one credential in one header.`);
  if (authorizations > 1) return invalidCredentials(`This request carries ${authorizations} Authorization headers; send one credential in one header.`);
  if (keys === 1 && authorizations === 1) return twoCredentials(req);
  return null;
}

/**
 * A key in x-api-key beside a different bearer credential: acting as either would surprise the
 * caller who sent the other (a person's token beside an agent's key would act as the agent), so
 * neither counts (RFC 6750 §2: one method per request). The same key in both is one credential.
 */
function twoCredentials(req: Request): ApiError | null {
  const auth = req.headers.authorization;
  if (typeof auth !== 'string' || !/^bearer\s+\S/i.test(auth)) return null;
  const key = String(req.headers['x-api-key']).trim();
  if (key === '' || auth.replace(/^bearer\s+/i, '').trim() === key) return null;
  return invalidCredentials('This request carries two credentials, one in x-api-key and one in Authorization: Bearer; send one.', 'Keep only the header of the credential that should act.');
}

/** The scheme of an Authorization header that is not Bearer ("" for a value without one; "Bearer" for one without a token), or null. */
export function otherAuthorizationScheme(req: Request): string | null {
  const auth = req.headers.authorization;
  if (typeof auth !== 'string' || auth === '') return null;
  if (/^bearer\s*$/i.test(auth)) return 'Bearer';
  if (/^bearer\s+/i.test(auth)) return null;
  const scheme = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)\s+\S/.exec(auth)?.[1];
  return scheme ?? '';
}

/** An x-api-key header sent with nothing in it: a key meant to be sent (an empty variable), not the absence of one. */
export function emptyApiKey(req: Request): boolean {
  return req.headers['x-api-key'] === '';
}

/** The credential a request carries: x-api-key, or the Authorization bearer value. */
export function credentialOf(req: Request): { source: 'x-api-key' | 'bearer'; value: string } | null {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string' && key !== '') return { source: 'x-api-key', value: key.trim() };
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^bearer\s+/i.test(auth)) return { source: 'bearer', value: auth.replace(/^bearer\s+/i, '').trim() };
  return null;
}

export function looksLikeJwt(value: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(value);
}


/**
 * A token (a JWT: an OAuth access token, a person token) sent in x-api-key, which takes keys only: "malformed key" would
 * send its holder looking for a key they never had. Told by its shape, and its audience read without verifying it (only
 * on this refusal's path), so the header it belongs in is named.
 */
function tokenSentAsKey(cred: { source: 'x-api-key' | 'bearer'; value: string }): ApiError | null {
  if (cred.source !== 'x-api-key' || !looksLikeJwt(cred.value)) return null;
  let audience: unknown;
  try {
    audience = decodeJwt(cred.value).aud;
  } catch {
    return null;
  }
  const what = audience === ACCESS_TOKEN_AUDIENCE ? 'an OAuth access token' : 'a token (a JWT)';
  // The message is also the challenge's error_description: a header value, so ASCII only.
  return invalidCredentials(`This is ${what}, not an API key: x-api-key takes API keys only.`, 'Send the token as Authorization: Bearer <token> instead, without x-api-key.');
}

/** Checks that a key found by hash may be used now. */
export function assertKeyUsable(found: CachedKey, now: number, viaToken = false): void {
  if (found.key.revoked_at) throw revokedKey(found.key, viaToken);
  const expired = keyExpiry(found, now, viaToken ? 'The key behind this access token' : 'This API key');
  if (expired) throw invalidCredentials(expired.message, expired.advice);
}

/**
 * Why a key found by hash may not be used now (revoked, from its revoked_reason, or expired) and what its holder does
 * instead, or null while it may; `subject` names it in the sentence ("This client secret" at the token endpoint).
 */
export function unusableKey(found: CachedKey, now: number, subject: string): { message: string; advice: string } | null {
  if (found.key.revoked_at) return revokedKeyExplained(found.key, subject);
  return keyExpiry(found, now, subject);
}

function keyExpiry(found: CachedKey, now: number, subject: string): { message: string; advice: string } | null {
  const { key } = found;
  if (!key.expires_at || key.expires_at.getTime() > now) return null;
  // A sandbox's (or OAuth client's) key expires on its own; a person's or agent's key on the date it was made with.
  const selfIssued = key.kind === 'sandbox' || key.kind === 'oauth_client';
  return {
    message: `${subject} expired at ${key.expires_at.toISOString()}.`,
    advice: selfIssued
      ? 'A sandbox key expires key_lifetime_days after registration (the limits its registration answered) unless its workspace is claimed first; a later claim does not revive it. Register again (POST /api/agents/register, or POST /api/oauth/register for client credentials).'
      : key.kind === 'agent'
        ? 'It expired on the date it was created with. Ask a person of the workspace for a new key for this agent (POST /api/agents/{id}/keys).'
        : 'It expired on the date it was created with. Create a new key (POST /api/api-keys), or ask a person of the workspace for one.',
  };
}

/** API keys in `x-api-key` (or as a bearer value shaped like a key). */
export class ApiKeyAuthenticator implements Authenticator {
  readonly name = 'api-key';

  constructor(
    private readonly keys: KeyService,
    private readonly failures: FailedAuthGuard,
    private readonly clock: Clock,
  ) {}

  async authenticate(req: Request): Promise<Principal | null> {
    // The first authenticator: the check covers tokens and person credentials too, and counts as a rejected credential.
    const repeated = repeatedCredentialHeader(req);
    if (repeated) return this.failures.refuse(clientIp(req), repeated);
    const cred = credentialOf(req);
    if (!cred) return null;
    if (cred.source === 'bearer' && !this.keys.looksLikeKey(cred.value)) return null;
    // An address that sent too many rejected credentials is slowed down for every key, valid or not; each rejection counts.
    const principal = await this.failures.attempt(clientIp(req), async () => {
      if (!this.keys.isWellFormed(cred.value)) {
        throw (
          tokenSentAsKey(cred) ??
          invalidCredentials('The API key is malformed.', 'Keys look like pcs_sbx_… , pcs_agt_… , pcs_usr_… or pcs_oac_… followed by 32 characters; send the whole key as returned when it was created.')
        );
      }
      const record = await this.keys.lookup(cred.value);
      if (!record) throw invalidCredentials('The API key is not recognised.');
      assertKeyUsable(record, this.clock.now());
      this.keys.touch(record.key.id);
      return principalFromKey(record);
    });
    refuseOtherWorkspace(req, principal);
    return principal;
  }
}

/**
 * A key (or a token made from one) acts in its own workspace only. `x-workspace-id` is how people
 * choose among theirs; a key sent with another workspace's id is refused rather than acting, silently,
 * somewhere its program did not name. The same 404 a person gets for a workspace they are not in.
 */
function refuseOtherWorkspace(req: Request, principal: Principal): void {
  const asked = req.headers['x-workspace-id'];
  if (typeof asked !== 'string' || asked === principal.workspaceId) return;
  // Empty, it meant to name a workspace (an unset variable): refused as a person's is, not taken as "the key's own".
  if (asked.trim() === '') throw emptyWorkspaceHeader(`A key acts in the workspace it was made in (${principal.workspaceId}, tenant_id in GET /api/me) only: leave the header out, or name that workspace in it.`);
  throw notAMember(`A key acts in the workspace it was made in (${principal.workspaceId}, tenant_id in GET /api/me) only: leave x-workspace-id out, or use a key made in the workspace you name.`);
}

/** OAuth access tokens (`Authorization: Bearer <jwt>` with our access audience). */
export class AccessTokenAuthenticator implements Authenticator {
  readonly name = 'access-token';

  constructor(
    private readonly keys: KeyService,
    private readonly failures: FailedAuthGuard,
    private readonly clock: Clock,
    private readonly secret: Uint8Array,
  ) {}

  async authenticate(req: Request): Promise<Principal | null> {
    const cred = credentialOf(req);
    if (!cred || cred.source !== 'bearer' || !looksLikeJwt(cred.value)) return null;
    let audience: unknown;
    try {
      audience = decodeJwt(cred.value).aud;
    } catch {
      return null;
    }
    if (audience !== ACCESS_TOKEN_AUDIENCE) return null;
    // Refused before it is verified when the address sent too many rejected credentials; each rejection (a bad or
    // expired token, its key gone, revoked or expired) counts.
    const principal = await this.failures.attempt(clientIp(req), () => this.principalOf(cred.value));
    refuseOtherWorkspace(req, principal);
    return principal;
  }

  private async principalOf(token: string): Promise<Principal> {
    let payload: { sub?: string; scope?: unknown; exp?: number };
    try {
      ({ payload } = await jwtVerify(token, this.secret, {
        audience: ACCESS_TOKEN_AUDIENCE,
        algorithms: ['HS256'],
        currentDate: new Date(this.clock.now()),
      }));
    } catch (err) {
      const expired = (err as { code?: string }).code === 'ERR_JWT_EXPIRED';
      throw invalidCredentials(expired ? 'The access token has expired.' : 'The access token is not valid.', 'Get a new token at POST /api/oauth/token with your client credentials or agent key.');
    }
    const record = payload.sub ? await this.keys.lookupById(payload.sub) : null;
    if (!record) throw invalidCredentials('The key behind this access token no longer exists.');
    assertKeyUsable(record, this.clock.now(), true);
    const keyPrincipal = principalFromKey(record);
    const tokenScopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    const keyScopes = effectiveScopes(record.key.scopes);
    const attributes: IdentityAttributes = {
      ...(keyPrincipal.attributes as unknown as IdentityAttributes),
      authMethod: 'access_token',
      tokenOfKeyId: record.key.id,
      tokenExpiresAt: payload.exp ? new Date(payload.exp * 1000).toISOString() : '',
    };
    this.keys.touch(record.key.id);
    return {
      ...keyPrincipal,
      kind: 'access_token',
      // A token never carries more than its key, and never the name-only permissions.
      scopes: tokenScopes.filter((s) => (keyScopes as string[]).includes(s)),
      attributes: attributes as unknown as Record<string, unknown>,
    };
  }
}
