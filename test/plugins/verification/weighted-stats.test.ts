import { expect } from 'chai';
import { dec } from '../../../core/money';
import { halfOrMore, overHalf, restsOnOneWorkspace, robustSigma, sourceMedians, weightedMedianDec, withoutCopies } from '../../../plugins/verification/services/weighted-stats';

const w = (value: string, weight = 1) => ({ value: dec(value), weight });
const n = (value: number, weight = 1) => ({ value, weight });

describe('verification: weighted order statistics', () => {
  it('the weighted median of equal weights is the usual median (mean of the middle two for an even count)', () => {
    expect(weightedMedianDec([w('10.10'), w('9.90'), w('10.00')]).toString()).to.equal('10');
    expect(weightedMedianDec([w('10.10'), w('9.90'), w('10.00'), w('10.40')]).toString()).to.equal('10.05');
  });

  it('a heavy item pulls the weighted median onto itself, and a weight landing exactly on half takes the mean', () => {
    expect(weightedMedianDec([w('1', 1), w('2', 1), w('9', 3)]).toString()).to.equal('9');
    expect(weightedMedianDec([w('1', 3), w('2', 1), w('9', 2)]).toString()).to.equal('1.5');
    expect(weightedMedianDec([w('7.25', 0.4)]).toString()).to.equal('7.25');
  });

  it('a two-quote source\'s median is their mean when time decay weighs them a hair apart: 19.80 an hour old and 20.20 five hours old give 20.00', () => {
    const HOUR = 3_600_000;
    const quote = (id: string, amount: string, hours: number) => ({ id, workspaceId: 'ws_scan', source: 'scan', value: dec(amount), observedAt: -hours * HOUR, age: hours * HOUR });
    const stats = sourceMedians([quote('1', '19.80', 1), quote('2', '20.20', 5)], 30 * 24 * HOUR);
    expect(stats.sources[0]?.median.toString()).to.equal('20');
    expect(stats.reference.toString()).to.equal('20');
    // A quote a month fresher than the other still decides: twice the weight is no tie.
    expect(sourceMedians([quote('1', '19.80', 1), quote('2', '20.20', 30 * 24)], 30 * 24 * HOUR).sources[0]?.median.toString()).to.equal('19.8');
    // Within a percent of the total of one half is a tie; beyond it, the heavier side decides.
    expect(weightedMedianDec([w('1', 0.509), w('3', 0.491)]).toString()).to.equal('2');
    expect(weightedMedianDec([w('1', 0.52), w('3', 0.48)]).toString()).to.equal('1');
    expect(weightedMedianDec([w('1', 0.48), w('3', 0.52)]).toString()).to.equal('3');
  });

  it('refuses the median of nothing', () => {
    expect(() => weightedMedianDec([])).to.throw(RangeError, /nothing/);
  });

  it('robust spread: MAD first, then IQR when more than half sit on the centre, then mean absolute deviation, else none', () => {
    const mad = robustSigma([n(0), n(1), n(2), n(3), n(4)], 2);
    expect(mad.estimator).to.equal('mad');
    expect(mad.sigma).to.be.closeTo(1.4826, 1e-9);
    // Four of six on the centre: the MAD is 0, the quartiles are 0 and 1.
    const iqr = robustSigma([n(0), n(0), n(0), n(0), n(1), n(2)], 0);
    expect(iqr.estimator).to.equal('iqr');
    expect(iqr.sigma).to.be.closeTo(1 / 1.349, 1e-9);
    // Nearly all weight on the centre: MAD and IQR are 0, the weighted mean deviation is not.
    const meanAd = robustSigma([n(0, 98), n(1, 1), n(-1, 1)], 0);
    expect(meanAd.estimator).to.equal('mean_absolute_deviation');
    expect(meanAd.sigma).to.be.closeTo(1.2533 * 0.02, 1e-9);
    expect(robustSigma([n(5), n(5)], 5)).to.deep.equal({ sigma: 0, estimator: 'none' });
  });

  describe('copies and the heaviest workspace', () => {
    const DAY = 86_400_000;
    const o = (id: string, workspaceId: string, source: string, amount: string, observedAt: number) => ({ id, workspaceId, source, value: dec(amount), observedAt, age: 10 * DAY - observedAt });

    it('keeps one observation per workspace and amount, the freshest whatever the row order or label, in input order', () => {
      const rows = [o('1', 'ws_a', 'x', '4.50', 1), o('2', 'ws_a', 'y', '4.5', 3), o('3', 'ws_b', 'x', '4.50', 2), o('4', 'ws_a', 'x', '4.50', 2), o('5', 'ws_a', 'x', '4.60', 1)];
      expect(withoutCopies(rows).map((r) => r.id)).to.deep.equal(['2', '3', '5']);
      expect(withoutCopies([...rows].reverse()).map((r) => r.id)).to.deep.equal(['5', '3', '2']);
    });

    it('gives the reference without the heaviest workspace\'s sources, and says when the reference rests on that workspace', () => {
      const a = ['18', '20', '21', '23', '22', '25'].map((v, i) => o(`a${i}`, 'ws_a', ['shelf', 'web', 'kiosk'][Math.floor(i / 2)] as string, v, 9 * DAY));
      const stats = sourceMedians([...a, o('x', 'ws_x', 'feed', '100', 9 * DAY)], 30 * DAY);
      expect(stats.heaviest).to.include({ workspaceId: 'ws_a', observations: 6 });
      expect(stats.reference.toString()).to.equal('61.75');
      expect(stats.withoutHeaviest?.toString()).to.equal('100');
      expect(restsOnOneWorkspace(stats, 0.05)).to.deep.include({ withoutIt: stats.withoutHeaviest, reference: stats.reference });
      // Alone, there is nothing to compare with.
      expect(sourceMedians(a, 30 * DAY).withoutHeaviest).to.equal(null);
      // A heaviest workspace that moves the reference by less than the minimum half-width does not count as resting on it.
      const near = sourceMedians([...a, o('x', 'ws_x', 'feed', '22.5', 9 * DAY)], 30 * DAY);
      expect(restsOnOneWorkspace(near, 0.05)).to.equal(null);
    });

    it('lists sources tied at the share shown by label, whichever is a second fresher', () => {
      const at = (freshest: string) =>
        sourceMedians(
          ['site', 'feed', 'shelf-scan'].map((label, i) => o(label, `ws_${label}`, label, '20', 9 * DAY + (label === freshest ? 1000 : i))),
          30 * DAY,
        ).sources.map((x) => x.label);
      for (const freshest of ['site', 'feed', 'shelf-scan']) expect(at(freshest), freshest).to.deep.equal(['feed', 'shelf-scan', 'site']);
    });

    it('a share of exactly one half, up to rounding, is not over half', () => {
      expect(overHalf(0.5)).to.equal(false);
      expect(overHalf(0.5 + 1e-12)).to.equal(false);
      expect(overHalf(0.51)).to.equal(true);
    });

    it('the heaviest of two workspaces always has half or more: a tie, and a tie tilted by time, count', () => {
      expect(halfOrMore(0.5)).to.equal(true);
      expect(halfOrMore(0.5 - 1e-8)).to.equal(true);
      expect(halfOrMore(0.49)).to.equal(false);
    });
  });
});
