import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, signUp } from '../../support/world';

/**
 * Two instances on one database and one real Redis: a rate limit, a revoked key and a rotation
 * hold on both. Needs REDIS_URL (CI always sets it).
 */
describe('identity across two instances sharing PostgreSQL and Redis', function () {
  this.timeout(60_000);
  let one: TestService;
  let two: TestService;

  before(async function () {
    const redis = process.env.REDIS_URL;
    if (!redis) {
      if (process.env.CI) throw new Error('REDIS_URL must be set in CI');
      this.skip();
    }
    const config = { redis: { url: redis, keyPrefix: `pcs-two-${Date.now()}:` }, limits: { rateLimit: { perWorkspacePerMinute: 10, perAddressPerMinute: 10_000 } } };
    one = await startTestService({ config });
    two = await startTestService({ config, databaseUrl: one.databaseUrl });
  });
  after(async () => {
    await two?.close();
    await one?.close();
  });

  it('enforces one per-workspace rate limit across both instances', async () => {
    const reg = await client(one.url).post<Record<string, any>>('/api/agents/register', { name: 'limited-agent' });
    const key = reg.body.api_key.key as string;
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const target = i % 2 === 0 ? one : two;
      const res = await client(target.url).get('/api/me', { 'x-api-key': key });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.body.code).to.equal('rate_limited');
        expect(res.body.retry_after).to.equal(Number(res.headers.get('retry-after')));
        expect(res.body.limit).to.deep.include({ scope: 'workspace', requests_per_minute: 10 });
      }
    }
    expect(statuses.filter((s) => s === 200)).to.have.length(10);
    expect(statuses.slice(10)).to.deep.equal([429, 429]);
  });

  it('stops a revoked key on the other instance at once, although it had it cached', async () => {
    const person = await signUp(one, 'revoker');
    const { key, id } = await createKey(one, person, { name: 'to revoke' });
    expect((await client(two.url).get('/api/me', { 'x-api-key': key })).status).to.equal(200); // now cached on two
    const del = await client(one.url).delete(`/api/api-keys/${id}`, { cookie: person.cookie });
    expect(del.status).to.equal(200);
    const after = await client(two.url).get('/api/me', { 'x-api-key': key });
    expect(after.status).to.equal(401);
    expect(after.body.code).to.equal('invalid_credentials');
  });

  it('makes a rotation hold on both instances: new key works, old key stops', async () => {
    const reg = await client(one.url).post<Record<string, any>>('/api/agents/register', { name: 'rotating-agent' });
    const oldKey = reg.body.api_key.key as string;
    expect((await client(one.url).get('/api/me', { 'x-api-key': oldKey })).status).to.equal(200);
    expect((await client(two.url).get('/api/me', { 'x-api-key': oldKey })).status).to.equal(200);
    const rotated = await client(two.url).post<Record<string, any>>('/api/api-keys/rotate', {}, { 'x-api-key': oldKey });
    expect(rotated.status).to.equal(201);
    const newKey = rotated.body.api_key.key as string;
    for (const svc of [one, two]) {
      expect((await client(svc.url).get('/api/me', { 'x-api-key': oldKey })).status).to.equal(401);
      const me = await client(svc.url).get('/api/me', { 'x-api-key': newKey });
      expect(me.status).to.equal(200);
      expect(me.body.tenant_id).to.equal(reg.body.workspace.id);
    }
  });
});
