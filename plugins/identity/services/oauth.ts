import { SignJWT } from 'jose';
import type { Request } from 'express';
import type { Config } from '../../../config';
import { clientIp } from '../../../core/address';
import { unsupportedCharset } from '../../../core/http/json-body';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { newId } from '../../../core/ids';
import { effectiveScopes, NAME_ONLY_SCOPES } from '../scopes';
import type { Scope } from '../scopes';
import { ACCESS_TOKEN_AUDIENCE, looksLikeJwt, unusableKey } from '../auth/authenticators';
import type { KeyService } from './key-service';
import type { CachedKey } from './key-cache';
import type { FailedAuthGuard } from '../auth/failed-auth';
import type { Onboarding, Registration } from './onboarding';

/** RFC 6749 §5.2 token errors, and RFC 7591's for client registration. */
export const OAUTH_ERROR_CODES = ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'unsupported_response_type', 'invalid_scope', 'invalid_target', 'invalid_client_metadata', 'temporarily_unavailable'] as const;

/** Whether an RFC 8707 resource indicator names this service (its base address or an address under it). */
function withinService(resource: string, issuer: string): boolean {
  try {
    const asked = new URL(resource);
    const base = new URL(issuer);
    const path = base.pathname.replace(/\/$/, '');
    return asked.origin === base.origin && (asked.pathname === path || asked.pathname === `${path}/` || asked.pathname.startsWith(`${path}/`)) && asked.hash === '';
  } catch {
    return false;
  }
}

/** What a client does about each OAuth error, sent as `hint` beside RFC 6749's fields (as every error of the service has one). */
export const OAUTH_HINTS: Record<(typeof OAUTH_ERROR_CODES)[number], string> = {
  invalid_request: 'Send grant_type=client_credentials with one client authentication (HTTP Basic with client_id and client_secret, client_secret in the body, or an agent key in x-api-key), form-encoded or JSON; /.well-known/oauth-authorization-server describes this server.',
  invalid_client: 'Send the client_secret POST /api/oauth/register answered (or the one its rotation answered), or an agent key, exactly as it was given; a client whose secret is lost registers anew.',
  invalid_grant: 'Send grant_type=client_credentials with the client secret.',
  unauthorized_client: 'Send the person key itself in x-api-key on each request; no token is needed.',
  unsupported_grant_type: 'Send grant_type=client_credentials: it is the only grant here.',
  unsupported_response_type: 'Register a client (POST /api/oauth/register) and exchange its credentials at POST /api/oauth/token with grant_type=client_credentials.',
  invalid_scope: 'Ask only for scopes the key can grant (listed in error_description), or leave scope out for all of them.',
  invalid_target: "Leave resource out, or name this service's address (or its MCP endpoint under it).",
  invalid_client_metadata: 'Leave grant_types out, or send ["client_credentials"]: no other grant exists here.',
  temporarily_unavailable: 'Retry in a moment.',
};

/**
 * An RFC 6749 §5.2 error: the token endpoint speaks OAuth (`error` is the OAuth code, `error_description` the sentence),
 * with SPEC's `code` (the same code) and a `hint` beside them, extra members RFC 6749 clients ignore.
 */
export class OAuthError extends Error {
  constructor(
    readonly error: (typeof OAUTH_ERROR_CODES)[number],
    readonly description: string,
    readonly status = error === 'invalid_client' ? 401 : 400,
    readonly headers: Record<string, string> = {},
    /** What to do, when it differs from the code's usual advice (OAUTH_HINTS). */
    readonly hint: string = OAUTH_HINTS[error],
  ) {
    super(description);
  }
}

export interface IssuedToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

const EXCHANGEABLE = new Set(['sandbox', 'agent', 'oauth_client']);

/** What a credential sent to the token endpoint is called in the answer saying it was revoked or expired, by its key's kind. */
const SECRET_NAMES: Record<string, string> = { oauth_client: 'This client secret', sandbox: 'This sandbox key', agent: 'This agent key', person: 'This API key' };
const ROTATED_CLIENT = "For an OAuth client that new key is the client's secret now; its client_id stays.";

const FORM_TYPE = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';
const READABLE = `Content-Type: ${FORM_TYPE} (as RFC 6749 asks) or ${JSON_TYPE}, in UTF-8`;

/** The token request's parameters a client sends; each is one string (RFC 6749 §3.3 makes scope one space-separated string). */
const PARAMETERS = ['grant_type', 'client_id', 'client_secret', 'scope', 'resource'] as const;

/**
 * The token request's parameters, read by the body's declared media type (compared without case, as media types are).
 * A body of another or no Content-Type, or in another charset than UTF-8, is refused naming what is read rather than
 * read as something it is not, which would answer a misleading "grant_type is required" (or, for a charset, mangle it).
 */
function parseBody(req: Request): Record<string, string> {
  const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  if (raw.trim() === '') return {};
  const charset = unsupportedCharset(req);
  if (charset) throw new OAuthError('invalid_request', charset.message, 415, {}, `Send the body in UTF-8 (charset=utf-8, or no charset): ${READABLE}.`);
  const header = req.headers['content-type'];
  const type = (typeof header === 'string' ? (header.split(';')[0] ?? '') : '').trim().toLowerCase();
  if (type === FORM_TYPE) return formParameters(raw);
  if (type === JSON_TYPE) return jsonParameters(raw);
  throw new OAuthError(
    'invalid_request',
    type === '' ? `The request body has no Content-Type, so it cannot be read: send ${READABLE}.` : `A body of Content-Type ${type} is not read here: send ${READABLE}.`,
    415,
    {},
    `Send the parameters form-encoded with Content-Type: ${FORM_TYPE} (grant_type=client_credentials&scope=price:compute), or as a JSON object with Content-Type: ${JSON_TYPE}.`,
  );
}

/**
 * A form body's parameters. RFC 6749 §3.1: a parameter must not be sent more than once; read silently, the last value
 * would win (scope=a&scope=b a token of b alone, where the client may have meant both).
 */
function formParameters(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    if (name in out) {
      throw new OAuthError(
        'invalid_request',
        `${name} is sent more than once; each parameter is sent once (RFC 6749 §3.1).`,
        400,
        {},
        name === 'scope' ? 'Send every scope in one scope parameter, separated by spaces: scope=price:compute%20billing:read.' : `Send ${name} once.`,
      );
    }
    out[name] = value;
  }
  return out;
}

/** A JSON value's kind, as a refusal names it: "an array", "a JSON null", "a JSON number". */
const jsonKind = (value: unknown): string => (Array.isArray(value) ? 'an array' : `a JSON ${value === null ? 'null' : typeof value}`);

/** A JSON body's parameters: an object whose parameters are strings (others it may carry are ignored, as in a form). */
function jsonParameters(raw: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new OAuthError('invalid_request', 'The request body is not valid JSON; send application/x-www-form-urlencoded or JSON.');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new OAuthError('invalid_request', 'The request body must be an object.');
  const fields = parsed as Record<string, unknown>;
  for (const name of PARAMETERS) {
    const value = fields[name];
    if (value === undefined || typeof value === 'string') continue;
    // Read as text, ["price:compute"] would become a scope nobody has, refused as if the key could not grant it.
    if (name === 'scope') {
      throw new OAuthError(
        'invalid_request',
        `scope must be one string of space-separated scope names (RFC 6749 §3.3), not ${jsonKind(value)}.`,
        400,
        {},
        'Send scope as one string, such as "price:compute billing:read", or leave it out for everything the key can grant.',
      );
    }
    throw new OAuthError('invalid_request', `${name} must be a string, not ${jsonKind(value)}.`);
  }
  return Object.fromEntries(Object.entries(fields).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function basicCredentials(req: Request): { id: string; secret: string } | null {
  const auth = req.headers.authorization;
  if (typeof auth !== 'string' || !/^basic\s+/i.test(auth)) return null;
  const decoded = Buffer.from(auth.replace(/^basic\s+/i, ''), 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  const malformed = () => new OAuthError('invalid_client', 'Malformed Basic credentials.', 401, { 'WWW-Authenticate': 'Basic realm="pricing-compute"' });
  if (i < 0) throw malformed();
  try {
    // RFC 6749 2.3.1: id and secret are form-urlencoded before Basic encoding.
    return { id: decodeURIComponent(decoded.slice(0, i)), secret: decodeURIComponent(decoded.slice(i + 1)) };
  } catch {
    throw malformed();
  }
}

/** The key headers a token request may carry, each read on its own (credentialOf picks one, and one must be refused when both come). */
function keyHeaders(req: Request): { apiKey?: string; bearer?: string } {
  const key = req.headers['x-api-key'];
  const auth = req.headers.authorization;
  return {
    ...(typeof key === 'string' && key.trim() !== '' ? { apiKey: key.trim() } : {}),
    ...(typeof auth === 'string' && /^bearer\s+\S/i.test(auth) ? { bearer: auth.replace(/^bearer\s+/i, '').trim() } : {}),
  };
}

/** OAuth dynamic client registration (RFC 7591 style) and the client-credentials token endpoint. */
export class OAuthService {
  constructor(
    private readonly sql: Sql,
    private readonly keys: KeyService,
    private readonly onboarding: Onboarding,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly secret: Uint8Array,
    private readonly failures: FailedAuthGuard,
  ) {}

  async registerClient(input: { clientName: string; ip: string; userAgent?: string | undefined; metadata: Record<string, unknown> }): Promise<{ clientId: string; registration: Registration }> {
    const registration = await this.onboarding.registerSandbox({ name: input.clientName, ip: input.ip, userAgent: input.userAgent, origin: 'oauth_registration', keyKind: 'oauth_client' });
    const clientId = newId('oac');
    await this.sql.exec('INSERT INTO oauth_clients (client_id, workspace_id, agent_id, key_id, client_name, metadata) VALUES ($1, $2, $3, $4, $5, $6)', [
      clientId,
      registration.workspace.id,
      registration.agentId,
      registration.key.id,
      input.clientName,
      JSON.stringify(input.metadata),
    ]);
    return { clientId, registration };
  }

  /** Authenticates the client (secret or agent key) and issues a short-lived access token. */
  async token(req: Request, issuer: string): Promise<IssuedToken> {
    const body = parseBody(req);
    const grant = body.grant_type;
    if (!grant) throw new OAuthError('invalid_request', 'grant_type is required; this server supports client_credentials only.');
    if (grant !== 'client_credentials') throw new OAuthError('unsupported_grant_type', `grant_type ${grant} is not supported; use client_credentials (no authorization-code flow exists).`);
    // RFC 8707: a client (the MCP SDK's) names the resource it wants the token for; the token is good for this service alone.
    if (body.resource !== undefined && !withinService(body.resource, issuer)) {
      throw new OAuthError('invalid_target', `resource ${body.resource} is not this service: tokens issued here are for ${issuer} and the addresses under it (its MCP endpoint ${issuer}/api/mcp/rpc included).`);
    }

    const basic = basicCredentials(req);
    const header = keyHeaders(req);
    // RFC 6749 2.3: one authentication method per request, and a client_id sent beside it names the same client.
    const methods = [
      basic ? 'HTTP Basic' : null,
      body.client_secret ? 'client_secret in the body' : null,
      header.apiKey !== undefined ? 'a key in x-api-key' : null,
      header.bearer !== undefined ? 'Authorization: Bearer' : null,
    ].filter((m) => m !== null);
    if (methods.length > 1) throw new OAuthError('invalid_request', `Use one client authentication method, not ${methods.join(' and ')}.`);
    if (basic && body.client_id !== undefined && body.client_id !== basic.id) throw new OAuthError('invalid_request', 'client_id in the body names another client than the HTTP Basic credentials.');
    // Everywhere else a key may come as Authorization: Bearer, and so it may here; an access token is no client credential.
    // RFC 6749 §5.2: a client that authenticated in the Authorization header hears the challenge of the scheme it used.
    const challenge: Record<string, string> = basic ? { 'WWW-Authenticate': 'Basic realm="pricing-compute"' } : header.bearer !== undefined ? { 'WWW-Authenticate': 'Bearer realm="pricing-compute"' } : {};
    if (header.bearer !== undefined && looksLikeJwt(header.bearer)) {
      throw new OAuthError('invalid_client', 'A token (an access token or a person token) cannot be exchanged for an access token: send the client secret (HTTP Basic, or client_secret in the body) or the agent key (x-api-key).', 401, challenge);
    }
    let secret: string | undefined;
    let clientId: string | undefined;
    if (basic) ({ id: clientId, secret } = basic);
    else if (body.client_secret) ({ client_id: clientId, client_secret: secret } = body);
    else if (header.apiKey !== undefined || header.bearer !== undefined) {
      secret = header.apiKey ?? header.bearer;
      clientId = body.client_id;
    }
    if (!secret) throw new OAuthError('invalid_client', 'Client authentication is required: HTTP Basic with client_id and client_secret, client_secret in the body, or an agent key in x-api-key (or as Authorization: Bearer).', 401, { 'WWW-Authenticate': 'Basic realm="pricing-compute"' });

    const ip = clientIp(req);
    // Guessing secrets here is slowed down exactly like guessing keys anywhere else.
    await this.failures.check(ip);
    const bad = async (why?: { message: string; advice: string }) => {
      await this.failures.fail(ip);
      return new OAuthError('invalid_client', why?.message ?? 'Client authentication failed.', 401, challenge, why?.advice);
    };
    if (!this.keys.isWellFormed(secret)) throw await bad();
    const found: CachedKey | null = await this.keys.lookup(secret);
    if (!found) throw await bad();
    // The secret matched a key by its digest: its holder has the key, so hearing why it stopped (and what to do instead)
    // tells them nothing they could not know. A secret that matched nothing keeps the bare answer.
    const unusable = unusableKey(found, this.clock.now(), SECRET_NAMES[found.key.kind] ?? 'This key');
    if (unusable) throw await bad(found.key.kind === 'oauth_client' && found.key.revoked_reason === 'rotated' ? { ...unusable, advice: `${unusable.advice} ${ROTATED_CLIENT}` } : unusable);
    if (clientId) {
      const client = await this.sql.one<{ key_id: string }>('SELECT key_id FROM oauth_clients WHERE client_id = $1', [clientId]);
      if (!client || client.key_id !== found.key.id) throw await bad();
    }
    if (!EXCHANGEABLE.has(found.key.kind)) {
      throw new OAuthError('unauthorized_client', 'Only OAuth client secrets and agent keys are exchanged for access tokens; person keys are used directly.');
    }

    // A token carries its key's scopes, never the name-only permissions (the key itself must be sent for those).
    const allowed = effectiveScopes(found.key.scopes).filter((s) => !NAME_ONLY_SCOPES.includes(s));
    let granted: Scope[] = allowed;
    // A scope named twice is asked once: the token's scope lists each once. One of spaces only asks nothing: all of them.
    const asked = [...new Set((body.scope ?? '').split(/\s+/).filter(Boolean))];
    if (asked.length > 0) {
      const beyond = asked.filter((s) => !(allowed as string[]).includes(s));
      if (beyond.length > 0) throw new OAuthError('invalid_scope', `The key cannot grant: ${beyond.join(', ')}. Grantable: ${allowed.join(' ') || '(none)'}.`);
      granted = asked as Scope[];
    }
    // A token that could do nothing is no token: a key holding only name-only permissions is used itself.
    if (granted.length === 0) {
      throw new OAuthError(
        'invalid_scope',
        `The key's scopes (${(found.key.scopes ?? []).join(', ') || 'none'}) are permissions a token never carries (${NAME_ONLY_SCOPES.join(', ')}): a token of it could do nothing. Send the key itself in x-api-key instead.`,
        400,
        {},
        'Send this key itself in x-api-key where its permission is needed (POST /api/agents/claim with workspace:claim); for a token, exchange a key or client secret that holds an ordinary scope such as price:compute.',
      );
    }
    const ttl = this.config.identity.accessTokenTtlS;
    const now = Math.floor(this.clock.now() / 1000);
    const keyExpiry = found.key.expires_at ? Math.floor(found.key.expires_at.getTime() / 1000) : Infinity;
    const exp = Math.min(now + ttl, keyExpiry);
    const token = await new SignJWT({ scope: granted.join(' '), wid: found.workspace.id, ...(found.key.agent_id ? { agt: found.key.agent_id } : {}) })
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
      .setSubject(found.key.id)
      .setAudience(ACCESS_TOKEN_AUDIENCE)
      .setIssuer(issuer)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .setJti(newId('tok'))
      .sign(this.secret);
    this.keys.touch(found.key.id);
    return { access_token: token, token_type: 'Bearer', expires_in: exp - now, scope: granted.join(' ') };
  }
}
