import type { PrincipalKind } from '../../core/auth';
import type { RouteSpec } from '../../core/http/route';
import { CONFIGURATION_ACCESS, NAME_ONLY_SCOPES, configuresWorkspace } from '../identity';

/**
 * What the OpenAPI document says about who may call a route: its security requirements (each naming
 * the scopes the route's checks refuse a credential without), the `x-required-scopes` and
 * `x-full-access` extensions, and one sentence for the operation's description.
 */

export type SecurityRequirement = Record<string, string[]>;

const isNameOnly = (scope: string): boolean => (NAME_ONLY_SCOPES as readonly string[]).includes(scope);

/**
 * Every scope a key is refused without (403 insufficient_scope naming it in required_scopes): the route's own, those
 * its handler checks, and for a full-access route what the authorizer asks of a scoped credential.
 */
export function requiredScopes(route: RouteSpec): string[] {
  return [...new Set([...(route.scopes ?? []), ...(route.handlerScopes ?? []), ...(route.fullAccess ? CONFIGURATION_ACCESS : [])])];
}

/** The credential kinds a route takes, as the pipeline checks them (`accepts`, default any). */
export function kindsOf(route: RouteSpec): readonly PrincipalKind[] {
  return route.accepts ?? ['api_key', 'access_token', 'person'];
}

/**
 * The schemes a credential kind is sent in, each with the scopes it must hold there: a person acts by their role where
 * a key needs a name-only scope, and a token made from a key never carries one (so it is left out where one is needed).
 */
function schemesOf(kind: PrincipalKind, scopes: readonly string[]): SecurityRequirement[] {
  const ordinary = scopes.filter((s) => !isNameOnly(s));
  switch (kind) {
    case 'api_key':
      return [{ ApiKey: [...scopes] }, { ApiKeyBearer: [...scopes] }];
    case 'access_token':
      return ordinary.length < scopes.length ? [] : [{ AccessToken: [...scopes] }];
    case 'person':
      return [{ Session: ordinary }, { PersonToken: ordinary }];
    default:
      return [];
  }
}

/**
 * The security schemes (components.securitySchemes): one per way a credential is sent, so a route's requirements say
 * which it takes (a person-only route refuses an API key or an access token sent as Bearer).
 */
export const SECURITY_SCHEMES = {
  ApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key (pcs_…) in x-api-key.' },
  ApiKeyBearer: { type: 'http', scheme: 'bearer', description: 'An API key (pcs_…) sent as Authorization: Bearer <key>; the same credential as ApiKey.' },
  AccessToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'An OAuth access token (POST /api/oauth/token, client_credentials) as Authorization: Bearer; it carries the scopes it was minted with, never a name-only one.',
  },
  PersonToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "A person token (from sign-in) as Authorization: Bearer; acts as the person, by their role." },
  Session: { type: 'apiKey', in: 'cookie', name: 'pcs_session', description: "A person's browser session." },
  ClientBasic: { type: 'http', scheme: 'basic', description: 'OAuth client authentication at the token endpoint (client_secret_basic): client_id and client_secret as HTTP Basic.' },
  MetricsToken: { type: 'http', scheme: 'bearer', description: "The operator's METRICS_TOKEN as Authorization: Bearer, on GET /metrics while it is set." },
} as const;

/** Schemes only some configurations use: listed in the document only when a route takes them. */
export const CONDITIONAL_SCHEMES: ReadonlySet<string> = new Set(['MetricsToken', 'PersonToken', 'Session']);

/** The route's security requirements: none for a public route, the empty one first for an optional credential. */
export function securityOf(route: RouteSpec): SecurityRequirement[] {
  const policy = route.auth ?? 'required';
  if (policy === 'public') {
    const own = route.selfAuthenticated;
    return own ? [...own.schemes.map((name) => ({ [name]: [] })), ...(own.bodyCredentials ? [{}] : [])] : [];
  }
  const scopes = requiredScopes(route);
  // Each scheme belongs to one kind of credential, so each appears once.
  const all = kindsOf(route).flatMap((kind) => schemesOf(kind, scopes));
  return policy === 'optional' ? [{}, ...all] : all;
}

const takesKey = (route: RouteSpec): boolean => kindsOf(route).some((k) => k === 'api_key' || k === 'access_token');

/** The operation's `x-required-scopes` and `x-full-access`, on every route that takes credentials. */
export function accessExtensions(route: RouteSpec): Record<`x-${string}`, unknown> {
  if ((route.auth ?? 'required') === 'public') return {};
  return { 'x-required-scopes': requiredScopes(route), 'x-full-access': route.fullAccess === true };
}

/** One sentence on the scopes, full access and sandbox keys, for the operation's description (none for a public route). */
export function accessSentence(route: RouteSpec): string | undefined {
  if ((route.auth ?? 'required') === 'public') return undefined;
  const parts: string[] = [];
  const named = [...(route.scopes ?? []), ...(route.handlerScopes ?? [])];
  if (named.length > 0) {
    const byName = named.filter(isNameOnly);
    parts.push(
      `Needs scope${named.length > 1 ? 's' : ''} ${named.join(', ')}${byName.length ? ` (${byName.join(', ')} named on the API key itself; people act by their role)` : ''}.`,
    );
  }
  if (route.fullAccess) parts.push(fullAccessSentence(route));
  if (configuresWorkspace(route)) parts.push(managersSentence(route));
  if (takesKey(route)) parts.push(route.sandbox ? 'Sandbox keys may call this.' : 'Sandbox keys may not call this (403 plan_restricted until a person claims the workspace).');
  return parts.length ? parts.join(' ') : undefined;
}

/**
 * What full access means on the route, in the credentials its security lists: a person-only route (the person's own
 * account, keys, agents, team) refuses every API key whatever its scopes, so it names the person's credentials alone.
 */
function fullAccessSentence(route: RouteSpec): string {
  const kinds = kindsOf(route);
  const holding = CONFIGURATION_ACCESS.join(', ');
  if (!takesKey(route)) {
    return `Needs a person's full access: their session, or a person token (one narrowed with POST /api/user/tokens must hold ${holding}). API keys, whatever their scopes, are refused (401), and access tokens (403).`;
  }
  const full = [...(kinds.includes('api_key') ? ['a key created without scopes'] : []), ...(kinds.includes('person') ? ["a person's session"] : [])];
  return `Needs a full-access credential: ${full.length ? `${full.join(', ')}, or ` : ''}a scoped credential holding ${holding}.`;
}

/**
 * Full access is not all workspace configuration takes (identity's assertManagesWorkspace): an agent's key minted
 * without scopes holds full access and is refused all the same, which the sentence above alone would not tell.
 */
function managersSentence(route: RouteSpec): string {
  const tokens = kindsOf(route).includes('access_token') ? ' and access tokens' : '';
  return `Only owners and admins change it, with keys they made while they are, and the key an agent kept at its workspace's claim; other agent keys${tokens} get 403 forbidden, reason "agent-bound key" (GET /api/me: not_allowed).`;
}
