import { expect } from 'chai';
import { AddressPolicy, isIpLiteral } from '../../../core/outbound/address-policy';

describe('outbound guard: AddressPolicy', () => {
  const policy = new AddressPolicy();

  for (const address of ['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8']) {
    it(`allows the public address ${address}`, () => {
      expect(policy.check(address)).to.deep.equal({ allowed: true, range: 'unicast' });
    });
  }

  for (const [address, range] of [
    ['::7f00:1', 'ipv4Compatible'],
    ['::8.8.8.8', 'ipv4Compatible'],
    ['::127.0.0.1', 'ipv4Compatible'],
    ['0:0:0:0:0:0:169.254.169.254', 'ipv4Compatible'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['4000::1', 'reserved'],
    ['1::1', 'reserved'],
    ['e000::1', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['168.63.129.16', 'cloudPlatform'],
    ['::ffff:168.63.129.16', 'cloudPlatform'],
    ['127.0.0.1', 'loopback'],
    ['not-an-address', 'unparseable'],
    ['', 'unparseable'],
  ] as const) {
    it(`refuses ${address || '(empty)'} as ${range}`, () => {
      expect(policy.check(address)).to.deep.equal({ allowed: false, range });
    });
  }

  it('an allow-list opens exactly its ranges, and an IPv4-mapped address as its IPv4 address', () => {
    const p = new AddressPolicy(['127.0.0.1', '10.1.0.0/16', 'fd00::/64']);
    expect(p.check('127.0.0.1').allowed).to.equal(true);
    expect(p.check('::ffff:127.0.0.1').allowed).to.equal(true);
    // ::127.0.0.1 is IPv4-compatible (the socket connects to ::7f00:1), not 127.0.0.1.
    expect(p.check('::127.0.0.1')).to.deep.equal({ allowed: false, range: 'ipv4Compatible' });
    expect(p.check('127.0.0.2')).to.deep.equal({ allowed: false, range: 'loopback' });
    expect(p.check('10.1.255.255').allowed).to.equal(true);
    expect(p.check('10.2.0.1')).to.deep.equal({ allowed: false, range: 'private' });
    expect(p.check('fd00::1').allowed).to.equal(true);
    expect(p.check('fd00:0:0:1::1')).to.deep.equal({ allowed: false, range: 'uniqueLocal' });
    expect(p.check('::1')).to.deep.equal({ allowed: false, range: 'loopback' });
  });

  it('isIpLiteral tells dotted quads and bracketed IPv6 from names', () => {
    expect(isIpLiteral('127.0.0.1')).to.equal(true);
    expect(isIpLiteral('[::1]')).to.equal(true);
    expect(isIpLiteral('::1')).to.equal(true);
    expect(isIpLiteral('localhost')).to.equal(false);
    expect(isIpLiteral('example.com')).to.equal(false);
  });
});
