import { expect } from 'chai';
import { connect } from 'node:net';
import { OutboundBlockedError, OutboundError, SafeHttpClient } from '../../../core/outbound/safe-http-client';
import { sendJson, startCanary, startUpstream, stubResolver } from '../../support/outbound';
import type { Canary, Upstream } from '../../support/outbound';

/**
 * SSRF corpus (safety conventions B4, B9 item 1): every hostile target is refused with
 * OutboundBlockedError naming its range, over real sockets (no nock), and a canary listening on
 * the loopback addresses sees no connection at all.
 */

interface Entry {
  /** What the test is called by. */
  label: string;
  /** Builds the URL from the canary port. */
  url: (port: number) => string;
  range: string;
}

const at =
  (host: string, scheme = 'http') =>
  (port: number) =>
    `${scheme}://${host}:${port}/price`;

const literal = (host: string, range: string, note = ''): Entry => ({ label: `${host}${note ? ` (${note})` : ''}`, url: at(host), range });

/** Literal addresses, one per range, plus the textual disguises WHATWG URL turns back into them. */
const LITERALS: Entry[] = [
  // loopback
  literal('127.0.0.1', 'loopback'),
  literal('127.0.0.2', 'loopback'),
  literal('127.255.255.254', 'loopback'),
  literal('127.127.127.127', 'loopback'),
  literal('127.0.1.3', 'loopback'),
  literal('127.0.0.0', 'loopback'),
  literal('[::1]', 'loopback'),
  literal('[0:0:0:0:0:0:0:1]', 'loopback'),
  // private, CGNAT, link-local (cloud metadata), unspecified
  literal('10.0.0.1', 'private'),
  literal('10.255.255.254', 'private'),
  literal('172.16.0.1', 'private'),
  literal('172.31.255.254', 'private'),
  literal('192.168.0.1', 'private'),
  literal('192.168.1.1', 'private'),
  literal('100.64.0.1', 'carrierGradeNat'),
  literal('100.127.255.254', 'carrierGradeNat'),
  literal('169.254.169.254', 'linkLocal', 'cloud metadata'),
  literal('169.254.0.1', 'linkLocal'),
  literal('0.0.0.0', 'unspecified'),
  literal('0', 'unspecified', 'short form of 0.0.0.0'),
  literal('[::]', 'unspecified'),
  // IPv6 unique-local, link-local, site-local
  literal('[fd00::1]', 'uniqueLocal'),
  literal('[fc00::1]', 'uniqueLocal'),
  literal('[fd00:ec2::254]', 'uniqueLocal', 'AWS metadata over IPv6'),
  literal('[fe80::1]', 'linkLocal'),
  literal('[fec0::1]', 'deprecatedSiteLocal'),
  // IPv4-mapped IPv6: judged as the IPv4 address inside
  literal('[::ffff:127.0.0.1]', 'loopback', 'IPv4-mapped'),
  literal('[::ffff:7f00:1]', 'loopback', 'IPv4-mapped, hex'),
  literal('[0:0:0:0:0:ffff:127.0.0.1]', 'loopback', 'IPv4-mapped, long'),
  literal('[::ffff:169.254.169.254]', 'linkLocal', 'IPv4-mapped'),
  literal('[::ffff:a9fe:a9fe]', 'linkLocal', 'IPv4-mapped, hex'),
  literal('[::ffff:10.0.0.1]', 'private', 'IPv4-mapped'),
  literal('[::ffff:0:0]', 'unspecified', 'IPv4-mapped 0.0.0.0'),
  // IPv4-compatible (deprecated ::/96) and IPv4-translated
  literal('[::127.0.0.1]', 'ipv4Compatible', 'IPv4-compatible'),
  literal('[::a9fe:a9fe]', 'ipv4Compatible', 'IPv4-compatible'),
  literal('[::ffff:0:7f00:1]', 'rfc6145', 'IPv4-translated'),
  // NAT64, 6to4, Teredo: transition forms that embed an IPv4 address
  literal('[64:ff9b::a9fe:a9fe]', 'rfc6052', 'NAT64'),
  literal('[64:ff9b::7f00:1]', 'rfc6052', 'NAT64'),
  literal('[64:ff9b:1::1]', 'rfc6052', 'local-use NAT64'),
  literal('[2002:7f00:1::]', '6to4'),
  literal('[2002:a9fe:a9fe::]', '6to4'),
  literal('[2001:0:4136:e378:8000:63bf:3fff:fdd2]', 'teredo'),
  literal('[2001:0:1::1]', 'teredo'),
  // multicast, broadcast, reserved, benchmarking, documentation, other special IPv6
  literal('224.0.0.1', 'multicast'),
  literal('239.255.255.250', 'multicast', 'SSDP'),
  literal('[ff02::1]', 'multicast'),
  literal('[ff00::1]', 'multicast'),
  literal('255.255.255.255', 'broadcast'),
  literal('240.0.0.1', 'reserved'),
  literal('192.0.0.8', 'reserved', 'IETF protocol assignments'),
  literal('198.18.0.1', 'reserved', 'benchmarking'),
  literal('192.0.2.1', 'reserved', 'documentation'),
  literal('198.51.100.1', 'reserved', 'documentation'),
  literal('203.0.113.1', 'reserved', 'documentation'),
  literal('[2001:db8::1]', 'reserved', 'documentation'),
  literal('[3fff::1]', 'reserved', 'documentation'),
  literal('[100::1]', 'discard'),
  literal('[5f00::1]', 'segmentRouting'),
  literal('[4000::1]', 'reserved', 'outside global unicast 2000::/3'),
  // decimal, hex, octal and short IPv4 forms
  literal('2130706433', 'loopback', 'decimal'),
  literal('0x7f000001', 'loopback', 'hex'),
  literal('0X7F000001', 'loopback', 'hex, upper case'),
  literal('0x7f.1', 'loopback', 'hex, short'),
  literal('0x7f.0x0.0x0.0x1', 'loopback', 'hex per part'),
  literal('017700000001', 'loopback', 'octal'),
  literal('0177.0.0.1', 'loopback', 'octal first part'),
  literal('0177.1', 'loopback', 'octal, short'),
  literal('127.1', 'loopback', 'short'),
  literal('127.0.1', 'loopback', 'short'),
  literal('127.000.000.001', 'loopback', 'zero-padded'),
  literal('127.0.0.1.', 'loopback', 'trailing dot'),
  literal('%31%32%37.0.0.1', 'loopback', 'percent-encoded'),
  literal('\uff11\uff12\uff17.\uff10.\uff10.\uff11', 'loopback', 'full-width digits'),
  literal('0xa9fea9fe', 'linkLocal', 'hex'),
  literal('0xA9.0xFE.0xA9.0xFE', 'linkLocal', 'hex per part'),
  literal('2852039166', 'linkLocal', 'decimal'),
  literal('0251.0376.0251.0376', 'linkLocal', 'octal per part'),
  literal('0251.00376.000251.0000376', 'linkLocal', 'octal, padded'),
  literal('012.0.0.1', 'private', 'octal first part'),
  literal('0xa000001', 'private', 'hex'),
  literal('3232235521', 'private', 'decimal 192.168.0.1'),
  literal('3232235777', 'private', 'decimal 192.168.1.1'),
  // userinfo, fragment and backslash confusion: the real host is loopback
  { label: '127.1.1.1 with "#@127.2.2.2" fragment', url: (p) => `http://127.1.1.1:${p}#@127.2.2.2:80`, range: 'loopback' },
  { label: '127.0.0.1 with "\\@evil.example" (backslash is a slash)', url: (p) => `http://127.0.0.1:${p}\\@evil.example/`, range: 'loopback' },
];

const HTTPS: Entry[] = [
  { label: 'https://127.0.0.1', url: at('127.0.0.1', 'https'), range: 'loopback' },
  { label: 'https://[::1]', url: at('[::1]', 'https'), range: 'loopback' },
  { label: 'https://0x7f.1', url: at('0x7f.1', 'https'), range: 'loopback' },
  { label: 'https://169.254.169.254', url: at('169.254.169.254', 'https'), range: 'linkLocal' },
  { label: 'https://[::ffff:a9fe:a9fe]', url: at('[::ffff:a9fe:a9fe]', 'https'), range: 'linkLocal' },
  { label: 'https://10.0.0.1', url: at('10.0.0.1', 'https'), range: 'private' },
];

interface NameEntry {
  name: string;
  answer: string[];
  range: string;
  scheme?: 'http' | 'https';
  note?: string;
}

/** Names only a (stub) resolver can judge: the refusal must come from the connection-time lookup. */
const NAMES: NameEntry[] = [
  { name: 'loopback.attacker.test', answer: ['127.0.0.1'], range: 'loopback' },
  { name: 'private.attacker.test', answer: ['10.0.0.5'], range: 'private' },
  { name: 'metadata.attacker.test', answer: ['169.254.169.254'], range: 'linkLocal' },
  { name: 'v6-loopback.attacker.test', answer: ['::1'], range: 'loopback' },
  { name: 'mapped.attacker.test', answer: ['::ffff:127.0.0.1'], range: 'loopback' },
  { name: 'mixed.attacker.test', answer: ['93.184.215.14', '127.0.0.1'], range: 'loopback', note: 'public + loopback: refused as a whole' },
  { name: 'mixed-v6.attacker.test', answer: ['2606:4700::1111', 'fd00::1'], range: 'uniqueLocal', note: 'public + ULA: refused as a whole' },
  { name: 'nat64.attacker.test', answer: ['64:ff9b::a9fe:a9fe'], range: 'rfc6052' },
  { name: 'cgnat.attacker.test', answer: ['100.64.0.1'], range: 'carrierGradeNat' },
  { name: 'zero.attacker.test', answer: ['0.0.0.0'], range: 'unspecified' },
  { name: 'compat.attacker.test', answer: ['::7f00:1'], range: 'ipv4Compatible' },
  { name: 'compat-dotted.attacker.test', answer: ['::169.254.169.254'], range: 'ipv4Compatible', note: 'as resolvers print ::a9fe:a9fe' },
  { name: 'garbage.attacker.test', answer: ['not-an-address'], range: 'unparseable' },
  { name: 'localtest.me', answer: ['127.0.0.1'], range: 'loopback' },
  { name: 'customer1.app.localhost.my.company.127.0.0.1.nip.io', answer: ['127.0.0.1'], range: 'loopback' },
  { name: '169.254.169.254.nip.io', answer: ['169.254.169.254'], range: 'linkLocal' },
  { name: 'metadata.google.internal', answer: ['169.254.169.254'], range: 'linkLocal' },
  { name: 'https-loopback.attacker.test', answer: ['127.0.0.1'], range: 'loopback', scheme: 'https' },
  { name: 'https-metadata.attacker.test', answer: ['169.254.169.254'], range: 'linkLocal', scheme: 'https' },
];

/**
 * Loopback by definition (RFC 6761 §6.3), whatever a resolver would answer: refused before any lookup, so registration
 * refuses them as it refuses 127.0.0.1; the stub resolver is never asked.
 */
const LOCALHOST_NAMES = ['localhost', 'localhost.', 'LocalHost', 'app.localhost', 'a.b.localhost.'];

/** Refused before any address is judged (not a URL, wrong scheme, credentials): OutboundError 'protocol'. */
const NOT_URLS: Array<{ label: string; url: (port: number) => string }> = [
  { label: '425.510.425.510 (parts over 255)', url: (p) => `http://425.510.425.510:${p}/` },
  { label: '7147006462 (over 32 bits)', url: (p) => `http://7147006462:${p}/` },
  { label: '0x41414141A9FEA9FE (over 32 bits)', url: (p) => `http://0x41414141A9FEA9FE:${p}/` },
  { label: '[fe80::1%25lo] (zone id)', url: (p) => `http://[fe80::1%25lo]:${p}/` },
  { label: 'credentials 127.1.1.1:80@127.2.2.2', url: (p) => `http://127.1.1.1:80@127.2.2.2:${p}/` },
  { label: 'file:///etc/passwd', url: () => 'file:///etc/passwd' },
  { label: 'gopher://127.0.0.1', url: (p) => `gopher://127.0.0.1:${p}/_GET` },
  { label: 'ftp://127.0.0.1', url: (p) => `ftp://127.0.0.1:${p}/` },
];

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('the request was not refused');
}

async function expectBlocked(promise: Promise<unknown>, range: string): Promise<OutboundBlockedError> {
  const err = await refusal(promise);
  expect(err, String(err)).to.be.instanceOf(OutboundBlockedError);
  const blocked = err as OutboundBlockedError;
  expect(blocked.range).to.equal(range);
  expect(blocked.kind).to.equal('blocked');
  return blocked;
}

describe('outbound guard: SSRF corpus over real sockets', () => {
  let canary: Canary;
  const table = Object.fromEntries(NAMES.map((n) => [n.name, n.answer]));
  const resolver = stubResolver(table);
  // A short timeout: a request that slipped through would fail with 'timeout' or 'network', not 'blocked'.
  const client = new SafeHttpClient({ resolver: resolver.resolve, defaultTimeoutMs: 2000 });

  before(async () => {
    canary = await startCanary();
  });
  after(async () => {
    await canary.close();
  });

  it(`has at least 60 hostile targets (${LITERALS.length + HTTPS.length + NAMES.length + LOCALHOST_NAMES.length})`, () => {
    expect(LITERALS.length + HTTPS.length + NAMES.length + LOCALHOST_NAMES.length).to.be.at.least(60);
  });

  describe('literal addresses are refused before connecting', () => {
    for (const e of LITERALS) {
      it(`refuses ${e.label} as ${e.range}`, async () => {
        await expectBlocked(client.postJson(e.url(canary.port), { probe: true }), e.range);
      });
    }
  });

  describe('https forms', () => {
    for (const e of HTTPS) {
      it(`refuses ${e.label} as ${e.range}`, async () => {
        await expectBlocked(client.postJson(e.url(canary.port), { probe: true }), e.range);
      });
    }
  });

  describe('names are judged on the addresses the connection would use (stub resolver)', () => {
    for (const n of NAMES) {
      const scheme = n.scheme ?? 'http';
      it(`refuses ${scheme}://${n.name} answering [${n.answer.join(', ')}] as ${n.range}${n.note ? ` (${n.note})` : ''}`, async () => {
        const before = resolver.calls.get(n.name) ?? 0;
        const err = await expectBlocked(client.postJson(`${scheme}://${n.name}:${canary.port}/price`, { probe: true }), n.range);
        expect(err.target).to.equal(n.name);
        // The refusal came from the lookup made for the connection, not from a lexical check.
        expect(resolver.calls.get(n.name) ?? 0).to.equal(before + 1);
      });
    }

    for (const name of LOCALHOST_NAMES) {
      it(`refuses ${name} as loopback before any lookup, at registration (checkUrl) and at the call`, async () => {
        const before = resolver.calls.get(name.toLowerCase()) ?? 0;
        expect(() => client.checkUrl(`http://${name}:${canary.port}/`)).to.throw(OutboundBlockedError, 'loopback');
        await expectBlocked(client.postJson(`http://${name}:${canary.port}/price`, { probe: true }), 'loopback');
        expect(resolver.calls.get(name.toLowerCase()) ?? 0).to.equal(before);
      });
    }

    it('lets localhost through to the lookup when the allow-list opens loopback (tests, on-premises)', () => {
      const open = new SafeHttpClient({ resolver: resolver.resolve, allowList: ['127.0.0.1'] });
      expect(open.checkUrl(`http://localhost:${canary.port}/`).hostname).to.equal('localhost');
    });

    it('does not take a name that only contains localhost for it (judged by the lookup)', () => {
      expect(client.checkUrl(`http://localhost.example.test:${canary.port}/`).hostname).to.equal('localhost.example.test');
      expect(client.checkUrl(`http://mylocalhost:${canary.port}/`).hostname).to.equal('mylocalhost');
    });

    it('checkUrl alone (registration time) lets names through: only the connection-time lookup can judge them', () => {
      expect(client.checkUrl(`http://loopback.attacker.test:${canary.port}/`).hostname).to.equal('loopback.attacker.test');
    });
  });

  describe('DNS rebinding: the answer is judged at every connection', () => {
    let upstream: Upstream;
    let rebindCanary: Canary;

    before(async () => {
      upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 1, confidence: 0.5 }));
      // Listen on the other loopback addresses at the upstream's port: that is where a rebound connection would land.
      rebindCanary = await startCanary({ hosts: ['127.0.0.2', '::1'], port: upstream.port });
    });
    after(async () => {
      await upstream.close();
      await rebindCanary.close();
    });

    for (const bad of ['127.0.0.2', '::1']) {
      it(`first answer acceptable, second ${bad}: the second request is refused at connect time`, async () => {
        const name = `rebind-${bad.replace(/[^0-9a-f]/g, '')}.attacker.test`;
        // The allow-listed 127.0.0.1 stands in for a public address, so the test stays off the network.
        const rebinding = stubResolver({ [name]: (n) => (n === 1 ? ['127.0.0.1'] : [bad]) });
        const guarded = new SafeHttpClient({ allowList: ['127.0.0.1/32'], resolver: rebinding.resolve, defaultTimeoutMs: 2000 });
        const before = upstream.connections();

        const first = await guarded.postJson(`http://${name}:${upstream.port}/price`, { n: 1 });
        expect(first.status).to.equal(200);
        expect(upstream.connections()).to.equal(before + 1);

        await expectBlocked(guarded.postJson(`http://${name}:${upstream.port}/price`, { n: 2 }), 'loopback');
        expect(rebinding.calls.get(name)).to.equal(2);
        expect(upstream.connections()).to.equal(before + 1);
        expect(rebindCanary.connections(), rebindCanary.seen.join(', ')).to.equal(0);
      });
    }
  });

  describe('redirects are never followed', () => {
    let upstream: Upstream;
    const guarded = () => new SafeHttpClient({ allowList: ['127.0.0.1/32'], resolver: resolver.resolve, defaultTimeoutMs: 2000 });

    before(async () => {
      upstream = await startUpstream((req, res) => {
        const to = req.path.startsWith('/to-canary')
          ? `http://127.0.0.2:${canary.port}/`
          : req.path.startsWith('/to-metadata')
            ? `http://169.254.169.254:${canary.port}/latest/meta-data/`
            : req.path.startsWith('/to-https')
              ? `https://127.0.0.2:${canary.port}/`
              : `http://127.0.0.1:${upstream.port}/landing`;
        res.writeHead(req.path.startsWith('/to-metadata') ? 307 : 302, { location: to });
        res.end();
      });
    });
    after(async () => {
      await upstream.close();
    });

    it('the allow-list is exact: 127.0.0.1/32 does not open 127.0.0.2 (where the redirect points)', async () => {
      await expectBlocked(guarded().postJson(`http://127.0.0.2:${canary.port}/`, {}), 'loopback');
    });

    for (const [path, status] of [
      ['/to-canary', 302],
      ['/to-metadata', 307],
      ['/to-https', 302],
    ] as const) {
      it(`${status} from an allow-listed upstream (${path}) fails with kind 'redirect' and is not followed`, async () => {
        const err = await refusal(guarded().postJson(upstream.url(path), { probe: true }));
        expect(err, String(err)).to.be.instanceOf(OutboundError);
        expect((err as OutboundError).kind).to.equal('redirect');
        expect((err as OutboundError).status).to.equal(status);
        expect(canary.connections(), canary.seen.join(', ')).to.equal(0);
      });
    }

    it('a redirect to an allowed address is not followed either', async () => {
      const err = await refusal(guarded().postJson(upstream.url('/to-self'), { probe: true }));
      expect((err as OutboundError).kind).to.equal('redirect');
      // Give a (wrongly) followed request time to arrive.
      await new Promise((r) => setTimeout(r, 100));
      expect(upstream.requests.map((r) => r.path)).to.not.include('/landing');
    });
  });

  describe('refused before any address is judged', () => {
    for (const e of NOT_URLS) {
      it(`refuses ${e.label} with kind 'protocol'`, async () => {
        const err = await refusal(client.postJson(e.url(canary.port), { probe: true }));
        expect(err, String(err)).to.be.instanceOf(OutboundError);
        expect((err as OutboundError).kind).to.equal('protocol');
      });
    }
  });

  describe('the canary', () => {
    it('saw zero connections during the whole corpus', () => {
      expect(canary.hosts).to.include('127.0.0.1');
      expect(canary.connections(), canary.seen.join(', ')).to.equal(0);
    });
  });
});

describe('outbound guard: the canary counts what it should (positive control)', () => {
  it('sees direct connections to 127.0.0.1, 127.0.0.2, ::1, 0.0.0.0 and ::ffff:127.0.0.1', async () => {
    const canary = await startCanary();
    try {
      const targets = ['127.0.0.1', '0.0.0.0', '::ffff:127.0.0.1', ...canary.hosts.filter((h) => h === '127.0.0.2' || h === '::1')];
      for (const host of targets) {
        await new Promise<void>((resolve, reject) => {
          const s = connect({ host, port: canary.port }, () => {
            s.end();
            resolve();
          });
          s.once('error', reject);
        });
      }
      const deadline = Date.now() + 2000;
      while (canary.connections() < targets.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(canary.connections()).to.equal(targets.length);
      expect(canary.hosts).to.include.members(['127.0.0.1', '127.0.0.2']);
    } finally {
      await canary.close();
    }
  });
});
