import { expect } from 'chai';
import { client } from '../../support/http';
import { asPerson, signUp } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

type Body = Record<string, any>;

/** docs/identity.md: a person token may be minted with fewer scopes, and a scoped one creates keys only within them. */
describe('accounts: narrower person tokens (POST /api/user/tokens)', function () {
  this.timeout(30_000);
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService();
    api = client(svc.url);
  });
  after(() => svc.close());

  it('mints a token carrying the scopes asked for, bound to the session: within them it works, beyond them 403 insufficient_scope, and ending the session stops it', async () => {
    const person = await signUp(svc.url);
    const minted = await api.post<Body>('/api/user/tokens', { scopes: ['billing:read'] }, asPerson(person));
    expect(minted.status, minted.text).to.equal(201);
    expect(minted.headers.get('cache-control')).to.equal('no-store');
    expect(minted.body.token).to.include({ token_type: 'Bearer', scope: 'billing:read', expires_in: 3600 });
    const narrow = { authorization: `Bearer ${minted.body.token.access_token as string}` };
    expect((await api.get<Body>('/api/me', narrow)).body.scopes).to.deep.equal(['billing:read']);
    // Keys only within what it holds.
    expect((await api.post<Body>('/api/api-keys', { name: 'reader', scopes: ['billing:read'] }, narrow)).status).to.equal(201);
    const wider = await api.post<Body>('/api/api-keys', { name: 'pricer', scopes: ['price:compute'] }, narrow);
    expect([wider.status, wider.body.code, wider.body.required_scopes]).to.deep.equal([403, 'insufficient_scope', ['price:compute']]);
    const priced = await api.post<Body>('/api/compute/price', { context: { current_price: 4 } }, narrow);
    expect([priced.status, priced.body.code]).to.deep.equal([403, 'insufficient_scope']);
    // A narrower token cannot mint a wider one.
    const widened = await api.post<Body>('/api/user/tokens', { scopes: ['billing:read', 'price:compute'] }, narrow);
    expect([widened.status, widened.body.code, widened.body.required_scopes]).to.deep.equal([403, 'insufficient_scope', ['price:compute']]);
    // Bound to the session that asked.
    expect((await api.delete(`/api/user/sessions/${person.sessionId}`, asPerson(person))).status).to.equal(200);
    expect((await api.get('/api/me', narrow)).status).to.equal(401);
  });

  it('a narrowed token cannot sign out (403 insufficient_scope, as ending sessions): its session and the full token answered at sign-in keep working, and the full token signs out', async () => {
    const person = await signUp(svc.url);
    const minted = await api.post<Body>('/api/user/tokens', { scopes: ['price:compute'] }, asPerson(person));
    expect(minted.status, minted.text).to.equal(201);
    const narrow = { authorization: `Bearer ${minted.body.token.access_token as string}` };
    const signout = await api.post<Body>('/api/auth/signout', {}, narrow);
    expect([signout.status, signout.body.code], signout.text).to.deep.equal([403, 'insufficient_scope']);
    expect(signout.body.error).to.match(/^POST \/api\/auth\/signout needs full access/);
    expect(signout.body.hint).to.match(/narrowed with POST \/api\/user\/tokens/);
    expect(signout.headers.get('set-cookie'), 'the cookie is not cleared either').to.equal(null);
    expect((await api.get('/api/me', asPerson(person))).status, 'the session still works').to.equal(200);
    expect((await api.get('/api/me', narrow)).status).to.equal(200);
    const full = await api.post<Body>('/api/auth/signout', {}, { authorization: `Bearer ${person.token}` });
    expect([full.status, full.body.signed_out]).to.deep.equal([200, true]);
    expect((await api.get('/api/me', asPerson(person))).status, 'the session is ended').to.equal(401);
    expect((await api.get('/api/me', narrow)).status, 'the narrowed token ends with its session').to.equal(401);
  });

  it('a refusal of the permissions granted by name only says so in a sentence agreeing with how many were asked for', async () => {
    const person = await signUp(svc.url);
    const one = await api.post<Body>('/api/user/tokens', { scopes: ['team:admin'] }, asPerson(person));
    expect([one.status, one.body.code]).to.deep.equal([400, 'validation_error']);
    expect(one.body.error).to.equal('team:admin counts only on a key that names it, sent as itself: a token never carries it.');
    const two = await api.post<Body>('/api/user/tokens', { scopes: ['workspace:claim', 'team:admin'] }, asPerson(person));
    expect([two.status, two.body.code]).to.deep.equal([400, 'validation_error']);
    expect(two.body.error).to.equal('workspace:claim and team:admin count only on a key that names them, sent as itself: a token never carries them.');
    expect(two.body.issues.map((i: { path: string }) => i.path)).to.deep.equal(['scopes.0', 'scopes.1']);
  });

  it('refuses unknown scopes and the permissions granted by name only with 400 naming each, an API key with 401, and no scopes with 400', async () => {
    const person = await signUp(svc.url);
    const unknown = await api.post<Body>('/api/user/tokens', { scopes: ['price:compute', 'everything'] }, asPerson(person));
    expect([unknown.status, unknown.body.code, unknown.body.issues]).to.deep.equal([400, 'validation_error', [{ path: 'scopes.1', reason: '"everything" is not a scope' }]]);
    expect(unknown.body.example).to.deep.equal({ scopes: ['price:compute'] });
    const nameOnly = await api.post<Body>('/api/user/tokens', { scopes: ['team:admin'] }, asPerson(person));
    expect([nameOnly.status, nameOnly.body.issues[0].path]).to.deep.equal([400, 'scopes.0']);
    expect(nameOnly.body.hint).to.contain('POST /api/api-keys');
    // Every refused scope at once, each at the place it was sent (duplicates included).
    const both = await api.post<Body>('/api/user/tokens', { scopes: ['price:compute', 'price:compute', 'nope', 'team:admin'] }, asPerson(person));
    expect([both.status, both.body.issues]).to.deep.equal([
      400,
      [
        { path: 'scopes.2', reason: '"nope" is not a scope' },
        { path: 'scopes.3', reason: '"team:admin" is granted by name only, on a key' },
      ],
    ]);
    const keyDup = await api.post<Body>('/api/api-keys', { name: 'dup', scopes: ['price:compute', 'price:compute', 'nope'] }, asPerson(person));
    expect([keyDup.status, keyDup.body.issues?.[0]?.path]).to.deep.equal([400, 'scopes.2']);
    expect((await api.post<Body>('/api/user/tokens', { scopes: [] }, asPerson(person))).status).to.equal(400);
    const key = (await api.post<Body>('/api/api-keys', { name: 'k' }, asPerson(person))).body.api_key.key as string;
    const byKey = await api.post<Body>('/api/user/tokens', { scopes: ['price:compute'] }, { 'x-api-key': key });
    expect([byKey.status, byKey.body.code]).to.deep.equal([401, 'unauthorized']);
  });
});
