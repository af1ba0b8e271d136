import { expect } from 'chai';
import { client } from '../support/http';
import { redisProxy, requireRedisServer, startTestRedis } from '../support/redis';
import type { TestRedis } from '../support/redis';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { createKey, signUp } from '../support/world';

type Body = Record<string, any>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` until `done` holds or `ms` passed; the last answer either way. */
async function within<T>(ms: number, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const until = Date.now() + ms;
  let v = await read();
  while (!done(v) && Date.now() < until) {
    await sleep(100);
    v = await read();
  }
  return v;
}

/**
 * Two instances on one database and one Redis. Instance B loses its Redis connections (a restart, a
 * network drop) while A revokes a key and deactivates a function: the invalidations A publishes then
 * never reach B. Once B is subscribed again it must not go on trusting what it cached before.
 */
describe('key-value subscriptions: what an instance cached is dropped when it may have missed invalidations', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let proxy: Awaited<ReturnType<typeof redisProxy>>;
  let a: TestService;
  let b: TestService;

  before(async function () {
    requireRedisServer(this);
    redis = await startTestRedis();
    proxy = await redisProxy(redis.url);
    // Caches that would outlive the test by far if nothing but their TTL ended them.
    const env = { KEY_CACHE_TTL_MS: '600000', REDIS_COMMAND_TIMEOUT_MS: '300' };
    a = await startTestService({ env: { ...env, REDIS_URL: redis.url } });
    b = await startTestService({ databaseUrl: a.databaseUrl, env: { ...env, REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await proxy?.close();
    await redis?.close();
  });

  it('a key revoked and a function deactivated on one instance while the other was cut off from Redis are refused there once it is back', async () => {
    const owner = await signUp(a, 'gap-owner');
    const doomed = await createKey(a, owner, { name: 'doomed' });
    const kept = await createKey(a, owner, { name: 'kept' });
    const made = await client(a.url, { 'x-api-key': kept.key }).post<Body>('/api/functions', { name: `gap-fn-${Date.now()}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.001' });
    expect(made.status, made.text).to.equal(201);
    const fnId = made.body.function.id as string;
    expect((await client(a.url, { 'x-api-key': kept.key }).patch(`/api/functions/${fnId}`, { status: 'active' })).status).to.equal(200);

    // B has both cached: the key verified, the function active.
    expect((await client(b.url, { 'x-api-key': doomed.key }).get('/api/me')).status).to.equal(200);
    const seen = await within(5000, () => client(b.url, { 'x-api-key': kept.key }).get<Body>(`/api/functions/${fnId}`), (r) => r.body.function?.status === 'active');
    expect(seen.body.function.status).to.equal('active');

    await proxy.refuse();
    try {
      expect((await client(a.url).delete(`/api/api-keys/${doomed.id}`, { cookie: owner.cookie })).status).to.equal(200);
      expect((await client(a.url, { 'x-api-key': kept.key }).patch(`/api/functions/${fnId}`, { status: 'inactive' })).status).to.equal(200);
      await sleep(300);
    } finally {
      await proxy.accept();
    }

    const me = await within(8000, () => client(b.url, { 'x-api-key': doomed.key }).get('/api/me'), (r) => r.status === 401);
    expect(me.status, `B still accepts the revoked key: ${me.text}`).to.equal(401);
    const fn = await within(8000, () => client(b.url, { 'x-api-key': kept.key }).get<Body>(`/api/functions/${fnId}`), (r) => r.body.function?.status === 'inactive');
    expect(fn.body.function?.status, `B still routes to the deactivated function: ${fn.text}`).to.equal('inactive');
  });
});
