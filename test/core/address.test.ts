import { expect } from 'chai';
import { limitAddress } from '../../core/address';

describe('core/address: the address a per-address limit counts under (limitAddress)', () => {
  it('counts an IPv4 address whole, in either form Express reports it', () => {
    expect(limitAddress('203.0.113.7', 64)).to.equal('203.0.113.7');
    expect(limitAddress('::ffff:203.0.113.7', 64)).to.equal('203.0.113.7');
  });

  it('counts every IPv6 address of one /64 as that network, and another /64 apart', () => {
    const counted = ['2001:db8:1::1', '2001:db8:1::2', '2001:db8:1:0:ffff:ffff:ffff:ffff', '2001:0db8:0001:0000::4'].map((a) => limitAddress(a, 64));
    expect(new Set(counted)).to.deep.equal(new Set(['2001:db8:1::/64']));
    expect(limitAddress('2001:db8:1:1::1', 64)).to.equal('2001:db8:1:1::/64');
  });

  it('follows the prefix length it is given, bits within a group included', () => {
    expect(limitAddress('2001:db8:1:2::1', 48)).to.equal('2001:db8:1::/48');
    expect(limitAddress('2001:db8:ffff::1', 36)).to.equal('2001:db8:f000::/36');
    expect(limitAddress('2001:db8::1', 128)).to.equal('2001:db8::1/128');
    expect(limitAddress('2001:db8::2', 128)).not.to.equal(limitAddress('2001:db8::1', 128));
    expect(limitAddress('2001:db8::1', 1)).to.equal('::/1');
  });

  it('counts a string that is not an address as sent', () => {
    expect(limitAddress('unknown', 64)).to.equal('unknown');
  });
});
