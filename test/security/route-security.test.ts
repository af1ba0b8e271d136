import { expect } from 'chai';
import type { RouteSpec } from '../../core/http/route';
import { call } from '../support/http';
import { applicableChecks, routeSecuritySuite } from '../support/security';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { buildWorld } from '../support/world';
import type { World } from '../support/world';
import { securityCases } from './cases';

/**
 * Routes need credentials by default. One service with every built-in plugin; the coverage test
 * fails when a route that is not declared public has no security suite in cases.ts.
 */
describe('route security', function () {
  this.timeout(120_000);
  let svc: TestService;
  let world: World;
  const specs = new Map<string, RouteSpec>();

  before(async function () {
    svc = await startTestService({
      config: {
        limits: {
          registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
          sandbox: { keyRotationsPerDay: 10_000 },
          rateLimit: { perWorkspacePerMinute: 1_000_000, perAddressPerMinute: 1_000_000, failedAuthPerAddressPer15Min: 1_000_000 },
        },
      },
    });
    for (const { spec } of svc.routes.all()) specs.set(spec.id, spec);
    world = await buildWorld(svc);
    // The suites depend on each route's declaration (scopes, accepted credentials), known only once
    // the service runs; Mocha runs tests added to a suite by its before hook.
    const parent = this.test?.parent;
    if (!parent) throw new Error('no parent suite');
    for (const [id, c] of Object.entries(securityCases)) {
      const spec = specs.get(id);
      if (spec) routeSecuritySuite(parent, ctx, id, c, applicableChecks(spec, c));
    }
  });
  after(() => svc?.close());

  it('has a security suite for every mounted route that is not declared public', () => {
    const missing = [...specs.values()].filter((r) => (r.auth ?? 'required') !== 'public' && !securityCases[r.id]).map((r) => `${r.method.toUpperCase()} ${r.path} (${r.id})`);
    expect(missing, `routes without a security suite:\n${missing.join('\n')}`).to.deep.equal([]);
  });

  it('has no security suite for a route that is not mounted or is public', () => {
    const stale = Object.keys(securityCases).filter((id) => !specs.has(id) || specs.get(id)?.auth === 'public');
    expect(stale).to.deep.equal([]);
  });

  it('answers a malformed percent-escape in any path parameter with 400 validation_error naming it, never a 500', async () => {
    const wrong: string[] = [];
    for (const spec of specs.values()) {
      for (const param of spec.path.split('/').filter((seg) => seg.startsWith(':'))) {
        const path = spec.path
          .split('/')
          .map((seg) => (seg === param ? '%E0%A4%A' : seg.startsWith(':') ? 'x' : seg))
          .join('/');
        const res = await call<Record<string, any>>(svc.url, spec.method.toUpperCase(), path);
        const issue = (res.body?.issues as Array<{ path: string }> | undefined)?.[0]?.path;
        if (res.status !== 400 || res.body?.code !== 'validation_error' || issue !== param.slice(1) || typeof res.body?.hint !== 'string') wrong.push(`${spec.method.toUpperCase()} ${path}: ${res.status} ${res.text}`);
      }
    }
    expect(wrong).to.deep.equal([]);
  });

  const ctx = {
    svc: () => svc,
    world: () => world,
    spec: (id: string) => {
      const s = specs.get(id);
      if (!s) throw new Error(`route ${id} is not mounted`);
      return s;
    },
  };
});
