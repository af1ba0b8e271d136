import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError } from '../../core/errors';
import { retryAfterSeconds } from '../../core/outbound/safe-http-client';
import { toApiError } from '../../plugins/pricing/services/engine-errors';
import { engineError, fixture, harness, policy } from './harness';
import type { Harness } from './harness';

describe("engine: an endpoint's Retry-After is passed on", function () {
  this.timeout(20_000);
  let h: Harness;
  let upstream: Server;

  before(async () => {
    // /<status>/<retry-after>: answers that status with that Retry-After (none for "-").
    upstream = createServer((req, res) => {
      const [, status, after] = (req.url ?? '').split('/');
      res.writeHead(Number(status), { 'content-type': 'application/json', ...(after && after !== '-' ? { 'retry-after': decodeURIComponent(after) } : {}) });
      res.end('{"error":"later"}');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const remote = (name: string, path: string) => fixture(name, { executionType: 'external_api', endpointUrl: `${base}${path}` });
    h = await harness({
      functions: [remote('test-429-120', '/429/120'), remote('test-503-30', '/503/30'), remote('test-503-huge', '/503/99999'), remote('test-500-bare', '/500/-'), remote('test-503-garbled', '/503/soon')],
      engine: { cacheTtlMs: 0, breakerMinCalls: 1000 },
      outbound: { allowList: ['127.0.0.1'] },
    });
  });
  after(async () => {
    await h.close();
    await new Promise((resolve) => upstream.close(resolve));
  });

  const pinned = (name: string, chain: string[] = []) => h.price({ pin: { name }, policy: policy('default', {}, { fallback_chain: chain }) });

  it('a 429 with Retry-After: 120 and a 503 with Retry-After: 30: 502 retryable with the sooner of them, each attempt with its own', async () => {
    const err = await engineError(pinned('test-429-120', ['test-503-30']), 'functions_failed');
    expect(err.details.attempts?.map((a) => [a.function, a.outcome, a.error, a.retry_after])).to.deep.equal([
      ['test-429-120', 'failed', 'The endpoint answered HTTP 429.', 120],
      ['test-503-30', 'failed', 'The endpoint answered HTTP 503.', 30],
    ]);
    expect(err.details.retryAfterS).to.equal(30);
    expect(err.message).to.equal('Every function tried failed (the function named in the request, the fallback chain), each endpoint asking to be called again later: the soonest in 30 s.');
    const api = toApiError(err) as ApiError;
    expect(api).to.be.instanceOf(ApiError);
    expect(api.extras.retry_after).to.equal(30);
    expect(api.extras.fields).to.include({ retryable: true });
  });

  it('bounds the wait passed on to 300 s', async () => {
    const err = await engineError(pinned('test-503-huge'), 'functions_failed');
    expect(err.details.attempts?.[0]?.retry_after).to.equal(300);
    expect(err.details.retryAfterS).to.equal(300);
  });

  it('passes on no wait when a failure did not ask for one, or asked in a form that is not a Retry-After', async () => {
    const mixed = await engineError(pinned('test-503-30', ['test-500-bare']), 'functions_failed');
    expect(mixed.details.retryAfterS).to.equal(undefined);
    expect(mixed.message).to.equal('Every function tried failed (the function named in the request, the fallback chain).');
    const garbled = await engineError(pinned('test-503-garbled'), 'functions_failed');
    expect(garbled.details.attempts?.[0]).to.not.have.property('retry_after');
    expect(garbled.details.retryAfterS).to.equal(undefined);
  });

  it('reads Retry-After as delta-seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    expect(retryAfterSeconds('120', now)).to.equal(120);
    expect(retryAfterSeconds(' 0 ', now)).to.equal(0);
    expect(retryAfterSeconds('Fri, 27 Nov 2026 12:01:30 GMT', now)).to.equal(90);
    expect(retryAfterSeconds('Fri, 27 Nov 2026 11:00:00 GMT', now)).to.equal(0);
    for (const bad of [undefined, '', '-5', '1.5', 'soon']) expect(retryAfterSeconds(bad, now), String(bad)).to.equal(undefined);
  });
});
