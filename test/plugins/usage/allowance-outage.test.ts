import { expect } from 'chai';
import type { Request } from 'express';
import type { Principal } from '../../../core/auth';
import { systemClock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { newId, randomToken } from '../../../core/ids';
import { KvUnavailableError, RedisKvStore } from '../../../core/kv';
import { createLogger } from '../../../core/logger';
import { TOKENS } from '../../../core/tokens';
import { SandboxAllowance } from '../../../plugins/usage/services/allowance';
import { requireRedisServer, startTestRedis, whileRedisFrozen } from '../../support/redis';
import type { TestRedis } from '../../support/redis';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A sandbox's daily count when Redis stalls past REDIS_COMMAND_TIMEOUT_MS: the call is refused 503,
 * but Redis carries out the count when it resumes. The count must not stay: the call was not served.
 */
describe('sandbox allowance: a count whose answer was lost', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let svc: TestService;
  let kv: RedisKvStore;
  let allowance: SandboxAllowance;
  const log = createLogger('silent');
  // Only what admit reads of a sandbox's principal and request.
  const sandbox = (): Principal => ({ kind: 'api_key', workspaceId: newId('ws'), scopes: null, attributes: { sandbox: true } });
  const request = (principal: Principal) => ({ operation: 'compute' as const, principal, units: 1, req: {} as Request });
  const remaining = async (principal: Principal) => ((await allowance.standing(request(principal))) as { daily_compute_calls: { remaining: number } }).daily_compute_calls.remaining;

  before(async function () {
    requireRedisServer(this);
    redis = await startTestRedis();
    svc = await startTestService();
    kv = new RedisKvStore(redis.url, `pcs-allowance-${randomToken(6)}:`, systemClock, log, { commandTimeoutMs: 200 });
    expect(await kv.connected(5000)).to.equal(true);
    allowance = new SandboxAllowance(kv, systemClock, svc.config, svc.container.resolve<Sql>(TOKENS.Sql), log);
  });
  after(async () => {
    await kv?.close();
    await svc?.close();
    await redis?.close();
  });

  it('takes back a count Redis carried out after the call was refused for want of an answer', async () => {
    const limit = svc.config.limits.sandbox.computeCallsPerDay;
    const p = sandbox();
    const first = await allowance.admit(request(p));
    await first?.commit();
    expect(await remaining(p)).to.equal(limit - 1);

    const { result } = await whileRedisFrozen(redis, async () => {
      const refused = await allowance.admit(request(p)).catch((err: unknown) => err);
      // Frozen a while longer than the command timeout, as in a stall.
      await sleep(300);
      return refused;
    });
    expect(result).to.be.instanceOf(KvUnavailableError);

    // Redis, thawed, carried out the count and the undo queued behind it; retries of the undo change nothing more.
    await sleep(1500);
    expect(await remaining(p)).to.equal(limit - 1);
    const next = await allowance.admit(request(p));
    expect((next?.remaining as { daily_compute_calls: { remaining: number } }).daily_compute_calls.remaining).to.equal(limit - 2);
  });

  it('retries lost counts on one timer while Redis is down, and stops at close after one last try', async () => {
    const own = new RedisKvStore(redis.url, `pcs-allowance-${randomToken(6)}:`, systemClock, log, { commandTimeoutMs: 200 });
    expect(await own.connected(5000)).to.equal(true);
    const undone = { n: 0 };
    const undoOnce = own.undoOnce.bind(own);
    own.undoOnce = (...args: Parameters<RedisKvStore['undoOnce']>) => {
      undone.n++;
      return undoOnce(...args);
    };
    const closing = new SandboxAllowance(own, systemClock, svc.config, svc.container.resolve<Sql>(TOKENS.Sql), log);
    await redis.stop();
    try {
      for (let i = 0; i < 3; i++) expect(await closing.admit(request(sandbox())).catch((err: unknown) => err)).to.be.instanceOf(KvUnavailableError);
      // Each tried at once, then all three again on the one timer.
      await sleep(1300);
      expect(undone.n).to.equal(6);
      await closing.close();
      expect(undone.n).to.equal(9);
      await sleep(1300);
      expect(undone.n, 'no attempt after close').to.equal(9);
    } finally {
      await redis.start();
      await own.close();
      // The shared store reconnects by itself; the next test needs it.
      expect(await kv.connected(10_000)).to.equal(true);
    }
  });

  it('gives a call back once however often it is released or refunded', async () => {
    const limit = svc.config.limits.sandbox.computeCallsPerDay;
    const p = sandbox();
    const r = await allowance.admit(request(p));
    await r?.commit();
    await r?.refund?.();
    await r?.refund?.();
    await r?.release();
    expect(await remaining(p)).to.equal(limit);
  });
});
