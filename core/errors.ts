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

export interface NextStep {
  [key: string]: unknown;
}

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
 * request-context middleware first; only a batch item's error (not an HTTP body) lacks it.
 */
export const errorBodySchema = z
  .object({
    error: z.string().describe('What went wrong, for people (the same text as message).'),
    code: z.enum(Object.keys(errorStatus) as [ErrorCode, ...ErrorCode[]]).describe('Stable machine-readable code.'),
    message: z.string(),
    hint: z.string().optional(),
    next: z.array(z.record(z.string(), z.unknown())).optional(),
    example: z.unknown().optional(),
    issues: z.array(z.object({ path: z.string(), reason: z.string() })).optional(),
    retry_after: z.number().optional(),
    limit: z.unknown().optional(),
    request_id: z.string(),
  })
  // Routes add their own top-level fields (retryable, required_scopes, …).
  .passthrough()
  .meta({ id: 'Error' });
