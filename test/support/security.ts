import { expect } from 'chai';
import Mocha from 'mocha';
import type { RouteSpec } from '../../core/http/route';
import type { TestService } from './service';
import { call } from './http';
import type { World } from './world';

export interface PreparedRequest {
  path: string;
  body?: unknown;
  /** Headers carrying a valid credential of tenant A for this route (default: from `as`). */
  headers?: Record<string, string>;
}

export type CredentialKind = 'key' | 'person' | 'agentKey' | 'sandboxKey';

/** One route's security suite: how to call it as tenant A, and how to aim at tenant B's records. */
export interface SecurityCase {
  /** Which valid credential of tenant A the route takes. */
  as: CredentialKind;
  /** A valid request for A's own data (may create what it needs first). */
  request: (w: World, svc: TestService) => Promise<PreparedRequest> | PreparedRequest;
  /** The same request aimed at a record of workspace B, sent with A's credential. */
  cross?: (w: World, svc: TestService) => Promise<PreparedRequest> | PreparedRequest;
  /** Statuses the positive control may answer besides 2xx/3xx (e.g. a route that validates a signature). */
  okStatuses?: number[];
}

/** Which conditional checks apply to a route, derived from its declaration. */
export interface ApplicableChecks {
  /** `auth: 'optional'`: anonymous callers are served (credentials are still checked when sent). */
  anonymousAllowed: boolean;
  tokenRefused: boolean;
  scoped: boolean;
  personOnly: boolean;
  cross: boolean;
}

export function applicableChecks(spec: RouteSpec, c: SecurityCase): ApplicableChecks {
  return {
    anonymousAllowed: spec.auth === 'optional',
    tokenRefused: !!spec.accepts && !spec.accepts.includes('access_token'),
    scoped: !!spec.scopes?.length || !!spec.fullAccess,
    personOnly: spec.accepts?.length === 1 && spec.accepts[0] === 'person',
    cross: !!c.cross,
  };
}

export function credentialHeaders(w: World, as: CredentialKind): Record<string, string> {
  switch (as) {
    case 'key':
      return { 'x-api-key': w.a.key };
    case 'agentKey':
      return { 'x-api-key': w.a.agentKey };
    case 'sandboxKey':
      return { 'x-api-key': w.sandbox.key };
    case 'person':
      return { cookie: w.a.owner.cookie };
  }
}

interface Res {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

function expect401(res: Res, code: string): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(401);
  expect(res.body.code).to.equal(code);
  expect(res.body.message).to.be.a('string');
  expect(res.body.retryable).to.equal(false);
  expect(res.body.hint).to.be.a('string');
  expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
}

export interface SuiteContext {
  svc(): TestService;
  world(): World;
  /** The route as the running service declared it. */
  spec(id: string): RouteSpec;
}

/**
 * The shared security checks every authenticated route must pass: no credential, malformed key,
 * revoked key, expired key, a token where only a key is accepted, a missing scope, a person-only
 * route sent a key, another workspace's record — plus a positive control so the refusals are not
 * vacuous. Checks that do not apply to the route (no scopes, accepts tokens) are skipped.
 */
export function routeSecuritySuite(parent: Mocha.Suite, ctx: SuiteContext, id: string, c: SecurityCase, applies: ApplicableChecks): void {
  const suite = Mocha.Suite.create(parent, `security of route ${id}`);
  const it = (title: string, fn: () => Promise<void>) => suite.addTest(new Mocha.Test(title, fn));
  const send = async (req: PreparedRequest, headers: Record<string, string>) => {
    const spec = ctx.spec(id);
    return call(ctx.svc().url, spec.method.toUpperCase(), req.path, { ...(req.body !== undefined ? { body: req.body } : {}), headers });
  };
  const prepare = () => c.request(ctx.world(), ctx.svc());

    if (applies.anonymousAllowed) it('serves a request without credentials as anonymous (auth optional), with none of its data', async () => {
      const res = await send(await prepare(), {});
      expect(res.status < 400 || res.status === 404 || (c.okStatuses ?? []).includes(res.status), `${res.status} ${JSON.stringify(res.body)}`).to.equal(true);
      const w = ctx.world();
      // The text as sent: an answer that is not JSON (MCP's GET stream, served to a caller's default Accept: */*) is searched too.
      for (const secret of [w.a.keyId, w.a.agentId, w.a.owner.id, w.a.owner.workspaceId, w.a.owner.email]) expect(res.text).not.to.contain(secret);
    });
    else it('refuses a request without credentials with 401 unauthorized', async () => {
      expect401(await send(await prepare(), {}), 'unauthorized');
    });
    it('refuses a malformed key with 401 invalid_credentials', async () => {
      expect401(await send(await prepare(), { 'x-api-key': 'pcs_sbx_not-a-real-key' }), 'invalid_credentials');
    });
    it('refuses a revoked key with 401 invalid_credentials', async () => {
      expect401(await send(await prepare(), { 'x-api-key': ctx.world().a.revokedKey }), 'invalid_credentials');
    });
    it('refuses an expired key with 401 invalid_credentials', async () => {
      expect401(await send(await prepare(), { 'x-api-key': ctx.world().a.expiredKey }), 'invalid_credentials');
    });
    if (applies.tokenRefused) it('refuses an access token where the route accepts only other credentials', async () => {
      const res = await send(await prepare(), { authorization: `Bearer ${ctx.world().a.agentToken}` });
      expect([401, 403], JSON.stringify(res.body)).to.include(res.status);
    });
    if (applies.scoped) it(`refuses ${applies.personOnly ? 'a narrowed person token' : 'a key'} without the required scopes with 403 insufficient_scope`, async () => {
      const narrow: Record<string, string> = applies.personOnly ? { authorization: `Bearer ${ctx.world().a.narrowPersonToken}` } : { 'x-api-key': ctx.world().a.narrowKey };
      const res = await send(await prepare(), narrow);
      expect(res.status, JSON.stringify(res.body)).to.equal(403);
      expect(res.body.code).to.equal('insufficient_scope');
      expect(res.body.required_scopes).to.be.an('array').that.is.not.empty;
    });
    if (applies.personOnly) it('refuses a valid API key on a person-only route with 401, a hint and an empty next', async () => {
      const res = await send(await prepare(), { 'x-api-key': ctx.world().a.key });
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('unauthorized');
      expect(res.body.next).to.deep.equal([]);
      expect(res.body.hint).to.be.a('string');
    });
    const cross = c.cross;
    if (applies.cross && cross) it("answers another workspace's record with 404 or 403, never its data", async () => {
      const w = ctx.world();
      const req = await cross(w, ctx.svc());
      const res = await send(req, req.headers ?? credentialHeaders(w, c.as));
      expect([403, 404], JSON.stringify(res.body)).to.include(res.status);
      for (const secret of [w.b.keyId, w.b.agentId, w.b.owner.id, w.b.owner.sessionId, w.b.owner.email]) {
        if (!req.path.includes(secret)) expect(JSON.stringify(res.body)).not.to.contain(secret);
      }
    });
    it("accepts tenant A's valid credential (positive control)", async () => {
      const req = await prepare();
      const res = await send(req, req.headers ?? credentialHeaders(ctx.world(), c.as));
      expect(res.status < 400 || (c.okStatuses ?? []).includes(res.status), `${res.status} ${JSON.stringify(res.body)}`).to.equal(true);
    });
}
