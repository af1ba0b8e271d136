import type { Request } from 'express';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A request from a page of another site: Origin present and not allowed. Allowed are the service's
 * own origin (PUBLIC_URL, else the address it listens on), the origins in `allowed` (`*`: any) and
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
