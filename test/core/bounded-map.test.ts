import { expect } from 'chai';
import { BoundedMap, ExpiringMap } from '../../core/bounded-map';

describe('core: BoundedMap', () => {
  it('drops the oldest entry set when a new key would pass the bound; replacing a key drops nothing', () => {
    const m = new BoundedMap<string, number>(2);
    m.set('a', 1).set('b', 2).set('a', 3);
    expect([...m.entries()]).to.deep.equal([['a', 3], ['b', 2]]);
    m.set('c', 4);
    expect([...m.keys()]).to.deep.equal(['b', 'c']);
    for (let i = 0; i < 1000; i++) m.set(`made-up-${i}`, i);
    expect(m.size).to.equal(2);
  });

  it('holds nothing with a bound of 0 (caching turned off)', () => {
    const m = new BoundedMap<string, number>(0);
    m.set('a', 1);
    expect(m.size).to.equal(0);
    expect(m.get('a')).to.equal(undefined);
  });
});

describe('core: ExpiringMap', () => {
  it('never returns an expired entry, and holds what was set within its TTL rather than the last keys ever set', () => {
    let now = 0;
    const m = new ExpiringMap<string, number | null>(50_000, () => now);
    m.set('neg', null, 5);
    expect(m.get('neg')).to.equal(null);
    for (let i = 0; i < 10_000; i++) m.set(`key-${i}`, i, 30_000);
    expect(m.get('key-0')).to.equal(0);
    now = 31_000;
    expect(m.get('key-1')).to.equal(undefined);
    // Keys used since: each set drops expired entries from the oldest end, so the stale ones go without a lookup.
    for (let i = 0; i < 3000; i++) m.set(`live-${i}`, i, 30_000);
    expect(m.size).to.equal(3000);
    expect(m.get('live-2999')).to.equal(2999);
  });

  it('moves a key set again to the newest end, so the bound drops the key least recently set', () => {
    const m = new ExpiringMap<string, number>(2, () => 0);
    m.set('a', 1, 1000);
    m.set('b', 2, 1000);
    m.set('a', 3, 1000);
    m.set('c', 4, 1000);
    expect([m.get('a'), m.get('b'), m.get('c')]).to.deep.equal([3, undefined, 4]);
  });

  it('deletes by predicate', () => {
    const m = new ExpiringMap<string, { ws: string }>(10, () => 0);
    m.set('k1', { ws: 'a' }, 1000);
    m.set('k2', { ws: 'b' }, 1000);
    m.deleteWhere((_k, v) => v.ws === 'a');
    expect([m.get('k1'), m.get('k2')]).to.deep.equal([undefined, { ws: 'b' }]);
  });

  it('with weights, drops the oldest entries while their weights add up to more than the bound, and keeps none heavier than the bound alone', () => {
    const m = new ExpiringMap<string, number[]>(1000, () => 0, { max: 10, of: (v) => v.length + 1 });
    m.set('a', [1, 2, 3], 1000); // 4
    m.set('b', [1, 2], 1000); // 3
    expect(m.totalWeight).to.equal(7);
    m.set('c', [1, 2, 3, 4], 1000); // 5: 12 > 10, so a goes
    expect([m.get('a'), m.get('b'), m.get('c')]).to.deep.equal([undefined, [1, 2], [1, 2, 3, 4]]);
    expect(m.totalWeight).to.equal(8);
    m.set('b', [1], 1000); // replaced: its old weight is given back
    expect(m.totalWeight).to.equal(7);
    m.set('huge', Array.from({ length: 10 }, (_, i) => i), 1000); // 11 alone is over: not kept, nothing dropped for it
    expect([m.get('huge'), m.size, m.totalWeight]).to.deep.equal([undefined, 2, 7]);
    m.deleteWhere((k) => k === 'c');
    m.delete('b');
    expect([m.size, m.totalWeight]).to.deep.equal([0, 0]);
  });

  it('gives back the weight of entries that expire, read or swept', () => {
    let now = 0;
    const m = new ExpiringMap<string, number[]>(1000, () => now, { max: 100, of: (v) => v.length });
    m.set('old', [1, 2, 3], 10);
    m.set('older-read', [1, 2], 10);
    now = 20;
    expect(m.get('older-read')).to.equal(undefined);
    m.set('new', [1], 10);
    expect([m.size, m.totalWeight]).to.deep.equal([1, 1]);
  });
});
