import { expect } from 'chai';
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

  it('marks no shipped route as retiring', () => {
    expect(svc.routes.all().filter((r) => r.plugin !== 'retiring' && r.spec.deprecated)).to.deep.equal([]);
  });
});
