import { expect } from 'chai';
import type { Request } from 'express';
import type { Principal } from '../../../core/auth';
import { ManualClock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import type { ApiError } from '../../../core/errors';
import { newId, randomToken } from '../../../core/ids';
import { MemoryKvStore, RedisKvStore } from '../../../core/kv';
import type { KvStore } from '../../../core/kv';
import { createLogger } from '../../../core/logger';
import { TOKENS } from '../../../core/tokens';
import type { Reservation } from '../../../core/admission';
import { SandboxAllowance } from '../../../plugins/usage/services/allowance';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { recordSandboxCall } from './helpers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_MS = 1000;

/**
 * Instances sharing one store: a sandbox call counted by an instance that then dies (killed mid-call)
 * is neither committed nor released by it. Its place must come back once its lease ends, instead of
 * holding the sandbox's last places "in flight" until the day ends.
 */
function abandonedCounts(name: string, makeKv: (clock: ManualClock) => KvStore | null) {
  describe(`sandbox allowance: counts of an instance that died mid-call (${name})`, function () {
    this.timeout(30_000);
    let svc: TestService;
    let clock: ManualClock;
    let kv: KvStore;
    const log = createLogger('silent');
    const made: SandboxAllowance[] = [];
    const sandbox = (): Principal => ({ kind: 'api_key', workspaceId: newId('ws'), scopes: null, attributes: { sandbox: true } });
    const request = (principal: Principal) => ({ operation: 'compute' as const, principal, units: 1, req: {} as Request });
    const instance = () => {
      const a = new SandboxAllowance(kv, clock, svc.config, svc.container.resolve<Sql>(TOKENS.Sql), log);
      made.push(a);
      return a;
    };
    const refusal = (a: SandboxAllowance, p: Principal) => a.admit(request(p)).then(() => null, (err: unknown) => err as ApiError);
    const counted = async (p: Principal) => Number(await kv.get(`allowance:${p.workspaceId}:${new Date(clock.now()).toISOString().slice(0, 10)}`));

    before(async function () {
      clock = new ManualClock(Date.now());
      const store = makeKv(clock);
      if (!store) {
        if (process.env.CI) throw new Error('REDIS_URL is not set: CI must run the Redis suites.');
        this.skip();
      }
      kv = store;
      if (kv instanceof RedisKvStore) expect(await kv.connected(5000)).to.equal(true);
      svc = await startTestService({ config: { limits: { sandbox: { computeCallsPerDay: 3, callLeaseMs: LEASE_MS } } } });
    });
    after(async () => {
      for (const a of made) await a.close();
      await kv?.close();
      await svc?.close();
    });

    it('gives the places of a dead instance\'s calls back once their leases end, and no sooner', async () => {
      const p = sandbox();
      const dying = instance();
      const living = instance();
      await dying.admit(request(p));
      await dying.admit(request(p));
      // Killed: nothing it held is settled, and it renews no lease.
      await dying.close();
      const own = await living.admit(request(p));
      expect(await counted(p)).to.equal(3);

      const early = await refusal(living, p);
      expect(early?.code, 'the leases have not ended').to.equal('rate_limited');
      expect(early?.extras.limit).to.deep.include({ in_flight: 3, recorded_today: 0 });

      // Half a lease on, the living instance renews its call's lease (every third of it, in real time); then the
      // dead instance's leases end.
      clock.advance(LEASE_MS / 2);
      await sleep(LEASE_MS / 3 + 150);
      clock.advance(LEASE_MS / 2 + 1);
      const taken = [await living.admit(request(p)), await living.admit(request(p))];
      expect(taken.every((r) => r !== null), 'both places came back').to.equal(true);
      expect(await counted(p)).to.equal(3);
      // The living instance's three calls are in flight, with leases it renews: not taken.
      expect((await refusal(instance(), p))?.code).to.equal('rate_limited');
      for (const r of [own, ...taken]) await r?.release();
      expect(await counted(p)).to.equal(0);
    });

    it('keeps the places of a living instance\'s long calls: it renews their leases while they run', async () => {
      const p = sandbox();
      const slow = instance();
      const calls = [await slow.admit(request(p)), await slow.admit(request(p)), await slow.admit(request(p))];
      // Past the first lease, with a renewal (every third of the lease, in real time) in between.
      clock.advance(LEASE_MS - 100);
      await sleep(LEASE_MS / 3 + 150);
      clock.advance(LEASE_MS - 100);
      const other = instance();
      expect((await refusal(other, p))?.code, 'still in flight').to.equal('rate_limited');
      expect(await counted(p)).to.equal(3);
      for (const c of calls) await c?.release();
    });

    it('counts once a call that ends after its place was taken back: a late commit counts again, a late release takes nothing more', async () => {
      const p = sandbox();
      const stalled = instance();
      const late: Array<Reservation | null> = [await stalled.admit(request(p)), await stalled.admit(request(p)), await stalled.admit(request(p))];
      // Stalled past its leases (no renewal reached the store), then alive again.
      await stalled.close();
      clock.advance(LEASE_MS + 1);
      const other = instance();
      const fresh = await other.admit(request(p));
      expect(fresh).to.not.equal(null);
      expect(await counted(p), 'three taken back, one counted').to.equal(1);
      await late[0]?.commit();
      await late[1]?.release();
      // The commit's count is made final in the background.
      for (let i = 0; i < 50 && (await counted(p)) !== 2; i++) await sleep(10);
      expect(await counted(p), 'the committed late call counted again, the released one not taken twice').to.equal(2);
      await fresh?.commit();
      await sleep(50);
      expect(await counted(p)).to.equal(2);
    });

    it('keeps counted the calls of a dead instance that were recorded before it died: only the unrecorded ones\' places come back', async () => {
      const p = sandbox();
      const dying = instance();
      await dying.admit(request(p));
      await dying.admit(request(p));
      await dying.admit(request(p));
      // Two of its calls committed their usage events; the instance died before their counts were made final.
      const sql = svc.container.resolve<Sql>(TOKENS.Sql);
      for (let i = 0; i < 2; i++) {
        await recordSandboxCall(sql, p.workspaceId);
      }
      await dying.close();
      clock.advance(LEASE_MS + 1);
      const other = instance();
      const admitted: Array<Reservation | null> = [];
      let refused: ApiError | null = null;
      while (!refused && admitted.length < 5) {
        try {
          admitted.push(await other.admit(request(p)));
        } catch (err) {
          refused = err as ApiError;
        }
      }
      expect(admitted, 'the one place its unrecorded call held').to.have.length(1);
      expect(refused?.code, 'two recorded, one in flight').to.equal('rate_limited');
      expect(refused?.extras.limit).to.deep.include({ recorded_today: 2, in_flight: 1 });
      expect(await counted(p)).to.equal(3);
      await admitted[0]?.release();
    });

    it('makes a committed count final: a refused call taking back ended leases never takes back a call that was committed', async () => {
      const p = sandbox();
      const a = instance();
      const calls = [await a.admit(request(p)), await a.admit(request(p)), await a.admit(request(p))];
      for (const c of calls) await c?.commit();
      await sleep(50);
      clock.advance(LEASE_MS + 1);
      const err = await refusal(instance(), p);
      expect(err?.code, 'three calls counted and final: the quota holds').to.be.oneOf(['rate_limited', 'daily_quota_exceeded']);
      expect(await counted(p)).to.equal(3);
    });
  });
}

abandonedCounts('in process', (clock) => new MemoryKvStore(clock));
abandonedCounts('Redis', (clock) => (process.env.REDIS_URL ? new RedisKvStore(process.env.REDIS_URL, `pcs-abandoned-${randomToken(6)}:`, clock, createLogger('silent')) : null));
