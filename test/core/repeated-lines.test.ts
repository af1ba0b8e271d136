import { expect } from 'chai';
import { RepeatedLines } from '../../core/repeated-lines';

describe('core: repeated log lines', () => {
  it('lets the first line of a kind through, holds back the rest within the interval, and counts them into the next', () => {
    const lines = new RepeatedLines(1000);
    expect(lines.due('refused', 0)).to.deep.equal({ heldBack: 0, heldBackUnits: 0, first: true });
    expect(lines.due('refused', 10, 7)).to.equal(null);
    expect(lines.due('refused', 999, 5)).to.equal(null);
    expect(lines.due('timeout', 999), 'another kind has its own interval').to.deep.equal({ heldBack: 0, heldBackUnits: 0, first: true });
    expect(lines.due('refused', 1000)).to.deep.equal({ heldBack: 2, heldBackUnits: 12, first: false });
    expect(lines.due('refused', 1500)).to.equal(null);
  });

  it('lets every line through with an interval of 0, and starts over after clear', () => {
    const every = new RepeatedLines(0);
    expect(every.due('x', 5)).to.deep.equal({ heldBack: 0, heldBackUnits: 0, first: true });
    expect(every.due('x', 5)).to.deep.equal({ heldBack: 0, heldBackUnits: 0, first: false });
    const lines = new RepeatedLines(1000);
    lines.due('x', 0);
    expect(lines.any).to.equal(true);
    lines.clear();
    expect(lines.any).to.equal(false);
    expect(lines.due('x', 1)).to.deep.equal({ heldBack: 0, heldBackUnits: 0, first: true });
  });

  it('forgets the oldest kind past its bound, so made-up reasons cannot grow it', () => {
    const lines = new RepeatedLines(1000, 2);
    lines.due('a', 0);
    lines.due('b', 0);
    lines.due('c', 0);
    expect(lines.due('a', 1), 'forgotten: due again').to.deep.equal({ heldBack: 0, heldBackUnits: 0, first: true });
    expect(lines.due('c', 1)).to.equal(null);
  });
});
