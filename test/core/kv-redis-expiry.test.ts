import { expect } from 'chai';
import { Redis } from 'ioredis';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { client } from '../support/http';
import { requireRedisServer, startTestRedis } from '../support/redis';
import type { TestRedis } from '../support/redis';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { buildWorld } from '../support/world';
import type { World } from '../support/world';

type Body = Record<string, any>;

const DAY_MS = 86_400_000;
/** The longest lifetime any key is given: a round-robin policy's turn counter (engine/routing/router.ts). */
const LONGEST_TTL_MS = 7 * DAY_MS;

/**
 * Redis is shared by every instance and outlives them: a key the service writes without an expiry
 * stays until someone deletes it by hand, so anything keyed by caller, address, day or policy would
 * grow without end. On a Redis of the test's own (nothing else writes to it), every flow that touches
 * the key-value store is walked, then every key in it must carry an expiry no longer than the
 * longest documented lifetime.
 */
describe('Redis: every key the service writes expires', function () {
  this.timeout(120_000);
  let redis: TestRedis;
  let svc: TestService;
  let world: World;
  let reader: Redis;

  before(async function () {
    requireRedisServer(this);
    redis = await startTestRedis();
    svc = await startTestService({ env: { REDIS_URL: redis.url } });
    reader = new Redis({ path: redis.url, lazyConnect: true });
    await reader.connect();
    world = await buildWorld(svc);
  });
  after(async () => {
    reader?.disconnect();
    await svc?.close();
    await redis?.close();
  });

  async function keysAndLifetimes(): Promise<Array<{ key: string; pttl: number }>> {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await reader.scan(cursor, 'COUNT', 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    return Promise.all(keys.map(async (key) => ({ key, pttl: await reader.pttl(key) })));
  }

  /** A key's kind, with the ids, days and addresses in it blanked, so a failure names the code path. */
  const shape = (key: string) => key.replace(/[A-Za-z0-9_-]{20,}|[0-9a-f]{8,}|[A-Za-z]+_[A-Za-z0-9]{10,}|\d{4}-\d{2}-\d{2}|\d+(\.\d+){3}|::1|\d{6,}/g, '…');

  it('after sign-ups, sign-ins, keys, sandboxes, tokens, computes, policies, demo calls, verification, observations, rotations, wallet sign-in and refusals', async () => {
    const person = client(svc.url, { 'x-api-key': world.a.key });
    const sandbox = client(svc.url, { 'x-api-key': world.sandbox.key });
    const anyone = client(svc.url);
    const context = { product_type: 'expiry-tea', currency: 'USD', unit_cost: 1.2, target_margin: 0.5, current_price: 4 };

    // Computes: a person's (result cache), a sandbox's (daily allowance), one under an Idempotency-Key, a batch, the router.
    expect((await person.post('/api/compute/price', { context })).status).to.equal(200);
    expect((await person.post('/api/compute/price', { context })).status).to.equal(200);
    expect((await sandbox.post('/api/compute/price', { context })).status).to.equal(200);
    expect((await person.post('/api/compute/price', { context: { ...context, unit_cost: 2 } }, { 'idempotency-key': 'expiry-retry-1' })).status).to.equal(200);
    expect((await person.post('/api/compute/price', { context: { ...context, unit_cost: 2 } }, { 'idempotency-key': 'expiry-retry-1' })).status).to.equal(200);
    expect((await person.post('/api/compute/batch', { items: [{ context }, { context: { ...context, unit_cost: 3 } }] })).status).to.equal(200);
    expect((await person.post('/api/price-router', { context, function_name: 'cost-plus' })).status).to.equal(200);
    // A round-robin default policy: its turn counter.
    const policy = await person.post<Body>('/api/routing-policies', { name: 'turns', is_default: true, strategy: 'round_robin', config: { candidates: ['cost-plus', 'anchored-adjustment'] } });
    expect(policy.status, policy.text).to.equal(201);
    expect((await person.post('/api/compute/price', { context: { ...context, unit_cost: 4 } })).status).to.equal(200);
    // The keyless demo (hourly budget per address), verification and observations (daily count).
    expect((await anyone.post('/api/public/compute/demo', { context })).status).to.equal(200);
    expect((await person.post('/api/price-router/verify', { context, proposed_price: '4.50' })).status).to.equal(200);
    const observed = await person.post('/api/data/observations', { observations: [{ product_type: 'expiry-tea', currency: 'USD', amount: '4.20', observed_at: new Date(Date.now() - 3_600_000).toISOString(), source: 'shelf-scan' }] });
    expect(observed.status, observed.text).to.equal(201);
    // Key rotation (daily count), a made-up key and a wrong password (failed-authentication counts), a sign-in.
    const rotated = await client(svc.url, { 'x-api-key': world.b.agentKey }).post('/api/api-keys/rotate', {});
    expect(rotated.status, rotated.text).to.equal(201);
    expect((await anyone.post('/api/compute/price', { context }, { 'x-api-key': `${world.a.key.slice(0, -4)}zzzz` })).status).to.equal(401);
    expect((await anyone.post('/api/auth/signin', { email: world.a.owner.email, password: 'not the password' })).status).to.equal(401);
    expect((await anyone.post('/api/auth/signin', { email: world.a.owner.email, password: 'correct horse battery' })).status).to.equal(200);
    // Wallet sign-in: the challenge's nonce and its used mark.
    const wallet = privateKeyToAccount(generatePrivateKey());
    const nonce = await anyone.post<Body>('/api/auth/wallet/nonce', { address: wallet.address });
    expect(nonce.status, nonce.text).to.equal(200);
    const signature = await wallet.signMessage({ message: nonce.body.message as string });
    expect((await anyone.post('/api/auth/wallet/signin', { message: nonce.body.message, signature, date_of_birth: '1990-12-10' })).status).to.equal(201);
    // The public leaderboard (its shared aggregate and refresh lease) and the discovery notices.
    expect((await anyone.get('/api/public/leaderboard')).status).to.equal(200);
    expect((await person.get('/api/me')).status).to.equal(200);

    const found = await keysAndLifetimes();
    const kinds = new Set(found.map((k) => shape(k.key)));
    // The walk reached the store's main users: without them the assertion below would hold vacuously.
    for (const expected of [/rl:ws:/, /rl:ip:/, /authfail:/, /allowance:/, /pcache:/, /demo:/, /rr:/, /siwe-used:/, /obs:day:/, /rot:/, /reg:ip:/, /signup:ip:/, /leaderboard/]) {
      expect([...kinds].some((k) => expected.test(k)), `a key like ${expected} (kinds: ${[...kinds].join(', ')})`).to.equal(true);
    }
    const forever = found.filter((k) => k.pttl === -1).map((k) => shape(k.key));
    expect([...new Set(forever)], 'keys without an expiry').to.deep.equal([]);
    const tooLong = found.filter((k) => k.pttl > LONGEST_TTL_MS).map((k) => `${shape(k.key)} (${k.pttl} ms)`);
    expect(tooLong, 'keys living longer than the longest documented lifetime').to.deep.equal([]);
  });
});
