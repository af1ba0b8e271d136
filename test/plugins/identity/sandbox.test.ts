import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import { openApiPath } from '../../../core/http/route';
import { client } from '../../support/http';
import { asPerson, claimPath, identityConfig, register, signUp } from '../../support/identity';
import type { ClaimBody, ErrorBody, MeBody, RegistrationBody, TokenBody } from '../../support/identity';
import { probePlugin } from '../../support/probe-plugin';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

const DAY_MS = 86_400_000;

describe('identity: what a sandbox key may do', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig(), extraPlugins: [probePlugin()], enabled: ['health', 'identity', 'accounts', 'probe'] });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('reads GET /api/me', async () => {
    const reg = await register(svc.url);
    const res = await api.get<MeBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(res.status).to.equal(200);
    expect(res.body.tenant_id).to.equal(reg.workspace.id);
    expect(res.body.workspace.sandbox).to.equal(true);
  });

  it('rotates itself at POST /api/api-keys/rotate', async () => {
    const reg = await register(svc.url);
    const res = await api.post<{ api_key: { key: string } }>('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.api_key.key).to.match(/^pcs_sbx_/);
  });

  it('works as OAuth client credentials: exchanged at POST /api/oauth/token', async () => {
    const reg = await register(svc.url);
    const res = await api.raw<TokenBody>('POST', '/api/oauth/token', {
      rawBody: 'grant_type=client_credentials',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': reg.api_key.key },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.token_type).to.equal('Bearer');
  });

  it('gets 403 plan_restricted with a reason on POST /api/agents/claim', async () => {
    const claimer = await register(svc.url, 'claimer');
    const other = await register(svc.url, 'other');
    const res = await api.post<ErrorBody>('/api/agents/claim', { token: other.claim.token }, { 'x-api-key': claimer.api_key.key });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('plan_restricted');
    expect(res.body.reason).to.be.a('string').and.not.be.empty;
    expect(res.body.hint).to.be.a('string');
    expect(res.body.next?.some((n) => n.action === 'claim')).to.equal(true);
    const still = await api.get(`/api/agents/claim/${other.claim.token}`);
    expect(still.status, 'the other sandbox stays unclaimed').to.equal(200);
  });

  it('gets 403 plan_restricted with a reason on every API-key route not declared sandbox-allowed', async () => {
    const reg = await register(svc.url);
    const routes = svc.routes
      .all()
      .map((r) => r.spec)
      .filter((r) => r.auth !== 'public' && !r.sandbox && (!r.accepts || r.accepts.includes('api_key')));
    expect(routes.map((r) => r.id)).to.include.members(['agents.claim', 'probe.private']);
    for (const route of routes) {
      const path = route.path.replace(/:[A-Za-z]+/g, 'placeholder123');
      const res = await api.raw<ErrorBody>(route.method.toUpperCase(), path, { ...(route.method === 'get' ? {} : { body: {} }), headers: { 'x-api-key': reg.api_key.key } });
      expect(res.status, `${route.method} ${route.path}: ${res.text}`).to.equal(403);
      expect(res.body.code).to.equal('plan_restricted');
      expect(res.body.reason, route.id).to.be.a('string').and.not.be.empty;
      // The refusal names the route and says it was refused, in one plain sentence; what the route does is in the hint, labelled.
      const operation = `${route.method.toUpperCase()} ${openApiPath(route.path)}`;
      expect(res.body.error, route.id).to.equal(`The Agent Starter sandbox is refused ${operation} (open to claimed workspaces only); nothing was done.`);
      expect(res.body.hint, route.id).to.match(new RegExp(`^What ${operation.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} does, for a claimed workspace: [^]+?\\. Sandbox keys `));
    }
  });
});

describe('identity: sandbox key lifetime', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  const clock = new ManualClock(Date.now());

  before(async () => {
    svc = await startTestService({ config: identityConfig(), clock });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('expires 30 days after registration: 401 invalid_credentials', async () => {
    const reg = await register(svc.url);
    clock.advance(29 * DAY_MS);
    const before = await api.get('/api/me', { 'x-api-key': reg.api_key.key });
    expect(before.status).to.equal(200);
    clock.advance(DAY_MS + 1000);
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('invalid_credentials');
    expect(res.body.error).to.match(/expired/);
    expect(res.body.retryable).to.equal(false);
    expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
    expect(res.body.hint).to.match(/POST \/api\/agents\/register/);
  });

  it("an expired person's key is told to get a new key, not to register a sandbox", async () => {
    const person = await signUp(svc.url);
    const made = await api.post<Record<string, any>>('/api/api-keys', { name: 'dated', expires_at: new Date(clock.now() + 3_600_000).toISOString() }, asPerson(person));
    expect(made.status, made.text).to.equal(201);
    clock.advance(3_600_000 + 1000);
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': made.body.api_key.key });
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('invalid_credentials');
    expect(res.body.hint).to.match(/^It expired on the date it was created with. Create a new key \(POST \/api\/api-keys\), or ask a person of the workspace for one./);
    expect(res.body.hint).to.not.match(/agents\/register/);
  });

  it('issues access tokens that expire, and never outlive the sandbox key', async () => {
    const reg = await register(svc.url);
    const token = await api.raw<TokenBody>('POST', '/api/oauth/token', {
      rawBody: 'grant_type=client_credentials',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': reg.api_key.key },
    });
    expect(token.body.expires_in).to.equal(svc.config.identity.accessTokenTtlS);
    clock.advance(svc.config.identity.accessTokenTtlS * 1000 + 1000);
    const expired = await api.get<ErrorBody>('/api/me', { authorization: `Bearer ${token.body.access_token}` });
    expect(expired.status).to.equal(401);
    expect(expired.body.code).to.equal('invalid_credentials');
    expect(expired.body.error).to.match(/expired/);
    clock.advance(30 * DAY_MS - 10 * 60_000 - svc.config.identity.accessTokenTtlS * 1000);
    const late = await api.raw<TokenBody>('POST', '/api/oauth/token', {
      rawBody: 'grant_type=client_credentials',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': reg.api_key.key },
    });
    expect(late.status, late.text).to.equal(200);
    expect(late.body.expires_in).to.be.within(1, 600);
  });

  it('does not expire once the workspace is claimed with the key kept', async () => {
    const reg: RegistrationBody = await register(svc.url);
    const person = await signUp(svc.url);
    const claimed = await api.post<ClaimBody>(claimPath(reg), { keep_key: true }, asPerson(person));
    expect(claimed.status, claimed.text).to.equal(200);
    expect(claimed.body.agent_key).to.equal('kept');
    clock.advance(31 * DAY_MS);
    const res = await api.get<MeBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.key?.expires_at).to.equal(null);
    clock.advance(365 * DAY_MS);
    const later = await api.get('/api/me', { 'x-api-key': reg.api_key.key });
    expect(later.status).to.equal(200);
  });
});
