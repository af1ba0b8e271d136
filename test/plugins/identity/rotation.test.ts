import { expect } from 'chai';
import { client } from '../../support/http';
import { accessToken, asPerson, createAgent, createAgentKey, createKey, expectRetryAfter, identityConfig, register, signUp } from '../../support/identity';
import type { ErrorBody, KeyView, MeBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

interface RotateBody {
  api_key: KeyView & { key: string };
  previous_key: { id: string; status: string };
  rotations_left_today: number;
}

describe('identity: key rotation (POST /api/api-keys/rotate)', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig({ sandbox: { keyRotationsPerDay: 2 } }) });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('tells the holder of a rotated key that it was rotated and to use the new key', async () => {
    const reg = await register(svc.url);
    expect((await api.post('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key })).status).to.equal(201);
    const old = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(old.status).to.equal(401);
    expect(old.body.error).to.equal('This API key has been revoked: it was rotated.');
    expect(old.body.hint).to.match(/^Use the new key that POST \/api\/api-keys\/rotate returned; a rotated key stops working at once\./);
  });

  it('returns a new key that works at once while the old key answers 401 at once', async () => {
    const reg = await register(svc.url);
    const warm = await api.get('/api/me', { 'x-api-key': reg.api_key.key });
    expect(warm.status).to.equal(200);
    const res = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.api_key.key).to.match(/^pcs_sbx_/).and.not.equal(reg.api_key.key);
    expect(res.body.previous_key).to.deep.equal({ id: reg.api_key.id, status: 'revoked' });
    const fresh = await api.get('/api/me', { 'x-api-key': res.body.api_key.key });
    expect(fresh.status).to.equal(200);
    const old = await api.get<ErrorBody>('/api/me', { 'x-api-key': reg.api_key.key });
    expect(old.status).to.equal(401);
    expect(old.body.code).to.equal('invalid_credentials');
    expect(old.body.retryable).to.equal(false);
    expect(old.headers.get('www-authenticate')).to.match(/^Bearer/);
  });

  it('keeps the workspace, scopes, agent and expiry of the old key', async () => {
    const reg = await register(svc.url);
    const before = await api.get<MeBody>('/api/me', { 'x-api-key': reg.api_key.key });
    const res = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key });
    expect(res.status).to.equal(201);
    const k = res.body.api_key;
    expect(k.scopes).to.deep.equal(reg.api_key.scopes);
    expect(k.agent_id).to.equal(reg.agent.id);
    expect(k.expires_at).to.equal(reg.api_key.expires_at);
    expect(k.kind).to.equal('sandbox');
    const after = await api.get<MeBody>('/api/me', { 'x-api-key': k.key });
    expect(after.body.tenant_id).to.equal(before.body.tenant_id);
    expect(after.body.scopes).to.deep.equal(before.body.scopes);
    expect(after.body.agent?.id).to.equal(reg.agent.id);
    expect(after.body.key?.expires_at).to.equal(before.body.key?.expires_at);
  });

  it('rotates an agent key a person minted, keeping its agent and scopes', async () => {
    const person = await signUp(svc.url);
    const agentId = await createAgent(svc.url, asPerson(person));
    const key = await createAgentKey(svc.url, asPerson(person), agentId, { scopes: ['price:compute', 'billing:read'] });
    const res = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': key.key });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.api_key.agent_id).to.equal(agentId);
    expect(res.body.api_key.scopes).to.deep.equal(['price:compute', 'billing:read']);
    expect((await api.get('/api/me', { 'x-api-key': key.key })).status).to.equal(401);
  });

  it('refuses a person key: people replace keys by creating and deleting them', async () => {
    const person = await signUp(svc.url);
    const key = await createKey(svc.url, asPerson(person));
    const res = await api.post<ErrorBody>('/api/api-keys/rotate', {}, { 'x-api-key': key.key });
    expect(res.status).to.equal(403);
    expect(res.body.hint).to.match(/POST \/api\/api-keys/);
    expect((await api.get('/api/me', { 'x-api-key': key.key })).status).to.equal(200);
  });

  it('refuses rotations over the daily limit with 429 daily_quota_exceeded and retry_after equal to Retry-After', async () => {
    const reg = await register(svc.url);
    let key = reg.api_key.key;
    for (let i = 0; i < 2; i++) {
      const res = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': key });
      expect(res.status, res.text).to.equal(201);
      expect(res.body.rotations_left_today).to.equal(1 - i);
      key = res.body.api_key.key;
    }
    const res = await api.post<ErrorBody>('/api/api-keys/rotate', {}, { 'x-api-key': key });
    expectRetryAfter(res);
    expect(res.body.code).to.equal('daily_quota_exceeded');
    expect(res.body.error).to.match(/daily/i);
    expect(res.body.limit).to.deep.equal({ key_rotations_per_day: 2 });
    const stillWorks = await api.get('/api/me', { 'x-api-key': key });
    expect(stillWorks.status, 'the refused rotation leaves the current key working').to.equal(200);
  });

  it("counts each agent's rotations apart: one agent's day of rotations leaves another agent's leaked key rotatable, and its refusal says how a person replaces it", async () => {
    const person = await signUp(svc.url);
    const busy = await createAgent(svc.url, asPerson(person));
    const leaked = await createAgentKey(svc.url, asPerson(person), await createAgent(svc.url, asPerson(person)));
    let key = (await createAgentKey(svc.url, asPerson(person), busy)).key;
    for (let i = 0; i < 2; i++) {
      const res = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': key });
      expect(res.status, res.text).to.equal(201);
      key = res.body.api_key.key;
    }
    const refused = await api.post<ErrorBody>('/api/api-keys/rotate', {}, { 'x-api-key': key });
    expect(refused.status, refused.text).to.equal(429);
    expect(refused.body.error).to.equal('Daily key rotation quota reached (2 per day for this agent).');
    const me = await api.get<MeBody>('/api/me', { 'x-api-key': key });
    expect(refused.body.hint).to.include(`DELETE /api/api-keys/${me.body.key?.id ?? ''}`).and.include(`POST /api/agents/${busy}/keys`);
    const other = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': leaked.key });
    expect(other.status, other.text).to.equal(201);
    expect(other.body.rotations_left_today).to.equal(1);
  });

  it('counts only the rotations that made a key: rotations at once with one key (one made, the rest 401 or 429) leave the rest of the day\'s rotations', async () => {
    const reg = await register(svc.url);
    const results = await Promise.all(Array.from({ length: 4 }, () => api.post<RotateBody & ErrorBody>('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key })));
    const made = results.filter((r) => r.status === 201);
    expect(made, results.map((r) => r.text).join('\n')).to.have.length(1);
    for (const r of results.filter((x) => x.status !== 201)) {
      expect([401, 429], r.text).to.include(r.status);
      // A rotation that lost the race is told, as authentication tells a rotated key, to use the new key.
      if (r.status === 401) {
        expect(r.body, r.text).to.deep.include({ code: 'invalid_credentials', error: 'This API key has been revoked: it was rotated.', retryable: false });
        expect(r.headers.get('www-authenticate')).to.match(/error="invalid_token"/);
      }
    }
    const next = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': made[0]?.body.api_key.key ?? '' });
    expect(next.status, `the day's second rotation: ${next.text}`).to.equal(201);
    expect(next.body.rotations_left_today).to.equal(0);
  });

  it("keeps a day's rotation count across a restart without Redis: a new instance counts the rotations the day recorded", async () => {
    const reg = await register(svc.url);
    const first = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key });
    expect(first.status, first.text).to.equal(201);
    // A second instance on the same database with its own in-process store: what a restart leaves.
    const restarted = await startTestService({ config: identityConfig({ sandbox: { keyRotationsPerDay: 2 } }), databaseUrl: svc.databaseUrl });
    try {
      const again = client(restarted.url);
      const second = await again.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': first.body.api_key.key });
      expect(second.status, second.text).to.equal(201);
      expect(second.body.rotations_left_today).to.equal(0);
      const third = await again.post<ErrorBody>('/api/api-keys/rotate', {}, { 'x-api-key': second.body.api_key.key });
      expect(third.status, third.text).to.equal(429);
      expect(third.body.code).to.equal('daily_quota_exceeded');
    } finally {
      await restarted.close();
    }
  });

  it('stops access tokens minted from the old key, telling their holder to get a new token with the new key', async () => {
    const reg = await register(svc.url);
    const token = await accessToken(svc.url, reg.api_key.key);
    const ok = await api.get<MeBody>('/api/me', { authorization: `Bearer ${token}` });
    expect(ok.status).to.equal(200);
    expect(ok.body.auth_method).to.equal('access_token');
    const res = await api.post<RotateBody>('/api/api-keys/rotate', {}, { 'x-api-key': reg.api_key.key });
    expect(res.status).to.equal(201);
    const after = await api.get<ErrorBody>('/api/me', { authorization: `Bearer ${token}` });
    expect(after.status).to.equal(401);
    expect(after.body.code).to.equal('invalid_credentials');
    expect(after.body.error).to.equal('The key behind this access token has been revoked: it was rotated.');
    expect(after.body.hint).to.match(
      /^Use the new key that POST \/api\/api-keys\/rotate returned; a rotated key stops working at once; then get a new access token at POST \/api\/oauth\/token with it \(a rotated client secret is the new key; the client_id stays\)\./,
    );
    const fresh = await accessToken(svc.url, res.body.api_key.key);
    expect((await api.get('/api/me', { authorization: `Bearer ${fresh}` })).status).to.equal(200);
  });

  it('needs the key itself: an agent access token is refused with 403 agent_cannot_manage_keys, and nothing rotates', async () => {
    const reg = await register(svc.url);
    const token = await accessToken(svc.url, reg.api_key.key);
    const res = await api.post<ErrorBody>('/api/api-keys/rotate', {}, { authorization: `Bearer ${token}` });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('agent_cannot_manage_keys');
    expect(res.body.hint).to.match(/x-api-key/);
    expect(res.headers.get('www-authenticate')).to.equal(null);
    expect((await api.get('/api/me', { 'x-api-key': reg.api_key.key })).status).to.equal(200);
  });
});
