import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/**
 * A caller address as the records keep it: a salted SHA-256 digest, never the address itself.
 * Usage events write `caller_address_hash` with it (tester tags match through it), and agent
 * self-registrations `registered_from_hash` of the address the limit counts under (limitAddress;
 * the per-address daily limit counts through it).
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

/**
 * The address a per-address limit counts a caller under (request rate, rejected credentials, the
 * keyless demo's budget, registrations, sign-ups): an IPv4 address as is, an IPv4-mapped IPv6 address
 * as its IPv4, any other IPv6 address as its network of `ipv6Prefix` bits (`2001:db8:1::/64`). A host
 * is commonly given a whole /64, so counting each full IPv6 address would give it limits without end.
 * A string that does not parse counts as sent. Records and logs keep the full address (clientIp).
 */
export function limitAddress(ip: string, ipv6Prefix: number): string {
  // Dotted IPv4 as the socket reports it, the common case on every request: nothing to parse.
  if (!ip.includes(':')) return ip;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(ip);
  } catch {
    return ip;
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const bytes = parsed.toByteArray().map((byte, i) => {
    const kept = Math.min(8, Math.max(0, ipv6Prefix - i * 8));
    return byte & (0xff << (8 - kept)) & 0xff;
  });
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6Prefix}`;
}
