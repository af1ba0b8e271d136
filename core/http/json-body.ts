import type { Request } from 'express';
import { ApiError } from '../errors';
import { UNSTORABLE_ESCAPE, unstorablePath } from '../storable-text';
import { validationFailed } from '../validation';
import type { RouteSpec } from './route';

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
 * A body declared in another charset than UTF-8 would be read as UTF-8 and mangled (latin-1 é
 * becomes U+FFFD) or fail as JSON for a misleading reason: it is refused as such instead.
 */
export function assertUtf8Body(req: Request): void {
  const type = req.headers['content-type'];
  if (!type) return;
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(type)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ApiError('unsupported_media_type', `Request body charset "${charset}" is not supported.`, {
      hint: 'Send the body as UTF-8 JSON: Content-Type: application/json, with charset=utf-8 or no charset.',
    });
  }
}

/** A route's JSON body: an empty one is {}, text that is not JSON or nests too deep is invalid_json. */
export function parseJsonBody(req: Request, route: RouteSpec, maxDepth: number): unknown {
  const raw: unknown = req.body;
  if (raw === undefined || raw === null) return {};
  const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : typeof raw === 'string' ? raw : undefined;
  if (text === undefined) return raw;
  if (text.trim() === '') return {};
  assertUtf8Body(req);
  if (nestedDeeperThan(text, maxDepth)) throw invalidJson(route, `Request body nests arrays and objects deeper than ${maxDepth} levels (BODY_MAX_DEPTH).`);
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch (err) {
    throw invalidJson(route, `Request body is not valid JSON (${(err as Error).message}).`);
  }
  // Refused here, by path, rather than stored mangled or failing in the database as a 500. Only a body that escapes one is walked.
  const at = UNSTORABLE_ESCAPE.test(text) ? unstorablePath(body) : null;
  if (at) {
    throw validationFailed(
      'body',
      [{ path: at.length ? at.join('.') : '(root)', reason: 'must not contain NUL (\\u0000) or an unpaired UTF-16 surrogate (\\ud800-\\udfff alone): text that cannot be stored' }],
      'Remove the NUL character or the half of a surrogate pair from that string (or key); send characters outside the Basic Multilingual Plane as whole pairs or as UTF-8.',
    );
  }
  return body;
}
