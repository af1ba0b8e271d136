import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { AddressPolicy } from './address-policy';

export type Resolver = (hostname: string) => Promise<string[]>;

/** How ipaddr.js's range names read in a sentence, article included; others are split at their capitals. */
const RANGE_WORDS: Record<string, string> = {
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique local (private IPv6)',
  carrierGradeNat: 'a carrier-grade NAT',
  rfc6052: 'a NAT64 (RFC 6052)',
  ipv4Mapped: 'an IPv4-mapped',
  unspecified: 'an unspecified',
  teredo: 'a Teredo',
  amt: 'an AMT',
  as112: 'an AS112',
  as112v6: 'an AS112',
  orchid2: 'an ORCHIDv2',
  deprecatedOrchid: 'an ORCHID',
  rfc6145: 'an IPv4-translated (RFC 6145)',
  ipv4Compatible: 'an IPv4-compatible',
  '6to4': 'a 6to4',
  discard: 'a discard-only',
  cloudPlatform: "a cloud platform's own (metadata)",
};

function rangeWords(range: string): string {
  const known = RANGE_WORDS[range];
  if (known) return known;
  const words = range.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  return `${/^[aeiou]/.test(words) ? 'an' : 'a'} ${words}`;
}

export class OutboundBlockedError extends Error {
  readonly kind = 'blocked';
  constructor(
    readonly target: string,
    /** The range's name as ipaddr.js gives it (`linkLocal`, `loopback`, …). */
    readonly range: string,
  ) {
    super(`Outbound request refused: ${target} is ${rangeWords(range)} address.`);
    this.name = 'OutboundBlockedError';
  }
}

export class OutboundError extends Error {
  constructor(
    readonly kind: 'timeout' | 'redirect' | 'too_large' | 'status' | 'invalid_json' | 'network' | 'protocol',
    message: string,
    /** The HTTP status answered; on a network failure, of the answer it cut short (none: it came before any answer). */
    readonly status?: number,
    /** A network failure's system code (ECONNRESET, ECONNREFUSED, …), to word it without parsing its message. */
    readonly code?: string,
    /** A status answer's Retry-After, in seconds from now (delta-seconds or an HTTP date), when it sent a valid one. */
    readonly retryAfterS?: number,
    /** A status answer's body and Content-Type, as received: the reason an endpoint gives with a refusal is in it. */
    readonly answer?: { text: string; type: string | undefined },
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

/** An HTTP date as senders must write it (RFC 9110 IMF-fixdate): `Fri, 27 Nov 2026 12:01:30 GMT`. */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** A Retry-After header's wait in whole seconds (delta-seconds, or an HTTP date counted from `now`); undefined when absent or not valid. */
export function retryAfterSeconds(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  if (!IMF_FIXDATE.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

export interface SafeHttpClientOptions {
  /** CIDRs or addresses exempt from the private-address refusal (tests, on-premises upstreams). */
  allowList?: readonly string[];
  /** Name resolution; defaults to the system resolver. Tests substitute a stub. */
  resolver?: Resolver;
  maxBodyBytes?: number;
  /**
   * The time limit of a request that names none. The service's calls always name theirs (a function's timeout_ms, else
   * ENGINE_FUNCTION_TIMEOUT_MS), so this serves the guard's own tests; it is no setting.
   */
  defaultTimeoutMs?: number;
  /** Refuse plain http: (production); tests talk to loopback servers over http. */
  httpsOnly?: boolean;
  /** Ports a request may go to (undefined: any); allow-listed addresses may use any port. */
  allowedPorts?: readonly number[];
}

export interface JsonResponse {
  status: number;
  body: unknown;
}

const portOf = (url: URL): number => Number(url.port || (url.protocol === 'https:' ? 443 : 80));

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses: LookupAddress[]) => (err ? reject(err) : resolve(addresses.map((a) => a.address)))),
  );

/** `localhost`, `localhost.`, `app.localhost`: the special-use names (RFC 6761) URL has lower-cased already. */
const isLocalhostName = (host: string): boolean => /(?:^|\.)localhost\.?$/.test(host);

/** Why an answer is not JSON, in words its owner can act on: an encoding it was not asked for, nothing at all, or how it begins. */
function notJson(text: string, encoding: string | undefined, type: string | undefined): string {
  if (encoding && !/^identity$/i.test(encoding.trim())) return `The endpoint's answer is not JSON: it came encoded (Content-Encoding: ${encoding.slice(0, 40)}), though the request asked for none (Accept-Encoding: identity).`;
  if (text.trim() === '') return "The endpoint's answer is not JSON: its body is empty.";
  return `The endpoint's answer is not JSON (Content-Type: ${type?.slice(0, 80) ?? 'none'}); it begins ${JSON.stringify(text.slice(0, 60))}.`;
}

/**
 * The one outbound HTTP client of the service (plugins and the engine may not open connections
 * themselves; a lint rule enforces it). The address is checked at connection time — literal IPs
 * before connecting, names on the addresses the connection will use, so a resolver that changes
 * its answer (DNS rebinding) cannot slip through — redirects are never followed, and time and body
 * size are capped.
 */
export class SafeHttpClient {
  private readonly policy: AddressPolicy;
  private readonly resolver: Resolver;
  private readonly maxBodyBytes: number;
  private readonly defaultTimeoutMs: number;
  private readonly httpsOnly: boolean;
  private readonly allowedPorts: readonly number[] | undefined;

  constructor(opts: SafeHttpClientOptions = {}) {
    this.policy = new AddressPolicy(opts.allowList ?? []);
    this.resolver = opts.resolver ?? systemResolver;
    this.maxBodyBytes = opts.maxBodyBytes ?? 256 * 1024;
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? 10_000;
    this.httpsOnly = opts.httpsOnly ?? false;
    this.allowedPorts = opts.allowedPorts && opts.allowedPorts.length > 0 ? opts.allowedPorts : undefined;
  }

  /**
   * Refuses a port outside the allowed ones (mail, databases, admin consoles of a public host), unless the address is
   * allow-listed. `address` null is a name not yet resolved: only an allow-list could still exempt it.
   */
  private assertPort(address: string | null, port: number, target: string): void {
    if (!this.allowedPorts || this.allowedPorts.includes(port)) return;
    if (address === null ? this.policy.listsAny() : this.policy.check(address).range === 'allow-listed') return;
    throw new OutboundError('protocol', `Port ${port} of ${target} is not allowed for outbound requests (allowed: ${this.allowedPorts.join(', ')}; the operator setting OUTBOUND_ALLOWED_PORTS).`);
  }

  /**
   * What an owner may register, in words true to this client's settings: told at registration, where a refusal
   * should say how to succeed rather than repeat a rule the operator may have relaxed.
   */
  describeRules(): string {
    const scheme = this.httpsOnly ? 'a public https address (plain http is refused: OUTBOUND_HTTPS_ONLY)' : 'a public https address (plain http is accepted too)';
    const ports = this.allowedPorts ? ` on port ${this.allowedPorts.join(' or ')} (OUTBOUND_ALLOWED_PORTS)` : '';
    const exempt = this.policy.listsAny()
      ? ' unless the operator lists them in OUTBOUND_ALLOW_LIST, where any port may be used'
      : ' (the operator can open specific ones with OUTBOUND_ALLOW_LIST)';
    return `Register ${scheme}${ports}; loopback, private, link-local and metadata addresses are refused${exempt}.`;
  }

  /** Throws OutboundBlockedError when the address may not be reached. */
  assertAddress(address: string, target: string): void {
    const verdict = this.policy.check(address);
    if (!verdict.allowed) throw new OutboundBlockedError(target, verdict.range);
  }

  /**
   * RFC 6761 §6.3: `localhost` and every name under it are loopback whatever a resolver answers, so they are judged as
   * loopback before any lookup (registration refuses them as it refuses 127.0.0.1), unless the allow-list opens loopback;
   * then the connection-time lookup judges the addresses as for any name.
   */
  private assertLoopbackName(host: string): void {
    if (this.policy.check('127.0.0.1').allowed || this.policy.check('::1').allowed) return;
    throw new OutboundBlockedError(host, 'loopback');
  }

  /**
   * Checks a URL's scheme and port and, for literal IPs, its address, without connecting: whatever can be decided
   * before resolving a name is refused here, so registration and the call apply one rule.
   */
  checkUrl(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundError('protocol', `Not a URL: ${raw}`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundError('protocol', `Only http and https URLs are allowed, not ${url.protocol}`);
    if (this.httpsOnly && url.protocol !== 'https:') throw new OutboundError('protocol', 'Only https URLs are allowed (the operator setting OUTBOUND_HTTPS_ONLY).');
    if (url.username || url.password) throw new OutboundError('protocol', 'URLs with credentials are not allowed.');
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // WHATWG URL has already normalised decimal, hex, octal and short IPv4 forms to dotted quads.
    if (isIP(host)) this.assertAddress(host, url.host);
    else if (isLocalhostName(host)) this.assertLoopbackName(host);
    this.assertPort(isIP(host) ? host : null, portOf(url), url.host);
    return url;
  }

  /**
   * `sign`: headers computed from the exact bytes sent (a signature over the body), added to `headers`.
   */
  async postJson(raw: string, payload: unknown, opts: { timeoutMs?: number; headers?: Record<string, string>; signal?: AbortSignal; sign?: (body: Buffer) => Record<string, string> } = {}): Promise<JsonResponse> {
    const url = this.checkUrl(raw);
    const body = Buffer.from(JSON.stringify(payload), 'utf8');
    const headers = opts.sign ? { ...opts.headers, ...opts.sign(body) } : opts.headers;
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const port = portOf(url);
    const lookup = (hostname: string, options: { all?: boolean }, cb: (err: Error | null, address?: string | LookupAddress[], family?: number) => void): void => {
      this.resolver(hostname).then(
        (addresses) => {
          try {
            if (addresses.length === 0) throw new OutboundError('network', `${hostname} has no address`);
            // Every answer must be allowed: a mixed answer is how rebinding tries its luck.
            for (const a of addresses) {
              this.assertAddress(a, hostname);
              this.assertPort(a, port, hostname);
            }
            const entries = addresses.map((a) => ({ address: a, family: isIP(a) }));
            if (options.all) cb(null, entries);
            else cb(null, entries[0]?.address, entries[0]?.family);
          } catch (err) {
            cb(err as Error);
          }
        },
        (err: unknown) => cb(err as Error),
      );
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<JsonResponse>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | null, value?: JsonResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value as JsonResponse);
      };
      // The status of an answer that began: a connection lost after it is an answer cut short, not one never given.
      let begun: number | undefined;
      const req = send(
        {
          protocol: url.protocol,
          hostname: host,
          port: url.port || undefined,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          // The caller's headers first: the body's length and type are the client's to state.
          // identity: an answer is read as JSON as it arrives (an unrequested encoding is named in the refusal, not decoded).
          headers: { ...headers, 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': 'identity', 'content-length': String(body.length), 'user-agent': 'pricing-compute/1' },
          lookup: isIP(host) ? undefined : (lookup as never),
          agent: false,
          ...(opts.signal ? { signal: opts.signal } : {}),
        },
        (res: IncomingMessage) => {
          const status = res.statusCode ?? 0;
          begun = status;
          if (status >= 300 && status < 400) {
            res.resume();
            // 304 is no redirect: it answers a conditional GET, which these POSTs never are.
            const said = status === 304 ? 'The endpoint answered 304 Not Modified, which answers no POST: a price is expected (200 with JSON).' : `Redirects are not followed (${status} ${res.headers.location === undefined ? 'without a Location' : `to ${res.headers.location}`}).`;
            finish(new OutboundError('redirect', said, status));
            req.destroy();
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > this.maxBodyBytes) {
              finish(new OutboundError('too_large', `The endpoint's answer is larger than ${this.maxBodyBytes} bytes.`));
              req.destroy();
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => {
            // A byte order mark before JSON is allowed to be ignored (RFC 8259, 8.1), and some servers send one.
            const text = Buffer.concat(chunks).toString('utf8').replace(/^\uFEFF/, '');
            if (status < 200 || status >= 300) {
              return finish(new OutboundError('status', `The endpoint answered HTTP ${status}.`, status, undefined, retryAfterSeconds(res.headers['retry-after']), { text, type: res.headers['content-type'] }));
            }
            try {
              finish(null, { status, body: JSON.parse(text) as unknown });
            } catch {
              finish(new OutboundError('invalid_json', notJson(text, res.headers['content-encoding'], res.headers['content-type']), status));
            }
          });
          res.on('error', (err: NodeJS.ErrnoException) => finish(new OutboundError('network', err.message, status, err.code)));
        },
      );
      const timer = setTimeout(() => {
        finish(new OutboundError('timeout', `The endpoint did not answer within ${timeoutMs} ms.`));
        req.destroy();
      }, timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => finish(err instanceof OutboundBlockedError || err instanceof OutboundError ? err : new OutboundError('network', err.message, begun, err.code)));
      req.end(body);
    });
  }
}
