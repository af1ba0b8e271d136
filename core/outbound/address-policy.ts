import ipaddr from 'ipaddr.js';

/**
 * Which addresses an owner-registered URL may reach. Only globally routable unicast addresses are
 * allowed: loopback, private, CGNAT, link-local (cloud metadata), multicast, unspecified, reserved,
 * benchmarking and documentation ranges are refused, and IPv6 forms that embed an IPv4 address
 * (IPv4-mapped, NAT64, 6to4, Teredo) are refused too. An allow-list (for tests and on-premises
 * deployments) can open specific ranges.
 */
export class AddressPolicy {
  private readonly allowed: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;

  constructor(allowList: readonly string[] = []) {
    this.allowed = allowList.map((entry) => {
      const cidr = entry.includes('/') ? entry : `${entry}/${ipaddr.parse(entry).kind() === 'ipv4' ? 32 : 128}`;
      return ipaddr.parseCIDR(cidr);
    });
  }

  /** Normalises an address and tells whether a connection to it is refused. */
  check(address: string): { allowed: boolean; range: string } {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.parse(address);
    } catch {
      return { allowed: false, range: 'unparseable' };
    }
    // An IPv4-mapped IPv6 address is the IPv4 address: judge (and allow-list) it as such.
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    for (const [net, bits] of this.allowed) {
      if (net.kind() === parsed.kind() && parsed.match(net, bits)) return { allowed: true, range: 'allow-listed' };
    }
    const range = parsed.range();
    return { allowed: range === 'unicast', range };
  }
}

export function isIpLiteral(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return ipaddr.isValid(bare) && (ipaddr.IPv4.isValidFourPartDecimal(bare) || bare.includes(':'));
}
