import type { Request } from 'express';
import { ApiError, isApiError } from '../errors';
import type { ErrorIssue } from '../errors';
import { UNSTORABLE_ESCAPE, unstorablePath, withoutUnstorable } from '../storable-text';
import { validationFailed } from '../validation';
import { inexactNumbers } from './json-numbers';
import type { InexactNumber } from './json-numbers';
import type { RouteSpec } from './route';
import { passingExample } from './sent-example';

/** The invalid_json answer of a route: what was wrong, a hint and, where the route has one, an example body. */
export function invalidJson(route: RouteSpec, what: string): ApiError {
  return new ApiError('invalid_json', what, {
    hint: `Send a JSON object with Content-Type: application/json${route.example !== undefined ? '; example is a body this route accepts' : ''}.`,
    ...(route.example !== undefined ? { example: route.example } : {}),
  });
}

/**
 * Whether a JSON text nests arrays and objects deeper than `max`, found in one pass without
 * recursion. JSON.parse itself copes with any depth, but everything after it that walks the value
 * (validation, JSON.stringify, the context's normalisation) recurses and would overflow the stack.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  // Fewer characters than the limit cannot open more levels than it.
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * The path of the first array or object in a parsed value that opens a level deeper than `max` (the value itself is
 * level 1), or null. It goes at most `max + 1` levels down, so it is safe on a value of any depth.
 */
export function pathDeeperThan(value: unknown, max: number, path: Array<string | number> = []): Array<string | number> | null {
  if (value === null || typeof value !== 'object') return null;
  if (path.length >= max) return path;
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((v: unknown, i) => [i, v]) : Object.entries(value);
  for (const [k, v] of entries) {
    const found = pathDeeperThan(v, max, [...path, k]);
    if (found) return found;
  }
  return null;
}

/**
 * A value parsed within a larger message (an MCP tool's arguments) refused by path when it nests deeper than `max`, the
 * limit a REST body has: the message's own levels around it are not the caller's to spend.
 */
export function refuseDeeperThan(value: unknown, max: number, where: 'body' | 'arguments', example?: unknown): void {
  const at = pathDeeperThan(value, max);
  if (!at) return;
  throw validationFailed(
    where,
    [{ path: at.length ? at.join('.') : '(root)', reason: `nests arrays and objects deeper than ${max} levels, counted from the ${where} (BODY_MAX_DEPTH)` }],
    `Flatten the value at that path: the ${where} may nest arrays and objects ${max} levels deep.`,
    example,
  );
}

/**
 * A body declared in another charset than UTF-8 would be read as UTF-8 and mangled (latin-1 é
 * becomes U+FFFD) or fail as JSON for a misleading reason: it is refused as such instead. Returned
 * rather than thrown for a route reading its raw body itself (MCP answers it as a JSON-RPC error).
 */
export function unsupportedCharset(req: Request): ApiError | undefined {
  const type = req.headers['content-type'];
  if (!type) return undefined;
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(type)?.[1];
  if (charset === undefined || /^utf-?8$/i.test(charset)) return undefined;
  return new ApiError('unsupported_media_type', `Request body charset "${charset}" is not supported.`, {
    hint: 'Send the body as UTF-8 JSON: Content-Type: application/json, with charset=utf-8 or no charset.',
  });
}

/** A parsed body, and whether its text escapes NUL or a surrogate (then refuseUnstorableText walks it). */
export interface ParsedBody {
  value: unknown;
  escapesUnstorable: boolean;
  /** JSON numbers at the route's exactNumbers paths that do not arrive as sent. */
  inexact?: InexactNumber[] | undefined;
}

/** A route's JSON body: an empty one is {}, text that is not JSON or nests too deep is invalid_json. */
export function parseJsonBody(req: Request, route: RouteSpec, maxDepth: number): ParsedBody {
  const raw: unknown = req.body;
  if (raw === undefined || raw === null) return { value: {}, escapesUnstorable: false };
  const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : typeof raw === 'string' ? raw : undefined;
  if (text === undefined) return { value: raw, escapesUnstorable: false };
  if (text.trim() === '') return { value: {}, escapesUnstorable: false };
  const charset = unsupportedCharset(req);
  if (charset) throw charset;
  // An item of a batch may nest as deep as a single call's body: the list and its entry are two levels more.
  const limit = route.bodyOfItems ? maxDepth + 2 : maxDepth;
  if (nestedDeeperThan(text, limit)) {
    throw invalidJson(route, `Request body nests arrays and objects deeper than ${route.bodyOfItems ? `${maxDepth} levels in an item` : `${maxDepth} levels`} (BODY_MAX_DEPTH).`);
  }
  try {
    const value = JSON.parse(text) as unknown;
    return { value, escapesUnstorable: UNSTORABLE_ESCAPE.test(text), inexact: route.exactNumbers ? inexactNumbers(text, route.exactNumbers) : undefined };
  } catch (err) {
    throw invalidJson(route, `Request body is not valid JSON (${(err as Error).message}).`);
  }
}

/**
 * Refuses, by path, a body holding text PostgreSQL cannot store (NUL, half of a surrogate pair),
 * rather than storing it mangled or failing in the database as a 500. Run after the route's own
 * validation, whose issues (its wording for control characters among them) come first. Only a body
 * whose text escapes one of them is walked.
 */
export function refuseUnstorableText(parsed: ParsedBody, route: RouteSpec): void {
  if (!parsed.escapesUnstorable) return;
  // The example: what was sent with each such text left out, where that passes the route's body (else its stock example),
  // unless the route says that would change what the request means.
  refuseUnstorableValue(parsed.value, 'body', () => route.unstorableExample?.(parsed.value) ?? (route.body ? passingExample(route.body, withoutUnstorable(parsed.value)) : undefined) ?? route.example);
}

/**
 * The same refusal for a value parsed elsewhere, walked whole: an MCP tool's arguments, or a batch item (`within` names
 * it, `items[2]`). `exampleOf` makes the example that goes with it, only when there is a refusal.
 */
export function refuseUnstorableValue(value: unknown, where: 'body' | 'arguments', exampleOf?: () => unknown, within?: string): void {
  const at = unstorablePath(value);
  if (!at) return;
  const parts = within === undefined ? at : [within, ...at];
  throw validationFailed(
    where,
    [{ path: parts.length ? parts.join('.') : '(root)', reason: 'must not contain NUL (\\u0000) or an unpaired UTF-16 surrogate (\\ud800-\\udfff alone): text that cannot be stored' }],
    'Remove the NUL character or the half of a surrogate pair from that string (or key); send characters outside the Basic Multilingual Plane as whole pairs or as UTF-8.',
    exampleOf?.(),
  );
}

const inexactIssue = (n: InexactNumber): ErrorIssue => ({
  path: n.path,
  reason: `must be sent as a decimal string: the JSON number ${n.sent} arrives as ${n.read} (a JSON number is read as a double, exact to about 15 significant digits); send "${n.sent}" in quotes`,
});

/**
 * The refusal of a body holding JSON numbers that do not arrive as sent (RouteSpec.exactNumbers), merged with the
 * route's own validation failure so every problem is told at once: a path that failure already names keeps its issue
 * alone (one reason per field). Undefined when there is nothing to refuse; any other failure is returned as it is.
 */
export function withInexactNumbers(failure: unknown, parsed: ParsedBody, route: RouteSpec): unknown {
  // Most routes read no number exactly: nothing is allocated for them on the request's path.
  const inexact = parsed.inexact;
  if (!inexact?.length) return failure;
  if (failure === undefined) {
    return validationFailed(
      'body',
      inexact.map(inexactIssue),
      'Send these amounts as decimal strings, in quotes: a JSON number is read as a double, which keeps about 15 significant digits; example shows the body with them as strings.',
      route.example,
    );
  }
  if (!isApiError(failure) || failure.code !== 'validation_error') return failure;
  const issues = failure.extras.issues ?? [];
  const named = new Set(issues.map((i) => i.path));
  return failure.with({ issues: [...issues, ...inexact.filter((n) => !named.has(n.path)).map(inexactIssue)] });
}

/** The body sent, with each inexact number replaced by its text as a decimal string: what an example of it should send. */
export function sentWithExactStrings(parsed: ParsedBody): unknown {
  const inexact = parsed.inexact;
  if (!inexact?.length) return parsed.value;
  const copy = structuredClone(parsed.value);
  for (const n of inexact) {
    const keys = n.path.split('.');
    const last = keys.pop();
    let at: unknown = copy;
    for (const k of keys) at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[k] : undefined;
    if (last !== undefined && at !== null && typeof at === 'object') (at as Record<string, unknown>)[last] = n.sent;
  }
  return copy;
}
