import ipaddr from 'ipaddr.js';

/** IPv6 global unicast (RFC 4291); ipaddr.js calls anything it has no name for 'unicast', e.g. ::/96. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
/** Deprecated IPv4-compatible IPv6 (::a.b.c.d, RFC 4291 2.5.5.1). */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');
/**
 * Cloud platform endpoints at addresses that are otherwise public unicast: Azure's WireServer (its instance metadata
 * and health probes; 169.254.169.254 and the other clouds' are refused by their ranges already).
 */
const PLATFORM_ADDRESSES: ReadonlySet<string> = new Set(['168.63.129.16']);

/**
 * Which addresses an owner-registered URL may reach. Only globally routable unicast addresses are
 * allowed: loopback, private, CGNAT, link-local (cloud metadata), multicast, unspecified, reserved,
 * benchmarking and documentation ranges are refused, as are cloud platform endpoints at public addresses (Azure's
 * 168.63.129.16), and IPv6 forms that embed an IPv4 address
 * (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) are refused too, as is any IPv6 address
 * outside global unicast 2000::/3. An allow-list (for tests and on-premises
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

  /** Whether any address is allow-listed at all (a name may then resolve to one). */
  listsAny(): boolean {
    return this.allowed.length > 0;
  }

  /** Normalises an address and tells whether a connection to it is refused. */
  check(address: string): { allowed: boolean; range: string } {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.parse(address.includes(':') ? canonicalV6(address) : address);
    } catch {
      return { allowed: false, range: 'unparseable' };
    }
    // An IPv4-mapped IPv6 address is the IPv4 address: judge (and allow-list) it as such.
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    for (const [net, bits] of this.allowed) {
      if (net.kind() === parsed.kind() && parsed.match(net, bits)) return { allowed: true, range: 'allow-listed' };
    }
    if (parsed.kind() === 'ipv4' && PLATFORM_ADDRESSES.has(parsed.toString())) return { allowed: false, range: 'cloudPlatform' };
    const range = parsed.range();
    // Outside 2000::/3 an IPv6 address is never globally routable, whatever ipaddr.js names it.
    if (range === 'unicast' && parsed.kind() === 'ipv6' && !parsed.match(GLOBAL_UNICAST_V6)) {
      return { allowed: false, range: parsed.match(IPV4_COMPATIBLE) ? 'ipv4Compatible' : 'reserved' };
    }
    return { allowed: range === 'unicast', range };
  }
}

/**
 * WHATWG's serialisation of an IPv6 address. ipaddr.js reads `::a.b.c.d` as IPv4-mapped
 * (::ffff:a.b.c.d), but the network stack connects to the IPv4-compatible ::a.b.c.d — and resolvers
 * print IPv4-compatible answers in that dotted form — so judge the address the socket will use.
 */
function canonicalV6(address: string): string {
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

export function isIpLiteral(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return ipaddr.isValid(bare) && (ipaddr.IPv4.isValidFourPartDecimal(bare) || bare.includes(':'));
}
