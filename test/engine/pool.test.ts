import { expect } from 'chai';
import { Metrics } from '../../core/metrics';
import { PoolTimeoutError, PricingPool } from '../../engine/pool';
import { FIXTURE_MODULE } from './harness';

describe('engine: pricing pool timeouts', function () {
  this.timeout(20_000);
  let pool: PricingPool;
  afterEach(() => pool.close());

  const make = (tasksPerWorker: number, threads = 1) => new PricingPool({ threads, tasksPerWorker, maxQueue: 100, maxOldGenerationSizeMb: 32, extraModules: [FIXTURE_MODULE] }, new Metrics());

  it('a hanging task times out on time, its worker is replaced, and the pool keeps answering', async () => {
    pool = make(1);
    const started = performance.now();
    const err = await pool.run('test-hang', {}, 150).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(PoolTimeoutError);
    expect(performance.now() - started).to.be.below(1000);
    const answer = await pool.run('test-ok', {}, 2000);
    expect(answer.ok).to.equal(true);
  });

  it('a task whose time runs out while it waits for a worker is never run, and answers a timeout', async () => {
    pool = make(1);
    // The slow task holds the only worker; the queued one runs out of time behind it.
    const slow = pool.run('test-slow', { sleep_ms: 300 }, 2000);
    const queued = await pool.run('test-throw', {}, 50).catch((e: unknown) => e);
    expect(queued).to.be.instanceOf(PoolTimeoutError);
    expect((await slow).ok).to.equal(true);
    // The worker was not terminated (the slow task answered) and the cancelled task was skipped.
    expect((await pool.run('test-ok', {}, 2000)).ok).to.equal(true);
  });

  it('with several tasks per worker, tasks queued behind a hanging one on the terminated worker run again elsewhere', async () => {
    pool = make(4);
    const hang = pool.run('test-hang', {}, 200).catch((e: unknown) => e);
    const others = Array.from({ length: 3 }, (_, i) => pool.run('test-ok', { test_price: `${i + 1}.00` }, 5000));
    expect(await hang).to.be.instanceOf(PoolTimeoutError);
    const answers = await Promise.all(others);
    expect(answers.map((a) => (a.ok ? a.result.price : a.kind))).to.deep.equal(['1.00', '2.00', '3.00']);
  });

  it('calls batched with a hanging one are run again on the replacement worker and answer', async () => {
    pool = make(1);
    // The slow call holds the only worker, so the next four leave together in one batch behind it.
    const slow = pool.run('test-slow', { sleep_ms: 100 }, 5000);
    const hang = pool.run('test-hang', {}, 400).catch((e: unknown) => e);
    const others = Array.from({ length: 3 }, (_, i) => pool.run('test-ok', { test_price: `${i + 1}.00` }, 600));
    expect((await slow).ok).to.equal(true);
    expect(await hang).to.be.instanceOf(PoolTimeoutError);
    const answers = await Promise.all(others);
    expect(answers.map((a) => (a.ok ? a.result.price : a.kind))).to.deep.equal(['1.00', '2.00', '3.00']);
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
