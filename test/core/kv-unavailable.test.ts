import { expect } from 'chai';
import { ManualClock } from '../../core/clock';
import { KvUnavailableError, RedisKvStore } from '../../core/kv';
import { randomToken } from '../../core/ids';
import { createLogger } from '../../core/logger';
import { client } from '../support/http';
import type { HttpResult } from '../support/http';
import { redisProxy, requireRedisServer, startTestRedis, whileRedisFrozen } from '../support/redis';
import type { TestRedis } from '../support/redis';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { registerSandbox } from '../support/world';

type Body = Record<string, any>;

const DEMO = { context: { current_price: 4, currency: 'USD' } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The writer's answer to a store it cannot reach (usage-write-failure.test.ts), for the key-value store. */
/** `call`: a priced call's route (compute, demo, verify), whose hint first says that nothing was charged. */
function expectStoreUnavailable(res: HttpResult<Body>, call = false): void {
  expect(res.status, res.text).to.equal(503);
  expect(res.headers.get('retry-after')).to.equal('5');
  expect(res.body).to.include({ code: 'service_unavailable', error: 'The request could not be completed: the key-value store did not answer.', retryable: true, retry_after: 5 });
  expect(res.body.hint).to.equal(`${call ? 'Nothing was charged: a call is charged only with its answer. ' : ''}The shared key-value store (rate limits, counters) is not reachable or did not answer in time; retry in 5 s.`);
}

/**
 * Publishes `message` on channel `ch` until the subscriber has it (at most 6 s): pub/sub delivers at
 * most once, and a message sent while the subscribed connection is being made again is lost.
 */
async function hears(publisher: RedisKvStore, got: string[], message: string): Promise<void> {
  for (let i = 0; i < 60 && !got.includes(message); i++) {
    await publisher.publish('ch', message);
    await sleep(100);
  }
  expect(got, `heard ${message}`).to.include(message);
}

/**
 * Redis frozen (SIGSTOP) or shut down, on a redis-server of the test's own: requests answer 503
 * within REDIS_COMMAND_TIMEOUT_MS instead of waiting (frozen) or answering 500 (down), and succeed
 * again once Redis is back, without a restart.
 */
describe('key-value store unavailable: Redis frozen or down', function () {
  this.timeout(30_000);
  let redis: TestRedis;

  before(async function () {
    requireRedisServer(this);
    redis = await startTestRedis();
  });
  after(async () => {
    await redis?.close();
  });

  describe('through the service', () => {
    let svc: TestService;
    let key: string;

    before(async () => {
      svc = await startTestService({ env: { REDIS_URL: redis.url, REDIS_COMMAND_TIMEOUT_MS: '300' } });
      key = (await registerSandbox(svc, 'store-outage-agent')).key;
    });
    after(async () => {
      await svc?.close();
    });

    it('an authenticated call answers 503 service_unavailable within the command timeout while Redis is frozen, and 200 once it resumes', async () => {
      const api = client(svc.url, { 'x-api-key': key });
      expect((await api.get('/api/me')).status).to.equal(200);

      const { result: res, ms } = await whileRedisFrozen(redis, () => api.get<Body>('/api/me'));
      expectStoreUnavailable(res);
      expect(ms, 'answered at the command timeout, not when Redis resumed').to.be.lessThan(2000);

      const after = await api.get('/api/me');
      expect(after.status, after.text).to.equal(200);
    });

    it('an authenticated call and the keyless demo answer 503 service_unavailable while Redis is down, and 200 again once it is back', async () => {
      const api = client(svc.url, { 'x-api-key': key });
      await redis.stop();
      try {
        expectStoreUnavailable(await api.get<Body>('/api/me'));
        expectStoreUnavailable(await client(svc.url).post<Body>('/api/public/compute/demo', DEMO), true);
      } finally {
        await redis.start();
      }
      // ioredis reconnects by itself (its back-off is short after a brief outage).
      let res = await api.get('/api/me');
      for (let i = 0; i < 50 && res.status !== 200; i++) {
        await sleep(100);
        res = await api.get('/api/me');
      }
      expect(res.status, res.text).to.equal(200);
    });
  });

  it('a service does not start without Redis: the start fails after REDIS_CONNECT_WAIT_MS naming it', async () => {
    await redis.stop();
    try {
      const started = Date.now();
      const failed = await startTestService({ env: { REDIS_URL: redis.url, REDIS_CONNECT_WAIT_MS: '300' } }).then(
        async (svc) => {
          await svc.close();
          return null;
        },
        (err: unknown) => err,
      );
      expect(String(failed)).to.match(/Redis at REDIS_URL was not ready within REDIS_CONNECT_WAIT_MS \(300 ms\) \(.*ENOENT.*\); start the service again/);
      expect(Date.now() - started).to.be.lessThan(15_000);
    } finally {
      await redis.start();
    }
  });

  describe('RedisKvStore', () => {
    /** A key's value once the store reconnected by itself (ioredis's back-off is short after a brief outage). */
    const getOnceBack = async (kv: RedisKvStore, key: string): Promise<unknown> => {
      let value: unknown = await kv.get(key).catch((err: unknown) => err);
      for (let i = 0; i < 50 && value instanceof KvUnavailableError; i++) {
        await sleep(100);
        value = await kv.get(key).catch((err: unknown) => err);
      }
      return value;
    };
    const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
    const log = createLogger('silent');
    const stores: RedisKvStore[] = [];
    const open = async (url: string, commandTimeoutMs: number, prefix = `pcs-outage-${randomToken(6)}:`) => {
      const store = new RedisKvStore(url, prefix, clock, log, { commandTimeoutMs });
      stores.push(store);
      expect(await store.connected(5000), 'connected').to.equal(true);
      return store;
    };
    afterEach(async () => {
      await Promise.all(stores.splice(0).map((s) => s.close()));
    });

    it('fails a command with KvUnavailableError within the command timeout while Redis is frozen or down; a command Redis refuses is not an outage', async () => {
      const kv = await open(redis.url, 200);
      await kv.set('word', 'not-a-number');
      const refused = await kv.incr('word').catch((err: unknown) => err);
      expect(refused).to.be.instanceOf(RangeError);

      const frozen = await whileRedisFrozen(redis, () => kv.get('word').catch((err: unknown) => err));
      expect(frozen.result).to.be.instanceOf(KvUnavailableError);
      expect(String(frozen.result)).to.contain('Command timed out');
      expect(frozen.ms).to.be.lessThan(1500);

      await redis.stop();
      try {
        const down = await kv.rateLimit('rl', 10, 60_000).catch((err: unknown) => err);
        expect(down).to.be.instanceOf(KvUnavailableError);
      } finally {
        await redis.start();
      }
      // ioredis reconnects by itself.
      const value = await getOnceBack(kv, 'word');
      // The server was restarted without persistence: reachable again, the key gone.
      expect(value).to.equal(null);
    });

    it('a count refused while Redis is down is not applied later: it fails at once, and nothing queued runs when Redis is back', async () => {
      const kv = await open(redis.url, 200);
      expect(await kv.incr('calls', 1, 60_000)).to.equal(1);
      await redis.stop();
      try {
        const started = Date.now();
        for (let i = 0; i < 3; i++) expect(await kv.incr('calls', 1, 60_000).catch((err: unknown) => err)).to.be.instanceOf(KvUnavailableError);
        expect(Date.now() - started, 'failed at once, not at the command timeout each').to.be.lessThan(300);
      } finally {
        await redis.start();
      }
      await getOnceBack(kv, 'calls');
      // Restarted without persistence: the one count before is gone, and none of the three refused came through.
      await sleep(300);
      expect(await kv.get('calls')).to.equal(null);
      expect(await kv.incr('calls', 1, 60_000)).to.equal(1);
    });

    it('a message published while this instance cannot reach Redis is kept and sent once it can (an invalidation is not lost)', async () => {
      const proxy = await redisProxy(redis.url);
      try {
        const prefix = `pcs-outage-${randomToken(6)}:`;
        const subscriber = await open(redis.url, 1000, prefix);
        const publisher = await open(`redis://127.0.0.1:${proxy.port}`, 200, prefix);
        const got: string[] = [];
        await subscriber.subscribe('ch', (m) => void got.push(m));
        await proxy.refuse();
        // Resolves: the change it announces is made; the announcement waits for Redis.
        await publisher.publish('ch', 'key revoked while cut off');
        expect(got).to.deep.equal([]);
        await proxy.accept();
        for (let i = 0; i < 60 && got.length === 0; i++) await sleep(100);
        expect(got).to.deep.equal(['key revoked while cut off']);
      } finally {
        await proxy.close();
      }
    });

    it('a subscribe Redis does not answer fails with KvUnavailableError within the command timeout, and the channel can be subscribed once Redis answers', async () => {
      const prefix = `pcs-outage-${randomToken(6)}:`;
      const kv = await open(redis.url, 200, prefix);
      const publisher = await open(redis.url, 1000, prefix);
      await kv.ping();
      const got: string[] = [];
      const frozen = await whileRedisFrozen(redis, () => kv.subscribe('ch', (m) => void got.push(m)).catch((err: unknown) => err));
      expect(frozen.result).to.be.instanceOf(KvUnavailableError);
      expect(frozen.ms).to.be.lessThan(1500);

      await kv.subscribe('ch', (m) => void got.push(m));
      await hears(publisher, got, 'hello');
    });

    it('logs each connection\'s failures once per reason while Redis stays unreachable (the subscribed connection too), and again after it is back and fails anew', async () => {
      const lines: Array<{ msg: string; reason: string }> = [];
      const sink = { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; reason: string }) };
      const proxy = await redisProxy(redis.url);
      const prefix = `pcs-outage-${randomToken(6)}:`;
      const store = new RedisKvStore(`redis://127.0.0.1:${proxy.port}`, prefix, clock, createLogger('warn', sink), { commandTimeoutMs: 200 });
      stores.push(store);
      try {
        expect(await store.connected(5000)).to.equal(true);
        const got: string[] = [];
        await store.subscribe('ch', (m) => void got.push(m));
        await proxy.refuse();
        // ioredis retries every 50, 100, 150 ms…: a dozen attempts on each connection in 3 s.
        await sleep(3000);
        const told = (msg: string) => lines.filter((l) => l.msg === msg).map((l) => l.reason);
        for (const msg of ['key-value store connection failed', 'key-value subscriber connection failed']) {
          const reasons = told(msg);
          expect(reasons.length, `${msg}: ${reasons.join(' | ')}`).to.be.greaterThan(0);
          expect(new Set(reasons).size, `${msg}, each reason once: ${reasons.join(' | ')}`).to.equal(reasons.length);
        }
        await proxy.accept();
        expect(await getOnceBack(store, 'any')).to.equal(null);
        // The subscribed connection reconnects on its own back-off: once it hears again, its failures were cleared.
        await hears(await open(redis.url, 1000, prefix), got, 'back');
        const before = told('key-value subscriber connection failed').length;
        await proxy.refuse();
        await sleep(1000);
        expect(told('key-value subscriber connection failed').length, 'a new outage is told again').to.be.greaterThan(before);
      } finally {
        await proxy.close();
      }
    });

    it('a subscription outlives the command timeout: it hears messages after idling past it, after a resubscription Redis leaves unanswered, and across an outage', async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => void unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      const proxy = await redisProxy(redis.url);
      try {
        const prefix = `pcs-outage-${randomToken(6)}:`;
        const kv = await open(`redis://127.0.0.1:${proxy.port}`, 100, prefix);
        const publisher = await open(redis.url, 1000, prefix);
        const got: string[] = [];
        await kv.subscribe('ch', (m) => void got.push(m));

        await sleep(300);
        await hears(publisher, got, 'after idling past the command timeout');

        // The connection drops; on reconnect Redis answers the ready check but never the SUBSCRIBE.
        proxy.mode = 'stall-subscribe';
        proxy.drop();
        await sleep(500);
        // Then Redis cannot be reached for a while (ioredis's retries per command run out).
        await proxy.refuse();
        await sleep(1000);
        proxy.mode = 'pass';
        await proxy.accept();
        await hears(publisher, got, 'after the outage');
        expect(unhandled.map(String), 'unhandled rejections').to.deep.equal([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
        await proxy.close();
      }
    });
  });
});

