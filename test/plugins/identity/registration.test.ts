import { expect } from 'chai';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { expectRetryAfter, identityConfig, register, signUp, createKey, asPerson } from '../../support/identity';
import type { ErrorBody, KeyView, RegistrationBody } from '../../support/identity';
import { expectFitsDeclared } from '../../support/response-schema';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

describe('identity: agent self-registration (POST /api/agents/register)', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('answers 201 with the key shown once, a one-time claim link, the plan, the limits in force and a changelog pointer', async () => {
    const res = await api.post<RegistrationBody>('/api/agents/register', { name: 'pricing-agent/checkout' });
    expect(res.status).to.equal(201);
    const b = res.body;
    expect(b.api_key.key).to.be.a('string').and.match(/^pcs_sbx_[1-9A-HJ-NP-Za-km-z0]{32}$/);
    expect(b.api_key.shown_once).to.equal(true);
    expect(b.api_key.scopes).to.deep.equal(['price:compute']);
    expect(b.api_key.expires_at).to.be.a('string');
    expect(b.claim.url).to.be.a('string').and.match(/^https?:\/\/.+\/api\/agents\/claim\/pcs_clm_/);
    expect(b.claim.one_time).to.equal(true);
    expect(b.plan.name).to.equal('Agent Starter');
    expect(b.limits.compute_calls_per_day).to.equal(25);
    expect(b.limits.key_lifetime_days).to.equal(30);
    expect(b.limits.key_rotations_per_day).to.be.a('number');
    // Both request rates that bind a sandbox: per workspace and per network address.
    expect(b.limits.requests_per_minute).to.equal(svc.config.limits.rateLimit.perWorkspacePerMinute);
    expect(b.limits.requests_per_minute_per_address).to.equal(svc.config.limits.rateLimit.perAddressPerMinute);
    expect(b.limits.registrations.per_address_per_day).to.equal(svc.config.limits.registrations.perAddressPerDay);
    expect(b.limits.registrations.overall_per_day).to.equal(svc.config.limits.registrations.overallPerDay);
    expect(b.limits.registrations.remaining_for_this_address_today).to.be.a('number').and.to.be.lessThan(b.limits.registrations.per_address_per_day);
    expect(b.changelog).to.be.a('string').and.match(/^https?:\/\//);
    expect(b.workspace.sandbox).to.equal(true);
    expect(b.workspace.plan).to.equal('agent_starter');
    expect(b.workspace.created_by_agent).to.equal(true);
    expect(b.workspace.test_workspace_id, 'no test workspace until claimed').to.equal(null);
    const me = await api.get('/api/me', { 'x-api-key': b.api_key.key });
    expect(me.status).to.equal(200);
  });

  it("answers GET on the registration path with 405 and Allow: POST, not as GET /api/agents/{id}'s 401", async () => {
    const res = await api.get<Record<string, any>>('/api/agents/register');
    expect(res.status, res.text).to.equal(405);
    expect(res.headers.get('allow')).to.equal('POST');
    expect(res.body.code).to.equal('method_not_allowed');
    // An agent id on that route still reaches it (and its credential rule).
    expect((await api.get('/api/agents/agt_somebody')).status).to.equal(401);
  });

  it('states the default limits of SPEC (5 per address, 200 overall per day) in a service left at defaults', async () => {
    const plain = await startTestService({});
    try {
      const b = await register(plain.url);
      expect(b.limits.registrations.per_address_per_day).to.equal(5);
      expect(b.limits.registrations.overall_per_day).to.equal(200);
      expect(b.limits.registrations.remaining_for_this_address_today).to.equal(4);
      expect(b.limits.compute_calls_per_day).to.equal(25);
    } finally {
      await plain.close();
    }
  });

  it('refuses a registration posted by a web page of another site (403, nothing registered, no registration counted); programs, the service\'s own pages, loopback pages and allowed origins register', async () => {
    const own = await startTestService({ config: { identity: { registrationAllowedOrigins: ['https://console.example.com'] } } });
    try {
      const raw = (path: string, headers: Record<string, string>, body: unknown) => client(own.url).raw<Record<string, any>>('POST', path, { rawBody: JSON.stringify(body), headers: { 'content-type': 'text/plain', ...headers } });
      // A page's text/plain post needs no CORS preflight: it would reach the route from every visitor's browser.
      for (const [path, body] of [['/api/agents/register', { name: 'drive-by' }], ['/api/oauth/register', { client_name: 'drive-by' }]] as const) {
        const res = await raw(path, { origin: 'https://evil.example' }, body);
        expect(res.status, res.text).to.equal(403);
        expect(res.body).to.deep.include({ code: 'forbidden', error: 'Registration from a web page of another site is refused.', reason: 'page of another site' });
        expect(res.body.hint).to.include('REGISTRATION_ALLOWED_ORIGINS');
      }
      const [count] = (await own.sequelize.query('SELECT count(*)::int AS n FROM agents')) as [Array<{ n: number }>, unknown];
      expect(count[0]?.n, 'nothing registered').to.equal(0);
      // None of the day's five was spent: a program registers with four left after it.
      const program = await raw('/api/agents/register', {}, { name: 'program' });
      expect(program.status, program.text).to.equal(201);
      expect(program.body.limits.registrations.remaining_for_this_address_today).to.equal(4);
      for (const origin of [new URL(own.url).origin, 'http://localhost:6274', 'https://console.example.com']) {
        expect((await raw('/api/agents/register', { origin }, { name: 'page' })).status, origin).to.equal(201);
      }
    } finally {
      await own.close();
    }
  });

  it('never returns a key secret again: a person listing keys sees prefixes, not secrets', async () => {
    const person = await signUp(svc.url);
    const made = await createKey(svc.url, asPerson(person), { name: 'listing check' });
    const list = await api.get<{ data: KeyView[] }>('/api/api-keys', asPerson(person));
    expect(list.status).to.equal(200);
    const listed = list.body.data.find((k) => k.id === made.id);
    expect(listed, 'the key is listed').to.be.an('object');
    expect(listed).not.to.have.property('key');
    expect(listed?.prefix).to.equal(made.key.slice(0, 12));
    expect(listed?.last4).to.equal(made.key.slice(-4));
    expect(list.text).not.to.contain(made.key);
    expect(list.text).not.to.match(/key_hash/);
  });

  it('answers a bad body with 400 validation_error, issues and an example that passes when re-sent', async () => {
    const res = await api.post<ErrorBody>('/api/agents/register', { nom: 'x' });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.error).to.be.a('string');
    expect(res.body.hint).to.be.a('string');
    expect(res.body.issues).to.be.an('array').that.is.not.empty;
    expect(res.body.issues?.map((i) => i.path)).to.include('name');
    expect(res.body.example).to.be.an('object');
    const again = await api.post<RegistrationBody>('/api/agents/register', res.body.example);
    expect(again.status, again.text).to.equal(201);
    expect(again.body.api_key.key).to.match(/^pcs_sbx_/);
  });

  it('answers a name that is not a label with 400 validation_error naming the field', async () => {
    const res = await api.post<ErrorBody>('/api/agents/register', { name: '' });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.issues?.[0]?.path).to.equal('name');
    expect(res.body.example).to.deep.equal({ name: 'pricing-agent/checkout' });
  });

  it('says a name takes ASCII letters only when it has others (é, Cyrillic), not just "letters" it does have', async () => {
    for (const name of ['agent-é', 'Агент']) {
      const res = await api.post<ErrorBody>('/api/agents/register', { name });
      expect(res.status, res.text).to.equal(400);
      expect((res.body.issues as Array<{ path: string; reason: string }>).find((i) => i.path === 'name')?.reason).to.match(/^use ASCII letters \(A-Z, a-z\), digits/);
    }
  });

  it('answers a body that is not JSON with 400 invalid_json, a hint and an example body', async () => {
    const res = await api.raw<ErrorBody>('POST', '/api/agents/register', { rawBody: '{"name": "pricing', headers: { 'content-type': 'application/json' } });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('invalid_json');
    expect(res.body.hint).to.be.a('string');
    expect(res.body.example).to.deep.equal({ name: 'pricing-agent/checkout' });
    const again = await api.post('/api/agents/register', res.body.example);
    expect(again.status).to.equal(201);
  });
});

describe('identity: registration limits', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig({ registrations: { perAddressPerDay: 2, overallPerDay: 3 } }) });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('refuses the registration over the per-address daily limit with 429 daily_quota_exceeded, retry_after equal to Retry-After, and limit', async () => {
    const from = { 'x-forwarded-for': '198.51.100.10' };
    const first = await register(svc.url, 'agent-a', '198.51.100.10');
    expect(first.limits.registrations.remaining_for_this_address_today).to.equal(1);
    await register(svc.url, 'agent-b', '198.51.100.10');
    const res = await api.post<ErrorBody>('/api/agents/register', { name: 'agent-c' }, from);
    expectRetryAfter(res);
    expect(res.body.code).to.equal('daily_quota_exceeded');
    expect(res.body.error).to.match(/daily/i);
    expect(res.body.error).to.match(/address/i);
    expect(res.body.limit).to.deep.include({ per_address_per_day: 2 });
    expect(res.body.retry_after).to.be.at.most(86_400);
    expect(res.body.hint).to.be.a('string');
    // Another address still registers.
    await register(svc.url, 'agent-d', '198.51.100.11');
  });

  it('refuses registrations over the overall daily limit with 429 daily_quota_exceeded, retry_after equal to Retry-After, and limit', async () => {
    let refused: HttpResult<ErrorBody> | null = null;
    let attempts = 0;
    for (let i = 0; i < 5 && !refused; i++) {
      attempts++;
      const res = await api.post<ErrorBody>('/api/agents/register', { name: `agent-overall-${i}` }, { 'x-forwarded-for': `203.0.113.${20 + i}` });
      if (res.status !== 201) refused = res;
    }
    expect(refused, 'a registration from a fresh address is refused once the overall limit is reached').not.to.equal(null);
    expect(attempts).to.be.at.most(4);
    if (!refused) return;
    expectRetryAfter(refused);
    expect(refused.body.code).to.equal('daily_quota_exceeded');
    expect(refused.body.error).to.match(/daily/i);
    expect(refused.body.error).to.match(/service/i);
    expect(refused.body.limit).to.deep.include({ overall_per_day: 3 });
    const count = await svc.sequelize.query(`SELECT count(*)::int AS n FROM workspaces WHERE is_sandbox AND id <> 'ws_public_demo'`, { plain: true });
    expect((count as { n: number } | null)?.n).to.equal(3);
  });
});

describe('identity: registration limits across a restart without Redis', () => {
  it("keeps the day's overall registration count: a new instance counts the sandboxes the day registered", async () => {
    const config = identityConfig({ registrations: { perAddressPerDay: 100, overallPerDay: 3 } });
    const svc = await startTestService({ config });
    try {
      await register(svc.url, 'agent-before-1', '203.0.113.60');
      await register(svc.url, 'agent-before-2', '203.0.113.61');
      // A second instance on the same database with its own in-process store: what a restart leaves.
      const restarted = await startTestService({ config, databaseUrl: svc.databaseUrl });
      try {
        await register(restarted.url, 'agent-after-1', '203.0.113.62');
        const refused = await client(restarted.url).post<ErrorBody>('/api/agents/register', { name: 'agent-after-2' }, { 'x-forwarded-for': '203.0.113.63' });
        expect(refused.status, refused.text).to.equal(429);
        expect(refused.body.code).to.equal('daily_quota_exceeded');
        expect(refused.body.error).to.match(/service/i);
      } finally {
        await restarted.close();
      }
    } finally {
      await svc.close();
    }
  });
});

describe('identity: per-address registration limit across a restart without Redis', () => {
  it("keeps an address's registrations of the day: a new instance counts what that address registered (as a digest), not from 0", async () => {
    const config = identityConfig({ registrations: { perAddressPerDay: 2, overallPerDay: 100 } });
    const svc = await startTestService({ config });
    try {
      await register(svc.url, 'addr-before-1', '203.0.113.70');
      await register(svc.url, 'addr-before-2', '203.0.113.70');
      // The address itself is not kept: only its digest.
      const [kept] = await svc.sequelize.query(`SELECT registered_from_hash FROM agents WHERE name LIKE 'addr-before-%'`);
      expect((kept as Array<{ registered_from_hash: string }>).map((r) => r.registered_from_hash)).to.satisfy((hashes: string[]) => hashes.length === 2 && hashes.every((h) => /^[0-9a-f]{32}$/.test(h) && !h.includes('203')));
      const restarted = await startTestService({ config, databaseUrl: svc.databaseUrl });
      try {
        const refused = await client(restarted.url).post<ErrorBody>('/api/agents/register', { name: 'addr-after' }, { 'x-forwarded-for': '203.0.113.70' });
        expect(refused.status, refused.text).to.equal(429);
        expect(refused.body.code).to.equal('daily_quota_exceeded');
        expect(refused.body.error).to.match(/network address/);
        // The same address written as IPv4-mapped IPv6 is the same address.
        const mapped = await client(restarted.url).post<ErrorBody>('/api/agents/register', { name: 'addr-after-mapped' }, { 'x-forwarded-for': '::ffff:203.0.113.70' });
        expect(mapped.status, mapped.text).to.equal(429);
        // Another address still registers.
        await register(restarted.url, 'addr-other', '203.0.113.71');
      } finally {
        await restarted.close();
      }
    } finally {
      await svc.close();
    }
  });
});

describe('identity: registration limits count an IPv6 caller by its network (RATE_LIMIT_IPV6_PREFIX)', () => {
  it('counts the registrations of every IPv6 address in one /64 as one address, another /64 apart, also after a restart without Redis', async () => {
    const config = identityConfig({ registrations: { perAddressPerDay: 3, overallPerDay: 100 } });
    const svc = await startTestService({ config });
    try {
      for (const [i, address] of ['2001:db8:1::1', '2001:db8:1::2', '2001:db8:1::3'].entries()) {
        const r = await register(svc.url, `v6-agent-${i}`, address);
        expect(r.limits.registrations.remaining_for_this_address_today).to.equal(2 - i);
      }
      const refused = await client(svc.url).post<ErrorBody>('/api/agents/register', { name: 'v6-agent-4' }, { 'x-forwarded-for': '2001:db8:1::4' });
      expectRetryAfter(refused);
      expect(refused.body.code).to.equal('daily_quota_exceeded');
      expect(refused.body.limit).to.deep.include({ per_address_per_day: 3 });
      const elsewhere = await register(svc.url, 'v6-agent-other', '2001:db8:2::1');
      expect(elsewhere.limits.registrations.remaining_for_this_address_today).to.equal(2);
      const restarted = await startTestService({ config, databaseUrl: svc.databaseUrl });
      try {
        const again = await client(restarted.url).post<ErrorBody>('/api/agents/register', { name: 'v6-agent-5' }, { 'x-forwarded-for': '2001:db8:1::5' });
        expect(again.status, again.text).to.equal(429);
        expect(again.body.code).to.equal('daily_quota_exceeded');
      } finally {
        await restarted.close();
      }
    } finally {
      await svc.close();
    }
  });

  it('counts each IPv6 address apart with RATE_LIMIT_IPV6_PREFIX=128', async () => {
    const svc = await startTestService({ config: identityConfig({ registrations: { perAddressPerDay: 1, overallPerDay: 100 }, rateLimit: { ipv6Prefix: 128 } }) });
    try {
      await register(svc.url, 'v6-whole-1', '2001:db8:3::1');
      await register(svc.url, 'v6-whole-2', '2001:db8:3::2');
      const refused = await client(svc.url).post<ErrorBody>('/api/agents/register', { name: 'v6-whole-3' }, { 'x-forwarded-for': '2001:db8:3::1' });
      expect(refused.status, refused.text).to.equal(429);
    } finally {
      await svc.close();
    }
  });
});

describe('identity: self-registration paused (SELF_REGISTRATION_OPEN=false)', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig({}, { selfRegistrationOpen: false, selfRegistrationRetryAfterS: 900 }) });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('answers POST /api/agents/register with 503 self_registration_closed and Retry-After', async () => {
    const res = await api.post<ErrorBody>('/api/agents/register', { name: 'pricing-agent/checkout' });
    expect(res.status).to.equal(503);
    expect(res.body.code).to.equal('self_registration_closed');
    expect(res.body.error).to.be.a('string');
    expect(res.headers.get('retry-after')).to.equal('900');
    expect(res.body.retry_after).to.equal(900);
    const count = await svc.sequelize.query(`SELECT count(*)::int AS n FROM workspaces WHERE id <> 'ws_public_demo'`, { plain: true });
    expect((count as { n: number } | null)?.n).to.equal(0);
  });

  it('answers POST /api/oauth/register with 503 self_registration_closed too', async () => {
    const res = await api.post<ErrorBody>('/api/oauth/register', { client_name: 'my-agent-framework' });
    expect(res.status).to.equal(503);
    expect(res.body.code).to.equal('self_registration_closed');
    expect(res.headers.get('retry-after')).to.equal('900');
  });

  it('answers 503 before reading the body: a bad body or no JSON is not sent off to be fixed first; other methods still get their 405', async () => {
    for (const path of ['/api/agents/register', '/api/oauth/register']) {
      const bad = await api.post<ErrorBody>(path, { name: '', unexpected: true, client_name: 7 });
      expect(bad.status, `${path}: ${bad.text}`).to.equal(503);
      expect(bad.body).to.include({ code: 'self_registration_closed', retry_after: 900 });
      const notJson = await api.raw<ErrorBody>('POST', path, { rawBody: '{not json', headers: { 'content-type': 'application/json' } });
      expect([notJson.status, notJson.body.code], path).to.deep.equal([503, 'self_registration_closed']);
      const get = await api.get<ErrorBody>(path);
      expect([get.status, get.headers.get('allow')], path).to.deep.equal([405, 'POST']);
    }
  });

  it('declares the 503 on both registration routes in the OpenAPI document, and llms.txt says both are paused', async () => {
    const doc = await api.get<Record<string, any>>('/api/openapi.json?format=json');
    for (const path of ['/api/agents/register', '/api/oauth/register']) {
      expect(doc.body.paths[path].post.responses['503']?.description, path).to.match(/^self_registration_closed: .*SELF_REGISTRATION_OPEN/);
    }
    const llms = await api.get('/llms.txt');
    const paused = llms.text.split('\n').filter((l) => l.includes('currently paused'));
    expect(paused.some((l) => l.includes('/api/agents/register')), 'agent registration line').to.equal(true);
    expect(paused.some((l) => l.includes('/api/oauth/register')), 'OAuth registration line').to.equal(true);
  });

  it("keeps OAuth client credentials among agents.json's ways in while registration is paused, marked paused with its token and metadata links (clients registered before still get tokens); self-registration is left out, self_registration.open says why", async () => {
    const agents = await api.get<Record<string, any>>('/.well-known/agents.json');
    expect(agents.status, agents.text).to.equal(200);
    const ways = (agents.body.ways_in as Array<{ id: string }>).map((w) => w.id);
    expect(ways).to.not.include('self_registration');
    expect(ways).to.include.members(['keyless_demo', 'oauth_client_credentials', 'person_account']);
    expect(agents.body.self_registration.open).to.equal(false);
    expect(agents.body.authentication.token_endpoint).to.match(/^POST http:\/\/[^ ]+\/api\/oauth\/token$/);
    const oauth = (agents.body.ways_in as Array<Record<string, any>>).find((w) => w.id === 'oauth_client_credentials') ?? {};
    expectFitsDeclared(svc, 'discovery.agents', agents.body);
    expect(oauth.registration_open).to.equal(false);
    expect(oauth.how).to.include('paused (503 self_registration_closed)').and.include('clients registered before still get tokens');
    expect(oauth.registration).to.match(/^POST http:\/\/[^ ]+\/api\/oauth\/register$/);
    expect(oauth.token).to.equal(agents.body.authentication.token_endpoint);
    for (const link of [oauth.metadata, oauth.protected_resource] as string[]) {
      expect(link).to.match(/\/\.well-known\/oauth-/);
      expect((await fetch(link)).status, link).to.equal(200);
    }
  });

  it('offers registration nowhere while it is paused: not in a 401\'s next, a demo\'s next_actions, GET / or a 404\'s hint; signing in and the demo still are', async () => {
    const unauthorized = await api.post<ErrorBody & { next: Array<{ action: string; path: string }> }>('/api/compute/price', { context: { current_price: 3 } });
    expect(unauthorized.status).to.equal(401);
    expect(unauthorized.body.next.map((n) => n.action)).to.deep.equal(['sign_in', 'try_demo']);
    const invalid = await api.get<ErrorBody & { next: Array<{ action: string }> }>('/api/me', { 'x-api-key': 'pcs_live_not_a_real_key_0000000000000000' });
    expect(invalid.status).to.equal(401);
    expect(invalid.body.next.map((n) => n.action)).to.deep.equal(['sign_in', 'try_demo']);
    const demo = await api.post<{ next_actions: Array<{ action: string; path: string }> }>('/api/public/compute/demo', { context: { current_price: 3 } });
    expect(demo.status, demo.text).to.equal(200);
    expect(demo.body.next_actions.map((a) => a.path)).to.not.include('/api/agents/register');
    const root = await api.get<Record<string, unknown>>('/');
    expect(root.body).to.not.have.property('get_a_key');
    expect(root.body).to.have.property('try_without_a_key');
    const missing = await api.get<ErrorBody>('/no/such/path');
    expect(missing.status).to.equal(404);
    expect(missing.body.hint).to.not.include('/api/agents/register');
  });
});
