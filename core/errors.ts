import { z } from 'zod';

/**
 * The error vocabulary of the service: one code list with a total code → status mapping, and one
 * error class that services throw. The HTTP error middleware turns it into SPEC's common shape.
 */
export const errorStatus = {
  bad_request: 400,
  invalid_json: 400,
  validation_error: 400,
  unsupported_protocol_version: 400,
  invalid_session_id: 400,
  invalid_credentials: 401,
  unauthorized: 401,
  payment_required: 402,
  insufficient_balance: 402,
  payment_settlement_failed: 402,
  forbidden: 403,
  plan_restricted: 403,
  insufficient_scope: 403,
  agent_cannot_manage_keys: 403,
  origin_not_allowed: 403,
  account_restricted: 403,
  not_found: 404,
  function_not_found: 404,
  session_not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  conflict: 409,
  function_draft: 409,
  function_inactive: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  idempotency_key_reused: 422,
  no_eligible_function: 422,
  insufficient_context: 422,
  rate_limited: 429,
  daily_quota_exceeded: 429,
  headers_too_large: 431,
  internal_error: 500,
  pipeline_execution_unavailable: 501,
  bad_gateway: 502,
  functions_failed: 502,
  service_unavailable: 503,
  service_busy: 503,
  self_registration_closed: 503,
  not_ready: 503,
  shutting_down: 503,
  upstream_timeout: 504,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export interface ErrorIssue {
  path: string;
  reason: string;
}

/**
 * One request that helps after a refusal (`next`): what it does, how to send it. Declared field by
 * field for the OpenAPI document (component `NextStep`); a step with another field must add it here.
 */
export const nextStepSchema = z
  .strictObject({
    action: z.string().describe('What the step does: register_agent, sign_in, try_demo, claim, day_pass, pay_per_call…'),
    method: z.string().describe('The HTTP method of the request to send.'),
    path: z.string().optional().describe('Its path; absent on a step that repeats this request with a header (header).'),
    header: z.string().optional().describe('The header to add when repeating this request (X-PAYMENT for a per-call payment).'),
    body: z.unknown().optional().describe('An example body that works as sent once the <PLACEHOLDERS> are filled in.'),
    description: z.string().optional().describe('What the step gives and when to take it.'),
    available: z.boolean().optional().describe('false while this service does not offer the step yet (payments); true, or absent, when it does.'),
    by: z
      .literal('claimer')
      .optional()
      .describe('Who sends the request, when not the caller refused: claimer (a trusted agent whose key holds workspace:claim sends this request; a signed-in person confirms the claim link instead, POST /api/agents/claim/{token}). Absent: the caller.'),
  })
  .meta({ id: 'NextStep', description: 'A request that helps after this refusal.' });

export type NextStep = z.infer<typeof nextStepSchema>;

export interface ErrorExtras {
  hint?: string;
  next?: NextStep[];
  example?: unknown;
  issues?: ErrorIssue[];
  retry_after?: number;
  limit?: unknown;
  /** Additional top-level fields of the body (e.g. `required_scopes`, `retryable`). */
  fields?: Record<string, unknown>;
  /** Response headers to send with the error (e.g. `WWW-Authenticate`, `Retry-After`, `Allow`). */
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extras: ErrorExtras = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = errorStatus[code];
  }

  /** A copy of this error with more extras merged in. */
  with(extras: ErrorExtras): ApiError {
    return new ApiError(this.code, this.message, {
      ...this.extras,
      ...extras,
      fields: { ...this.extras.fields, ...extras.fields },
      headers: { ...this.extras.headers, ...extras.headers },
    });
  }
}

/** Seconds a caller is asked to wait when a store the service depends on (the database, Redis) failed. */
export const UNAVAILABLE_RETRY_AFTER_S = 5;

/**
 * 503 service_unavailable: a store the request needs did not answer or could not be reached, and the
 * same request is expected to work later (`retryable: true`, `retry_after`, also sent as Retry-After).
 */
export function serviceUnavailable(message: string, hint: string, retryAfterS = UNAVAILABLE_RETRY_AFTER_S): ApiError {
  return new ApiError('service_unavailable', message, { hint, retry_after: retryAfterS, fields: { retryable: true } });
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}

/** The JSON body SPEC's "Common shape" describes, from an ApiError. */
export function errorBody(err: ApiError, requestId?: string): Record<string, unknown> {
  const { hint, next, example, issues, retry_after, limit, fields } = err.extras;
  const body: Record<string, unknown> = { error: err.message, code: err.code, message: err.message };
  if (hint !== undefined) body.hint = hint;
  if (next !== undefined) body.next = next;
  if (example !== undefined) body.example = example;
  if (issues !== undefined) body.issues = issues;
  if (retry_after !== undefined) body.retry_after = retry_after;
  if (limit !== undefined) body.limit = limit;
  if (fields) Object.assign(body, fields);
  if (requestId !== undefined) body.request_id = requestId;
  return body;
}

/**
 * The body errorBody writes, as the OpenAPI document states it (component `Error`). Kept beside
 * errorBody so the two change together: `request_id` is required because every HTTP error passes the
 * request-context middleware first (or is a parser-level refusal given its own id); only a batch item's
 * error (not an HTTP body) lacks it. The optional fields are those routes add (`fields` of an ApiError);
 * the shape stays open, but a test parses real refusals with it made strict, so a field a route starts
 * sending must be declared here.
 */
const strings = z.array(z.string());
const openObjects = z.array(z.record(z.string(), z.unknown()));
export const errorBodySchema = z
  .object({
    error: z.string().describe('What went wrong, for people (the same text as message).'),
    code: z.enum(Object.keys(errorStatus) as [ErrorCode, ...ErrorCode[]]).describe('Stable machine-readable code.'),
    message: z.string().describe('The same text as error.'),
    hint: z.string().optional().describe('What to do about it.'),
    next: z.array(nextStepSchema).optional().describe('Requests that help, in order (empty when none does: a credential of the wrong kind).'),
    example: z.unknown().optional().describe('A request body (or batch item) that passes, made from what was sent where possible.'),
    issues: z.array(z.object({ path: z.string(), reason: z.string() })).optional().describe('Each field refused: its path in the request (body, query, items[2].context…) and why.'),
    retry_after: z.number().optional().describe('Seconds to wait before retrying (also the Retry-After header).'),
    limit: z
      .record(z.string(), z.union([z.number(), z.string()]))
      .optional()
      .describe('The limit reached, by name: requests_per_minute and scope, demo_calls_per_hour, compute_calls_per_day, per_address_per_day and overall_per_day, key_rotations_per_day, rejected_credentials_per_15_minutes, body_bytes; a count per workspace under its setting in lower case (functions_per_workspace…) beside setting, the name of that setting; resets_at when it starts again (ISO 8601).'),
    retryable: z.boolean().optional().describe('Whether the same request can succeed later (after retry_after when given); false: change the request or the credential first.'),
    required_scopes: strings.optional().describe('insufficient_scope: the scopes the request needs.'),
    reason: z.string().optional().describe('Why, in a few words (a role too low, an account suspended, a sandbox\'s limit…).'),
    plan: z.string().optional().describe('plan_restricted: the plan that refuses it (agent_starter).'),
    credential_ignored: z.string().optional().describe('A keyless route: the credential sent was not used, and the refusal is not about it.'),
    valid_scopes: strings.optional().describe('An unknown scope asked for: the scopes a key can be created with.'),
    legacy_scopes: strings.optional().describe('With valid_scopes: the older scope names still accepted.'),
    role: z.string().optional().describe('The caller\'s role in the workspace (or the role already held).'),
    resource_id: z.string().optional().describe('idempotency_key_reused and conflict: what the first request under the key created.'),
    usage_event_id: z.string().optional().describe('The usage record of the call this refusal is about.'),
    function_id: z.string().optional().describe('function_draft and function_inactive: the function pinned.'),
    status: z.string().optional().describe('With function_id: its status (draft, inactive).'),
    suggested_function_id: z.string().optional().describe('function_not_found for a name sent as function_id: the id to send.'),
    suggested_function_name: z.string().optional().describe('function_not_found for an id sent as function_name: the name to send.'),
    strategy: z.string().optional().describe('no_eligible_function (and functions_failed when routing excluded every candidate, one only by its open breaker): the routing strategy that excluded every candidate.'),
    policy_id: z.string().optional().describe('With strategy: the routing policy applied.'),
    candidates: openObjects.optional().describe('With strategy: each candidate (function, id, kept) and why it was left out (reason, detail, cost_per_unit, latency_p50_ms).'),
    attempts: openObjects
      .optional()
      .describe('functions_failed, service_busy, insufficient_context: every function tried, in order, as trace.attempts of a priced answer (function, id, role, outcome, error, ms).'),
    missing: strings.optional().describe('insufficient_context: the context inputs the functions tried needed.'),
    refused: strings.optional().describe('insufficient_context: the context inputs a function refused as sent (out of bounds, or a currency an external endpoint does not price in).'),
    excluded_by_policy: openObjects.optional().describe('insufficient_context: functions that could have priced the context but the routing policy left out (function, id, reason, detail).'),
    inputs_by_function: z.record(z.string(), strings).optional().describe('insufficient_context: the inputs each built-in function reads.'),
    parent_workspace_id: z.string().optional().describe('A test workspace: the workspace it belongs to.'),
    invitation_id: z.string().optional().describe('A pending invitation already made for this email.'),
    invitation_status: z.string().optional().describe('An invitation no longer pending: its status.'),
    person_id: z.string().optional().describe('The person already a member.'),
    request_id: z.string().describe('The request id (req_…), also the X-Request-Id header; quote it when reporting a problem.'),
  })
  // Open: a client reading the shape keeps working when a field is added.
  .passthrough()
  .meta({ id: 'Error' });
