import { expect } from 'chai';
import { systemClock } from '../../../core/clock';
import { ApiError } from '../../../core/errors';
import { randomToken } from '../../../core/ids';
import { KvUnavailableError, RedisKvStore } from '../../../core/kv';
import { createLogger } from '../../../core/logger';
import { KeyedTurns } from '../../../plugins/pricing/services/keyed-turns';

describe('pricing: one call at a time per Idempotency-Key on an instance (KeyedTurns)', () => {
  it('lets a second call with the key in only once the first gives its turn back, one at a time; other keys do not wait', async () => {
    const turns = new KeyedTurns();
    const order: string[] = [];
    const first = await turns.take('ws\na', 5_000);
    const second = turns.take('ws\na', 5_000).then((done) => (order.push('second'), done));
    const third = turns.take('ws\na', 5_000).then((done) => (order.push('third'), done));
    const other = await turns.take('ws\nb', 5_000);
    order.push('other');
    other();
    await new Promise((r) => setTimeout(r, 20));
    expect(order).to.deep.equal(['other']);
    first();
    const giveBack = await Promise.race([second, third]);
    expect(order).to.have.length(2);
    giveBack();
    (await second)();
    (await third)();
    expect(order.slice(1).sort()).to.deep.equal(['second', 'third']);
  });

  it('stops waiting after waitMs and goes on beside the call in flight (the claim keeps the charge single)', async () => {
    const turns = new KeyedTurns();
    const held = await turns.take('ws\nk', 5_000);
    const t = Date.now();
    const late = await turns.take('ws\nk', 60);
    expect(Date.now() - t).to.be.within(50, 1_000);
    late();
    held();
    // The key is free again: the next call takes its turn at once.
    const t2 = Date.now();
    (await turns.take('ws\nk', 5_000))();
    expect(Date.now() - t2).to.be.below(50);
  });

  it('asks for the caller-left signal only when the call has to wait (a free key costs no listener)', async () => {
    const turns = new KeyedTurns();
    let asked = 0;
    const signal = () => (asked++, new AbortController().signal);
    const first = await turns.take('ws\nfree', 5_000, signal);
    expect(asked).to.equal(0);
    const second = turns.take('ws\nfree', 5_000, signal);
    first();
    (await second)();
    expect(asked).to.equal(1);
  });

  it('ends the wait of a call whose caller left with a 503 at once, and the waiter never takes the turn', async () => {
    const turns = new KeyedTurns();
    const held = await turns.take('ws\nk', 5_000);
    const left = new AbortController();
    const t = Date.now();
    const waiting = turns.take('ws\nk', 5_000, () => left.signal).then(
      () => null,
      (err: unknown) => err,
    );
    setTimeout(() => left.abort(), 30);
    const err = await waiting;
    expect(Date.now() - t).to.be.below(1_000);
    expect(err).to.be.instanceOf(ApiError);
    expect((err as ApiError).status).to.equal(503);
    expect((err as ApiError).message).to.contain("waited for its Idempotency-Key's turn");
    // A caller already gone does not queue either.
    const gone = await turns.take('ws\nk', 5_000, () => left.signal).catch((e: unknown) => e);
    expect(gone).to.be.instanceOf(ApiError);
    held();
    // The key is free: the next call takes its turn at once (no left waiter holds it).
    const t2 = Date.now();
    (await turns.take('ws\nk', 5_000))();
    expect(Date.now() - t2).to.be.below(50);
  });
});

/** A store whose next `failNext` SET NX are carried out by Redis but answer as if Redis had not answered (a stall). */
class LostAnswers extends RedisKvStore {
  failNext = 0;

  override async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    const set = await super.setIfAbsent(key, value, ttlMs);
    if (this.failNext > 0) {
      this.failNext--;
      throw new KvUnavailableError(new Error('Command timed out'));
    }
    return set;
  }
}

describe('pricing: one call at a time per Idempotency-Key across instances sharing Redis (KeyedTurns lease)', () => {
  const log = createLogger('silent');
  let a: RedisKvStore | null = null;
  let b: RedisKvStore | null = null;

  before(async function () {
    const url = process.env.REDIS_URL;
    if (!url) {
      if (process.env.CI) throw new Error('REDIS_URL is not set: CI must run the cross-instance turn test.');
      return this.skip();
    }
    const prefix = `pcs-turns-${randomToken(6)}:`;
    // Two stores on one Redis: what two instances of the service hold.
    a = new RedisKvStore(url, prefix, systemClock, log, { commandTimeoutMs: 1000 });
    b = new RedisKvStore(url, prefix, systemClock, log, { commandTimeoutMs: 1000 });
    expect(await a.connected(5000)).to.equal(true);
    expect(await b.connected(5000)).to.equal(true);
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  it("a call with the key on another instance waits for the first's turn to end, and at most waitMs", async () => {
    const here = new KeyedTurns(a as RedisKvStore);
    const there = new KeyedTurns(b as RedisKvStore);
    const first = await here.take('ws\nshared', 5_000);
    let entered = false;
    const second = there.take('ws\nshared', 5_000).then((done) => {
      entered = true;
      return done;
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(entered, 'the other instance waited').to.equal(false);
    first();
    (await second)();
    expect(entered).to.equal(true);

    // Held and never given back (its instance died): the other goes on beside it after its wait.
    await here.take('ws\nabandoned', 5_000);
    const t = Date.now();
    (await there.take('ws\nabandoned', 200))();
    expect(Date.now() - t).to.be.within(150, 2_000);
  });

  it("a call whose caller left stops polling the other instance's lease with a 503, and takes no lease", async () => {
    const here = new KeyedTurns(a as RedisKvStore);
    const there = new KeyedTurns(b as RedisKvStore);
    const first = await here.take('ws\nleft', 5_000);
    const left = new AbortController();
    const t = Date.now();
    const waiting = there.take('ws\nleft', 5_000, () => left.signal).catch((err: unknown) => err);
    setTimeout(() => left.abort(), 100);
    const err = await waiting;
    expect(Date.now() - t).to.be.below(1_000);
    expect(err).to.be.instanceOf(ApiError);
    expect((err as ApiError).status).to.equal(503);
    first();
    // Nobody holds the lease now: a third call, on either instance, takes it at once.
    const t2 = Date.now();
    (await there.take('ws\nleft', 5_000))();
    expect(Date.now() - t2).to.be.below(200);
  });

  it('a lease whose answer was lost is taken back and the call goes on, and a waiter whose poll fails goes on too: neither answers 503', async () => {
    const url = process.env.REDIS_URL as string;
    const prefix = `pcs-turns-lost-${randomToken(6)}:`;
    const lossy = new LostAnswers(url, prefix, systemClock, log, { commandTimeoutMs: 1000 });
    const other = new RedisKvStore(url, prefix, systemClock, log, { commandTimeoutMs: 1000 });
    try {
      expect(await lossy.connected(5000)).to.equal(true);
      expect(await other.connected(5000)).to.equal(true);
      lossy.failNext = 1;
      (await new KeyedTurns(lossy).take('ws\nlost', 3_000))();
      // The SET was carried out, its answer lost: taken back, so another instance does not wait out its life.
      let t = Date.now();
      (await new KeyedTurns(other).take('ws\nlost', 3_000))();
      expect(Date.now() - t, 'the lost lease was given back').to.be.below(1_000);

      const holder = await new KeyedTurns(other).take('ws\nheld', 5_000);
      lossy.failNext = 1;
      t = Date.now();
      (await new KeyedTurns(lossy).take('ws\nheld', 5_000))();
      expect(Date.now() - t, 'the waiter went on when its poll failed').to.be.below(1_000);
      holder();
    } finally {
      await lossy.close();
      await other.close();
    }
  });
});
