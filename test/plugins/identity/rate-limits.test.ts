import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { accessToken, asPerson, expectRetryAfter, register, signUp, unknownKey } from '../../support/identity';
import type { ErrorBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

function expectRateLimitHeaders(res: HttpResult<unknown>, what: string): { limit: number; remaining: number; reset: number } {
  const limit = res.headers.get('x-ratelimit-limit');
  const remaining = res.headers.get('x-ratelimit-remaining');
  const reset = res.headers.get('x-ratelimit-reset');
  expect(limit, `${what}: X-RateLimit-Limit`).to.match(/^\d+$/);
  expect(remaining, `${what}: X-RateLimit-Remaining`).to.match(/^\d+$/);
  expect(reset, `${what}: X-RateLimit-Reset`).to.match(/^\d+$/);
  const out = { limit: Number(limit), remaining: Number(remaining), reset: Number(reset) };
  expect(out.remaining).to.be.at.most(out.limit);
  // When the whole allowance is back: a request weighs on through the next window, so up to two minutes.
  expect(out.reset).to.be.within(1, 120);
  return out;
}

describe('identity: request rate limits and the failed-credential guard', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  // A fixed clock keeps every request of a test in one rate-limit window.
  const clock = new ManualClock(Math.floor(Date.now() / 3_600_000) * 3_600_000 + 1000);

  before(async () => {
    svc = await startTestService({
      clock,
      config: {
        limits: {
          registrations: { perAddressPerDay: 1000, overallPerDay: 1000 },
          rateLimit: { perWorkspacePerMinute: 5, perAddressPerMinute: 8, failedAuthPerAddressPer15Min: 3 },
        },
      },
    });
    api = client(svc.url);
  });
  after(() => svc.close());

  const from = (address: string, headers: Record<string, string> = {}) => ({ 'x-forwarded-for': address, ...headers });

  it('puts X-RateLimit-Limit, -Remaining and -Reset on every authenticated response', async () => {
    const ip = '192.0.2.1';
    const sandbox = await register(svc.url);
    const token = await accessToken(svc.url, sandbox.api_key.key);
    const person = await signUp(svc.url);
    const first = expectRateLimitHeaders(await api.get('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key })), 'key');
    const second = expectRateLimitHeaders(await api.get('/api/me', from(ip, { authorization: `Bearer ${token}` })), 'access token');
    expect(second.remaining).to.equal(first.remaining - 1);
    expect(first.limit).to.equal(5);
    expectRateLimitHeaders(await api.get('/api/me', from(ip, asPerson(person))), 'session');
    expectRateLimitHeaders(await api.get('/api/me', from(ip, { authorization: `Bearer ${person.token}` })), 'person token');
    const created = await api.post('/api/api-keys', { name: 'k' }, from(ip, asPerson(person)));
    expect(created.status).to.equal(201);
    expectRateLimitHeaders(created, 'created key');
    const notFound = await api.delete('/api/api-keys/key_doesnotexist', from(ip, asPerson(person)));
    expect(notFound.status).to.equal(404);
    expectRateLimitHeaders(notFound, 'error after authentication');
  });

  it('answers requests over the per-workspace limit with 429 rate_limited, retry_after equal to Retry-After, and limit', async () => {
    const ip = '192.0.2.2';
    const sandbox = await register(svc.url);
    for (let i = 0; i < 5; i++) {
      const ok = await api.get('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
      expect(ok.status, `request ${i + 1}`).to.equal(200);
      expect(Number(ok.headers.get('x-ratelimit-remaining'))).to.equal(4 - i);
    }
    const res = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ scope: 'workspace', requests_per_minute: 5 });
    expect(res.body.retry_after).to.be.at.most(120);
    expect(res.body.hint, 'a sandbox may not batch, so it is not told to').to.match(/^Wait \d+ s, then retry; spread requests out\.$/);
    expect(res.headers.get('x-ratelimit-remaining')).to.equal('0');
    const other = await register(svc.url);
    expect((await api.get('/api/me', from(ip, { 'x-api-key': other.api_key.key }))).status, 'another workspace is not limited').to.equal(200);
  });

  it('suggests batch pricing to a limited caller that may batch, on a pricing call only', async () => {
    const ip = '192.0.2.12';
    const person = await signUp(svc.url);
    for (let i = 0; i < 5; i++) await api.get('/api/me', from(ip, asPerson(person)));
    const me = await api.get<ErrorBody>('/api/me', from(ip, asPerson(person)));
    expect(me.body.code).to.equal('rate_limited');
    expect(me.body.hint, 'reading /api/me is no call a batch could carry').to.match(/^Wait \d+ s, then retry; spread requests out\.$/);
    const priced = await api.post<ErrorBody>('/api/compute/price', { context: { current_price: 4 } }, from(ip, asPerson(person)));
    expect(priced.body.code).to.equal('rate_limited');
    expect(priced.body.hint).to.match(/batch pricing \(POST \/api\/compute\/batch\)/);
  });

  it('answers requests over the per-address limit with 429 rate_limited naming the address limit', async () => {
    const ip = '192.0.2.3';
    const keys = [await register(svc.url), await register(svc.url), await register(svc.url)].map((r) => r.api_key.key);
    for (let i = 0; i < 8; i++) {
      const ok = await api.get('/api/me', from(ip, { 'x-api-key': keys[i % 3] ?? '' }));
      expect(ok.status, `request ${i + 1}`).to.equal(200);
    }
    const res = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': keys[2] ?? '' }));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ scope: 'address', requests_per_minute: 8 });
    expect((await api.get('/api/me', from('192.0.2.33', { 'x-api-key': keys[2] ?? '' }))).status, 'another address is not limited').to.equal(200);
  });

  it('counts every IPv6 address of one /64 as one address for the request rate (RATE_LIMIT_IPV6_PREFIX), and another /64 apart', async () => {
    const keys = [await register(svc.url), await register(svc.url), await register(svc.url)].map((r) => r.api_key.key);
    for (let i = 0; i < 8; i++) {
      const ok = await api.get('/api/me', from(`2001:db8:5::${i + 1}`, { 'x-api-key': keys[i % 3] ?? '' }));
      expect(ok.status, `request ${i + 1}`).to.equal(200);
    }
    const res = await api.get<ErrorBody>('/api/me', from('2001:db8:5::9', { 'x-api-key': keys[2] ?? '' }));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ scope: 'address', requests_per_minute: 8 });
    expect((await api.get('/api/me', from('2001:db8:6::1', { 'x-api-key': keys[2] ?? '' }))).status, 'another /64 is not limited').to.equal(200);
  });

  it('counts requests refused for their scope or plan, and puts the rate headers on the refusal', async () => {
    const ip = '192.0.2.9';
    const sandbox = await register(svc.url);
    // A sandbox may not create routing policies: 403 plan_restricted, counted all the same.
    for (let i = 0; i < 5; i++) {
      const refused = await api.post<ErrorBody>('/api/routing-policies', { name: 'p', strategy: 'cheapest' }, from(ip, { 'x-api-key': sandbox.api_key.key }));
      expect(refused.status, `refusal ${i + 1}`).to.equal(403);
      expect(refused.body.code).to.equal('plan_restricted');
      expect(expectRateLimitHeaders(refused, `refusal ${i + 1}`).remaining).to.equal(4 - i);
    }
    const res = await api.post<ErrorBody>('/api/routing-policies', { name: 'p', strategy: 'cheapest' }, from(ip, { 'x-api-key': sandbox.api_key.key }));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ scope: 'workspace', requests_per_minute: 5 });
  });

  it('counts a body refused as too large, and puts the rate headers on its 413', async () => {
    const ip = '192.0.2.13';
    const sandbox = await register(svc.url);
    const headers = from(ip, { 'x-api-key': sandbox.api_key.key, 'content-type': 'application/json' });
    const before = expectRateLimitHeaders(await api.get('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key })), 'before');
    const large = await api.raw('POST', '/api/compute/price', { rawBody: JSON.stringify({ context: { note: 'x'.repeat(1_100_000) } }), headers });
    expect(large.status, large.text).to.equal(413);
    expect(large.body.code).to.equal('payload_too_large');
    expect(expectRateLimitHeaders(large, '413').remaining).to.equal(before.remaining - 1);
  });

  it('gives a request refused by one limit back to the other: a noisy address does not use up its workspace, nor a workspace over its limit a shared address', async () => {
    const quiet = await register(svc.url);
    const noisy = await register(svc.url);
    const me = (key: string, ip: string) => api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': key }));
    // The address 192.0.2.14 is used up (8) by two workspaces, 4 requests each.
    for (let i = 0; i < 4; i++) {
      expect((await me(quiet.api_key.key, '192.0.2.14')).status).to.equal(200);
      expect((await me(noisy.api_key.key, '192.0.2.14')).status).to.equal(200);
    }
    const byAddress = await me(noisy.api_key.key, '192.0.2.14');
    expect(byAddress.status).to.equal(429);
    expect(byAddress.body.limit).to.deep.equal({ scope: 'address', requests_per_minute: 8 });
    // The refused request did not count against the noisy workspace: its fifth request, from elsewhere, is its last allowed.
    const elsewhere = await me(noisy.api_key.key, '192.0.2.15');
    expect(elsewhere.status, elsewhere.text).to.equal(200);
    expect(expectRateLimitHeaders(elsewhere, 'fifth').remaining).to.equal(0);

    // The noisy workspace, over its own limit from a fresh address, leaves that address to the others.
    for (let i = 0; i < 8; i++) expect((await me(noisy.api_key.key, '192.0.2.16')).body.limit).to.deep.equal({ scope: 'workspace', requests_per_minute: 5 });
    const shared = await me(quiet.api_key.key, '192.0.2.16');
    expect(shared.status, shared.text).to.equal(200);
    expect(expectRateLimitHeaders(shared, 'shared address').remaining).to.equal(0);
  });

  it('counts a valid credential of the wrong kind for the route and puts the rate headers on its 401', async () => {
    const ip = '192.0.2.19';
    const sandbox = await register(svc.url);
    // Confirming a claim link takes a signed-in person; a sandbox key is the wrong kind of credential.
    for (let i = 0; i < 5; i++) {
      const refused = await api.post<ErrorBody>('/api/agents/claim/clm_anything', {}, from(ip, { 'x-api-key': sandbox.api_key.key }));
      expect(refused.status, `refusal ${i + 1}`).to.equal(401);
      expect(expectRateLimitHeaders(refused, `refusal ${i + 1}`).remaining).to.equal(4 - i);
    }
    const res = await api.post<ErrorBody>('/api/agents/claim/clm_anything', {}, from(ip, { 'x-api-key': sandbox.api_key.key }));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
  });

  it('counts a request without a credential on a route that needs one against its address, with the rate headers on its 401', async () => {
    const ip = '192.0.2.29';
    for (let i = 0; i < 8; i++) {
      const refused = await api.get<ErrorBody>('/api/me', from(ip));
      expect(refused.status, `refusal ${i + 1}`).to.equal(401);
      expect(expectRateLimitHeaders(refused, `refusal ${i + 1}`).remaining).to.equal(7 - i);
    }
    const res = await api.get<ErrorBody>('/api/me', from(ip));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ scope: 'address', requests_per_minute: 8 });
  });

  it('counts a request whose credential is refused against its address, with the rate headers on its 401, whichever header carried it', async () => {
    const ip = '192.0.2.31';
    const unknown = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': unknownKey('sbx') }));
    expect(unknown.status).to.equal(401);
    expect(unknown.body.code).to.equal('invalid_credentials');
    expect(expectRateLimitHeaders(unknown, 'unknown key').remaining).to.equal(7);
    const forged = await api.get<ErrorBody>('/api/me', from(ip, { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJhdWQiOiJwY3M6YWNjZXNzIn0.bad-signature' }));
    expect(forged.status).to.equal(401);
    expect(forged.body.code).to.equal('invalid_credentials');
    expect(expectRateLimitHeaders(forged, 'forged token').remaining).to.equal(6);
    // Counted like any other request: a request without a credential from the address is the next one.
    expect(expectRateLimitHeaders(await api.get('/api/me', from(ip)), 'no credential').remaining).to.equal(5);
  });

  it("counts a person's request naming a workspace they are not a member of against its address, with the rate headers on its 404", async () => {
    const ip = '192.0.2.34';
    const person = await signUp(svc.url, { address: '192.0.2.234' });
    const stranger = await signUp(svc.url, { address: '192.0.2.234' });
    const credentials = [asPerson(person, stranger.workspaceId), { authorization: `Bearer ${person.token}`, 'x-workspace-id': stranger.workspaceId }];
    for (let i = 0; i < 8; i++) {
      const refused = await api.get<ErrorBody>('/api/me', from(ip, credentials[i % 2]));
      expect(refused.status, `refusal ${i + 1}: ${refused.text}`).to.equal(404);
      expect(refused.body.code).to.equal('not_found');
      expect(refused.body.message).to.equal('You are not a member of that workspace.');
      expect(refused.body.error).to.equal(refused.body.message);
      expect(refused.body.hint).to.equal('Send x-workspace-id with one of the workspaces listed at GET /api/user, or omit it for your default workspace.');
      expect(expectRateLimitHeaders(refused, `refusal ${i + 1}`)).to.include({ limit: 8, remaining: 7 - i });
    }
    const res = await api.get<ErrorBody>('/api/me', from(ip, credentials[0]));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ scope: 'address', requests_per_minute: 8 });
    expect(res.headers.get('x-ratelimit-remaining')).to.equal('0');
    // The person's own workspace was not counted for the refusals: from another address it has its whole allowance.
    const own = await api.get('/api/me', from('192.0.2.134', asPerson(person)));
    expect(own.status, own.text).to.equal(200);
    expect(expectRateLimitHeaders(own, 'own workspace').remaining).to.equal(4);
  });

  it('answers a body too large from a caller without a credential with 401, not 413: the credential is checked first', async () => {
    const ip = '192.0.2.32';
    const large = await api.raw<ErrorBody>('POST', '/api/compute/price', { rawBody: JSON.stringify({ context: { note: 'x'.repeat(1_100_000) } }), headers: from(ip, { 'content-type': 'application/json' }) });
    expect(large.status, large.text).to.equal(401);
    expect(large.body.code).to.equal('unauthorized');
    expectRateLimitHeaders(large, 'large, no credential');
  });

  it('limits anonymous requests on public routes per address (sign-up, sign-in), with the rate headers', async () => {
    const ip = '192.0.2.10';
    const bodies = (i: number) => ({ email: `flood-${i}-${Date.now()}@example.com`, password: 'correct horse battery', date_of_birth: '1990-01-01' });
    for (let i = 0; i < 8; i++) {
      const res = await api.post('/api/auth/signup', bodies(i), from(ip));
      expect(res.status, `sign-up ${i + 1}: ${res.text}`).to.equal(201);
      expect(expectRateLimitHeaders(res, `sign-up ${i + 1}`)).to.include({ limit: 8, remaining: 7 - i });
    }
    const over = await api.post<ErrorBody>('/api/auth/signup', bodies(9), from(ip));
    expectRetryAfter(over);
    expect(over.body.code).to.equal('rate_limited');
    expect(over.body.limit).to.deep.equal({ scope: 'address', requests_per_minute: 8 });
    expect((await api.post<ErrorBody>('/api/auth/signin', { email: 'x@example.com', password: 'whatever it is' }, from(ip))).status, 'sign-in from the same address').to.equal(429);
    // Another address is not limited; the keyless demo keeps its own budget instead.
    expect((await api.post('/api/auth/signup', bodies(10), from('192.0.2.110'))).status).to.equal(201);
    const demo = await api.post('/api/public/compute/demo', { context: { unit_cost: 10 } }, from(ip));
    expect(demo.status, demo.text).to.equal(200);
    expect(demo.headers.get('x-demo-budget-limit')).to.match(/^\d+$/);
    expect(demo.headers.get('x-ratelimit-limit')).to.equal(null);
  });

  it('lets a caller that waits retry_after seconds after a rate-limit 429 through again', async () => {
    const ip = '192.0.2.8';
    const sandbox = await register(svc.url);
    let res = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
    while (res.status === 200) res = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
    expectRetryAfter(res);
    clock.advance((res.body.retry_after ?? 0) * 1000);
    const again = await api.get('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
    expect(again.status, again.text).to.equal(200);
  });

  it('slows down an address after the configured number of rejected keys: 429 with retry_after even for a valid key', async () => {
    const ip = '192.0.2.4';
    const sandbox = await register(svc.url);
    for (let i = 0; i < 3; i++) {
      const bad = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': unknownKey('sbx') }));
      expect(bad.status, `rejected key ${i + 1}`).to.equal(401);
    }
    const res = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ rejected_credentials_per_15_minutes: 3 });
    expect(res.body.retry_after).to.be.at.most(2 * 15 * 60);
    const another = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': unknownKey('sbx') }));
    expect(another.status, 'further guesses are not even checked').to.equal(429);
    const elsewhere = await api.get('/api/me', from('192.0.2.44', { 'x-api-key': sandbox.api_key.key }));
    expect(elsewhere.status, 'another address is not slowed down').to.equal(200);
  });

  it('counts rejected credentials from every IPv6 address of one /64 against one allowance (RATE_LIMIT_IPV6_PREFIX), and another /64 apart', async () => {
    const sandbox = await register(svc.url);
    for (let i = 0; i < 3; i++) {
      const bad = await api.get<ErrorBody>('/api/me', from(`2001:db8:7::${i + 1}`, { 'x-api-key': unknownKey('sbx') }));
      expect(bad.status, `rejected key ${i + 1}`).to.equal(401);
    }
    const res = await api.get<ErrorBody>('/api/me', from('2001:db8:7::4', { 'x-api-key': sandbox.api_key.key }));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
    expect(res.body.limit).to.deep.equal({ rejected_credentials_per_15_minutes: 3 });
    const elsewhere = await api.get('/api/me', from('2001:db8:8::1', { 'x-api-key': sandbox.api_key.key }));
    expect(elsewhere.status, 'another /64 is not slowed down').to.equal(200);
  });

  it('counts every kind of rejected credential toward the failed-credential limit: person tokens, session cookies, unrecognised bearer values and other schemes', async () => {
    const sandbox = await register(svc.url);
    const ended = await signUp(svc.url, { address: '192.0.2.235' });
    expect((await api.post('/api/auth/signout', {}, from('192.0.2.235', asPerson(ended)))).status).to.equal(200);
    const rotated = await register(svc.url);
    const orphanToken = await accessToken(svc.url, rotated.api_key.key);
    const rotation = await api.post('/api/api-keys/rotate', {}, from('192.0.2.235', { 'x-api-key': rotated.api_key.key }));
    expect(rotation.status, rotation.text).to.be.oneOf([200, 201]);
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const kinds: Array<[string, Record<string, string>, RegExp]> = [
      ['forged person token', { authorization: `Bearer ${b64({ alg: 'HS256' })}.${b64({ aud: 'pcs:person', sub: 'per_x', sid: 'ses_x' })}.bad-signature` }, /person token is not valid/],
      ["ended session's person token", { authorization: `Bearer ${ended.token}` }, /session behind this person token has ended/],
      ['ended session cookie', { cookie: ended.cookie }, /session has ended/],
      ['unknown session cookie', { cookie: 'pcs_session=not-a-session' }, /session has ended/],
      ['garbage bearer value', { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.x1' }, /not one this service recognises/],
      ['opaque bearer value', { authorization: 'Bearer opaque-garbage' }, /not one this service recognises/],
      ["rotated key's access token", { authorization: `Bearer ${orphanToken}` }, /revoked/],
      ['Basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, /scheme "Basic" is not accepted/],
      ['Bearer without a token', { authorization: 'Bearer' }, /Bearer scheme and no token/],
    ];
    for (const [n, [kind, headers, said]] of kinds.entries()) {
      const ip = `192.0.2.${200 + n}`;
      for (let i = 0; i < 3; i++) {
        const bad = await api.get<ErrorBody>('/api/me', from(ip, headers));
        expect(bad.status, `${kind} ${i + 1}: ${bad.text}`).to.equal(401);
        expect(bad.body.code, kind).to.equal('invalid_credentials');
        expect(bad.body.message, kind).to.match(said);
        expectRateLimitHeaders(bad, kind);
      }
      const res = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
      expectRetryAfter(res);
      expect(res.body.code, `a valid key after three of ${kind}`).to.equal('rate_limited');
      expect(res.body.message).to.equal('Too many rejected credentials from this address; slow down.');
      expect(res.body.limit).to.deep.equal({ rejected_credentials_per_15_minutes: 3 });
    }
  });

  it('answers an address blocked for rejected credentials with 429 whatever credential it sends: access tokens, person tokens, session cookies, unrecognised ones', async () => {
    const ip = '192.0.2.35';
    const sandbox = await register(svc.url);
    const token = await accessToken(svc.url, sandbox.api_key.key);
    const person = await signUp(svc.url, { address: '192.0.2.236' });
    for (let i = 0; i < 3; i++) expect((await api.get('/api/me', from(ip, { 'x-api-key': unknownKey('sbx') }))).status).to.equal(401);
    for (const [kind, headers] of [
      ['API key', { 'x-api-key': sandbox.api_key.key }],
      ['access token', { authorization: `Bearer ${token}` }],
      ['person token', { authorization: `Bearer ${person.token}` }],
      ['session cookie', asPerson(person)],
      ['garbage bearer value', { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.x1' }],
      ['Basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ] as Array<[string, Record<string, string>]>) {
      const res = await api.get<ErrorBody>('/api/me', from(ip, headers));
      expectRetryAfter(res);
      expect(res.body.code, kind).to.equal('rate_limited');
      expect(res.body.message, kind).to.equal('Too many rejected credentials from this address; slow down.');
      expect(res.body.limit, kind).to.deep.equal({ rejected_credentials_per_15_minutes: 3 });
      expect(res.body.retry_after, kind).to.be.within(1, 2 * 15 * 60);
    }
    // A request without a credential has nothing to check: it is answered as such.
    expect((await api.get<ErrorBody>('/api/me', from(ip))).body.code).to.equal('unauthorized');
    // Another address is not blocked.
    expect((await api.get('/api/me', from('192.0.2.135', { authorization: `Bearer ${person.token}` }))).status).to.equal(200);
    expect((await api.get('/api/me', from('192.0.2.135', { authorization: `Bearer ${token}` }))).status).to.equal(200);
  });

  it('counts wrong passwords as rejected credentials too', async () => {
    const ip = '192.0.2.5';
    const person = await signUp(svc.url);
    for (let i = 0; i < 3; i++) {
      const bad = await api.post<ErrorBody>('/api/auth/signin', { email: person.email, password: 'wrong password!' }, from(ip));
      expect(bad.status).to.equal(401);
    }
    const res = await api.post<ErrorBody>('/api/auth/signin', { email: person.email, password: person.password }, from(ip));
    expectRetryAfter(res);
    expect(res.body.code).to.equal('rate_limited');
  });

  it('checks no more concurrent wrong passwords from one address than its rejected-credential allowance', async () => {
    const ip = '192.0.2.7';
    const person = await signUp(svc.url);
    // Eight at once (the address's request limit): only three (the allowance) may be checked.
    const burst = await Promise.all(Array.from({ length: 8 }, () => api.post<ErrorBody>('/api/auth/signin', { email: person.email, password: 'wrong password!' }, from(ip))));
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((s) => s === 401), statuses.join(' ')).to.have.length.at.most(3);
    for (const r of burst.filter((b) => b.status !== 401)) {
      expectRetryAfter(r);
      expect(r.body.code).to.equal('rate_limited');
    }
  });

  it('lets the address in again after waiting retry_after seconds', async () => {
    const ip = '192.0.2.6';
    const sandbox = await register(svc.url);
    for (let i = 0; i < 3; i++) await api.get('/api/me', from(ip, { 'x-api-key': unknownKey('sbx') }));
    const blocked = await api.get<ErrorBody>('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
    expectRetryAfter(blocked);
    clock.advance((blocked.body.retry_after ?? 0) * 1000);
    const res = await api.get('/api/me', from(ip, { 'x-api-key': sandbox.api_key.key }));
    expect(res.status, `after waiting retry_after (${blocked.body.retry_after} s): ${res.text}`).to.equal(200);
  });

});

describe('identity: callers behind a trusted proxy', () => {
  let svc: TestService;
  const clock = new ManualClock(Math.floor(Date.now() / 3_600_000) * 3_600_000 + 1000);

  before(async () => {
    svc = await startTestService({ clock, env: { TRUST_PROXY: '1' }, config: { limits: { rateLimit: { failedAuthPerAddressPer15Min: 3 } } } });
  });
  after(() => svc.close());

  it('tells two clients behind one proxy hop (TRUST_PROXY=1) apart by X-Forwarded-For: one client\'s rejected keys do not slow the other down', async () => {
    const api = client(svc.url);
    const sandbox = await register(svc.url);
    for (let i = 0; i < 3; i++) await api.get('/api/me', { 'x-forwarded-for': '198.51.100.1', 'x-api-key': unknownKey('sbx') });
    const guesser = await api.get<ErrorBody>('/api/me', { 'x-forwarded-for': '198.51.100.1', 'x-api-key': sandbox.api_key.key });
    expect(guesser.status, 'the client that guessed is slowed down').to.equal(429);
    const other = await api.get('/api/me', { 'x-forwarded-for': '198.51.100.2', 'x-api-key': sandbox.api_key.key });
    expect(other.status, `another client behind the same proxy: ${other.text}`).to.equal(200);
  });
});
