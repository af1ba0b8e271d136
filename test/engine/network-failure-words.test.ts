import { expect } from 'chai';
import { OutboundError } from '../../core/outbound/safe-http-client';
import { networkFailure } from '../../engine/external';

const failure = (code: string | undefined, message: string) => networkFailure(new OutboundError('network', message, undefined, code));

describe('engine: network failures of an endpoint in its owner\'s words', () => {
  it('names DNS failures with the host that did not resolve, and says when one may pass', () => {
    expect(failure('ENOTFOUND', 'getaddrinfo ENOTFOUND pricing.acme.example')).to.equal("The endpoint's host name does not resolve (ENOTFOUND: pricing.acme.example).");
    expect(failure('EAI_AGAIN', 'getaddrinfo EAI_AGAIN pricing.acme.example')).to.equal("The endpoint's host name could not be resolved just now (EAI_AGAIN, a DNS failure that may pass).");
  });

  it('names TLS failures by code, with the first line of a certificate problem and no OpenSSL source path', () => {
    const openssl = 'write EPROTO 80FC6C96237F0000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/openssl/ssl/record/ssl3_record.c:350:\n';
    expect(failure('EPROTO', openssl)).to.equal('The TLS handshake with the endpoint failed (EPROTO): the address may serve plain http where https was registered.');
    expect(failure('EPROTO', 'write EPROTO handshake failure')).to.equal('The TLS handshake with the endpoint failed (EPROTO).');
    expect(failure('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate')).to.equal('The TLS handshake with the endpoint failed (DEPTH_ZERO_SELF_SIGNED_CERT): self-signed certificate.');
    expect(failure('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames: Host: a.example. is not in the cert's altnames: DNS:b.example")).to.match(/^The TLS handshake with the endpoint failed \(ERR_TLS_CERT_ALTNAME_INVALID\): Hostname\/IP does not match/);
  });

  it('says a reset, a refusal and an unreachable address plainly; an unknown code keeps the runtime\'s message', () => {
    expect(failure('ECONNRESET', 'socket hang up')).to.equal('The endpoint closed the connection before answering.');
    expect(failure('ECONNREFUSED', 'connect ECONNREFUSED 203.0.113.9:443')).to.equal('The endpoint refused the connection (ECONNREFUSED): nothing accepts connections at its address and port.');
    expect(failure('EHOSTUNREACH', 'connect EHOSTUNREACH 203.0.113.9:443')).to.equal("The endpoint's address is unreachable (EHOSTUNREACH).");
    expect(failure('ESOMETHING', 'something odd')).to.equal('something odd');
    expect(failure(undefined, 'no code at all')).to.equal('no code at all');
  });
});
