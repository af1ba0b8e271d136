import { expect } from 'chai';
import { systemClock } from '../../core/clock';
import { countDaily } from '../../core/daily-quota';
import type { DailyQuota } from '../../core/daily-quota';
import type { ApiError } from '../../core/errors';
import { MemoryKvStore } from '../../core/kv';

describe('core: countDaily (registrations, sign-ups)', () => {
  const quota = (counter: string, perAddressPerDay: number, overallPerDay: number): DailyQuota => ({
    what: 'sign-up',
    counter,
    address: '203.0.113.9',
    perAddressPerDay,
    overallPerDay,
    recordedForAddress: async () => 0,
    recordedOverall: async () => 0,
    addressHint: () => 'later',
    overallHint: () => 'later',
  });
  const refused = (p: Promise<unknown>) => p.then(() => null, (err: unknown) => err as ApiError);

  it('takes a refused one back, so a place released after it (a sign-up that created nothing) is free again', async () => {
    const kv = new MemoryKvStore(systemClock);
    const now = Date.now();
    const q = quota('t1', 2, 100);
    await countDaily(kv, now, q);
    const failing = await countDaily(kv, now, q);
    // Refused while the failing one still holds its place.
    expect((await refused(countDaily(kv, now, q)))?.code).to.equal('daily_quota_exceeded');
    await failing.release();
    const next = await countDaily(kv, now, q);
    expect(next.remainingForAddress).to.equal(0);
    await kv.close();
  });

  it('takes one refused by the overall limit back from both counters', async () => {
    const kv = new MemoryKvStore(systemClock);
    const now = Date.now();
    const q = quota('t2', 10, 1);
    const first = await countDaily(kv, now, q);
    expect((await refused(countDaily(kv, now, { ...q, address: '203.0.113.10' })))?.message).to.match(/of the service/);
    await first.release();
    expect((await countDaily(kv, now, { ...q, address: '203.0.113.10' })).remainingForAddress).to.equal(9);
    await kv.close();
  });
});
