import { expect } from 'chai';
import { ApiError } from '../../core/errors';
import { defineRoute, ok } from '../../core/http/route';
import type { PluginDefinition } from '../../core/plugin';
import type { Reservation } from '../../core/admission';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { client } from '../support/http';

declare module '../../core/events' {
  interface DomainEvents {
    'probe.happened': { n: number };
  }
}

/** A plugin using every hook point the kernel offers. */
function hookPlugin(log: string[]): PluginDefinition {
  return {
    name: 'hooky',
    description: 'uses every hook',
    register(ctx) {
      ctx.hooks.addAuthenticator({
        name: 'test-key',
        authenticate: async (req) => {
          const key = req.headers['x-api-key'];
          if (key === undefined) return null;
          if (key === 'good' || key === 'narrow') {
            return { kind: 'api_key', workspaceId: 'ws_test', scopes: key === 'good' ? null : ['billing:read'], keyId: 'key_1', attributes: {} };
          }
          throw new ApiError('invalid_credentials', 'Key rejected.', { fields: { retryable: false } });
        },
      });
      ctx.hooks.addGuard({
        name: 'counter',
        run: (c) => {
          log.push(`guard:${c.route.id}`);
          c.res.setHeader('X-Guarded', 'yes');
        },
      });
      ctx.hooks.addDecorator({
        name: 'stamp',
        appliesTo: (route) => route.id === 'hooky.compute',
        decorate: (c, reply) => {
          (reply.body as Record<string, unknown>).stamped_for = c.principal?.workspaceId;
        },
      });
      ctx.hooks.addAdmitter({
        name: 'pass',
        admit: async ({ req }): Promise<Reservation | null> =>
          req.headers['x-pass'] === 'yes'
            ? {
                admitter: 'pass',
                paidVia: 'day_pass',
                commit: async () => void log.push('commit'),
                release: async () => void log.push('release'),
              }
            : null,
      });
      ctx.events.on('probe.happened', 'hooky', ({ n }) => void log.push(`event:${n}`));
      ctx.events.on('probe.happened', 'broken', () => {
        throw new Error('handler failure is isolated');
      });
      ctx.route(
        defineRoute({
          id: 'hooky.compute',
          method: 'post',
          path: '/hooky/compute',
          summary: 'uses admission',
          scopes: ['price:compute'],
          handler: async ({ req, principal }) => {
            const reservation = await ctx.hooks.admit({ operation: 'compute', principal, units: 1, req });
            if (req.headers['x-fail'] === 'yes') {
              await reservation.release();
              throw new ApiError('bad_gateway', 'function failed');
            }
            await reservation.commit();
            await ctx.events.emit('probe.happened', { n: 1 });
            return ok({ paid_via: reservation.paidVia });
          },
        }),
      );
    },
  };
}

describe('kernel hook points', () => {
  const log: string[] = [];
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ extraPlugins: [hookPlugin(log)], enabled: ['health', 'hooky'] });
    api = client(svc.url);
  });
  after(() => svc.close());
  beforeEach(() => {
    log.length = 0;
  });

  it('authenticators turn a credential into a principal, or reject it with 401', async () => {
    const good = await api.post('/hooky/compute', {}, { 'x-api-key': 'good' });
    expect(good.status).to.equal(200);
    const bad = await api.post('/hooky/compute', {}, { 'x-api-key': 'wrong' });
    expect(bad.status).to.equal(401);
    expect(bad.body.code).to.equal('invalid_credentials');
    const none = await api.post('/hooky/compute', {});
    expect(none.status).to.equal(401);
    expect(none.body.code).to.equal('unauthorized');
  });

  it('checks the route scopes against the principal', async () => {
    const res = await api.post('/hooky/compute', {}, { 'x-api-key': 'narrow' });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('insufficient_scope');
    expect(res.body.required_scopes).to.deep.equal(['price:compute']);
  });

  it('runs guards after authentication and lets them set headers', async () => {
    const res = await api.post('/hooky/compute', {}, { 'x-api-key': 'good' });
    expect(res.headers.get('x-guarded')).to.equal('yes');
    expect(log).to.include('guard:hooky.compute');
  });

  it('response decorators add to successful responses of the routes they apply to', async () => {
    const res = await api.post('/hooky/compute', {}, { 'x-api-key': 'good' });
    expect(res.body.stamped_for).to.equal('ws_test');
  });

  it('admission: the first admitter that takes a request holds a reservation, committed on success', async () => {
    const paid = await api.post('/hooky/compute', {}, { 'x-api-key': 'good', 'x-pass': 'yes' });
    expect(paid.body.paid_via).to.equal('day_pass');
    expect(log).to.include('commit');
    const free = await api.post('/hooky/compute', {}, { 'x-api-key': 'good' });
    expect(free.body.paid_via).to.equal(null);
  });

  it('admission: a failed call releases its reservation instead of charging it', async () => {
    const res = await api.post('/hooky/compute', {}, { 'x-api-key': 'good', 'x-pass': 'yes', 'x-fail': 'yes' });
    expect(res.status).to.equal(502);
    expect(log).to.include('release');
    expect(log).not.to.include('commit');
  });

  it('events reach subscribers, and a failing subscriber does not fail the emitter', async () => {
    const res = await api.post('/hooky/compute', {}, { 'x-api-key': 'good' });
    expect(res.status).to.equal(200);
    expect(log).to.include('event:1');
  });
});
