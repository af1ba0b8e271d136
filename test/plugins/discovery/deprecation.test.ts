import { expect } from 'chai';
import { z } from 'zod';
import { ApiError } from '../../../core/errors';
import { defineRoute, ok } from '../../../core/http/route';
import type { PluginDefinition } from '../../../core/plugin';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';

/** A test-only retiring route: the machinery is declared in one place (the route's `deprecated`). */
const retiring: PluginDefinition = {
  name: 'retiring',
  description: 'test-only deprecated routes',
  register(ctx) {
    const deprecated = { since: '2026-10-01T00:00:00Z', sunset: '2027-03-01T00:00:00Z', link: 'https://pricing.example.com/changelog#retiring' };
    ctx.route(defineRoute({ id: 'retiring.ok', method: 'get', path: '/retiring/ok', summary: 'retiring', auth: 'public', deprecated, handler: () => ok({ ok: true }) }));
    ctx.route(
      defineRoute({
        id: 'retiring.fail',
        method: 'get',
        path: '/retiring/fail',
        summary: 'retiring, failing',
        auth: 'public',
        deprecated,
        handler: () => {
          throw new ApiError('conflict', 'nope');
        },
      }),
    );
    ctx.route(defineRoute({ id: 'retiring.create', method: 'post', path: '/retiring/items', summary: 'retiring, with a body', auth: 'public', deprecated, body: z.strictObject({ a: z.string() }), example: { a: 'x' }, handler: () => ok({ ok: true }) }));
    ctx.route(defineRoute({ id: 'retiring.read', method: 'get', path: '/retiring/items/:id', summary: 'retiring, with a parameter', auth: 'public', deprecated, handler: () => ok({ ok: true }) }));
    // A path keeping a current operation beside a retiring one.
    ctx.route(defineRoute({ id: 'retiring.mixedOld', method: 'get', path: '/retiring/mixed', summary: 'retiring', auth: 'public', deprecated, handler: () => ok({ ok: true }) }));
    ctx.route(defineRoute({ id: 'retiring.mixedNew', method: 'post', path: '/retiring/mixed', summary: 'current', auth: 'public', handler: () => ok({ ok: true }) }));
    ctx.route(defineRoute({ id: 'retiring.private', method: 'get', path: '/retiring/private', summary: 'retiring, needs a key', deprecated: { since: '2026-10-01T00:00:00Z', link: 'https://pricing.example.com/changelog#x' }, handler: () => ok({}) }));
  },
};

describe('deprecation signals', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ extraPlugins: [retiring], enabled: ['health', 'identity', 'retiring'] });
  });
  after(() => svc.close());

  it('sends Deprecation, Sunset and Link rel="deprecation" on a successful response', async () => {
    const res = await client(svc.url).get('/retiring/ok');
    expect(res.status).to.equal(200);
    expect(res.headers.get('deprecation')).to.equal(`@${Date.parse('2026-10-01T00:00:00Z') / 1000}`);
    expect(res.headers.get('sunset')).to.equal(new Date('2027-03-01T00:00:00Z').toUTCString());
    expect(res.headers.get('link')).to.match(/^<https:\/\/pricing\.example\.com\/changelog#retiring>; rel="deprecation"/);
  });

  it('sends them on errors too, including a refused credential', async () => {
    const err = await client(svc.url).get('/retiring/fail');
    expect(err.status).to.equal(409);
    expect(err.headers.get('deprecation')).to.be.a('string');
    expect(err.headers.get('link')).to.contain('rel="deprecation"');
    const unauth = await client(svc.url).get('/retiring/private');
    expect(unauth.status).to.equal(401);
    expect(unauth.headers.get('deprecation')).to.be.a('string');
    expect(unauth.headers.get('sunset')).to.equal(null);
  });

  const expectSignals = (res: { headers: Headers }, what: string): void => {
    expect(res.headers.get('deprecation'), what).to.equal(`@${Date.parse('2026-10-01T00:00:00Z') / 1000}`);
    expect(res.headers.get('sunset'), what).to.equal(new Date('2027-03-01T00:00:00Z').toUTCString());
    expect(res.headers.get('link'), what).to.equal('<https://pricing.example.com/changelog#retiring>; rel="deprecation"; type="text/html"');
  };

  it('sends them on a body refused while it is read: too large (413) and undecodable by its Content-Encoding (400 invalid_json)', async () => {
    const api = client(svc.url);
    const large = await api.raw('POST', '/retiring/items', { rawBody: JSON.stringify({ a: 'x'.repeat(2_000_000) }), headers: { 'content-type': 'application/json' } });
    expect(large.status).to.equal(413);
    expect(large.body.code).to.equal('payload_too_large');
    expectSignals(large, '413');
    const gzip = await api.raw('POST', '/retiring/items', { rawBody: 'not gzip', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    expect(gzip.status).to.equal(400);
    expect(gzip.body.code).to.equal('invalid_json');
    expectSignals(gzip, 'broken gzip');
    const invalid = await api.post('/retiring/items', {});
    expect(invalid.status).to.equal(400);
    expect(invalid.body.code).to.equal('validation_error');
    expectSignals(invalid, 'validation');
  });

  it('sends them on 405 and OPTIONS of a path whose every operation retires, and not on a path keeping a current one', async () => {
    const api = client(svc.url);
    const wrong = await api.delete('/retiring/items');
    expect(wrong.status).to.equal(405);
    expect(wrong.body.code).to.equal('method_not_allowed');
    expect(wrong.headers.get('allow')).to.equal('POST');
    expectSignals(wrong, '405');
    const options = await api.raw('OPTIONS', '/retiring/items');
    expect(options.status).to.equal(204);
    expect(options.headers.get('allow')).to.equal('POST, OPTIONS');
    expectSignals(options, 'OPTIONS');
    const mixed = await api.delete('/retiring/mixed');
    expect(mixed.status).to.equal(405);
    expect(mixed.headers.get('deprecation')).to.equal(null);
    expectSignals(await api.get('/retiring/mixed'), 'GET on the mixed path');
    expect((await api.post('/retiring/mixed', {})).headers.get('deprecation')).to.equal(null);
  });

  it('sends them on an undecodable path parameter of a retiring operation (400 validation_error)', async () => {
    const res = await client(svc.url).get('/retiring/items/%E0%A4%A');
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expectSignals(res, 'undecodable parameter');
  });

  it('marks no shipped route as retiring', () => {
    expect(svc.routes.all().filter((r) => r.plugin !== 'retiring' && r.spec.deprecated)).to.deep.equal([]);
  });
});
