import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../../support/db';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { tcpProxy } from '../../support/tcp-proxy';
import type { TcpProxy } from '../../support/tcp-proxy';
import { createKey, signUp } from '../../support/world';
import type { Person } from '../../support/world';

type Body = Record<string, any>;
type Api = ReturnType<typeof client>;

let seq = 0;
const unique = (label: string) => `idem-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

/**
 * Idempotency-Key on the create routes (API keys, functions, routing policies): a repeat answers what
 * the first request created and creates nothing; another body under the same key is refused; the key
 * row commits with the resource, so a request that created nothing leaves the key free.
 */
describe('identity: Idempotency-Key on create routes', function () {
  this.timeout(60_000);
  let svc: TestService;
  let person: Person;
  let api: Api;

  before(async () => {
    svc = await startTestService();
    person = await signUp(svc, 'idempotent');
    api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'full' })).key });
  });
  after(() => svc.close());

  const policyBody = (name: string) => ({ name, strategy: 'cheapest', config: { candidates: ['cost-plus', 'charm-pricing'] } });
  const countPolicies = async (name: string) => {
    const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n FROM routing_policies WHERE name = $1', { bind: [name] });
    return (rows as Array<{ n: number }>)[0]?.n;
  };
  const keyRows = async (key: string) => {
    const [rows] = await svc.sequelize.query('SELECT resource_id FROM idempotency_keys WHERE key = $1', { bind: [key] });
    return rows as Array<{ resource_id: string }>;
  };

  it('answers a repeated policy creation with what the first created (201, Idempotent-Replayed), creating nothing more', async () => {
    const key = randomUUID();
    const body = policyBody(unique('policy'));
    const first = await api.post<Body>('/api/routing-policies', body, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(201);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    const again = await api.post<Body>('/api/routing-policies', { ...body, config: { candidates: ['cost-plus', 'charm-pricing'] } }, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.policy.id).to.equal(first.body.policy.id);
    expect(again.body.policy).to.deep.equal(first.body.policy);
    expect(await countPolicies(body.name)).to.equal(1);
    // Without the header every request creates.
    const plain = await api.post<Body>('/api/routing-policies', { ...body, name: unique('plain') });
    expect(plain.status).to.equal(201);
    expect(plain.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('refuses the same key with another body with 422 idempotency_key_reused naming what it created, and creates nothing', async () => {
    const key = randomUUID();
    const first = await api.post<Body>('/api/routing-policies', policyBody(unique('first')), { 'idempotency-key': key });
    expect(first.status).to.equal(201);
    const otherName = unique('other');
    const reused = await api.post<Body>('/api/routing-policies', policyBody(otherName), { 'idempotency-key': key });
    expect(reused.status, reused.text).to.equal(422);
    expect(reused.body).to.include({ code: 'idempotency_key_reused', resource_id: first.body.policy.id });
    expect(reused.body.hint).to.match(/new key/);
    expect(await countPolicies(otherName)).to.equal(0);
  });

  it('creates exactly one policy for 20 concurrent requests with one key; every answer names it', async () => {
    const key = randomUUID();
    const body = policyBody(unique('burst'));
    const answers = await Promise.all(Array.from({ length: 20 }, () => api.post<Body>('/api/routing-policies', body, { 'idempotency-key': key })));
    for (const a of answers) expect(a.status, a.text).to.equal(201);
    const ids = new Set(answers.map((a) => a.body.policy.id as string));
    expect(ids.size).to.equal(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).to.have.length(19);
    expect(await countPolicies(body.name)).to.equal(1);
  });

  it('keeps keys apart by route and by workspace', async () => {
    const key = randomUUID();
    const policy = await api.post<Body>('/api/routing-policies', policyBody(unique('route')), { 'idempotency-key': key });
    expect(policy.status).to.equal(201);
    const fn = await api.post<Body>('/api/functions', { name: unique('route-fn'), execution_type: 'pipeline', cost_per_unit: '0.001' }, { 'idempotency-key': key });
    expect(fn.status, fn.text).to.equal(201);
    expect(fn.headers.get('idempotent-replayed')).to.equal(null);
    const other = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'idem-other'), { name: 'o' })).key });
    const theirs = await other.post<Body>('/api/routing-policies', policyBody(unique('theirs')), { 'idempotency-key': key });
    expect(theirs.status, theirs.text).to.equal(201);
    expect(theirs.headers.get('idempotent-replayed')).to.equal(null);
    expect(theirs.body.policy.id).to.not.equal(policy.body.policy.id);
  });

  it('replays a function registration as the function is now, instead of a 409 for its own name', async () => {
    const key = randomUUID();
    const body = { name: unique('fn'), execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.002' };
    const first = await api.post<Body>('/api/functions', body, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(201);
    expect(first.body.next[0]).to.include({ action: 'activate' });
    // The same amount written another way is the same request.
    const again = await api.post<Body>('/api/functions', { ...body, cost_per_unit: '0.0020' }, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.function.id).to.equal(first.body.function.id);
    expect((await api.patch(`/api/functions/${first.body.function.id}`, { status: 'active' })).status).to.equal(200);
    const later = await api.post<Body>('/api/functions', body, { 'idempotency-key': key });
    expect(later.body.function).to.include({ id: first.body.function.id, status: 'active' });
    expect(later.body).to.not.have.property('next');
    // Without a key the same body is a name conflict, which names the caller's own function rather than offering another name.
    const again409 = await api.post<Body>('/api/functions', body);
    expect(again409.status).to.equal(409);
    expect(again409.body.function_id).to.equal(first.body.function.id);
    expect(again409.body.hint).to.include(`Your workspace registered this name already, as ${first.body.function.id} (active)`).and.include('Idempotency-Key');
    expect(again409.body).to.not.have.property('example');
  });

  it('leaves the key free when the request created nothing (a name taken: 409), so the key row exists exactly when the resource does', async () => {
    const taken = unique('taken');
    expect((await api.post('/api/functions', { name: taken, execution_type: 'pipeline', cost_per_unit: '0.001' })).status).to.equal(201);
    const key = randomUUID();
    const conflict = await api.post<Body>('/api/functions', { name: taken, execution_type: 'pipeline', cost_per_unit: '0.001' }, { 'idempotency-key': key });
    expect(conflict.status).to.equal(409);
    expect(await keyRows(key)).to.deep.equal([]);
    // A body failing validation is not remembered either: the key then serves a valid request.
    const invalid = await api.post<Body>('/api/routing-policies', { name: unique('invalid'), strategy: 'weighted' }, { 'idempotency-key': key });
    expect(invalid.status).to.equal(400);
    const valid = await api.post<Body>('/api/routing-policies', policyBody(unique('valid')), { 'idempotency-key': key });
    expect(valid.status, valid.text).to.equal(201);
    expect(valid.headers.get('idempotent-replayed')).to.equal(null);
    expect((await keyRows(key)).map((r) => r.resource_id)).to.deep.equal([valid.body.policy.id]);
  });

  it('replays an API key creation without its secret (kept only as a hash), naming the key and how to revoke it', async () => {
    const people = client(svc.url, { cookie: person.cookie });
    const key = randomUUID();
    const body = { name: unique('key'), scopes: ['price:compute'] };
    const first = await people.post<Body>('/api/api-keys', body, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(201);
    expect(first.body.api_key.key).to.match(/^pcs_/);
    expect(first.body.api_key).to.include({ full_access: false });
    expect(first.body.api_key.scopes).to.deep.equal(['price:compute']);
    const unscoped = await people.post<Body>('/api/api-keys', { name: unique('full') });
    expect(unscoped.body.api_key).to.include({ full_access: true });
    expect(unscoped.body.api_key.scopes).to.deep.equal([]);
    const again = await people.post<Body>('/api/api-keys', body, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.api_key).to.include({ id: first.body.api_key.id, key: null, name: body.name });
    expect(again.body.hint).to.include(`DELETE /api/api-keys/${first.body.api_key.id}`);
    expect(again.body.next).to.deep.equal([{ action: 'revoke', method: 'DELETE', path: `/api/api-keys/${first.body.api_key.id}` }]);
    const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n FROM api_keys WHERE name = $1', { bind: [body.name] });
    expect((rows as Array<{ n: number }>)[0]?.n).to.equal(1);
    // The secret still works: the replay did not change it.
    expect((await client(svc.url, { 'x-api-key': first.body.api_key.key }).get('/api/functions')).status).to.equal(200);
  });

  it('sends every answer that carries a new secret with Cache-Control: no-store and Pragma: no-cache (keys, agent keys, sandbox registration, rotation, sign-up and sign-in sessions), and not the others', async () => {
    const people = client(svc.url, { cookie: person.cookie });
    const noStore = (res: { headers: Headers }) => [res.headers.get('cache-control'), res.headers.get('pragma')];
    const key = await people.post<Body>('/api/api-keys', { name: unique('cache') });
    expect(key.status).to.equal(201);
    expect(noStore(key)).to.deep.equal(['no-store', 'no-cache']);
    const agent = await people.post<Body>('/api/agents', { name: unique('agent') });
    expect(agent.status, agent.text).to.equal(201);
    const agentKey = await people.post<Body>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'k' });
    expect(agentKey.status, agentKey.text).to.equal(201);
    expect(agentKey.body.api_key.key).to.match(/^pcs_/);
    expect(noStore(agentKey)).to.deep.equal(['no-store', 'no-cache']);
    const registered = await client(svc.url).post<Body>('/api/agents/register', { name: unique('self') }, { 'x-forwarded-for': '198.51.100.200' });
    expect(registered.status, registered.text).to.equal(201);
    expect(noStore(registered)).to.deep.equal(['no-store', 'no-cache']);
    const rotated = await client(svc.url, { 'x-api-key': registered.body.api_key.key }).post<Body>('/api/api-keys/rotate', {});
    expect(rotated.status, rotated.text).to.equal(201);
    expect(noStore(rotated)).to.deep.equal(['no-store', 'no-cache']);
    // A sign-up's and a sign-in's session (cookie and person token) are secrets too.
    const email = `${unique('cache')}@example.com`;
    const signup = await client(svc.url).post<Body>('/api/auth/signup', { email, password: 'correct horse battery', date_of_birth: '1990-01-01' }, { 'x-forwarded-for': '198.51.100.201' });
    expect(signup.status, signup.text).to.equal(201);
    expect(noStore(signup)).to.deep.equal(['no-store', 'no-cache']);
    const signin = await client(svc.url).post<Body>('/api/auth/signin', { email, password: 'correct horse battery' }, { 'x-forwarded-for': '198.51.100.201' });
    expect(signin.status, signin.text).to.equal(200);
    expect(noStore(signin)).to.deep.equal(['no-store', 'no-cache']);
    const listed = await api.get('/api/functions');
    expect(listed.headers.get('cache-control')).to.equal(null);
  });

  it('answers 409 when what the first request created is gone, and creates nothing', async () => {
    const key = randomUUID();
    const body = policyBody(unique('gone'));
    const first = await api.post<Body>('/api/routing-policies', body, { 'idempotency-key': key });
    expect((await api.delete(`/api/routing-policies/${first.body.policy.id}`)).status).to.be.oneOf([200, 204]);
    const again = await api.post<Body>('/api/routing-policies', body, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(409);
    expect(again.body).to.include({ code: 'conflict', resource_id: first.body.policy.id });
    expect(await countPolicies(body.name)).to.equal(0);
  });

  it('takes a key afresh once it is older than IDEMPOTENCY_KEY_TTL_H', async () => {
    const key = randomUUID();
    const body = policyBody(unique('ttl'));
    const first = await api.post<Body>('/api/routing-policies', body, { 'idempotency-key': key });
    await svc.sequelize.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1`, { bind: [key] });
    const fresh = await api.post<Body>('/api/routing-policies', body, { 'idempotency-key': key });
    expect(fresh.status, fresh.text).to.equal(201);
    expect(fresh.headers.get('idempotent-replayed')).to.equal(null);
    expect(fresh.body.policy.id).to.not.equal(first.body.policy.id);
    expect((await keyRows(key)).map((r) => r.resource_id)).to.deep.equal([fresh.body.policy.id]);
  });

  it('refuses a key of the wrong shape with 400 naming the header', async () => {
    for (const bad of ['x'.repeat(256), 'has space', 'tab\there']) {
      const name = unique('shape');
      const res = await api.post<Body>('/api/routing-policies', policyBody(name), { 'idempotency-key': bad });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues[0].path).to.equal('headers.idempotency-key');
      expect(await countPolicies(name)).to.equal(0);
    }
    expect((await api.post<Body>('/api/routing-policies', policyBody(unique('shape-ok')), { 'idempotency-key': 'x'.repeat(255) })).status).to.equal(201);
  });
});

describe('identity: Idempotency-Key after a COMMIT whose answer was lost', function () {
  this.timeout(60_000);
  let svc: TestService;
  let proxy: TcpProxy;

  before(async () => {
    const url = new URL(await createTestDatabase());
    proxy = await tcpProxy(url.hostname, Number(url.port));
    svc = await startTestService({ databaseUrl: proxy.via(url.toString()), config: { database: { statementTimeoutMs: 500, answerGraceMs: 500 } } });
  });
  after(async () => {
    await svc.close();
    await proxy.close();
  });

  it('a create answered 503 though it committed is answered, on retry with its key, by what it created: one policy, not two', async () => {
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'lost-commit'), { name: 'k' })).key });
    const name = unique('lost');
    const key = randomUUID();
    expect((await api.post('/api/routing-policies', policyOf(unique('warm-up')))).status).to.equal(201);

    proxy.muteRepliesAfter('COMMIT');
    const lost = await api.post<Body>('/api/routing-policies', policyOf(name), { 'idempotency-key': key });
    // The one connection that was waiting (the COMMIT's) is closed by the service itself; the idle ones heard nothing amiss.
    proxy.mode = 'pass';
    expect(lost.status, lost.text).to.equal(503);
    expect(lost.body.code).to.equal('service_unavailable');
    // The caller is not told nothing happened: it is told how to repeat safely.
    expect(lost.body.hint).to.match(/may have been made before the answer was lost/).and.include('Idempotency-Key');

    const [rows] = await svc.sequelize.query('SELECT id FROM routing_policies WHERE name = $1', { bind: [name] });
    expect(rows, 'the COMMIT reached the database and took effect').to.have.length(1);
    const retry = await api.post<Body>('/api/routing-policies', policyOf(name), { 'idempotency-key': key });
    expect(retry.status, retry.text).to.equal(201);
    expect(retry.headers.get('idempotent-replayed')).to.equal('true');
    expect(retry.body.policy.id).to.equal((rows as Array<{ id: string }>)[0]?.id);
    const [after] = await svc.sequelize.query('SELECT count(*)::int AS n FROM routing_policies WHERE name = $1', { bind: [name] });
    expect((after as Array<{ n: number }>)[0]?.n).to.equal(1);
  });
});

function policyOf(name: string): Record<string, unknown> {
  return { name, strategy: 'cheapest', config: { candidates: ['cost-plus', 'charm-pricing'] } };
}

