import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/**
 * A caller address as the records keep it: a salted SHA-256 digest, never the address itself.
 * Usage events write `caller_address_hash` with it (tester tags match through it), and agent
 * self-registrations `registered_from_hash` (the per-address daily limit counts through it).
 */
const recentHashes = new Map<string, string>();

export function addressHash(ip: string): string {
  // Remembered for the last few thousand addresses: a digest per priced request is measurable CPU.
  let hash = recentHashes.get(ip);
  if (hash === undefined) {
    hash = createHash('sha256').update(`pcs-address:${ip}`).digest('hex').slice(0, 32);
    if (recentHashes.size >= 4096) recentHashes.clear();
    recentHashes.set(ip, hash);
  }
  return hash;
}

/**
 * Every digest a caller at `ip` may have been recorded under: Express reports an IPv4 caller as
 * `203.0.113.7` or, on a dual-stack socket, `::ffff:203.0.113.7`; IPv6 in its compressed form.
 */
export function addressHashes(ip: string): string[] {
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') {
    const v4 = parsed.toString();
    return [addressHash(v4), addressHash(`::ffff:${v4}`)];
  }
  return [addressHash(parsed.toString())];
}

/** addressHashes for any string a request may carry as its address: one that does not parse is digested as sent. */
export function addressDigests(ip: string): string[] {
  try {
    return addressHashes(ip);
  } catch {
    return [addressHash(ip)];
  }
}

/** What Settings shows of a tester address: enough to recognise it, not enough to recover it. */
export function maskAddress(ip: string): string {
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') {
    const [a, b] = parsed.toString().split('.');
    return `${a ?? '*'}.${b ?? '*'}.*.*`;
  }
  const groups = (parsed as ipaddr.IPv6).toNormalizedString().split(':');
  return `${groups.slice(0, 2).join(':')}:*`;
}

/**
 * The address a request comes from, as every limit and record counts it: Express's `req.ip` (which
 * follows TRUST_PROXY), else the socket's peer.
 */
export function clientIp(req: { ip?: string | undefined; socket: { remoteAddress?: string | undefined } }): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}
