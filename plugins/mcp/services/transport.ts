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

/** JSON unless Accept lists text/event-stream without JSON (and does not refuse it with q=0). */
export function prefersSse(req: Request): boolean {
  const accept = String(req.headers.accept ?? '').toLowerCase();
  return accept.includes('text/event-stream') && !accept.includes('application/json') && acceptsSse(req);
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

