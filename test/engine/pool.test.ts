import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { Metrics } from '../../core/metrics';
import { PoolBusyError, PoolTimeoutError, PricingPool } from '../../engine/pool';
import { FIXTURE_MODULE, harness } from './harness';

/** A marker file the test-mark fixture writes when it runs (engine/worker runs it in another thread). */
function marker(): { name: string; file: string; cleanup: () => void } {
  const name = `pcs-mark-${randomUUID()}`;
  const file = path.join(tmpdir(), name);
  return { name, file, cleanup: () => rmSync(file, { force: true }) };
}

describe('engine: pricing pool timeouts', function () {
  this.timeout(20_000);
  let pool: PricingPool;
  afterEach(() => pool.close());

  const make = (tasksPerWorker: number, threads = 1, maxQueue = 100) => new PricingPool({ threads, tasksPerWorker, maxQueue, maxOldGenerationSizeMb: 32, extraModules: [FIXTURE_MODULE] }, new Metrics());
  /** A pool whose worker has started: a thread's start-up, slow on a busy machine, is then no part of a time measured. */
  const warmPool = async (tasksPerWorker: number) => {
    const p = make(tasksPerWorker);
    expect((await p.run('test-ok', {}, 10_000)).ok).to.equal(true);
    return p;
  };

  it('a hanging task times out on time, its worker is replaced, and the pool keeps answering', async () => {
    pool = await warmPool(1);
    const started = performance.now();
    const err = await pool.run('test-hang', {}, 150).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(PoolTimeoutError);
    expect(performance.now() - started).to.be.below(1000);
    const answer = await pool.run('test-ok', {}, 2000);
    expect(answer.ok).to.equal(true);
  });

  it('a task whose time runs out while it waits for a worker is never run, and answers that the pool was busy (not a timeout of the function)', async () => {
    pool = make(1);
    const mark = marker();
    try {
      // The slow task holds the only worker; the queued one runs out of time behind it.
      const slow = pool.run('test-slow', { sleep_ms: 300 }, 2000);
      const queued = await pool.run('test-mark', { marker: mark.name }, 50).catch((e: unknown) => e);
      expect(queued).to.be.instanceOf(PoolBusyError);
      expect(queued).to.not.be.instanceOf(PoolTimeoutError);
      expect(queued).to.include({ reason: 'not_started', limit: 50, message: 'No pricing worker was free to start the call within 50 ms.' });
      expect((await slow).ok).to.equal(true);
      // The worker was not terminated (the slow task answered) and the cancelled task was skipped.
      expect((await pool.run('test-ok', {}, 2000)).ok).to.equal(true);
      expect(existsSync(mark.file), 'the cancelled task ran').to.equal(false);
    } finally {
      mark.cleanup();
    }
  });

  it('a task already handed to its worker in a batch, whose time runs out before the worker reaches it, is skipped by the worker (never run)', async () => {
    pool = await warmPool(1);
    const mark = marker();
    const control = marker();
    try {
      // The slow call holds the only worker, so the next ones leave together in one batch behind it: the worker is
      // blocked in test-spin while the marked call's time runs out, then reaches it in the batch it already holds.
      const slow = pool.run('test-slow', { sleep_ms: 100 }, 5000);
      const spin = pool.run('test-spin', { spin_ms: 500 }, 5000);
      const cancelled = pool.run('test-mark', { marker: mark.name }, 200).catch((e: unknown) => e);
      // A marked call with time enough, in the same batch: it runs, so the fixture's mark is seen when a call runs.
      const ran = pool.run('test-mark', { marker: control.name }, 5000);
      expect((await slow).ok).to.equal(true);
      const err = await cancelled;
      expect(err).to.be.instanceOf(PoolBusyError);
      expect(err).to.include({ reason: 'not_started', limit: 200 });
      expect((await spin).ok).to.equal(true);
      expect((await ran).ok).to.equal(true);
      expect(existsSync(control.file), 'the call with time left ran').to.equal(true);
      expect(existsSync(mark.file), 'the cancelled call ran').to.equal(false);
    } finally {
      mark.cleanup();
      control.cleanup();
    }
  });

  it('a call that waited for a worker gets its full time from its start: it answers past its timeout counted from the submission', async () => {
    pool = make(1);
    // A started worker: its start-up (slow on a busy machine) is not part of the wait measured here.
    expect((await pool.run('test-ok', {}, 10_000)).ok).to.equal(true);
    const held = pool.run('test-slow', { sleep_ms: 200 }, 5000);
    const started = performance.now();
    // Waits about 200 ms, then runs 200 ms: 400 ms after submission, within 300 ms of its own start.
    const late = await pool.run('test-slow', { sleep_ms: 200, test_price: '7.00' }, 300);
    expect(performance.now() - started).to.be.above(300);
    expect(late.ok && late.result.price).to.equal('7.00');
    await held;
  });

  it('a wall-clock step while a call waits does not cut its time: the start is read on the monotonic clock', async () => {
    pool = make(1);
    expect((await pool.run('test-ok', {}, 10_000)).ok).to.equal(true);
    const held = pool.run('test-slow', { sleep_ms: 200 }, 5000);
    const realNow = Date.now;
    // The wall clock of this thread jumps an hour ahead (NTP, a resumed VM) while the call waits.
    const stepped = setTimeout(() => {
      Date.now = () => realNow() + 3_600_000;
    }, 50);
    try {
      const late = await pool.run('test-slow', { sleep_ms: 200, test_price: '7.00' }, 300);
      expect(late.ok && late.result.price).to.equal('7.00');
    } finally {
      clearTimeout(stepped);
      Date.now = realNow;
    }
    await held;
  });

  it('a call that waited for a worker and then runs over its own time is timed out, its time counted from its start', async () => {
    pool = make(1);
    // A started worker: its start-up (slow on a busy machine) is not part of the wait measured here.
    expect((await pool.run('test-ok', {}, 10_000)).ok).to.equal(true);
    const held = pool.run('test-slow', { sleep_ms: 200 }, 5000);
    const started = performance.now();
    const err = await pool.run('test-hang', {}, 300).catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(err).to.be.instanceOf(PoolTimeoutError);
    // About 200 ms of waiting plus its own 300 ms.
    expect(took).to.be.within(480, 1500);
    await held;
    expect((await pool.run('test-ok', {}, 2000)).ok).to.equal(true);
  });

  it('a call beyond the queue limit is refused at once as busy; the queued ones still answer', async () => {
    pool = make(1, 1, 2);
    // One call holds the worker, two wait: the queue is full.
    const held = [pool.run('test-slow', { sleep_ms: 200 }, 5000), pool.run('test-ok', {}, 5000), pool.run('test-ok', {}, 5000)];
    const started = performance.now();
    const refused = await pool.run('test-ok', {}, 5000).catch((e: unknown) => e);
    expect(performance.now() - started).to.be.below(50);
    expect(refused).to.be.instanceOf(PoolBusyError);
    expect(refused).to.include({ reason: 'queue_full', limit: 2, message: "The pricing pool's queue is full (2 calls waiting)." });
    expect((await Promise.all(held)).map((a) => a.ok)).to.deep.equal([true, true, true]);
  });

  it('with several tasks per worker, tasks queued behind a hanging one on the terminated worker run again elsewhere', async () => {
    pool = await warmPool(4);
    const hang = pool.run('test-hang', {}, 200).catch((e: unknown) => e);
    const others = Array.from({ length: 3 }, (_, i) => pool.run('test-ok', { test_price: `${i + 1}.00` }, 5000));
    expect(await hang).to.be.instanceOf(PoolTimeoutError);
    const answers = await Promise.all(others);
    expect(answers.map((a) => (a.ok ? a.result.price : a.kind))).to.deep.equal(['1.00', '2.00', '3.00']);
  });

  it('calls batched with a hanging one are run again on the replacement worker and answer', async () => {
    pool = await warmPool(1);
    // The slow call holds the only worker, so the next four leave together in one batch behind it.
    const slow = pool.run('test-slow', { sleep_ms: 100 }, 5000);
    const hang = pool.run('test-hang', {}, 400).catch((e: unknown) => e);
    // Their own limit covers the hang (400 ms) plus starting a replacement worker, which takes over 200 ms when the cores are busy.
    const others = Array.from({ length: 3 }, (_, i) => pool.run('test-ok', { test_price: `${i + 1}.00` }, 3000));
    expect((await slow).ok).to.equal(true);
    expect(await hang).to.be.instanceOf(PoolTimeoutError);
    const answers = await Promise.all(others);
    expect(answers.map((a) => (a.ok ? a.result.price : a.kind))).to.deep.equal(['1.00', '2.00', '3.00']);
  });

  it('a call that answered but whose answer is held by its batch behind a hanging call is refused as busy, not timed out against its function', async () => {
    pool = await warmPool(1);
    // The slow call holds the only worker, so the next two leave together in one batch: the quick one answers, then the other hangs.
    const slow = pool.run('test-slow', { sleep_ms: 100 }, 5000);
    const quick = pool.run('test-ok', {}, 400).catch((e: unknown) => e);
    const hang = pool.run('test-hang', {}, 400).catch((e: unknown) => e);
    expect((await slow).ok).to.equal(true);
    const held = await quick;
    expect(held).to.be.instanceOf(PoolBusyError);
    expect(held).to.not.be.instanceOf(PoolTimeoutError);
    expect(held).to.include({ reason: 'answer_held', limit: 400 });
    expect(await hang).to.be.instanceOf(PoolTimeoutError);
    expect((await pool.run('test-ok', {}, 2000)).ok).to.equal(true);
  });

  it('a call that exhausts its worker\'s heap fails alone; the calls batched with it answer', async () => {
    pool = make(1);
    const slow = pool.run('test-slow', { sleep_ms: 100 }, 5000);
    const oom = pool.run('test-oom', {}, 10_000).catch((e: unknown) => e);
    const other = pool.run('test-ok', {}, 10_000);
    await slow;
    const err = await oom;
    expect(err).to.be.instanceOf(Error);
    expect(err).to.not.be.instanceOf(PoolTimeoutError);
    expect((await other).ok).to.equal(true);
  });

  it('a method that throws fails alone with its message', async () => {
    pool = make(1);
    const [thrown, fine] = await Promise.all([pool.run('test-throw', {}, 2000).catch((e: unknown) => e), pool.run('test-ok', {}, 2000)]);
    expect((thrown as Error).message).to.equal('test-throw failed on purpose');
    expect(fine.ok).to.equal(true);
  });
});

describe('engine: pricing pool size', function () {
  this.timeout(20_000);

  it('with threads unset (0) the pool has one worker thread per core (availableParallelism), in pricing_pool_threads', async () => {
    const h = await harness({ engine: { threads: 0 } });
    try {
      const data = await h.metrics.registry.getSingleMetric('pricing_pool_threads')?.get();
      expect(data?.values.map((v) => v.value)).to.deep.equal([availableParallelism()]);
    } finally {
      await h.close();
    }
  });

  it('with threads set the pool has that many worker threads', async () => {
    const h = await harness({ engine: { threads: 3 } });
    try {
      const data = await h.metrics.registry.getSingleMetric('pricing_pool_threads')?.get();
      expect(data?.values.map((v) => v.value)).to.deep.equal([3]);
    } finally {
      await h.close();
    }
  });
});
