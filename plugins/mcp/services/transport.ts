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

/** JSON unless Accept lists text/event-stream without JSON. */
export function prefersSse(req: Request): boolean {
  const accept = String(req.headers.accept ?? '').toLowerCase();
  return accept.includes('text/event-stream') && !accept.includes('application/json');
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A request from a page of another site: Origin present and not allowed. Allowed are the service's
 * own origin (PUBLIC_URL, else the address it listens on), the configured MCP_ALLOWED_ORIGINS and
 * pages served from this machine's loopback (local tools such as the MCP inspector). The Host header
 * is never trusted for this: under DNS rebinding a hostile page's name resolves to this service, and
 * its Origin and Host then agree.
 */
export function originRefused(req: Request, allowed: readonly string[], ownOrigin: string): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || origin === '') return false;
  if (origin === ownOrigin || allowed.includes('*') || allowed.includes(origin)) return false;
  try {
    const o = new URL(origin);
    return !((o.protocol === 'http:' || o.protocol === 'https:') && LOOPBACK_HOSTS.has(o.hostname));
  } catch {
    return true;
  }
}
