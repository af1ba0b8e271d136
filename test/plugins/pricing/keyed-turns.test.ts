import { expect } from 'chai';
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
});
