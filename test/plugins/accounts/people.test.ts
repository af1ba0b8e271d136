import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { PrivateKeyAccount } from 'viem/accounts';
import { client } from '../../support/http';
import { identityConfig, sessionCookieOf, signUp, uniqueEmail } from '../../support/identity';
import type { ErrorBody, MeBody } from '../../support/identity';
import { startTestService, testConfig } from '../../support/service';
import { secureSessionCookies } from '../../../plugins/accounts/services/sessions';
import type { TestService } from '../../support/service';

interface SignedIn {
  person: { id: string; email: string | null };
  session: { id: string };
  token: { access_token: string; token_type: string };
  wallet?: string;
}

/** The date `years` years before today (UTC), shifted by `days`, as YYYY-MM-DD. */
function yearsAgo(years: number, days = 0): string {
  const d = new Date();
  d.setUTCHours(12, 0, 0, 0);
  d.setUTCFullYear(d.getUTCFullYear() - years);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

describe('accounts: people, sign-up, sign-in and sessions', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('refuses a sign-up under 18 with 403 and a reason', async () => {
    const email = uniqueEmail();
    const res = await api.post<ErrorBody>('/api/auth/signup', { email, password: 'correct horse battery', date_of_birth: yearsAgo(18, 1) });
    expect(res.status, res.text).to.equal(403);
    expect(res.body.reason).to.equal('minimum age');
    expect(res.body.error).to.match(/18/);
    const young = await api.post<ErrorBody>('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: yearsAgo(12) });
    expect(young.status).to.equal(403);
    const count = await svc.sequelize.query('SELECT count(*)::int AS n FROM people WHERE email = $1', { bind: [email], plain: true });
    expect((count as { n: number } | null)?.n).to.equal(0);
  });

  it('accepts a sign-up on the 18th birthday', async () => {
    const res = await api.post<SignedIn>('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: yearsAgo(18) });
    expect(res.status, res.text).to.equal(201);
  });

  it('refuses a date of birth that does not exist (2000-02-30, 2001-02-29) with 400 naming date_of_birth, and takes a real leap day', async () => {
    for (const date of ['2000-02-30', '2001-02-29', '1990-04-31', '2000-13-01']) {
      const res = await api.post<ErrorBody>('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: date });
      expect(res.status, `${date}: ${res.text}`).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues?.map((i) => i.path)).to.deep.equal(['date_of_birth']);
    }
    expect((await api.post('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: '2000-02-29' })).status).to.equal(201);
  });

  it('refuses a date of birth before 1900 (0000-01-01, 1899-12-31) with 400 naming date_of_birth and the earliest year', async () => {
    for (const date of ['0000-01-01', '0001-01-01', '1899-12-31']) {
      const res = await api.post<ErrorBody>('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: date });
      expect(res.status, `${date}: ${res.text}`).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues?.map((i) => i.path)).to.deep.equal(['date_of_birth']);
      expect(res.body.issues?.[0]?.reason).to.match(/1900/);
    }
    expect((await api.post('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: '1900-01-01' })).status).to.equal(201);
  });

  it('refuses a date of birth in the future with 400 naming date_of_birth, not the 403 of an under-aged person', async () => {
    const nextYear = `${new Date().getUTCFullYear() + 1}-01-01`;
    for (const date of ['3000-01-01', nextYear]) {
      const res = await api.post<ErrorBody>('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: date });
      expect(res.status, `${date}: ${res.text}`).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues).to.deep.equal([{ path: 'date_of_birth', reason: 'not a date of birth: it is in the future' }]);
    }
  });

  it('refuses a password shorter than 10 characters with 400 validation_error', async () => {
    const res = await api.post<ErrorBody>('/api/auth/signup', { email: uniqueEmail(), password: 'short', date_of_birth: '1990-01-01' });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.issues?.map((i) => i.path)).to.include('password');
  });

  it('refuses a password of spaces only, and takes one typed composed or decomposed (Unicode NFC) as the same password', async () => {
    const blank = await api.post<ErrorBody>('/api/auth/signup', { email: uniqueEmail(), password: '          ', date_of_birth: '1990-01-01' });
    expect(blank.status, blank.text).to.equal(400);
    expect(blank.body.issues).to.deep.equal([{ path: 'password', reason: 'must not be only spaces: use at least 10 characters that are not all blank' }]);
    const composed = 'p\u00e4ssw\u00f6rd123';
    const decomposed = 'pa\u0308sswo\u0308rd123';
    for (const [made, typed] of [[composed, decomposed], [decomposed, composed]]) {
      const email = uniqueEmail();
      const up = await api.post('/api/auth/signup', { email, password: made, date_of_birth: '1990-01-01' });
      expect(up.status, up.text).to.equal(201);
      for (const password of [typed, made]) expect((await api.post('/api/auth/signin', { email, password })).status, JSON.stringify(password)).to.equal(200);
      expect((await api.post('/api/auth/signin', { email, password: 'pa\u0308sswo\u0308rd124' })).status).to.equal(401);
    }
  });

  it('answers a duplicate email with 409, whatever its case', async () => {
    const email = uniqueEmail();
    await signUp(svc.url, { email });
    for (const again of [email, email.toUpperCase()]) {
      const res = await api.post<ErrorBody>('/api/auth/signup', { email: again, password: 'another long password', date_of_birth: '1985-05-05' });
      expect(res.status, res.text).to.equal(409);
      expect(res.body.code).to.equal('conflict');
      expect(res.body.hint).to.match(/signin/);
    }
  });

  it('answers a sign-up that loses the race for its email at the unique index with the same 409 conflict as a duplicate', async () => {
    const email = uniqueEmail();
    // A parallel sign-up of the same email, held uncommitted: the request's check cannot see it, and
    // its insert waits on the email index until this one commits (what 4 parallel requests hit by chance).
    const rival = await svc.sequelize.transaction();
    await svc.sequelize.query(`INSERT INTO people (id, email, display_name) VALUES ('per_rival_' || md5($1), $1, 'rival')`, { bind: [email], transaction: rival });
    const pending = api.post<ErrorBody>('/api/auth/signup', { email, password: 'correct horse battery', date_of_birth: '1990-01-01' });
    let waiting = false;
    for (let tries = 0; tries < 100 && !waiting; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const row = await svc.sequelize.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO people%'`, { plain: true });
      waiting = ((row as { n: number } | null)?.n ?? 0) > 0;
    }
    await rival.commit();
    expect(waiting, 'the sign-up reached its insert before the rival committed').to.equal(true);
    const res = await pending;
    expect(res.status, res.text).to.equal(409);
    expect(res.body.code).to.equal('conflict');
    expect(res.body.error).to.equal('An account with this email already exists.');
    expect(res.body.hint).to.match(/signin/);
  });

  it('leaves no account behind when the first session cannot be written (500): the same sign-up retried gets 201, and a wallet\'s first sign-in retried gets 201', async () => {
    // A real fault inside PostgreSQL: the session insert of a request sent with this user agent fails.
    await svc.sequelize.query(
      `CREATE FUNCTION fail_session_for_test() RETURNS trigger AS $$ BEGIN IF NEW.user_agent = 'fail-session' THEN RAISE EXCEPTION 'session write failed for test'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`,
    );
    await svc.sequelize.query('CREATE TRIGGER fail_session_for_test BEFORE INSERT ON person_sessions FOR EACH ROW EXECUTE FUNCTION fail_session_for_test()');
    try {
      const email = uniqueEmail();
      const body = { email, password: 'correct horse battery', date_of_birth: '1990-01-01' };
      const failed = await api.post<ErrorBody>('/api/auth/signup', body, { 'user-agent': 'fail-session' });
      expect(failed.status, failed.text).to.equal(500);
      const [[left]] = (await svc.sequelize.query('SELECT count(*)::int AS n FROM people WHERE lower(email) = lower($1)', { bind: [email] })) as [Array<{ n: number }>, unknown];
      expect(left?.n, 'people left by the failed sign-up').to.equal(0);
      const retried = await api.post<SignedIn>('/api/auth/signup', body);
      expect(retried.status, retried.text).to.equal(201);
      expect(retried.body.person.email).to.equal(email);

      const wallet = privateKeyToAccount(generatePrivateKey());
      const walletSignIn = async (userAgent: string) => {
        const nonce = await api.post<{ message: string }>('/api/auth/wallet/nonce', { address: wallet.address });
        const signature = await wallet.signMessage({ message: nonce.body.message });
        return api.post<SignedIn>('/api/auth/wallet/signin', { message: nonce.body.message, signature, date_of_birth: '1990-12-10' }, { 'user-agent': userAgent });
      };
      const walletFailed = await walletSignIn('fail-session');
      expect(walletFailed.status, walletFailed.text).to.equal(500);
      const walletRetried = await walletSignIn('a wallet app');
      expect(walletRetried.status, `the account is made by the retry: ${walletRetried.text}`).to.equal(201);
      expect(walletRetried.body.wallet).to.equal(wallet.address);
    } finally {
      await svc.sequelize.query('DROP TRIGGER fail_session_for_test ON person_sessions');
      await svc.sequelize.query('DROP FUNCTION fail_session_for_test()');
    }
  });

  it('sets the session cookie HttpOnly (SameSite=Lax, Path=/) at sign-up and sign-in', async () => {
    const email = uniqueEmail();
    const up = await api.post('/api/auth/signup', { email, password: 'correct horse battery', date_of_birth: '1990-01-01' });
    const signin = await api.post('/api/auth/signin', { email, password: 'correct horse battery' });
    expect(signin.status).to.equal(200);
    for (const res of [up, signin]) {
      const cookie = res.headers.get('set-cookie') ?? '';
      expect(cookie).to.match(/^pcs_session=[^;]+;/);
      expect(cookie).to.match(/;\s*HttpOnly(;|$)/);
      expect(cookie).to.match(/;\s*SameSite=Lax/);
      expect(cookie).to.match(/;\s*Path=\//);
      // This service's PUBLIC_URL is unset (plain http on loopback): a Secure cookie would never come back.
      expect(cookie).not.to.match(/;\s*Secure/i);
      expect(res.headers.get('cache-control')).to.match(/no-store/);
    }
  });

  it('marks the session cookie Secure when PUBLIC_URL is https, unless SECURE_COOKIES says otherwise', async () => {
    const decide = (env: Record<string, string>) => secureSessionCookies(testConfig({}, env));
    expect(decide({})).to.equal(false);
    expect(decide({ PUBLIC_URL: 'https://pricing.example.com' })).to.equal(true);
    expect(decide({ PUBLIC_URL: 'HTTPS://pricing.example.com/base' })).to.equal(true);
    expect(decide({ PUBLIC_URL: 'http://pricing.example.com' })).to.equal(false);
    expect(decide({ PUBLIC_URL: 'https://pricing.example.com', SECURE_COOKIES: 'false' })).to.equal(false);
    expect(decide({ PUBLIC_URL: 'http://pricing.example.com', SECURE_COOKIES: 'yes' })).to.equal(true);
    expect(decide({ SECURE_COOKIES: ' ' })).to.equal(false);
    const https = await startTestService({ config: identityConfig(), env: { PUBLIC_URL: 'https://pricing.example.com' } });
    try {
      const up = await client(https.url).post('/api/auth/signup', { email: uniqueEmail(), password: 'correct horse battery', date_of_birth: '1990-01-01' });
      expect(up.status, up.text).to.equal(201);
      expect(up.headers.get('set-cookie')).to.match(/^pcs_session=[^;]+;.*;\s*Secure(;|$)/);
    } finally {
      await https.close();
    }
  });

  it('answers a wrong password, or an unknown email, with the same 401 invalid_credentials', async () => {
    const person = await signUp(svc.url);
    const wrong = await api.post<ErrorBody>('/api/auth/signin', { email: person.email, password: 'not the password' });
    expect(wrong.status).to.equal(401);
    expect(wrong.body.code).to.equal('invalid_credentials');
    expect(wrong.body.retryable).to.equal(false);
    expect(wrong.headers.get('set-cookie')).to.equal(null);
    expect(wrong.headers.get('www-authenticate')).to.match(/^Bearer realm="pricing-compute"/);
    // About signing in, not about API keys.
    expect(wrong.body.hint).to.contain('POST /api/auth/wallet/signin');
    expect((wrong.body.next as Array<{ action: string }>).map((n) => n.action)).to.deep.equal(['sign_in', 'wallet_sign_in', 'sign_up']);
    const unknown = await api.post<ErrorBody>('/api/auth/signin', { email: uniqueEmail(), password: 'not the password' });
    expect(unknown.status).to.equal(401);
    expect(unknown.body.error).to.equal(wrong.body.error);
    const right = await api.post<SignedIn>('/api/auth/signin', { email: person.email.toUpperCase(), password: person.password });
    expect(right.status).to.equal(200);
    expect(right.body.person.id).to.equal(person.id);
  });

  it('refuses a sign-up or sign-in posted by a page of another site (403, no cookie set, no account made): it could sign its visitors in to an account it chose; the service\'s own page signs in', async () => {
    const email = uniqueEmail();
    const body = JSON.stringify({ email, password: 'correct horse battery', date_of_birth: yearsAgo(30) });
    for (const headers of [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }, { origin: 'http://localhost:8080' }] as Array<Record<string, string>>) {
      for (const path of ['/api/auth/signup', '/api/auth/signin']) {
        const res = await api.raw<ErrorBody>('POST', path, { rawBody: body, headers: { 'content-type': 'text/plain', ...headers } });
        expect([res.status, res.body.code, res.body.reason], `${path} ${JSON.stringify(headers)}: ${res.text}`).to.deep.equal([403, 'forbidden', 'page of another site']);
        expect(res.headers.get('set-cookie'), path).to.equal(null);
      }
    }
    const count = await svc.sequelize.query('SELECT count(*)::int AS n FROM people WHERE email = $1', { bind: [email], plain: true });
    expect(count?.n).to.equal(0);
    const own = { 'content-type': 'application/json', origin: new URL(svc.url).origin };
    expect((await api.raw('POST', '/api/auth/signup', { rawBody: body, headers: own })).status).to.equal(201);
    const signedIn = await api.raw('POST', '/api/auth/signin', { rawBody: JSON.stringify({ email, password: 'correct horse battery' }), headers: own });
    expect(signedIn.status, signedIn.text).to.equal(200);
    expect(signedIn.headers.get('set-cookie')).to.match(/^pcs_session=/);
  });

  it("refuses a change sent with the session cookie from a page of another site (403), whatever its content type; reads, its own origin and person tokens pass", async () => {
    const person = await signUp(svc.url);
    const evil = { cookie: person.cookie, origin: 'https://evil.example' };
    for (const headers of [{ ...evil, 'content-type': 'application/json' }, { ...evil, 'content-type': 'text/plain' }]) {
      const res = await api.raw<ErrorBody>('POST', '/api/api-keys', { rawBody: '{"name":"csrf"}', headers });
      expect([res.status, res.body.code, res.body.reason], res.text).to.deep.equal([403, 'forbidden', 'cross-site request with a session cookie']);
    }
    // No Origin, but the browser's Fetch Metadata says whose page sent it.
    for (const site of ['cross-site', 'same-site']) {
      const res = await api.post<ErrorBody>('/api/api-keys', { name: 'csrf' }, { cookie: person.cookie, 'sec-fetch-site': site });
      expect([res.status, res.body.code, res.body.reason], `${site}: ${res.text}`).to.deep.equal([403, 'forbidden', 'cross-site request with a session cookie']);
    }
    for (const site of ['same-origin', 'none']) {
      expect((await api.post('/api/api-keys', { name: `fetch-site ${site}` }, { cookie: person.cookie, 'sec-fetch-site': site })).status, site).to.equal(201);
    }
    const keys = await api.get<{ data: Array<{ name: string }> }>('/api/api-keys', evil);
    expect(keys.status, 'a read from another site is not a change').to.equal(200);
    expect(keys.body.data.map((k) => k.name)).not.to.include('csrf');
    expect((await api.post('/api/api-keys', { name: 'own page' }, { cookie: person.cookie, origin: new URL(svc.url).origin })).status).to.equal(201);
    expect((await api.post('/api/api-keys', { name: 'program' }, { authorization: `Bearer ${person.token}`, origin: 'https://evil.example' })).status, 'a bearer token is no ambient credential').to.equal(201);
  });

  it('refuses a change sent with the session cookie from a page on another port of this machine (the same site to a browser); the service under another loopback name is its own', async () => {
    const person = await signUp(svc.url);
    const port = new URL(svc.url).port;
    for (const origin of ['http://localhost:8080', 'http://127.0.0.1:5173', 'http://[::1]:3001', 'null']) {
      const res = await api.post<ErrorBody>('/api/api-keys', { name: 'local page' }, { cookie: person.cookie, origin });
      expect([res.status, res.body.code, res.body.reason], `${origin}: ${res.text}`).to.deep.equal([403, 'forbidden', 'cross-site request with a session cookie']);
    }
    for (const origin of [`http://localhost:${port}`, `http://[::1]:${port}`]) {
      expect((await api.post('/api/api-keys', { name: `own ${origin}` }, { cookie: person.cookie, origin })).status, origin).to.equal(201);
    }
    // The MCP endpoint lets loopback pages in with a key, but not act as the person whose cookie the browser holds.
    const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'compute_price', arguments: { context: { current_price: 8.88 } } } };
    const viaCookie = await api.raw<ErrorBody>('POST', '/api/mcp/rpc', {
      rawBody: JSON.stringify(rpc),
      headers: { cookie: person.cookie, origin: 'http://localhost:8080', 'content-type': 'text/plain', accept: 'application/json, text/event-stream' },
    });
    expect(viaCookie.status, viaCookie.text).to.equal(403);
  });

  it('does not take a browser session as an API key', async () => {
    const person = await signUp(svc.url);
    const value = person.cookie.replace(/^pcs_session=/, '');
    const res = await api.get<ErrorBody>('/api/me', { 'x-api-key': decodeURIComponent(value) });
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('invalid_credentials');
  });

  it('answers a session cookie that is not valid percent-encoding with the 401 invalid_credentials of an unknown session', async () => {
    for (const path of ['/api/user', '/api/me']) {
      const unknown = await api.get<ErrorBody>(path, { cookie: 'pcs_session=pcs_ses_unknown' });
      expect(unknown.status, unknown.text).to.equal(401);
      const malformed = await api.get<ErrorBody>(path, { cookie: 'pcs_session=%E0%A4%A' });
      expect(malformed.status, `${path}: ${malformed.text}`).to.equal(401);
      expect(malformed.body.code).to.equal('invalid_credentials');
      expect(malformed.body.error).to.equal(unknown.body.error);
    }
  });

  it("answers DELETE /api/user/sessions?currentSessionId=not-a-uuid with 400 'Invalid session ID format'", async () => {
    const person = await signUp(svc.url);
    const res = await api.delete<ErrorBody>('/api/user/sessions?currentSessionId=not-a-uuid', { cookie: person.cookie });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('Invalid session ID format');
    expect((await api.get('/api/user', { cookie: person.cookie })).status, 'no session was ended').to.equal(200);
  });

  it("answers a repeated currentSessionId (?currentSessionId=a&currentSessionId=b) with the same 400 'Invalid session ID format', ending no session", async () => {
    const person = await signUp(svc.url);
    for (const query of ['currentSessionId=a&currentSessionId=b', `currentSessionId=${person.sessionId}&currentSessionId=${person.sessionId}`]) {
      const res = await api.delete<ErrorBody>(`/api/user/sessions?${query}`, { cookie: person.cookie });
      expect(res.status, `${query}: ${res.text}`).to.equal(400);
      expect(res.body.code).to.equal('invalid_session_id');
      expect(res.body.error).to.equal('Invalid session ID format');
      expect(res.body.issues?.map((i) => i.path)).to.deep.equal(['currentSessionId']);
    }
    expect((await api.get('/api/user', { cookie: person.cookie })).status, 'no session was ended').to.equal(200);
  });

  it("answers DELETE /api/user/sessions/not-a-uuid with 400 'Invalid session ID format'", async () => {
    const person = await signUp(svc.url);
    const res = await api.delete<ErrorBody>('/api/user/sessions/not-a-uuid', { cookie: person.cookie });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('Invalid session ID format');
    // The nil and max UUIDs are UUIDs (RFC 9562): no session holds them, so they are not found, not malformed.
    for (const id of ['00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF']) {
      const none = await api.delete<ErrorBody>(`/api/user/sessions/${id}`, { cookie: person.cookie });
      expect(none.status, none.text).to.equal(404);
      expect(none.body.code).to.equal('not_found');
    }
  });

  it('ends a session and its person token at once', async () => {
    const person = await signUp(svc.url);
    const second = await api.post<SignedIn>('/api/auth/signin', { email: person.email, password: person.password });
    const secondCookie = sessionCookieOf(second);
    const secondToken = second.body.token.access_token;
    expect((await api.get('/api/me', { authorization: `Bearer ${secondToken}` })).status).to.equal(200);
    expect((await api.get('/api/me', { cookie: secondCookie })).status).to.equal(200);
    const res = await api.delete(`/api/user/sessions/${second.body.session.id}`, { cookie: person.cookie });
    expect(res.status, res.text).to.equal(200);
    const token = await api.get<ErrorBody>('/api/me', { authorization: `Bearer ${secondToken}` });
    expect(token.status).to.equal(401);
    expect(token.body.code).to.equal('invalid_credentials');
    expect((await api.get('/api/me', { cookie: secondCookie })).status).to.equal(401);
    expect((await api.get('/api/me', { authorization: `Bearer ${person.token}` })).status, 'the other session is untouched').to.equal(200);
  });

  it("clears the caller's own cookie in the 200 that ends its own session (one by id, or all), and only then", async () => {
    const person = await signUp(svc.url);
    const other = await api.post<SignedIn>('/api/auth/signin', { email: person.email, password: person.password });
    const byId = await api.delete(`/api/user/sessions/${other.body.session.id}`, { cookie: person.cookie });
    expect([byId.status, byId.headers.get('set-cookie')], 'another session ended: the caller keeps its cookie').to.deep.equal([200, null]);
    const kept = await api.delete(`/api/user/sessions?currentSessionId=${person.sessionId}`, { cookie: person.cookie });
    expect([kept.status, kept.headers.get('set-cookie')]).to.deep.equal([200, null]);
    const all = await api.delete('/api/user/sessions', { cookie: person.cookie });
    expect(all.status, all.text).to.equal(200);
    expect(all.headers.get('set-cookie')).to.match(/^pcs_session=;/).and.contain('Max-Age=0');
    const again = await signUp(svc.url);
    const own = await api.delete(`/api/user/sessions/${again.sessionId}`, { cookie: again.cookie });
    expect(own.status, own.text).to.equal(200);
    expect(own.headers.get('set-cookie')).to.match(/^pcs_session=;/).and.contain('Max-Age=0');
  });

  it('clears a session cookie that has ended on its 401 (sign-out included), so a browser signed out elsewhere stops sending it; a person token\'s 401 sets no cookie', async () => {
    const person = await signUp(svc.url);
    const second = await api.post<SignedIn>('/api/auth/signin', { email: person.email, password: person.password });
    const secondCookie = sessionCookieOf(second);
    const secondToken = second.body.token.access_token;
    expect((await api.delete(`/api/user/sessions/${second.body.session.id}`, { cookie: person.cookie })).status).to.equal(200);
    for (const res of [await api.post<ErrorBody>('/api/auth/signout', {}, { cookie: secondCookie }), await api.get<ErrorBody>('/api/user', { cookie: secondCookie })]) {
      expect(res.status, res.text).to.equal(401);
      expect(res.body.code).to.equal('invalid_credentials');
      expect(res.body.error).to.equal('The session has ended.');
      const cleared = res.headers.get('set-cookie') ?? '';
      expect(cleared).to.match(/^pcs_session=;/);
      expect(cleared).to.contain('Max-Age=0').and.contain('HttpOnly').and.contain('Path=/');
    }
    const byToken = await api.get<ErrorBody>('/api/me', { authorization: `Bearer ${secondToken}` });
    expect(byToken.status).to.equal(401);
    expect(byToken.headers.get('set-cookie')).to.equal(null);
  });

  it('ends every other session with DELETE /api/user/sessions?currentSessionId=<current>', async () => {
    const person = await signUp(svc.url);
    const other = await api.post<SignedIn>('/api/auth/signin', { email: person.email, password: person.password });
    const res = await api.delete<{ revoked: number; kept: string }>(`/api/user/sessions?currentSessionId=${person.sessionId}`, { cookie: person.cookie });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ revoked: 1, kept: person.sessionId });
    expect((await api.get('/api/me', { authorization: `Bearer ${other.body.token.access_token}` })).status).to.equal(401);
    expect((await api.get('/api/me', { cookie: person.cookie })).status).to.equal(200);
  });

  it('reads currentSessionId from a JSON body as from the query: a bad one is 400 Invalid session ID format naming the bare field currentSessionId, as every validation error does; a good one keeps that session', async () => {
    const person = await signUp(svc.url);
    const other = await api.post<SignedIn>('/api/auth/signin', { email: person.email, password: person.password });
    for (const body of [{ currentSessionId: 'bad' }, { currentSessionId: 7 }]) {
      const bad = await api.raw<ErrorBody>('DELETE', '/api/user/sessions', { body, headers: { cookie: person.cookie } });
      expect([bad.status, bad.body.code, bad.body.error], bad.text).to.deep.equal([400, 'invalid_session_id', 'Invalid session ID format']);
      expect(bad.body.issues?.map((i) => i.path)).to.deep.equal(['currentSessionId']);
    }
    const broken = await api.raw<ErrorBody>('DELETE', '/api/user/sessions', { rawBody: '{"currentSessionId":', headers: { cookie: person.cookie, 'content-type': 'application/json' } });
    expect([broken.status, broken.body.code]).to.deep.equal([400, 'invalid_json']);
    const twice = await api.raw<ErrorBody>('DELETE', `/api/user/sessions?currentSessionId=${person.sessionId}`, { body: { currentSessionId: other.body.session.id }, headers: { cookie: person.cookie } });
    expect([twice.status, twice.body.code, twice.body.issues?.[0]?.path]).to.deep.equal([400, 'validation_error', 'currentSessionId']);
    expect((await api.get('/api/me', { authorization: `Bearer ${other.body.token.access_token}` })).status, 'no refusal ended a session').to.equal(200);
    // The same UUID in upper case in the query and lower case in the body is one value, answered in its canonical form.
    const res = await api.raw<{ revoked: number; kept: string }>('DELETE', `/api/user/sessions?currentSessionId=${person.sessionId.toUpperCase()}`, {
      body: { currentSessionId: person.sessionId },
      headers: { cookie: person.cookie },
    });
    expect([res.status, res.body], res.text).to.deep.equal([200, { revoked: 1, kept: person.sessionId }]);
    expect((await api.get('/api/me', { authorization: `Bearer ${other.body.token.access_token}` })).status).to.equal(401);
    expect((await api.get('/api/me', { cookie: person.cookie })).status).to.equal(200);
  });

  it('refuses to keep a session that is not open (unknown, another person\'s, already ended) with 404, ending none', async () => {
    const person = await signUp(svc.url);
    const stranger = await signUp(svc.url);
    const ended = await api.post<SignedIn>('/api/auth/signin', { email: person.email, password: person.password });
    expect((await api.delete(`/api/user/sessions/${ended.body.session.id}`, { cookie: person.cookie })).status).to.equal(200);
    for (const keep of ['6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b', stranger.sessionId, ended.body.session.id]) {
      const res = await api.delete<ErrorBody>(`/api/user/sessions?currentSessionId=${keep}`, { cookie: person.cookie });
      expect([res.status, res.body.code, res.body.issues?.[0]?.path], res.text).to.deep.equal([404, 'not_found', 'currentSessionId']);
      expect(res.body.error).to.contain('nothing was ended');
      expect((await api.get('/api/me', { cookie: person.cookie })).status, 'the caller\'s session was not ended').to.equal(200);
    }
    expect((await api.get('/api/me', { cookie: stranger.cookie })).status, 'the stranger\'s session was not ended').to.equal(200);
  });

  describe('wallet sign-in (Sign-In with Ethereum)', () => {
    const account: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey());

    async function challenge(address: string): Promise<string> {
      const res = await api.post<{ nonce: string; message: string }>('/api/auth/wallet/nonce', { address });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.message).to.contain(address);
      expect(res.body.message).to.contain(res.body.nonce);
      return res.body.message;
    }

    let first: { message: string; signature: `0x${string}`; personId: string } | null = null;

    it('creates the account on the first signed message (201) and signs in on the next (200)', async () => {
      const message = await challenge(account.address);
      const signature = await account.signMessage({ message });
      const created = await api.post<SignedIn>('/api/auth/wallet/signin', { message, signature, date_of_birth: '1990-12-10' });
      expect(created.status, created.text).to.equal(201);
      expect(created.body.wallet).to.equal(account.address);
      expect([created.headers.get('cache-control'), created.headers.get('pragma')], 'a session is a secret').to.deep.equal(['no-store', 'no-cache']);
      sessionCookieOf(created);
      first = { message, signature, personId: created.body.person.id };
      const nextMessage = await challenge(account.address);
      const again = await api.post<SignedIn>('/api/auth/wallet/signin', { message: nextMessage, signature: await account.signMessage({ message: nextMessage }) });
      expect(again.status, again.text).to.equal(200);
      expect(again.body.person.id).to.equal(created.body.person.id);
      const me = await api.get<MeBody>('/api/me', { authorization: `Bearer ${again.body.token.access_token}` });
      expect(me.body.auth_method).to.equal('person_token');
    });

    it('refuses a reused nonce with 401', async () => {
      expect(first, 'the first sign-in ran').not.to.equal(null);
      const replay = await api.post<ErrorBody>('/api/auth/wallet/signin', { message: first?.message, signature: first?.signature });
      expect(replay.status).to.equal(401);
      expect(replay.body.code).to.equal('invalid_credentials');
    });

    it('refuses a tampered message with 401', async () => {
      const message = await challenge(account.address);
      const signature = await account.signMessage({ message });
      const tampered = message.replace(/Chain ID: \d+/, 'Chain ID: 8453');
      expect(tampered).not.to.equal(message);
      const res = await api.post<ErrorBody>('/api/auth/wallet/signin', { message: tampered, signature });
      expect(res.status, res.text).to.equal(401);
      expect(res.body.code).to.equal('invalid_credentials');
      expect(res.body.retryable).to.equal(false);
      expect(res.headers.get('www-authenticate'), 'SPEC: a bearer challenge with every invalid_credentials').to.match(/^Bearer realm="pricing-compute"/);
      expect((res.body.next as Array<{ path: string }>).map((n) => n.path)).to.include('/api/auth/wallet/nonce');
      // Linking the same proof to a signed-in account: the session is fine, the body is not (400, not 401).
      const person = await signUp(svc.url);
      const link = await api.post<ErrorBody>('/api/user/wallets', { message: tampered, signature }, { cookie: person.cookie });
      expect([link.status, link.body.code, link.body.issues?.[0]?.path], link.text).to.deep.equal([400, 'validation_error', 'signature']);
      expect(link.body.error).to.match(/^The wallet could not be linked: /);
      const honest = await api.post('/api/auth/wallet/signin', { message, signature });
      expect(honest.status, 'a refused attempt does not use the nonce up').to.equal(200);
    });

    it('refuses a message the wallet itself edited and signed (chain id, URI, expiry, resources): the nonce binds the whole message issued', async () => {
      const edits: Array<(m: string) => string> = [
        (m) => m.replace(/Chain ID: \d+/, 'Chain ID: 5'),
        (m) => m.replace(/^URI: .*$/m, 'URI: https://evil.example/login'),
        (m) => m.replace(/^Expiration Time: .*$/m, 'Expiration Time: 2030-01-01T00:00:00.000Z'),
        (m) => m.replace(/\nExpiration Time: .*$/m, ''),
        (m) => `${m}\nResources:\n- https://evil.example/grant`,
      ];
      for (const edit of edits) {
        const message = await challenge(account.address);
        const edited = edit(message);
        expect(edited, 'the edit changed the message').not.to.equal(message);
        const res = await api.post<ErrorBody>('/api/auth/wallet/signin', { message: edited, signature: await account.signMessage({ message: edited }) });
        expect(res.status, `${edited}: ${res.text}`).to.equal(401);
        expect(res.body.code).to.equal('invalid_credentials');
        expect(res.body.error).to.include('the message is not the one issued with this nonce');
        // The message as issued still signs in: the refusal did not use the nonce up.
        expect((await api.post('/api/auth/wallet/signin', { message, signature: await account.signMessage({ message }) })).status).to.equal(200);
      }
    });

    it('refuses a message signed by another wallet with 401', async () => {
      const intruder = privateKeyToAccount(generatePrivateKey());
      const message = await challenge(account.address);
      const res = await api.post<ErrorBody>('/api/auth/wallet/signin', { message, signature: await intruder.signMessage({ message }) });
      expect(res.status, res.text).to.equal(401);
      expect(res.body.code).to.equal('invalid_credentials');
      expect(res.body.error).to.match(/signature/);
    });

    it('makes one account for a new wallet signing in several times at once; every sign-in lands in it', async () => {
      const wallet = privateKeyToAccount(generatePrivateKey());
      const messages = await Promise.all(Array.from({ length: 4 }, () => challenge(wallet.address)));
      const signed = await Promise.all(messages.map(async (message) => ({ message, signature: await wallet.signMessage({ message }), date_of_birth: '1990-12-10' })));
      const results = await Promise.all(signed.map((b) => api.post<SignedIn>('/api/auth/wallet/signin', b)));
      for (const r of results) expect([200, 201], r.text).to.include(r.status);
      expect(results.filter((r) => r.status === 201)).to.have.length(1);
      expect(new Set(results.map((r) => r.body.person.id)).size).to.equal(1);
      const [[count]] = (await svc.sequelize.query(`SELECT count(*)::int AS n FROM people WHERE display_name = $1`, { bind: [`${wallet.address.slice(0, 6)}…${wallet.address.slice(-4)}`] })) as [Array<{ n: number }>, unknown];
      expect(count?.n, 'people made for the wallet').to.equal(1);
    });

    it('refuses a new wallet account under 18', async () => {
      const young = privateKeyToAccount(generatePrivateKey());
      const message = await challenge(young.address);
      const res = await api.post<ErrorBody>('/api/auth/wallet/signin', { message, signature: await young.signMessage({ message }), date_of_birth: yearsAgo(17) });
      expect(res.status, res.text).to.equal(403);
      expect(res.body.reason).to.equal('minimum age');
    });
  });
});

describe('accounts: the session cache under made-up cookies', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: identityConfig({}, { credentialCacheMaxEntries: 2 }) });
  });
  after(() => svc.close());

  it('keeps answering real sessions rightly past CREDENTIAL_CACHE_MAX_ENTRIES made-up cookies, and a sign-out still ends one at once', async () => {
    const api = client(svc.url);
    const person = await signUp(svc.url);
    expect((await api.get('/api/me', { cookie: person.cookie })).status).to.equal(200);
    for (let i = 0; i < 10; i++) {
      const res = await api.get<ErrorBody>('/api/me', { cookie: `pcs_session=pcs_ses_madeup${i}${'x'.repeat(30)}` });
      expect(res.status, res.text).to.equal(401);
    }
    expect((await api.get('/api/me', { cookie: person.cookie })).status, 'read again after being dropped').to.equal(200);
    expect((await api.delete(`/api/user/sessions/${person.sessionId}`, { cookie: person.cookie })).status).to.equal(200);
    expect((await api.get('/api/me', { cookie: person.cookie })).status).to.equal(401);
  });
});
