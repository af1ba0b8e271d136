import { expect } from 'chai';
import { OutboundBlockedError, OutboundError, SafeHttpClient } from '../../../core/outbound/safe-http-client';
import { sendJson, startUpstream, stubResolver } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('the request did not fail');
}

async function expectOutboundError(promise: Promise<unknown>, kind: OutboundError['kind']): Promise<OutboundError> {
  const err = await refusal(promise);
  expect(err, String(err)).to.be.instanceOf(OutboundError);
  expect((err as OutboundError).kind).to.equal(kind);
  return err as OutboundError;
}

describe('outbound guard: SafeHttpClient against an allow-listed loopback upstream (positive controls)', () => {
  let upstream: Upstream;
  const big = 'x'.repeat(4096);

  before(async () => {
    upstream = await startUpstream((req, res) => {
      switch (req.path) {
        case '/price':
          return sendJson(res, 200, { price: 12.5, confidence: 0.8, echo: JSON.parse(req.body) as unknown });
        case '/exactly-1024': {
          // {"p":"xxx..."} padded to exactly 1024 bytes.
          const body = JSON.stringify({ p: 'x'.repeat(1024 - 8) });
          res.writeHead(200, { 'content-type': 'application/json' });
          return void res.end(body);
        }
        case '/big':
          return sendJson(res, 200, { big });
        case '/never':
          return; // never answers
        case '/slow-body':
          res.writeHead(200, { 'content-type': 'application/json' });
          return void res.write('{"price":'); // headers, then nothing more
        case '/not-json':
          res.writeHead(200, { 'content-type': 'text/html' });
          return void res.end('<html>hello</html>');
        case '/fail':
          return sendJson(res, 500, { error: 'boom' });
        case '/missing':
          return sendJson(res, 404, { error: 'nope' });
        default:
          return sendJson(res, 400, { error: 'unknown path' });
      }
    });
  });
  after(async () => {
    await upstream.close();
  });

  const client = (opts: ConstructorParameters<typeof SafeHttpClient>[0] = {}) => new SafeHttpClient({ allowList: ['127.0.0.1/32'], defaultTimeoutMs: 3000, ...opts });

  it('POSTs JSON and returns the status and parsed body', async () => {
    const res = await client().postJson(upstream.url('/price'), { context: { current_price: 10 } }, { headers: { 'x-trace': 'abc' } });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ price: 12.5, confidence: 0.8, echo: { context: { current_price: 10 } } });
    const received = upstream.requests.at(-1);
    expect(received?.method).to.equal('POST');
    expect(received?.headers['content-type']).to.equal('application/json');
    expect(received?.headers['x-trace']).to.equal('abc');
    expect(JSON.parse(received?.body ?? 'null')).to.deep.equal({ context: { current_price: 10 } });
  });

  it('reaches an allow-listed address through a name (the connection-time lookup answers it)', async () => {
    const resolver = stubResolver({ 'upstream.internal.test': ['127.0.0.1'] });
    const res = await client({ resolver: resolver.resolve }).postJson(`http://upstream.internal.test:${upstream.port}/price`, { n: 1 });
    expect(res.status).to.equal(200);
    expect(resolver.calls.get('upstream.internal.test')).to.equal(1);
  });

  it('refuses a port outside OUTBOUND_ALLOWED_PORTS on a public address before connecting, and lets an allow-listed address use any port', async () => {
    const resolver = stubResolver({ 'mail.example.test': ['8.8.8.8'] });
    const err = await refusal(client({ resolver: resolver.resolve, allowedPorts: [443, 80] }).postJson('http://mail.example.test:25/', {}));
    expect(err).to.be.instanceOf(OutboundError);
    expect((err as Error).message).to.match(/Port 25 of mail\.example\.test is not allowed/);
    expect(String((err as Error).message)).to.not.match(/8\.8\.8\.8:25.*ECONN/);
    const literal = await refusal(client({ allowedPorts: [443] }).postJson('http://8.8.4.4:8080/', {}));
    expect((literal as Error).message).to.match(/Port 8080 of 8\.8\.4\.4:8080 is not allowed/);
    // The loopback upstream is allow-listed: its random port is fine.
    const ok = await client({ allowedPorts: [443, 80] }).postJson(upstream.url('/price'), {});
    expect(ok.status).to.equal(200);
  });

  it('the same upstream is refused without the allow-list (the controls above are not vacuous)', async () => {
    const err = await refusal(new SafeHttpClient().postJson(upstream.url('/price'), {}));
    expect(err).to.be.instanceOf(OutboundBlockedError);
    expect((err as OutboundBlockedError).range).to.equal('loopback');
  });

  it('names a refused range in words, article included (link-local, not linkLocal)', () => {
    expect(new OutboundBlockedError('169.254.169.254', 'linkLocal').message).to.equal('Outbound request refused: 169.254.169.254 is a link-local address.');
    expect(new OutboundBlockedError('[fd00::1]', 'uniqueLocal').message).to.equal('Outbound request refused: [fd00::1] is a unique local (private IPv6) address.');
    expect(new OutboundBlockedError('0.0.0.0', 'unspecified').message).to.equal('Outbound request refused: 0.0.0.0 is an unspecified address.');
    expect(new OutboundBlockedError('[::ffff:0:7f00:1]', 'rfc6145').message).to.equal('Outbound request refused: [::ffff:0:7f00:1] is an IPv4-translated (RFC 6145) address.');
    expect(new OutboundBlockedError('[::7f00:1]', 'ipv4Compatible').message).to.equal('Outbound request refused: [::7f00:1] is an IPv4-compatible address.');
    expect(new OutboundBlockedError('168.63.129.16', 'cloudPlatform').message).to.equal("Outbound request refused: 168.63.129.16 is a cloud platform's own (metadata) address.");
    expect(new OutboundBlockedError('100.64.0.1', 'carrierGradeNat').range).to.equal('carrierGradeNat');
  });

  it('accepts a body of exactly maxBodyBytes', async () => {
    const res = await client({ maxBodyBytes: 1024 }).postJson(upstream.url('/exactly-1024'), {});
    expect(res.status).to.equal(200);
    expect(JSON.stringify(res.body)).to.have.length(1024);
  });

  it("fails with 'too_large' when the body exceeds maxBodyBytes", async () => {
    await expectOutboundError(client({ maxBodyBytes: 1024 }).postJson(upstream.url('/big'), {}), 'too_large');
  });

  it("fails with 'timeout' when the upstream does not answer in time", async () => {
    const started = Date.now();
    await expectOutboundError(client().postJson(upstream.url('/never'), {}, { timeoutMs: 200 }), 'timeout');
    expect(Date.now() - started).to.be.within(150, 2000);
  });

  it("fails with 'timeout' when the body never finishes (the limit covers the whole exchange)", async () => {
    await expectOutboundError(client({ defaultTimeoutMs: 200 }).postJson(upstream.url('/slow-body'), {}), 'timeout');
  });

  it("fails with 'invalid_json' on a non-JSON body", async () => {
    const err = await expectOutboundError(client().postJson(upstream.url('/not-json'), {}), 'invalid_json');
    expect(err.status).to.equal(200);
  });

  it("fails with 'status' on a 500, carrying the status", async () => {
    const err = await expectOutboundError(client().postJson(upstream.url('/fail'), {}), 'status');
    expect(err.status).to.equal(500);
  });

  it("fails with 'status' on a 404", async () => {
    const err = await expectOutboundError(client().postJson(upstream.url('/missing'), {}), 'status');
    expect(err.status).to.equal(404);
  });

  it("fails with 'network' (not 'blocked') when an allowed address refuses the connection", async () => {
    const closed = await startUpstream(() => undefined);
    const url = closed.url('/price');
    await closed.close();
    await expectOutboundError(client().postJson(url, {}), 'network');
  });

  it("fails with 'network' when a name has no address", async () => {
    const resolver = stubResolver({ 'empty.test': [] });
    await expectOutboundError(client({ resolver: resolver.resolve }).postJson(`http://empty.test:${upstream.port}/`, {}), 'network');
  });

  it("httpsOnly refuses plain http with 'protocol' before connecting", async () => {
    const before = upstream.connections();
    await expectOutboundError(client({ httpsOnly: true }).postJson(upstream.url('/price'), {}), 'protocol');
    expect(upstream.connections()).to.equal(before);
  });
});
