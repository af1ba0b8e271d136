import type { NextFunction, Request, Response } from 'express';
import * as zlib from 'node:zlib';
import { newSortableId } from '../ids';
import { failureFields } from '../logger';
import { DEFAULT_REPEAT_INTERVAL_MS, RepeatedLines } from '../repeated-lines';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { ApiError, errorBody, isApiError } from '../errors';
import { databaseUnavailable, isDatabaseUnavailable, mayHaveCommitted } from '../db/failures';
import { KvUnavailableError, storeUnavailable } from '../kv/contract';

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * First middleware: request id (accepted from `X-Request-Id` when well formed), a child logger, the
 * duration histogram and one structured access-log line. Never logs headers or bodies.
 */
export function requestContext(log: Logger, metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = process.hrtime.bigint();
    res.locals.startedAt = performance.now();
    const incoming = req.headers['x-request-id'];
    // Time-ordered, as usage event ids are: the usage index on (workspace, request id) then grows at its right edge.
    const requestId = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : newSortableId('req');
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    // The child logger is made on first use: most requests never log (the access line is at info).
    let child: Logger | undefined;
    const childLog = (): Logger => (child ??= log.child({ req_id: requestId }));
    Object.defineProperty(res.locals, 'log', { get: childLog, enumerable: true, configurable: true });
    // 'close' comes after every answer, and also when the connection closes before one was complete
    // (the caller left, a shutdown's deadline): such a request gets its line too, marked cut off.
    res.on('close', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = routeOf(res);
      const ms = Math.round(seconds * 1e5) / 100;
      if (!res.writableFinished) {
        if (log.isLevelEnabled('info')) childLog().info({ method: req.method, route, status: res.headersSent ? res.statusCode : null, ms, cut_off: true }, 'request closed before its answer was complete');
        return;
      }
      metrics.httpDuration.observe({ method: METRIC_METHODS.has(req.method) ? req.method : 'other', route, status: String(res.statusCode) }, seconds);
      if (log.isLevelEnabled('info')) childLog().info({ method: req.method, route, status: res.statusCode, ms }, 'request');
    });
    next();
  };
}

/**
 * Methods that get a series of their own in the request histogram; the rest (WebDAV verbs and the like,
 * which Node parses and every route answers 405) share `other`, so no caller grows the scrape per verb.
 */
const METRIC_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** While shutting down, new requests are refused so in-flight ones can finish. */
export function refuseWhileStopping(isStopping: () => boolean) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    if (!isStopping()) return next();
    // Refused before any route matched: labelled as such in the access log and http_request_duration_seconds, apart from
    // the 404s of paths no route serves ("unmatched").
    res.locals.routeTemplate = 'shutting_down';
    res.setHeader('Connection', 'close');
    next(new ApiError('shutting_down', 'The service is shutting down.', { hint: 'Retry in a moment; another instance will answer.', headers: { 'Retry-After': '1' } }));
  };
}

/**
 * The route a request matched, as declared (`/api/agents/claim/:token`), never the path sent: a path can carry a secret
 * (a one-time claim token), and logs hold no secrets (docs/architecture.md).
 */
function routeOf(res: Response): string {
  return (res.locals.routeTemplate as string | undefined) ?? 'unmatched';
}

/**
 * The JSON 404 of a path no route matches. Its hint names where to start among what this instance serves (`serves`):
 * without the discovery plugin, GET / is itself a 404.
 */
export function notFound(serves: (method: string, path: string) => boolean = () => true) {
  const places = [
    serves('get', '/llms.txt') ? '/llms.txt and /.well-known/agents.json for agents' : null,
    serves('get', '/api/openapi.json') ? '/api/openapi.json for every route' : null,
    serves('post', '/api/agents/register') ? 'POST /api/agents/register for a free key' : null,
  ].filter((p): p is string => p !== null);
  const list = places.length > 1 ? `${places.slice(0, -1).join(', ')}, and ${places[places.length - 1] as string}` : (places[0] ?? '');
  const hint = serves('get', '/') ? `GET / says where to start: ${list}.` : list ? `See ${list}.` : 'Check the path and method against the service\'s documentation.';
  return (req: Request, _res: Response, next: NextFunction): void => {
    next(new ApiError('not_found', `No route matches ${req.method} ${req.path}.`, { hint }));
  };
}

interface BodyParserError {
  type?: string;
  status?: number;
  /** entity.too.large: the limit and the declared or read length, in bytes. */
  limit?: number;
  length?: number;
  /** encoding.unsupported: the Content-Encoding sent. */
  encoding?: string;
}

/** The Content-Encodings the body reader decodes, as body-parser decides: zstd only on a Node.js that has it (22.15 and later). */
const READ_ENCODINGS = ['gzip', 'deflate', 'br', ...('createZstdDecompress' in zlib ? ['zstd'] : []), 'identity'];

/**
 * Express's router refuses a path whose parameter holds a malformed percent-escape (`%E0%A4%A`) by
 * throwing a URIError with status 400 before any route runs. Only this error is taken at its word:
 * other foreign errors with a status say nothing a caller should be shown.
 */
export function isUndecodablePath(err: unknown): boolean {
  return err instanceof URIError && (err as BodyParserError).status === 400;
}

/** The answer to an undecodable path parameter: a params validation failure, named when the route is known. */
export function undecodablePathError(param?: string): ApiError {
  const path = param ?? '(path)';
  return new ApiError('validation_error', `Request params failed validation (${path}: not a valid percent-encoded UTF-8 string).`, {
    issues: [{ path, reason: 'not a valid percent-encoded UTF-8 string' }],
    hint: 'Percent-encode path parameters from UTF-8 (encodeURIComponent); send a literal % as %25.',
  });
}

/**
 * The answer to a failure of a store the request needed, wherever it was raised: the same 503
 * service_unavailable (retryable, Retry-After) the usage writer answers. Undefined for other errors.
 */
export function unavailableError(err: unknown): ApiError | undefined {
  if (isDatabaseUnavailable(err)) return databaseUnavailable();
  if (err instanceof KvUnavailableError) return storeUnavailable();
  return undefined;
}

/**
 * Logs `err` if it is a store's outage (unavailableError): a warning with its reason and no stack, once per reason and
 * `where` every LOG_REPEAT_INTERVAL_MS (`outages`), the next line counting those held back. True when it was one; the
 * caller logs anything else as the bug it is.
 */
export function logOutage(log: Logger, outages: RepeatedLines, err: unknown, fields: Record<string, unknown>, where: string, msg: string): boolean {
  if (!unavailableError(err)) return false;
  const failure = failureFields(err);
  const due = outages.due(`${failure.reason}|${where}`);
  if (due) log.warn({ ...failure, ...fields, ...(due.heldBack > 0 ? { repeats_since_last_logged: due.heldBack } : {}) }, msg);
  return true;
}

const WRITE_MAY_HAVE_HAPPENED =
  'The change may have been made before the answer was lost: check before repeating it, or repeat it with the same Idempotency-Key where the route accepts one (creating API keys, functions and routing policies).';

const NOTHING_CHARGED = 'Nothing was charged: a call is charged only with its answer.';

/** A write request whose statement broke after it was sent: the caller must not assume nothing happened. */
export function writeMayHaveHappened(req: Pick<Request, 'method'>, err: unknown): boolean {
  return req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS' && mayHaveCommitted(err);
}

/** The 413 of a body over BODY_LIMIT_BYTES: the limit in bytes, which a caller can act on (the setting's name it cannot). */
function tooLarge(bp: BodyParserError): ApiError {
  const limit = bp.limit;
  if (limit === undefined) return new ApiError('payload_too_large', 'Request body is too large.', { hint: 'Send a smaller body.' });
  return new ApiError('payload_too_large', `Request body is too large${bp.length !== undefined ? `: ${bp.length} bytes,` : ','} over the limit of ${limit} bytes.`, {
    hint: `Send at most ${limit} bytes.`,
    limit: { body_bytes: limit },
  });
}

/** The answer to a body the reader refused (too large, an encoding it cannot decode, cut short); undefined for other errors. */
export function bodyReadError(err: unknown): ApiError | undefined {
  const bp = err as BodyParserError | undefined;
  if (bp?.type === 'entity.too.large') return tooLarge(bp);
  // The encodings that are read, by name: a caller can pick one of them (or none) and send again.
  if (bp?.type === 'encoding.unsupported') {
    return new ApiError('unsupported_media_type', `Request body encoding${bp.encoding ? ` "${bp.encoding}"` : ''} is not supported.`, {
      hint: `Send UTF-8 JSON uncompressed, or compressed whole with Content-Encoding ${READ_ENCODINGS.filter((e) => e !== 'identity').join(', ')} (identity is uncompressed).`,
    });
  }
  if (bp?.type === 'charset.unsupported') return new ApiError('unsupported_media_type', 'Request body encoding is not supported.', { hint: 'Send UTF-8 JSON.' });
  if (bp?.type === 'request.aborted' || bp?.type === 'request.size.invalid') return new ApiError('bad_request', 'The request body was cut short.');
  return undefined;
}

/** A parenthesis naming a route, "(POST /api/auth/signin, or sign up at …)": it says where to go, by its first route. */
const ROUTE_ASIDE = / ?\(((?:GET|POST|PUT|PATCH|DELETE) \/[^\s,;:)]*)[^()]*\)/g;

/**
 * The hint without the asides pointing at routes this instance does not serve (a plugin turned
 * off): "Sign in (POST /api/auth/signin) and send …" keeps its advice and loses the 404 it pointed at.
 */
export function hintWithServedRoutes(hint: string, serves: (method: string, path: string) => boolean): string {
  return hint.replace(ROUTE_ASIDE, (aside: string, route: string) => {
    const [method, path] = route.split(' ') as [string, string];
    return serves(method, path.replace(/\.$/, '')) ? aside : '';
  });
}

/**
 * The one error middleware: SPEC's common error shape, never a stack trace. With `serves`, a next step pointing at a
 * route this instance does not serve (its plugin disabled) is left out; a step marked `available: false` (announced,
 * not built yet) is kept as it says so itself.
 */
export function errorHandler(log: Logger, serves?: (method: string, path: string, req?: Request) => boolean, publicUrl?: () => string, opts: { repeatIntervalMs?: number } = {}) {
  // A store's outage fails every request alike: one line per reason and route every LOG_REPEAT_INTERVAL_MS, with the count held back.
  // Kinds are reasons times declared routes (a fixed set): room for all, or the bound would forget each before it recurs.
  const outageLines = new RepeatedLines(opts.repeatIntervalMs ?? DEFAULT_REPEAT_INTERVAL_MS, 2000);
  /**
   * RFC 9728 §5.1: a Bearer challenge names the protected resource metadata, where an OAuth client (the MCP SDK's) finds
   * the authorization server: the path-specific document of the route asked, else the service's.
   */
  const withResourceMetadata = (challenge: string, path: string): string => {
    if (!serves || !publicUrl || !/^Bearer realm="pricing-compute"/.test(challenge)) return challenge;
    const doc = ['/.well-known/oauth-protected-resource' + path, '/.well-known/oauth-protected-resource'].find((d) => serves('get', d));
    return doc ? `${challenge}, resource_metadata="${publicUrl()}${doc}"` : challenge;
  };
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const requestId = res.locals.requestId as string | undefined;
    let apiErr: ApiError;
    if (isApiError(err)) apiErr = err;
    else {
      const read = bodyReadError(err);
      if (read) apiErr = read;
      else if (isUndecodablePath(err)) apiErr = undecodablePathError();
      else {
        const reqLog = (res.locals.log as Logger | undefined) ?? log;
        const unavailable = unavailableError(err);
        if (unavailable) {
          // A store that did not answer is an outage, not a bug: its reason and code, without the driver's stack.
          logOutage(reqLog, outageLines, err, { method: req.method, route: routeOf(res) }, `${req.method} ${routeOf(res)}`, 'a store the request needed failed');
          if (res.locals.recordsCallsOnly === true) apiErr = unavailable.with({ hint: `${NOTHING_CHARGED} ${unavailable.extras.hint ?? ''}`.trim() });
          else apiErr = writeMayHaveHappened(req, err) ? unavailable.with({ hint: `${unavailable.extras.hint ?? ''} ${WRITE_MAY_HAVE_HAPPENED}`.trim() }) : unavailable;
        } else {
          reqLog.error({ err, method: req.method, route: routeOf(res) }, 'unhandled error');
          apiErr = new ApiError('internal_error', 'Something went wrong on our side.', { hint: 'Retry later; quote the request_id if you report it.' });
        }
      }
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [k, v] of Object.entries(apiErr.extras.headers ?? {})) res.setHeader(k, k.toLowerCase() === 'www-authenticate' ? withResourceMetadata(v, req.path) : v);
    if (apiErr.extras.retry_after !== undefined && !res.getHeader('Retry-After')) res.setHeader('Retry-After', String(apiErr.extras.retry_after));
    const next = apiErr.extras.next;
    if (serves && Array.isArray(next)) {
      const kept = next.filter((step) => step.available === false || typeof step.path !== 'string' || typeof step.method !== 'string' || serves(step.method, step.path, req));
      if (kept.length !== next.length) apiErr = apiErr.with({ next: kept });
    }
    const hint = apiErr.extras.hint;
    if (serves && typeof hint === 'string') {
      const served = hintWithServedRoutes(hint, (method, path) => serves(method, path, req));
      if (served !== hint) apiErr = apiErr.with({ hint: served });
    }
    res.status(apiErr.status).json(errorBody(apiErr, requestId));
  };
}
