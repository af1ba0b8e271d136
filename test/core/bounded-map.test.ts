import { expect } from 'chai';
import { BoundedMap } from '../../core/bounded-map';

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
