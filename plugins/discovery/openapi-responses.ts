import type { RouteSpec } from '../../core/http/route';
import { MCP_PATH } from './documents';
import { NOTICE_ROUTES } from './services/notices';

/**
 * The response headers the service sends and the refusals each operation can give, derived from the
 * route declaration (auth policy, rate-limit class, idempotency header, body, scopes), for the
 * OpenAPI document: components.headers, and per operation and status the headers it carries.
 */

const int = { type: 'integer' } as const;
const str = { type: 'string' } as const;

export type ResponseHeader =
  | 'X-Request-Id'
  | 'X-RateLimit-Limit'
  | 'X-RateLimit-Remaining'
  | 'X-RateLimit-Reset'
  | 'Retry-After'
  | 'X-Demo-Budget-Limit'
  | 'X-Demo-Budget-Remaining'
  | 'X-Demo-Budget-Reset'
  | 'Idempotent-Replayed'
  | 'X-Service-Notices'
  | 'WWW-Authenticate'
  | 'Mcp-Session-Id'
  | 'Allow'
  | 'ETag';

type HeaderDefinition = {
  description: string;
  schema: { type: 'string' | 'integer'; format?: string; enum?: string[] };
};

/** components.headers, by header name. */
export const RESPONSE_HEADERS: Record<ResponseHeader, HeaderDefinition> = {
  'X-Request-Id': { description: 'The request id (req_…), also request_id in an error body; quote it when reporting a problem. Sent on every answer of a route.', schema: str },
  'X-RateLimit-Limit': { description: 'Requests allowed per minute by the count that binds this caller (its workspace, or its network address when anonymous or tighter).', schema: int },
  'X-RateLimit-Remaining': { description: 'Requests still allowed in the current one-minute window of that count, after this one.', schema: int },
  'X-RateLimit-Reset': {
    description: 'Seconds until the whole allowance is back (the window slides, so earlier requests fade out over the next minute rather than vanishing when this one ends); not a timestamp.',
    schema: int,
  },
  'Retry-After': { description: 'Seconds to wait before retrying (429, and 503 answers that are retryable).', schema: int },
  'X-Demo-Budget-Limit': { description: "The keyless demo's calls per hour for this caller address.", schema: int },
  'X-Demo-Budget-Remaining': { description: 'Keyless demo calls left this hour for this address.', schema: int },
  'X-Demo-Budget-Reset': { description: 'When the demo budget starts again (ISO 8601, the next full hour).', schema: { type: 'string', format: 'date-time' } },
  'Idempotent-Replayed': { description: 'true when this answer repeats what an earlier request with the same Idempotency-Key produced (nothing new was created or charged).', schema: { type: 'string', enum: ['true'] } },
  'X-Service-Notices': { description: 'The number of changelog notices in the body (`notices`), 0 when there are none; sent only to API keys.', schema: int },
  'WWW-Authenticate': { description: 'The Bearer challenge (RFC 6750), with error and error_description when a credential was sent and refused.', schema: str },
  'Mcp-Session-Id': { description: 'The MCP session id issued on initialize; send it back on later requests (optional).', schema: str },
  Allow: { description: 'The methods the path takes.', schema: str },
  ETag: { description: 'A strong validator of the body sent (its digest): send it back in If-None-Match to get 304 without the body while the document is unchanged.', schema: str },
};

const RATE: ResponseHeader[] = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
const DEMO: ResponseHeader[] = ['X-Demo-Budget-Limit', 'X-Demo-Budget-Remaining', 'X-Demo-Budget-Reset'];

const rateLimited = (route: RouteSpec): boolean => route.rateLimit !== 'none';
const takesCredentials = (route: RouteSpec): boolean => (route.auth ?? 'required') !== 'public';
const idempotent = (route: RouteSpec): boolean => Object.keys(route.headers?.shape ?? {}).some((h) => h.toLowerCase() === 'idempotency-key');

/** The headers an answer of `route` with `status` ('200', '401', '4XX'…) may carry. */
export function headersFor(route: RouteSpec, status: string): ResponseHeader[] {
  const out: ResponseHeader[] = ['X-Request-Id'];
  // The guards run before anything else of the route (its screen aside), so every answer after them carries their counts.
  // A demo route is keyless: its budget per address stands in for the per-minute rate.
  if (route.rateLimit === 'demo') out.push(...DEMO);
  else if (rateLimited(route)) out.push(...RATE);
  const success = status.startsWith('2');
  if (success && idempotent(route)) out.push('Idempotent-Replayed');
  if (success && NOTICE_ROUTES.has(route.id)) out.push('X-Service-Notices');
  if (success && route.method === 'post' && route.path === MCP_PATH) out.push('Mcp-Session-Id');
  if (status === '401') out.push('WWW-Authenticate');
  if (status === '429' || status === '503' || status === '5XX') out.push('Retry-After');
  if (status === '405') out.push('Allow');
  // RFC 9110 §15.4.5: a 304 carries the ETag a 200 would have.
  if (route.conditional && (status === '200' || status === '304')) out.push('ETag');
  return out;
}

/** Whether a caller with a credential can be refused with 403, and why (the reasons the description gives). */
function forbiddenBecause(route: RouteSpec): string[] {
  if (!takesCredentials(route)) return [];
  const why: string[] = [];
  if (route.scopes?.length || route.handlerScopes?.length || route.fullAccess) why.push('insufficient_scope (required_scopes names what is missing)');
  if (!route.sandbox) why.push('plan_restricted for an unclaimed sandbox');
  if (route.method !== 'get' && !route.givesUpAccess && !route.authorizesEachOperation) why.push('account_restricted for a suspended account');
  if (route.precheck || route.handlerScopes?.length) why.push('forbidden for a role that may not');
  if (route.accepts?.length === 1 && route.accepts[0] === 'person') why.push('forbidden for an agent token');
  return why;
}

/** The refusals `route` can give beyond the ones it declares itself, with their descriptions. */
export function refusalsOf(route: RouteSpec): Record<string, string> {
  const out: Record<string, string> = {};
  if (takesCredentials(route)) out['401'] = 'No credential, or one refused (unauthorized, invalid_credentials): the body names how to get one (next); WWW-Authenticate carries the challenge.';
  const forbidden = forbiddenBecause(route);
  if (forbidden.length) out['403'] = `Refused for this caller: ${forbidden.join('; ')}.`;
  if (route.body || route.rawBody) out['413'] = 'payload_too_large: the body is over the size limit.';
  if (route.body || route.rawBody) out['415'] = 'unsupported_media_type: a body charset or Content-Encoding the service does not read.';
  if (rateLimited(route)) out['429'] = `rate_limited${
      route.rateLimit === 'demo'
        ? ' (the keyless demo budget of this address, per hour; X-Demo-Budget-* count it)'
        : takesCredentials(route)
          ? ' (X-RateLimit-* count the per-minute rate; an address locked out after too many rejected credentials gets Retry-After only)'
          : ''
    }: wait Retry-After seconds.`;
  return out;
}
