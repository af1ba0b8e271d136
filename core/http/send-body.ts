import { createHash } from 'node:crypto';
import type { Response } from 'express';

/** A strong validator of a body: a digest of its bytes, so every instance gives equal bodies the same one. */
export function strongEtag(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
}

/**
 * RFC 9110 §13.1.2: a GET or HEAD whose If-None-Match is * or lists this ETag, compared weakly (W/ aside). Not
 * Express's `req.fresh`, which also answers in full whenever the request says Cache-Control: no-cache: fetch() (undici,
 * browsers) adds that to every request it is handed an If-None-Match for, so such a client would never get its 304.
 */
function notModified(method: string | undefined, ifNoneMatch: string | undefined, etag: string): boolean {
  if ((method !== 'GET' && method !== 'HEAD') || !ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

export interface SendBodyOptions {
  /**
   * Send a strong ETag (`true`: computed here; a string: one the caller computed with strongEtag and kept beside a cached
   * body), and answer a GET or HEAD whose If-None-Match names it with 304 and no body. The app turns Express's own ETags
   * off, and neither the JSON replies nor these bodies go through `res.send`, which alone would add them.
   */
  etag?: boolean | string;
}

/**
 * Writes a body with the status already set: its Content-Type and Content-Length, on HEAD as on GET. Node's
 * `res.end(body)` drops a HEAD's body without counting it, so a HEAD went without the length its GET sends.
 */
export function sendBody(res: Response, body: string, type: string, opts: SendBodyOptions = {}): void {
  if (opts.etag) {
    const etag = typeof opts.etag === 'string' ? opts.etag : strongEtag(body);
    res.setHeader('ETag', etag);
    if (notModified(res.req.method, res.req.headers['if-none-match'], etag)) {
      res.status(304).end();
      return;
    }
  }
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  if (res.req.method === 'HEAD') res.end();
  else res.end(body);
}
