import type { Request, Response } from 'express';

export const SUPPORTED_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
export const LATEST_VERSION = '2025-11-25';

/** Writes one SSE event carrying a JSON-RPC message. */
export function sseEvent(res: Response, message: unknown, id?: string): void {
  res.write(`${id ? `id: ${id}\n` : ''}event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

export function openSse(res: Response, status = 200, headers: Record<string, string> = {}): void {
  res.status(status);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
}

/**
 * SSE when Accept allows text/event-stream (acceptsSse) and either leaves application/json out (not covered, or q=0)
 * or gives the stream the higher q. Equal q goes to the more specific naming (`text/event-stream` beside a wildcard
 * streams) and otherwise to JSON, so `application/json, text/event-stream` (what MCP clients send) stays JSON.
 */
export function prefersSse(req: Request): boolean {
  const accept = String(req.headers.accept ?? '');
  if (accept.trim() === '' || !acceptsSse(req)) return false;
  const json = acceptRank(accept, 'application', 'json');
  if (json === undefined || json.q <= 0) return true;
  const sse = acceptRank(accept, 'text', 'event-stream');
  return sse !== undefined && (sse.q > json.q || (sse.q === json.q && sse.s > json.s));
}

/**
 * The q an Accept header gives a type and how specifically it names it (2 exact, 1 a `type/` wildcard, 0 the full
 * wildcard): the most specific range covering it and, among equally specific ones, the highest q, as Express's
 * negotiator reads it. Other parameters are ignored, so `application/json; charset=utf-8` still names JSON (the
 * negotiator would match it to nothing, and such a client would be streamed to).
 */
function acceptRank(accept: string, main: string, sub: string): { q: number; s: number } | undefined {
  let best: { q: number; s: number } | undefined;
  for (const entry of accept.toLowerCase().split(',')) {
    const [range = '', ...params] = entry.split(';').map((part) => part.trim());
    const [m, t] = range.split('/');
    const s = m === main && t === sub ? 2 : m === main && t === '*' ? 1 : m === '*' && t === '*' ? 0 : -1;
    if (s < 0) continue;
    const qParam = params.find((p) => p.startsWith('q='));
    const parsed = qParam === undefined ? 1 : parseFloat(qParam.slice(2));
    const q = Number.isNaN(parsed) ? 0 : parsed;
    if (!best || s > best.s || (s === best.s && q > best.q)) best = { q, s };
  }
  return best;
}

/**
 * Whether the client takes an SSE reply at all: no Accept, or one covering text/event-stream in any
 * case or through a wildcard, and not refusing it with q=0. POST's progress stream and the GET stream
 * decide by this one rule, so a client is never streamed to on one method and refused on the other.
 */
export function acceptsSse(req: Request): boolean {
  // An empty header is no header, as elsewhere on this endpoint (Express's negotiator reads it as accepting nothing).
  if (String(req.headers.accept ?? '') === '') return true;
  return req.accepts('text/event-stream') !== false;
}

