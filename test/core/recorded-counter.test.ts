import { expect } from 'chai';
import { ManualClock } from '../../core/clock';
import { MemoryKvStore } from '../../core/kv';
import type { KvStore } from '../../core/kv';
import { incrFromRecord, uncount } from '../../core/kv/recorded-counter';

/** The store, with the calls made to it written down (each is one round trip on Redis). */
function counting(kv: KvStore): { kv: KvStore; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(kv, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { kv: proxy, calls };
}

describe('counters kept beside a record (incrFromRecord, uncount)', () => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));

  it('counts with one store call while the counter exists, and reads no record', async () => {
    const { kv, calls } = counting(new MemoryKvStore(clock));
    let reads = 0;
    const recorded = async () => {
      reads++;
      return 7;
    };
    expect(await incrFromRecord(kv, 'day', 1, 60_000, recorded)).to.equal(8);
    expect(reads).to.equal(1);
    calls.length = 0;
    expect(await incrFromRecord(kv, 'day', 1, 60_000, recorded)).to.equal(9);
    expect(calls).to.deep.equal(['incrIfPresent']);
    expect(reads).to.equal(1);
  });

  it('starts a lost counter from the record, with the expiry given', async () => {
    const kv = new MemoryKvStore(clock);
    expect(await incrFromRecord(kv, 'lost', 2, 1000, async () => 5)).to.equal(7);
    clock.advance(1001);
    expect(await kv.get('lost')).to.equal(null);
  });

  it('uncount takes back from a counter that exists, in one store call, and creates none for a lost one', async () => {
    const { kv, calls } = counting(new MemoryKvStore(clock));
    await incrFromRecord(kv, 'back', 1, 60_000, async () => 3);
    calls.length = 0;
    await uncount(kv, 'back', 1);
    expect(calls).to.deep.equal(['incrIfPresent']);
    expect(await kv.get('back')).to.equal('3');
    await uncount(kv, 'gone', 1);
    expect(await kv.get('gone')).to.equal(null);
  });
});
