import { expect } from 'chai';
import { ManualClock } from '../../core/clock';
import { MemoryKvStore, RedisKvStore } from '../../core/kv';
import type { KvStore } from '../../core/kv';
import { randomToken } from '../../core/ids';
import { createLogger } from '../../core/logger';
import type { Logger } from '../../core/logger';

/**
 * One contract, two implementations. The Redis run needs REDIS_URL; CI always sets it (.ci/run
 * starts redis-server), and under CI a missing REDIS_URL fails instead of skipping.
 */
function kvContract(name: string, make: (clock: ManualClock, log: Logger) => KvStore | null) {
  describe(`key-value store contract: ${name}`, function () {
    let clock: ManualClock;
    let kv: KvStore;
    let ns: string;
    const logged: string[] = [];

    before(async function () {
      clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
      const made = make(clock, createLogger('error', { write: (line: string) => void logged.push(line) }));
      if (!made) {
        if (process.env.CI) throw new Error('REDIS_URL is not set: CI must run the Redis contract suite.');
        this.skip();
      }
      kv = made;
      // Commands are not queued while the connection is being made: the service waits for it too.
      if (kv instanceof RedisKvStore) expect(await kv.connected(5000)).to.equal(true);
    });
    beforeEach(() => {
      ns = `t:${randomToken(8)}:`;
    });
    after(async () => {
      await kv?.close();
    });

    it('gets what it sets, and null for a missing key', async () => {
      await kv.set(`${ns}a`, 'one');
      expect(await kv.get(`${ns}a`)).to.equal('one');
      expect(await kv.get(`${ns}missing`)).to.equal(null);
    });

    it('deletes keys', async () => {
      await kv.set(`${ns}d`, 'x');
      await kv.del(`${ns}d`);
      expect(await kv.get(`${ns}d`)).to.equal(null);
    });

    it('expires a value after its TTL', async function () {
      await kv.set(`${ns}ttl`, 'v', 150);
      expect(await kv.get(`${ns}ttl`)).to.equal('v');
      clock.advance(200);
      await new Promise((r) => setTimeout(r, kv.kind === 'redis' ? 250 : 0));
      expect(await kv.get(`${ns}ttl`)).to.equal(null);
    });

    it('sets only when absent', async () => {
      expect(await kv.setIfAbsent(`${ns}nx`, 'first', 10_000)).to.equal(true);
      expect(await kv.setIfAbsent(`${ns}nx`, 'second', 10_000)).to.equal(false);
      expect(await kv.get(`${ns}nx`)).to.equal('first');
    });

    it('increments atomically under concurrency, keeping the first expiry', async () => {
      const results = await Promise.all(Array.from({ length: 50 }, () => kv.incr(`${ns}n`, 1, 60_000)));
      expect(new Set(results).size).to.equal(50);
      expect(Math.max(...results)).to.equal(50);
      expect(await kv.incr(`${ns}n`, 5)).to.equal(55);
    });

    it('expires a counter after its TTL', async () => {
      await kv.incr(`${ns}c`, 1, 150);
      clock.advance(200);
      await new Promise((r) => setTimeout(r, kv.kind === 'redis' ? 250 : 0));
      expect(await kv.incr(`${ns}c`, 1, 150)).to.equal(1);
    });

    it('gives a counter that has no expiry the TTL of the next incr naming one, and keeps an expiry it has', async () => {
      await kv.set(`${ns}plain`, '5');
      expect(await kv.incr(`${ns}plain`, 1, 150)).to.equal(6);
      await kv.incr(`${ns}released`, -1);
      expect(await kv.incr(`${ns}released`, 1, 150)).to.equal(0);
      await kv.incr(`${ns}kept`, 1, 150);
      expect(await kv.incr(`${ns}kept`, 1, 60_000)).to.equal(2);
      clock.advance(200);
      await new Promise((r) => setTimeout(r, kv.kind === 'redis' ? 250 : 0));
      expect(await kv.get(`${ns}plain`), 'set without a TTL, then incr with one').to.equal(null);
      expect(await kv.get(`${ns}released`), 'incr without a TTL, then incr with one').to.equal(null);
      expect(await kv.get(`${ns}kept`), 'the first expiry is kept').to.equal(null);
    });

    it('refuses what Redis cannot store, before writing: a fractional or negative TTL, a fractional increment', async () => {
      for (const [what, call] of [
        ['set, fractional TTL', () => kv.set(`${ns}x`, 'v', 1500.5)],
        ['set, negative TTL', () => kv.set(`${ns}x`, 'v', -5)],
        ['setIfAbsent, fractional TTL', () => kv.setIfAbsent(`${ns}x`, 'v', 0.5)],
        ['incr, fractional TTL', () => kv.incr(`${ns}x`, 1, 1000.5)],
        ['incr, negative TTL', () => kv.incr(`${ns}x`, 1, -1)],
        ['incr, fractional amount', () => kv.incr(`${ns}x`, 0.5, 1000)],
      ] as const) {
        const outcome = await call().then(
          () => 'resolved',
          (err: unknown) => err,
        );
        expect(outcome, what).to.be.instanceOf(RangeError);
      }
      expect(await kv.get(`${ns}x`)).to.equal(null);
    });

    it('refuses to increment a value that is not an integer, leaving it as it was', async () => {
      for (const value of ['abc', '1.5', '']) {
        await kv.set(`${ns}s`, value);
        const outcome = await kv.incr(`${ns}s`, 1).then(
          (n) => n,
          (err: unknown) => err,
        );
        expect(outcome, JSON.stringify(value)).to.be.instanceOf(RangeError);
        expect(await kv.get(`${ns}s`)).to.equal(value);
      }
    });

    it('incrIfPresent counts only on a key that exists: null and nothing created for a missing one', async () => {
      expect(await kv.incrIfPresent(`${ns}absent`, 1)).to.equal(null);
      expect(await kv.incrIfPresent(`${ns}absent`, -1)).to.equal(null);
      expect(await kv.get(`${ns}absent`)).to.equal(null);
    });

    it('delIfEquals deletes a key only while it holds the value given', async () => {
      await kv.set(`${ns}lease`, 'mine', 60_000);
      await kv.delIfEquals(`${ns}lease`, 'theirs');
      expect(await kv.get(`${ns}lease`)).to.equal('mine');
      await kv.delIfEquals(`${ns}lease`, 'mine');
      expect(await kv.get(`${ns}lease`)).to.equal(null);
      await kv.delIfEquals(`${ns}never-set`, 'mine');
    });

    it('incrIfPresentOnce counts once per token, and undoOnce takes back once only what a token counted', async () => {
      expect(await kv.incrIfPresentOnce(`${ns}once-absent`, 1, 'a', 60_000)).to.equal(null);
      expect(await kv.get(`${ns}once-absent`)).to.equal(null);
      await kv.set(`${ns}once`, '5', 60_000);
      expect(await kv.incrIfPresentOnce(`${ns}once`, 1, 'a', 60_000)).to.equal(6);
      // The same token again: the count as it is, nothing added.
      expect(await kv.incrIfPresentOnce(`${ns}once`, 1, 'a', 60_000)).to.equal(6);
      expect(await kv.incrIfPresentOnce(`${ns}once`, 2, 'b', 60_000)).to.equal(8);
      await kv.undoOnce(`${ns}once`, 1, 'a');
      await kv.undoOnce(`${ns}once`, 1, 'a');
      await kv.undoOnce(`${ns}once`, 1, 'never-counted');
      expect(await kv.get(`${ns}once`)).to.equal('7');
      // An undone token counts again if it comes back (a later count under it is a new one).
      expect(await kv.incrIfPresentOnce(`${ns}once`, 1, 'a', 60_000)).to.equal(8);
      // A counter gone meanwhile is not recreated by an undo.
      await kv.del(`${ns}once`);
      await kv.undoOnce(`${ns}once`, 2, 'b');
      expect(await kv.get(`${ns}once`)).to.equal(null);
      expect(await kv.incrIfPresentOnce(`${ns}once`, 1, 'c', 0).catch((err: unknown) => err)).to.be.instanceOf(RangeError);
    });

    it('forgetOnce makes a token\'s count final: an undoOnce after it takes nothing back; it answers false for a count already taken back', async () => {
      await kv.set(`${ns}final`, '3', 60_000);
      expect(await kv.incrIfPresentOnce(`${ns}final`, 1, 'a', 60_000)).to.equal(4);
      expect(await kv.incrIfPresentOnce(`${ns}final`, 1, 'b', 60_000)).to.equal(5);
      expect(await kv.forgetOnce(`${ns}final`, 'a')).to.equal(true);
      expect(await kv.forgetOnce(`${ns}final`, 'a'), 'already final').to.equal(false);
      await kv.undoOnce(`${ns}final`, 1, 'a');
      expect(await kv.get(`${ns}final`)).to.equal('5');
      await kv.undoOnce(`${ns}final`, 1, 'b');
      expect(await kv.forgetOnce(`${ns}final`, 'b'), 'taken back before').to.equal(false);
      expect(await kv.forgetOnce(`${ns}final`, 'never-counted')).to.equal(false);
      expect(await kv.get(`${ns}final`)).to.equal('4');
    });

    it('takes each expired lease once, in the order they ended, up to the number asked; a held, renewed or dropped lease is not taken', async () => {
      const set = `${ns}leases`;
      const now = clock.now();
      await kv.holdLease(set, 'a', now + 100, 60_000);
      await kv.holdLease(set, 'b', now + 50, 60_000);
      await kv.holdLease(set, 'c', now + 300, 60_000);
      await kv.holdLease(set, 'd', now + 60, 60_000);
      expect(await kv.dropLease(set, 'd')).to.equal(true);
      expect(await kv.dropLease(set, 'd'), 'given back before').to.equal(false);
      expect(await kv.takeExpiredLeases(set, now + 10, 10), 'none ended yet').to.deep.equal([]);
      // Renewed before it ended: held on.
      await kv.holdLease(set, 'a', now + 500, 60_000, true);
      expect(await kv.takeExpiredLeases(set, now + 200, 10)).to.deep.equal(['b']);
      expect(await kv.takeExpiredLeases(set, now + 200, 10), 'taken once').to.deep.equal([]);
      expect(await kv.dropLease(set, 'b'), 'taken as expired').to.equal(false);
      // A renewal of a lease taken as expired does not hold it again; a plain hold does.
      await kv.holdLease(set, 'b', now + 1000, 60_000, true);
      await kv.holdLease(set, 'e', now + 1000, 60_000, true);
      expect(await kv.takeExpiredLeases(set, now + 2000, 1)).to.deep.equal(['c']);
      expect(await kv.takeExpiredLeases(set, now + 2000, 10)).to.deep.equal(['a']);
      await kv.holdLease(set, 'b', now + 1000, 60_000);
      expect(await kv.takeExpiredLeases(set, now + 2000, 10)).to.deep.equal(['b']);
      expect(await kv.takeExpiredLeases(`${ns}no-leases`, now + 2000, 10)).to.deep.equal([]);
      expect(await kv.dropLease(`${ns}no-leases`, 'x')).to.equal(false);
    });

    it('takes each expired lease by one caller only when many take at once', async () => {
      const set = `${ns}leases-race`;
      const now = clock.now();
      await Promise.all(Array.from({ length: 20 }, (_, i) => kv.holdLease(set, `m${i}`, now + i, 60_000)));
      const taken = (await Promise.all(Array.from({ length: 8 }, () => kv.takeExpiredLeases(set, now + 100, 5)))).flat();
      expect(taken).to.have.length(20);
      expect(new Set(taken).size).to.equal(20);
    });

    it('drops a lease set its TTL after the last hold, and refuses a lease end or TTL out of contract', async () => {
      const set = `${ns}leases-ttl`;
      await kv.holdLease(set, 'a', clock.now() - 1, 150);
      clock.advance(200);
      await new Promise((r) => setTimeout(r, kv.kind === 'redis' ? 250 : 0));
      expect(await kv.takeExpiredLeases(set, clock.now(), 10)).to.deep.equal([]);
      for (const bad of [() => kv.holdLease(set, 'a', 1.5, 1000), () => kv.holdLease(set, 'a', clock.now(), 0), () => kv.takeExpiredLeases(set, clock.now(), 0)]) {
        expect(await bad().catch((err: unknown) => err)).to.be.instanceOf(RangeError);
      }
    });

    it('incrIfPresent increments atomically under concurrency and keeps the key\'s expiry', async () => {
      await kv.setIfAbsent(`${ns}p`, '10', 150);
      const results = await Promise.all(Array.from({ length: 50 }, () => kv.incrIfPresent(`${ns}p`, 1)));
      expect(new Set(results).size).to.equal(50);
      expect(Math.max(...(results as number[]))).to.equal(60);
      expect(await kv.incrIfPresent(`${ns}p`, -5)).to.equal(55);
      clock.advance(200);
      await new Promise((r) => setTimeout(r, kv.kind === 'redis' ? 250 : 0));
      expect(await kv.get(`${ns}p`), 'the expiry it had is kept').to.equal(null);
      expect(await kv.incrIfPresent(`${ns}p`, 1), 'expired: missing').to.equal(null);
    });

    it('incrIfPresent refuses a value that is not an integer and a fractional increment, leaving the value as it was', async () => {
      await kv.set(`${ns}ps`, 'abc');
      expect(await kv.incrIfPresent(`${ns}ps`, 1).then((n) => n, (err: unknown) => err)).to.be.instanceOf(RangeError);
      expect(await kv.get(`${ns}ps`)).to.equal('abc');
      await kv.set(`${ns}pf`, '1');
      expect(await kv.incrIfPresent(`${ns}pf`, 0.5).then((n) => n, (err: unknown) => err)).to.be.instanceOf(RangeError);
      expect(await kv.get(`${ns}pf`)).to.equal('1');
    });

    it('treats a TTL of 0 as no expiry', async () => {
      await kv.set(`${ns}z`, 'v', 0);
      expect(await kv.setIfAbsent(`${ns}z2`, 'v', 0)).to.equal(true);
      expect(await kv.incr(`${ns}z3`, 1, 0)).to.equal(1);
      clock.advance(86_400_000);
      expect([await kv.get(`${ns}z`), await kv.get(`${ns}z2`), await kv.get(`${ns}z3`)]).to.deep.equal(['v', 'v', '1']);
    });

    it('refuses a rate-limit cost below 1 or a fractional one (reading without counting is peekRateLimit)', async () => {
      for (const cost of [0, -1, 1.5]) {
        const outcome = await kv.rateLimit(`${ns}rl0`, 5, 60_000, cost).then(
          (r) => r,
          (err: unknown) => err,
        );
        expect(outcome, `cost ${cost}`).to.be.instanceOf(RangeError);
      }
      expect((await kv.peekRateLimit(`${ns}rl0`, 5, 60_000)).remaining).to.equal(5);
    });

    it('rate-limits with a sliding window: allows the limit, refuses the next with a retry time', async () => {
      clock.set(Math.floor(clock.now() / 60_000) * 60_000 + 1_000);
      const results = await Promise.all(Array.from({ length: 12 }, () => kv.rateLimit(`${ns}rl`, 10, 60_000)));
      expect(results.filter((r) => r.allowed)).to.have.length(10);
      const refused = results.filter((r) => !r.allowed);
      expect(refused).to.have.length(2);
      for (const r of refused) {
        expect(r.remaining).to.equal(0);
        expect(r.retryAfterMs).to.be.greaterThan(0);
        expect(r.limit).to.equal(10);
      }
      const peek = await kv.peekRateLimit(`${ns}rl`, 10, 60_000);
      expect(peek.remaining).to.equal(0);
    });

    it('refunds what a rate limit counted in the current window, never below 0, and refuses a cost below 1', async () => {
      for (let i = 0; i < 3; i++) expect((await kv.rateLimit(`${ns}rf`, 3, 60_000)).allowed).to.equal(true);
      expect((await kv.rateLimit(`${ns}rf`, 3, 60_000)).allowed).to.equal(false);
      await kv.refundRateLimit(`${ns}rf`, 60_000);
      expect((await kv.peekRateLimit(`${ns}rf`, 3, 60_000)).remaining).to.equal(1);
      expect((await kv.rateLimit(`${ns}rf`, 3, 60_000)).allowed).to.equal(true);
      await kv.refundRateLimit(`${ns}rf`, 60_000, 10);
      expect((await kv.peekRateLimit(`${ns}rf`, 3, 60_000)).remaining).to.equal(3);
      await kv.refundRateLimit(`${ns}never-counted`, 60_000);
      expect((await kv.peekRateLimit(`${ns}never-counted`, 3, 60_000)).remaining).to.equal(3);
      expect(await kv.refundRateLimit(`${ns}rf`, 60_000, 0).catch((err: unknown) => err)).to.be.instanceOf(RangeError);
    });

    it('refunds in the window the count was made in, even once the next one has begun', async () => {
      const start = Math.floor(clock.now() / 60_000) * 60_000 + 60_000;
      clock.set(start + 59_999);
      let last = await kv.rateLimit(`${ns}roll`, 3, 60_000);
      for (let i = 0; i < 2; i++) last = await kv.rateLimit(`${ns}roll`, 3, 60_000);
      expect(last.allowed).to.equal(true);
      clock.set(start + 60_000);
      // The whole previous window still weighs in: nothing left.
      expect((await kv.peekRateLimit(`${ns}roll`, 3, 60_000)).remaining).to.equal(0);
      await kv.refundRateLimit(`${ns}roll`, 60_000, 1, last.window);
      expect((await kv.peekRateLimit(`${ns}roll`, 3, 60_000)).remaining).to.equal(1);
    });

    it('slides: the previous window weighs in proportionally, then fades out', async () => {
      const start = Math.floor(clock.now() / 60_000) * 60_000 + 60_000;
      clock.set(start + 59_000);
      for (let i = 0; i < 10; i++) expect((await kv.rateLimit(`${ns}sl`, 10, 60_000)).allowed).to.equal(true);
      clock.set(start + 60_000 + 30_000); // half of the previous window still counts: 5 of 10 used
      const mid = await Promise.all(Array.from({ length: 7 }, () => kv.rateLimit(`${ns}sl`, 10, 60_000)));
      expect(mid.filter((r) => r.allowed)).to.have.length(5);
      clock.set(start + 180_000);
      expect((await kv.rateLimit(`${ns}sl`, 10, 60_000)).allowed).to.equal(true);
    });

    it('reports remaining and reset time', async () => {
      clock.set(Math.floor(clock.now() / 60_000) * 60_000 + 60_000 + 15_000);
      const r = await kv.rateLimit(`${ns}rem`, 5, 60_000);
      expect(r.allowed).to.equal(true);
      expect(r.remaining).to.equal(4);
      expect(r.resetMs).to.equal(45_000);
      // This window's request weighs on through the next window: the whole allowance is back at its end.
      expect(r.restoredMs).to.equal(105_000);
    });

    it('reports the whole allowance back when the previous window alone still counts at the end of this one', async () => {
      const start = Math.floor(clock.now() / 60_000) * 60_000 + 60_000;
      clock.set(start + 50_000);
      await kv.rateLimit(`${ns}restored`, 5, 60_000);
      clock.set(start + 60_000 + 20_000);
      // Refused requests do not count: only the previous window's request weighs, until this window ends.
      const peek = await kv.peekRateLimit(`${ns}restored`, 5, 60_000);
      expect(peek.restoredMs).to.equal(40_000);
      expect(peek.remaining).to.equal(4);
    });

    it('delivers published messages to subscribers', async () => {
      const got: string[] = [];
      const unsubscribe = await kv.subscribe(`${ns}ch`, (m) => got.push(m));
      await kv.publish(`${ns}ch`, 'hello');
      for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(got).to.deep.equal(['hello']);
      await unsubscribe();
    });

    it('keeps a failing subscriber to itself: a throw or a rejection is logged, never left unhandled or handed to the publisher', async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => void unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const got: string[] = [];
        const subscriptions = [
          await kv.subscribe(`${ns}boom`, () => {
            throw new Error('subscriber threw');
          }),
          await kv.subscribe(`${ns}boom`, async () => {
            throw new Error('subscriber rejected');
          }),
          await kv.subscribe(`${ns}boom`, (m) => got.push(m)),
        ];
        await kv.publish(`${ns}boom`, 'first');
        await kv.publish(`${ns}boom`, 'second');
        for (let i = 0; i < 50 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
        await new Promise((r) => setImmediate(r));
        expect(got, 'the other subscriber still hears every message').to.deep.equal(['first', 'second']);
        expect(unhandled.map(String), 'unhandled rejections').to.deep.equal([]);
        const failures = logged.filter((l) => l.includes('key-value subscriber failed'));
        expect(failures.join('\n')).to.contain('subscriber threw').and.to.contain('subscriber rejected');
        for (const unsubscribe of subscriptions) await unsubscribe();
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });

    it('answers ping', async () => {
      await kv.ping();
    });
  });
}

kvContract('in-process', (clock, log) => new MemoryKvStore(clock, log));
kvContract('redis', (clock, log) => (process.env.REDIS_URL ? new RedisKvStore(process.env.REDIS_URL, `pcs-test-${randomToken(6)}:`, clock, log) : null));
