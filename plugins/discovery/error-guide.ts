import type { HttpMethod } from '../../core/http/route';
import { errorStatus } from '../../core/errors';
import type { ErrorCode } from '../../core/errors';

/**
 * What each error code means to a caller and what to do about it, for llms.txt: agents read no
 * SPEC. Typed over every code, so a code added to core/errors.ts does not compile until it is
 * explained here.
 */
export const ERROR_GUIDE: Record<ErrorCode, string> = {
  bad_request: 'the request could not be read (a header, the body cut short); fix the request.',
  invalid_json: 'the body is not JSON (or not decodable, or nested too deep); send the example body the error carries.',
  validation_error: 'fields are wrong; issues lists each path and reason, and example is a body that passes.',
  unsupported_protocol_version: 'MCP-Protocol-Version names a version this server does not speak; send a supported one or leave it out.',
  invalid_session_id: 'an Mcp-Session-Id not shaped like one this server issues (leave it out or use the one initialize returned), or a person\'s session id that is not a UUID (DELETE /api/user/sessions).',
  invalid_credentials: 'the key or token sent was rejected (unknown, revoked, expired, malformed); hint says why, next where to get one. Not retryable.',
  unauthorized: 'no credential, or not the kind this route takes; hint names the accepted ones.',
  payment_required: 'this call must be paid (x402); the body carries the payment requirements.',
  insufficient_balance: 'the prepaid balance cannot cover the call; top up or turn balance billing off.',
  payment_settlement_failed: 'the payment was not settled and nothing was charged; the same signed payment may be presented again while settle_attempts_remaining lasts.',
  forbidden: 'the credential is valid but may not do this here; reason says why (role, ownership).',
  plan_restricted: 'the sandbox plan does not include this; next says how to have the workspace claimed.',
  insufficient_scope: 'the key lacks a scope; required_scopes names it. Use a key with it.',
  agent_cannot_manage_keys: 'access tokens cannot manage keys; a person does (session or person token).',
  origin_not_allowed: 'a browser Origin this MCP endpoint does not accept.',
  account_restricted: 'the workspace is restricted (it may only read, sign out, end sessions and revoke keys), or a team change its state forbids; error says which.',
  not_found: 'no such record, or not yours (one answer for both).',
  function_not_found: 'no function by that id or name within your reach (built-in, your own, or public); GET /api/functions lists them.',
  session_not_found: 'the MCP session is altered, expired or another caller\'s; initialize again.',
  method_not_allowed: 'the path takes other methods; Allow lists them.',
  not_acceptable: 'the Accept header names nothing this route answers with: GET on the MCP endpoint with an Accept ruling text/event-stream out (application/json alone, or text/event-stream;q=0), the one route answering a single kind; elsewhere JSON is answered whatever Accept says.',
  request_timeout: 'the request was not received in time; send it again.',
  conflict: 'the request conflicts with the current state (already a member, a replayed create whose record was deleted, a workspace holding as many records of a kind as it may: limit names the setting); error says which.',
  function_draft: 'the function named is a draft; its owner activates it (the error names the PATCH).',
  function_inactive: 'the function named was deactivated by its owner; pick another.',
  gone: 'the invitation exists but can no longer be accepted (used, revoked or expired); ask for a new one.',
  payload_too_large: 'the body is over the size limit (error names it); send less.',
  unsupported_media_type: 'the body\'s charset is not UTF-8, or its Content-Encoding is not gzip, deflate, br or identity: send UTF-8 JSON (any Content-Type is read as JSON; one that does not parse is 400 invalid_json).',
  unprocessable: 'the request is well formed but cannot be carried out as asked; error says why.',
  idempotency_key_reused: 'this Idempotency-Key was used for another request; use a new key for a new request.',
  no_eligible_function: "every candidate was excluded (cost or latency ceiling, rule miss, no weight, unreachable, not active) and none of the policy's fallbacks could run; candidates lists each and why, attempts each fallback. Not retryable as is (when an open breaker is what keeps a candidate out, the answer is 502 functions_failed with retry_after instead). Relax the policy, add a fallback or pin a function.",
  insufficient_context: 'no function can price this context; missing and inputs_by_function name what to add, refused (and issues) a value a function would not take as sent (out of bounds, or a currency an endpoint does not price in). Not retryable as is.',
  rate_limited: 'too many requests; wait retry_after seconds (Retry-After).',
  daily_quota_exceeded: 'the sandbox daily calls are spent, or the day\'s registrations, sign-ups or key rotations (of the address or the service), or the workspace\'s price observations or test runs of functions it does not own (FUNCTION_TEST_RUNS_PER_DAY) for the day; retry_after says when they reset, for a sandbox, next lists claim (available where a person can claim the sandbox) and the paid steps pay_per_call (on payable routes), day_pass and top_up, each with available (false while payments are not offered).',
  headers_too_large: 'the request headers are too large; send fewer or shorter ones.',
  internal_error: 'a fault on our side; the request_id finds it in our logs. Retry once, with the same Idempotency-Key on a priced call so it is never charged twice.',
  pipeline_execution_unavailable: 'pipeline functions are listed but cannot run; use an external_api or built-in function.',
  bad_gateway: 'a service this one depends on answered badly; retry later.',
  functions_failed: 'every function tried failed, or is behind an open circuit breaker (when routing excluded every candidate, one of them only by its breaker, candidates lists each and why); attempts lists each function tried. When retryable is true, retry after Retry-After when it is sent (an open breaker\'s wait), else soon or with another function; when false, retrying the same call fails the same way. Nothing was charged.',
  service_unavailable: 'the database or key-value store did not answer, or the call could not be recorded; retry after Retry-After. Nothing was charged.',
  service_busy: 'every pricing worker was busy; retry after Retry-After. Nothing was charged.',
  self_registration_closed: 'self-registration is paused; retry after Retry-After, or have a person sign up.',
  not_ready: 'GET /readyz: a dependency of this instance is not reachable; it is not taking traffic.',
  shutting_down: 'the instance is stopping; retry (another instance answers).',
  upstream_timeout: "an MCP tool ran past its time limit: the JSON-RPC error -32001 inside an HTTP 200 (error.data.code upstream_timeout; the local pricing-mcp server's own timeout too). The call may still complete and be counted: retry once with the same _meta.idempotency_key (a call that finished answers its first result, uncharged), then wait a minute.",
};

/** The codes only a payments plugin answers with. */
export const PAYMENT_CODES: readonly ErrorCode[] = ['payment_required', 'insufficient_balance', 'payment_settlement_failed'];

type Route = readonly [HttpMethod, string];
/** The routes that run pricing functions (compute, the price router, test runs): their plugin answers the engine's codes. */
const PRICING: readonly Route[] = [['post', '/api/compute/price'], ['post', '/api/price-router'], ['post', '/api/functions/:id/test']];

/** Codes only some routes answer with: explained only where one of them is served (its plugin enabled). */
const CODE_ROUTES: Partial<Record<ErrorCode, readonly Route[]>> = {
  not_ready: [['get', '/readyz']],
  gone: [['post', '/api/invitations/accept']],
  self_registration_closed: [['post', '/api/agents/register'], ['post', '/api/oauth/register']],
  function_not_found: PRICING,
  function_draft: PRICING,
  function_inactive: PRICING,
  no_eligible_function: PRICING,
  insufficient_context: PRICING,
  functions_failed: PRICING,
  service_busy: PRICING,
  pipeline_execution_unavailable: PRICING,
};

/** The codes only the MCP endpoint answers with. */
export const MCP_CODES: readonly ErrorCode[] = ['unsupported_protocol_version', 'invalid_session_id', 'session_not_found', 'origin_not_allowed', 'upstream_timeout', 'not_acceptable'];

/** llms.txt's lines: each code with its status and meaning, by status; payment and MCP codes only where those are served. */
export function errorGuideLines(served: { payments: boolean; mcp: boolean; serves?: (method: HttpMethod, path: string) => boolean }): string[] {
  const routeServed = (code: ErrorCode): boolean => {
    const routes = CODE_ROUTES[code];
    return !routes || !served.serves || routes.some(([method, path]) => served.serves?.(method, path) === true);
  };
  return (Object.keys(ERROR_GUIDE) as ErrorCode[])
    .filter((code) => (served.payments || !PAYMENT_CODES.includes(code)) && (served.mcp || !MCP_CODES.includes(code)) && routeServed(code))
    .sort((a, b) => errorStatus[a] - errorStatus[b])
    // The tool timeout is no HTTP status: it is a JSON-RPC error inside a 200.
    .map((code) => `- ${code === 'upstream_timeout' ? 'JSON-RPC -32001' : errorStatus[code]} ${code}: ${ERROR_GUIDE[code]}`);
}
