import type { Request } from 'express';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The service's own base URL as a client on this machine named it: without PUBLIC_URL the service
 * calls itself 127.0.0.1, but a caller may have used localhost or [::1] for the same port, and
 * clients that check a document names the address they called (RFC 9728's resource, as the MCP
 * SDK does) would refuse 127.0.0.1. Only loopback names on the service's own port are taken from
 * Host; anything else answers `base`.
 */
export function asCalledOnLoopback(base: string, host: string | undefined): string {
  if (!host) return base;
  try {
    const own = new URL(base);
    const asked = new URL(`${own.protocol}//${host}`);
    // The same loopback address (the same port) under another name; a base with a path stays as it is.
    if (LOOPBACK_HOSTS.has(own.hostname) && own.pathname === '/' && loopbackAsOne(asked.origin) === loopbackAsOne(own.origin)) return asked.origin;
  } catch {
    // A Host that is no host: the service's own name.
  }
  return base;
}

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

/** The origin a URL's scheme, host and port make, with a loopback host read as 127.0.0.1 (localhost and [::1] are the same machine). */
function loopbackAsOne(origin: string): string | null {
  try {
    const o = new URL(origin);
    if (o.protocol !== 'http:' && o.protocol !== 'https:') return null;
    return LOOPBACK_HOSTS.has(o.hostname) ? `${o.protocol}//127.0.0.1:${o.port || (o.protocol === 'https:' ? '443' : '80')}` : `${o.protocol}//${o.host}`;
  } catch {
    return null;
  }
}

/**
 * A request with Origin from a page other than the service's own: for an ambient credential (the
 * session cookie), where pages on this machine's loopback are no exception. A browser sends the
 * cookie of localhost:3000 with a page on localhost:8080 too (cookies are not kept per port, and
 * SameSite counts both as the same site), so any local dev server's page could act as the person.
 * The service's own address under another loopback name (localhost for 127.0.0.1) is its own.
 */
export function notOwnOrigin(req: Request, ownOrigin: string): boolean {
  const origin = req.headers.origin;
  // Without Origin, a browser's Fetch Metadata still tells another site's page (cross-site) or a sibling's, another port
  // of this machine included (same-site); programs send neither header, and a page of the service's own says same-origin.
  if (origin === undefined || origin === '') {
    const site = req.headers['sec-fetch-site'];
    return site === 'cross-site' || site === 'same-site';
  }
  if (origin === ownOrigin) return false;
  const sent = loopbackAsOne(origin);
  return sent === null || sent !== loopbackAsOne(ownOrigin);
}
