import { expect } from 'chai';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { asPerson, createAgent, createAgentKey, createKey, identityConfig, register, signUp, unknownKey } from '../../support/identity';
import type { MeBody, RegistrationBody, TokenBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

interface ClientBody {
  client_id: string;
  client_secret: string;
  token_endpoint: string;
  grant_types: string[];
  workspace_id: string;
  claim: RegistrationBody['claim'];
  plan: RegistrationBody['plan'];
  limits: RegistrationBody['limits'];
  changelog: string;
}

interface OAuthErrorBody {
  error: string;
  error_description: string;
  code: string;
  hint: string;
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

describe('identity: OAuth client credentials', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let oauthClient: ClientBody;

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
    const res = await api.post<ClientBody>('/api/oauth/register', { client_name: 'my-agent-framework', grant_types: ['client_credentials'] });
    expect(res.status, res.text).to.equal(201);
    oauthClient = res.body;
  });
  after(() => svc.close());

  const token = (body: string, headers: Record<string, string> = {}): Promise<HttpResult<TokenBody & OAuthErrorBody>> =>
    api.raw<TokenBody & OAuthErrorBody>('POST', '/api/oauth/token', { rawBody: body, headers: { ...FORM, ...headers } });

  function expectToken(res: HttpResult<TokenBody>): void {
    expect(res.status, res.text).to.equal(200);
    expect(res.body.access_token).to.be.a('string').and.match(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(res.body.token_type).to.equal('Bearer');
    expect(res.body.expires_in).to.be.a('number').and.to.be.within(1, svc.config.identity.accessTokenTtlS);
    expect(res.headers.get('cache-control')).to.match(/no-store/);
  }

  it('registers a client for a new sandbox: client_id, client_secret, claim link, plan and limits', () => {
    expect(oauthClient.client_id).to.match(/^oac_/);
    expect(oauthClient.client_secret).to.match(/^pcs_oac_/);
    expect(oauthClient.grant_types).to.deep.equal(['client_credentials']);
    expect(oauthClient.token_endpoint).to.match(/\/api\/oauth\/token$/);
    expect(oauthClient.claim.url).to.match(/\/api\/agents\/claim\/pcs_clm_/);
    expect(oauthClient.claim.one_time).to.equal(true);
    expect(oauthClient.plan.name).to.equal('Agent Starter');
    expect(oauthClient.limits.compute_calls_per_day).to.equal(25);
    expect(oauthClient.limits.registrations.per_address_per_day).to.be.a('number');
    expect(oauthClient.changelog).to.be.a('string');
  });

  it('lets the client secret work as an API key in x-api-key', async () => {
    const res = await api.get<MeBody>('/api/me', { 'x-api-key': oauthClient.client_secret });
    expect(res.status).to.equal(200);
    expect(res.body.tenant_id).to.equal(oauthClient.workspace_id);
    expect(res.body.auth_method).to.equal('api_key');
    expect(res.body.workspace.sandbox).to.equal(true);
  });

  it('refuses client metadata asking for another grant (RFC 7591 invalid_client_metadata, with code and a hint that works) or for redirect URIs', async () => {
    const grant = await api.post<OAuthErrorBody>('/api/oauth/register', { grant_types: ['authorization_code'] });
    expect(grant.status).to.equal(400);
    expect(grant.body.error).to.equal('invalid_client_metadata');
    expect(grant.body.code).to.equal('invalid_client_metadata');
    expect(grant.body.hint).to.equal('Leave grant_types out, or send ["client_credentials"]: no other grant exists here.');
    expect(grant.headers.get('cache-control')).to.equal('no-store');
    // As the hint says.
    expect((await api.post('/api/oauth/register', { grant_types: ['client_credentials'] })).status).to.equal(201);
    const redirect = await api.post('/api/oauth/register', { redirect_uris: ['https://example.com/cb'] });
    expect(redirect.status).to.equal(400);
  });

  it('issues an access token to HTTP Basic client authentication', async () => {
    const res = await token('grant_type=client_credentials', { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expectToken(res);
    expect(res.body.scope).to.equal('price:compute');
  });

  it('issues an access token to client_id and client_secret in a form body', async () => {
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: oauthClient.client_id, client_secret: oauthClient.client_secret });
    expectToken(await token(body.toString()));
  });

  it('issues an access token to a JSON body too', async () => {
    const res = await api.post<TokenBody>('/api/oauth/token', { grant_type: 'client_credentials', client_secret: oauthClient.client_secret });
    expectToken(res);
  });

  it('reads the body by its Content-Type compared without case; no Content-Type, another one or a charset other than UTF-8 is 415 invalid_request naming what is read', async () => {
    const auth = { authorization: basic(oauthClient.client_id, oauthClient.client_secret) };
    const json = JSON.stringify({ grant_type: 'client_credentials' });
    // Media types and their parameters are case-insensitive (RFC 9110 §8.3.1).
    expectToken(await token(json, { ...auth, 'content-type': 'Application/JSON' }));
    expectToken(await token('grant_type=client_credentials', { ...auth, 'content-type': 'Application/X-WWW-Form-Urlencoded; Charset=UTF-8' }));
    // fetch adds text/plain to a string body, none to bytes.
    const untyped = await fetch(`${svc.url}/api/oauth/token`, { method: 'POST', headers: auth, body: Buffer.from(json) });
    const refusals: Array<[string, HttpResult<TokenBody & OAuthErrorBody>]> = [
      ['no Content-Type', { status: untyped.status, headers: untyped.headers, body: (await untyped.json()) as TokenBody & OAuthErrorBody, text: '' }],
      ['text/plain', await token('grant_type=client_credentials', { ...auth, 'content-type': 'text/plain' })],
      ['form in UTF-16', await token('grant_type=client_credentials', { ...auth, 'content-type': 'application/x-www-form-urlencoded; charset=utf-16le' })],
      ['JSON in Latin-1', await token(json, { ...auth, 'content-type': 'application/json; charset=latin1' })],
    ];
    for (const [what, res] of refusals) {
      expect([res.status, res.body.error, res.body.code], what).to.deep.equal([415, 'invalid_request', 'invalid_request']);
      expect(Object.keys(res.body).sort(), what).to.deep.equal(['code', 'error', 'error_description', 'hint']);
      expect(res.headers.get('cache-control'), what).to.equal('no-store');
      expect(res.body.error_description + res.body.hint, what).to.contain('application/x-www-form-urlencoded').and.contain('application/json');
    }
    expect(refusals[0]?.[1].body.error_description).to.equal(
      'The request body has no Content-Type, so it cannot be read: send Content-Type: application/x-www-form-urlencoded (as RFC 6749 asks) or application/json, in UTF-8.',
    );
    expect(refusals[1]?.[1].body.error_description).to.match(/^A body of Content-Type text\/plain is not read here/);
    expect(refusals[2]?.[1].body.error_description).to.equal('Request body charset "utf-16le" is not supported.');
    expect(refusals[3]?.[1].body.error_description).to.equal('Request body charset "latin1" is not supported.');
  });

  it('refuses a form parameter sent twice (scope=a&scope=b) with 400 invalid_request (RFC 6749 §3.1), not a token of the last value', async () => {
    const auth = { authorization: basic(oauthClient.client_id, oauthClient.client_secret) };
    const res = await token('grant_type=client_credentials&scope=price:compute&scope=billing:read', auth);
    expect([res.status, res.body.error]).to.deep.equal([400, 'invalid_request']);
    expect(res.body.error_description).to.equal('scope is sent more than once; each parameter is sent once (RFC 6749 §3.1).');
    expect(res.body.hint).to.match(/one scope parameter, separated by spaces/);
    expect(res).to.not.have.nested.property('body.access_token');
  });

  it('refuses a scope that is not one string (a JSON array) with 400 invalid_request saying scope is space-separated (RFC 6749 §3.3), not invalid_scope', async () => {
    const res = await api.post<OAuthErrorBody>('/api/oauth/token', { grant_type: 'client_credentials', client_secret: oauthClient.client_secret, scope: ['price:compute'] });
    expect([res.status, res.body.error]).to.deep.equal([400, 'invalid_request']);
    expect(res.body.error_description).to.equal('scope must be one string of space-separated scope names (RFC 6749 §3.3), not an array.');
    expect(res.body.hint).to.contain('"price:compute billing:read"');
    const number = await api.post<OAuthErrorBody>('/api/oauth/token', { grant_type: 'client_credentials', client_secret: 42 });
    expect([number.status, number.body.error, number.body.error_description]).to.deep.equal([400, 'invalid_request', 'client_secret must be a string, not a JSON number.']);
    // The same scope as one string is granted.
    const ok = await api.post<TokenBody>('/api/oauth/token', { grant_type: 'client_credentials', client_secret: oauthClient.client_secret, scope: 'price:compute' });
    expectToken(ok);
    expect(ok.body.scope).to.equal('price:compute');
  });

  it('issues an access token to an agent key in x-api-key', async () => {
    const person = await signUp(svc.url);
    const agentId = await createAgent(svc.url, asPerson(person));
    const key = await createAgentKey(svc.url, asPerson(person), agentId, { scopes: ['price:compute', 'billing:read'] });
    const res = await token('grant_type=client_credentials', { 'x-api-key': key.key });
    expectToken(res);
    expect(res.body.scope.split(' ')).to.have.members(['price:compute', 'billing:read']);
    const me = await api.get<MeBody>('/api/me', { authorization: `Bearer ${res.body.access_token}` });
    expect(me.body.agent?.id).to.equal(agentId);
  });

  it('answers another grant type with 400 unsupported_grant_type', async () => {
    const res = await token('grant_type=authorization_code&code=abc', { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('unsupported_grant_type');
    expect(res.body.error_description).to.match(/client_credentials/);
    expect(res.body.code).to.equal('unsupported_grant_type');
    expect(res.body.hint).to.equal('Send grant_type=client_credentials: it is the only grant here.');
  });

  it('answers a missing grant type with 400 invalid_request', async () => {
    const res = await token('', { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_request');
  });

  it('answers a wrong client secret with 401 invalid_client', async () => {
    const viaBasic = await token('grant_type=client_credentials', { authorization: basic(oauthClient.client_id, unknownKey('oac')) });
    expect(viaBasic.status).to.equal(401);
    expect(viaBasic.body.error).to.equal('invalid_client');
    expect(viaBasic.headers.get('www-authenticate')).to.match(/^Basic/);
    const viaForm = await token(new URLSearchParams({ grant_type: 'client_credentials', client_secret: 'wrong' }).toString());
    expect(viaForm.status).to.equal(401);
    expect(viaForm.body.error).to.equal('invalid_client');
    const none = await token('grant_type=client_credentials');
    expect(none.status).to.equal(401);
    expect(none.body.error).to.equal('invalid_client');
    expect(viaBasic.text + viaForm.text).not.to.match(/access_token/);
  });

  it('answers Basic credentials that are not valid percent-encoding with 401 invalid_client', async () => {
    for (const pair of ['%E0%A4%A:secret', `client:%ZZ${oauthClient.client_secret}`]) {
      const res = await token('grant_type=client_credentials', { authorization: `Basic ${Buffer.from(pair).toString('base64')}` });
      expect(res.status, pair).to.equal(401);
      expect(res.body.error).to.equal('invalid_client');
      expect(res.headers.get('www-authenticate')).to.match(/^Basic/);
    }
  });

  it("answers a client_id that does not match the secret with 401 invalid_client", async () => {
    const other = await api.post<ClientBody>('/api/oauth/register', { client_name: 'other-framework' });
    const res = await token('grant_type=client_credentials', { authorization: basic(other.body.client_id, oauthClient.client_secret) });
    expect(res.status).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
  });

  it('answers a body it cannot read in RFC 6749 shape too: undecodable is 400 invalid_request, too large 413 invalid_request', async () => {
    const undecodable = await token('grant_type=client_credentials', { 'content-encoding': 'gzip', authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(undecodable.status, undecodable.text).to.equal(400);
    expect(undecodable.body.error).to.equal('invalid_request');
    expect(undecodable.body.error_description).to.match(/could not be decoded as Content-Encoding gzip/);
    expect(undecodable.headers.get('cache-control')).to.equal('no-store');
    const tooLarge = await token(`grant_type=client_credentials&pad=${'x'.repeat(1_100_000)}`, { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(tooLarge.status, tooLarge.text.slice(0, 200)).to.equal(413);
    expect(tooLarge.body.error).to.equal('invalid_request');
    expect(tooLarge.body.error_description).to.match(/over the limit of 1048576 bytes/);
    for (const res of [undecodable, tooLarge]) {
      expect(Object.keys(res.body).sort()).to.deep.equal(['code', 'error', 'error_description', 'hint']);
      expect(res.body.code).to.equal('invalid_request');
    }
  });

  it('answers two client authentication methods in one request with 400 invalid_request, issuing no token (RFC 6749 2.3)', async () => {
    const person = await signUp(svc.url);
    const agentId = await createAgent(svc.url, asPerson(person));
    const agentKey = await createAgentKey(svc.url, asPerson(person), agentId);
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: oauthClient.client_id, client_secret: oauthClient.client_secret }).toString();
    const cases: Array<[string, HttpResult<TokenBody & OAuthErrorBody>]> = [
      ['Basic and x-api-key', await token('grant_type=client_credentials', { authorization: basic(oauthClient.client_id, oauthClient.client_secret), 'x-api-key': agentKey.key })],
      ['Basic and a body secret', await token(form, { authorization: basic(oauthClient.client_id, oauthClient.client_secret) })],
      ['a body secret and x-api-key', await token(form, { 'x-api-key': agentKey.key })],
      ['x-api-key and Authorization: Bearer', await token('grant_type=client_credentials', { 'x-api-key': agentKey.key, authorization: `Bearer ${agentKey.key}` })],
      ['a body secret and Authorization: Bearer', await token(form, { authorization: `Bearer ${agentKey.key}` })],
    ];
    for (const [what, res] of cases) {
      expect(res.status, what).to.equal(400);
      expect(res.body.error, what).to.equal('invalid_request');
      expect(res.body.error_description, what).to.match(/^Use one client authentication method, not /);
      expect(res.text, what).not.to.match(/access_token/);
    }
  });

  it('takes an agent key or client secret as Authorization: Bearer, as every other route does, and refuses an access token there with 401 invalid_client', async () => {
    const person = await signUp(svc.url);
    const agentId = await createAgent(svc.url, asPerson(person));
    const agentKey = await createAgentKey(svc.url, asPerson(person), agentId);
    const byKey = await token('grant_type=client_credentials', { authorization: `Bearer ${agentKey.key}` });
    expectToken(byKey);
    const bySecret = await token(`grant_type=client_credentials&client_id=${oauthClient.client_id}`, { authorization: `Bearer ${oauthClient.client_secret}` });
    expectToken(bySecret);
    const byToken = await token('grant_type=client_credentials', { authorization: `Bearer ${byKey.body.access_token}` });
    expect(byToken.status, byToken.text).to.equal(401);
    expect(byToken.body).to.deep.include({ error: 'invalid_client', error_description: 'A token (an access token or a person token) cannot be exchanged for an access token: send the client secret (HTTP Basic, or client_secret in the body) or the agent key (x-api-key).' });
    // RFC 6749 §5.2: the challenge of the scheme the client used.
    expect(byToken.headers.get('www-authenticate')).to.match(/^Bearer /);
    expect(byToken.text).not.to.match(/access_token/);
    const unknown = await token('grant_type=client_credentials', { authorization: `Bearer pcs_agt_${'x'.repeat(32)}` });
    expect(unknown.status, unknown.text).to.equal(401);
    expect(unknown.body.error).to.equal('invalid_client');
    expect(unknown.headers.get('www-authenticate')).to.match(/^Bearer /);
  });

  it('answers a client_id that names another client than the credential with an error, issuing no token', async () => {
    const other = await api.post<ClientBody>('/api/oauth/register', { client_name: 'third-framework' });
    const person = await signUp(svc.url);
    const agentId = await createAgent(svc.url, asPerson(person));
    const agentKey = await createAgentKey(svc.url, asPerson(person), agentId);
    const withKey = await token(`grant_type=client_credentials&client_id=${other.body.client_id}`, { 'x-api-key': agentKey.key });
    expect(withKey.status, withKey.text).to.equal(401);
    expect(withKey.body.error).to.equal('invalid_client');
    const withBasic = await token(`grant_type=client_credentials&client_id=${other.body.client_id}`, { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(withBasic.status, withBasic.text).to.equal(400);
    expect(withBasic.body.error).to.equal('invalid_request');
    expect(withBasic.body.error_description).to.match(/client_id/);
    // The client's own id beside its secret sent as a key is fine.
    expectToken(await token(`grant_type=client_credentials&client_id=${oauthClient.client_id}`, { 'x-api-key': oauthClient.client_secret }));
  });

  it('answers a scope beyond the key with 400 invalid_scope', async () => {
    const res = await token('grant_type=client_credentials&scope=price:compute%20billing:read', { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('invalid_scope');
    expect(res.body.error_description).to.match(/billing:read/);
    const ok = await token('grant_type=client_credentials&scope=price:compute', { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expectToken(ok);
    // A scope named twice is granted once.
    const twice = await token('grant_type=client_credentials&scope=price:compute%20price:compute', { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(twice.status, JSON.stringify(twice.body)).to.equal(200);
    expect(twice.body.scope).to.equal('price:compute');
  });

  it('answers a key holding only permissions a token never carries (workspace:claim) with 400 invalid_scope, not a token that can do nothing', async () => {
    const person = await signUp(svc.url);
    const agentId = await createAgent(svc.url, asPerson(person));
    const claimOnly = await createAgentKey(svc.url, asPerson(person), agentId, { scopes: ['workspace:claim'] });
    const res = await token('grant_type=client_credentials', { 'x-api-key': claimOnly.key });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.equal('invalid_scope');
    expect(res.body.error_description).to.equal(
      "The key's scopes (workspace:claim) are permissions a token never carries (workspace:claim, team:admin): a token of it could do nothing. Send the key itself in x-api-key instead.",
    );
    expect(res.body.hint).to.match(/^Send this key itself in x-api-key where its permission is needed/);
    // A scope of spaces only asks for nothing in particular: all the key grants.
    const spaces = await token('grant_type=client_credentials&scope=%20%20', { authorization: basic(oauthClient.client_id, oauthClient.client_secret) });
    expect(spaces.status, spaces.text).to.equal(200);
    expect(spaces.body.scope).to.equal('price:compute');
  });

  it('does not exchange a person key (tokens come from agent and client keys only)', async () => {
    const person = await signUp(svc.url);
    const key = await createKey(svc.url, asPerson(person));
    const res = await token('grant_type=client_credentials', { 'x-api-key': key.key });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('unauthorized_client');
  });

  it('lets the access token work as Authorization: Bearer on GET /api/me', async () => {
    const sandbox = await register(svc.url);
    const res = await token('grant_type=client_credentials', { 'x-api-key': sandbox.api_key.key });
    expectToken(res);
    const me = await api.get<MeBody>('/api/me', { authorization: `Bearer ${res.body.access_token}` });
    expect(me.status).to.equal(200);
    expect(me.body.auth_method).to.equal('access_token');
    expect(me.body.tenant_id).to.equal(sandbox.workspace.id);
    expect(me.body.scopes).to.deep.equal(['price:compute']);
  });

  it('pairs the client_id with the new secret after the client secret rotates; the old secret stops', async () => {
    const reg = await api.post<ClientBody>('/api/oauth/register', { client_name: 'rotating-framework' });
    const rotated = await api.post<{ api_key: { key: string } }>('/api/api-keys/rotate', {}, { 'x-api-key': reg.body.client_secret });
    expect(rotated.status, rotated.text).to.equal(201);
    expect(rotated.body.api_key.key).to.match(/^pcs_oac_/);
    expectToken(await token('grant_type=client_credentials', { authorization: basic(reg.body.client_id, rotated.body.api_key.key) }));
    const old = await token('grant_type=client_credentials', { authorization: basic(reg.body.client_id, reg.body.client_secret) });
    expect(old.status).to.equal(401);
    expect(old.body.error).to.equal('invalid_client');
  });

  it('tells the holder of a secret that matched a revoked key why it stopped, with the advice that fits (rotated: the new secret; claimed: ask the new owner), and a wrong secret nothing', async () => {
    const rotating = await api.post<ClientBody>('/api/oauth/register', { client_name: 'rotated-framework' });
    expect((await api.post('/api/api-keys/rotate', {}, { 'x-api-key': rotating.body.client_secret })).status).to.equal(201);
    const rotated = await token('grant_type=client_credentials', { authorization: basic(rotating.body.client_id, rotating.body.client_secret) });
    expect([rotated.status, rotated.body.error, rotated.body.code]).to.deep.equal([401, 'invalid_client', 'invalid_client']);
    expect(rotated.body.error_description).to.equal('This client secret has been revoked: it was rotated.');
    expect(rotated.body.hint).to.equal(
      "Use the new key that POST /api/api-keys/rotate returned; a rotated key stops working at once. For an OAuth client that new key is the client's secret now; its client_id stays.",
    );
    expect(rotated.headers.get('www-authenticate')).to.match(/^Basic/);

    const claimed = await api.post<ClientBody>('/api/oauth/register', { client_name: 'claimed-framework' });
    const owner = await signUp(svc.url);
    const claim = await api.post(new URL(claimed.body.claim.url).pathname, {}, asPerson(owner));
    expect(claim.status, claim.text).to.equal(200);
    const afterClaim = await token(new URLSearchParams({ grant_type: 'client_credentials', client_id: claimed.body.client_id, client_secret: claimed.body.client_secret }).toString());
    expect([afterClaim.status, afterClaim.body.error]).to.deep.equal([401, 'invalid_client']);
    expect(afterClaim.body.error_description).to.match(/^This client secret has been revoked: its sandbox workspace was claimed/);
    expect(afterClaim.body.hint).to.match(/^The claimed workspace is now managed by its new owner: ask its owner or an admin for a key/);

    // A secret that matches no key hears the bare answer, whatever the client_id it names.
    const wrong = await token('grant_type=client_credentials', { authorization: basic(rotating.body.client_id, unknownKey('oac')) });
    expect([wrong.status, wrong.body.error, wrong.body.error_description]).to.deep.equal([401, 'invalid_client', 'Client authentication failed.']);
    expect(wrong.body.hint).to.equal(
      'Send the client_secret POST /api/oauth/register answered (or the one its rotation answered), or an agent key, exactly as it was given; a client whose secret is lost registers anew.',
    );
  });

  it('publishes RFC 8414 authorization server metadata at /.well-known/oauth-authorization-server', async () => {
    const res = await api.get<{
      issuer: string;
      token_endpoint: string;
      registration_endpoint: string;
      grant_types_supported: string[];
      token_endpoint_auth_methods_supported: string[];
      response_types_supported: string[];
    }>('/.well-known/oauth-authorization-server');
    expect(res.status).to.equal(200);
    expect(res.body.issuer).to.equal(svc.publicUrl());
    expect(res.body.token_endpoint).to.equal(`${svc.publicUrl()}/api/oauth/token`);
    expect(res.body.registration_endpoint).to.equal(`${svc.publicUrl()}/api/oauth/register`);
    expect(res.body.grant_types_supported).to.deep.equal(['client_credentials']);
    expect(res.body.token_endpoint_auth_methods_supported).to.include.members(['client_secret_basic', 'client_secret_post']);
    expect(res.body.response_types_supported).to.deep.equal([]);
  });
});

describe('OAuth token endpoint brute-force guard', () => {
  it('slows down an address that keeps sending wrong client secrets', async () => {
    const svc = await startTestService({ config: { limits: { rateLimit: { failedAuthPerAddressPer15Min: 2 } } } });
    try {
      const send = () =>
        fetch(`${svc.url}/api/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('oac_x:pcs_oac_wrongwrongwrongwrongwrongwrongwrong').toString('base64')}` },
          body: 'grant_type=client_credentials',
        });
      expect((await send()).status).to.equal(401);
      expect((await send()).status).to.equal(401);
      const third = await send();
      expect(third.status).to.equal(429);
      const body = (await third.json()) as Record<string, unknown>;
      expect(body.code).to.equal('rate_limited');
      expect(body.retry_after).to.equal(Number(third.headers.get('retry-after')));
    } finally {
      await svc.close();
    }
  });
});

describe('OAuth metadata of a service whose PUBLIC_URL has a path', () => {
  it('serves the metadata also where RFC 8414 and RFC 9728 clients look for an issuer or resource with that path', async () => {
    const svc = await startTestService({ config: { server: { publicUrl: 'https://pricing.example.com/base/' } } });
    try {
      const get = async (path: string) => {
        const res = await fetch(`${svc.url}${path}`);
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      for (const path of ['/.well-known/oauth-authorization-server/base', '/.well-known/oauth-authorization-server']) {
        const res = await get(path);
        expect(res.status, path).to.equal(200);
        expect(res.body, path).to.include({ issuer: 'https://pricing.example.com/base', token_endpoint: 'https://pricing.example.com/base/api/oauth/token' });
      }
      for (const [path, resource] of [
        ['/.well-known/oauth-protected-resource/base/api/mcp/rpc', 'https://pricing.example.com/base/api/mcp/rpc'],
        ['/.well-known/oauth-protected-resource/base', 'https://pricing.example.com/base'],
        ['/.well-known/oauth-protected-resource/api/mcp/rpc', 'https://pricing.example.com/base/api/mcp/rpc'],
      ] as const) {
        const res = await get(path);
        expect(res.status, path).to.equal(200);
        expect(res.body, path).to.include({ resource });
        expect(res.body.authorization_servers, path).to.deep.equal(['https://pricing.example.com/base']);
      }
    } finally {
      await svc.close();
    }
  });
});
