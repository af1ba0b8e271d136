import { expect } from 'chai';
import { z } from 'zod';
import { formatMoney, money, moneyString } from '../../core/money';
import { decodeCursor, decodeTimeCursor, encodeCursor, listEnvelope, listQuery } from '../../core/pagination';
import { ApiError } from '../../core/errors';

describe('money helper', () => {
  it('adds decimal strings exactly where floats would drift', () => {
    expect(money.add('0.1', '0.2')).to.equal('0.30');
    expect(money.sum(Array.from({ length: 10 }, () => '0.1'))).to.equal('1.00');
    expect(money.mul('19.99', 3)).to.equal('59.97');
  });

  it('converts to and from atomic units (USDC has 6 decimals)', () => {
    expect(money.toAtomic('0.01', 6)).to.equal('10000');
    expect(money.fromAtomic('10000', 6)).to.equal('0.01');
    expect(money.toAtomic('123456789.123456', 6)).to.equal('123456789123456');
  });

  it('applies percentages such as the per-call premium', () => {
    expect(money.addPercent('0.01', 20)).to.equal('0.012');
  });

  it('formats with a minimum of two and a maximum of six decimals by default', () => {
    expect(formatMoney('5')).to.equal('5.00');
    expect(formatMoney('1.23456789')).to.equal('1.234568');
  });

  it('refuses floats in disguise on the wire', () => {
    expect(moneyString.safeParse('12.50').success).to.equal(true);
    expect(moneyString.safeParse('1e3').success).to.equal(false);
    expect(moneyString.safeParse('-1').success).to.equal(false);
    expect(moneyString.safeParse(12.5).success).to.equal(false);
  });
});

describe('list envelope', () => {
  const rows = [1, 2, 3].map((n) => ({ id: `x_${n}`, at: n * 1000 }));

  it('returns data with pagination fields and a cursor only when there is more', () => {
    const page = listEnvelope(rows, 2, (r) => ({ id: r.id }), (r) => ({ sort: r.at, id: r.id }));
    expect(page).to.include({ object: 'list', has_more: true, limit: 2 });
    expect(page.data).to.deep.equal([{ id: 'x_1' }, { id: 'x_2' }]);
    expect(decodeCursor(page.next_cursor as string)).to.deep.equal({ sort: 2000, id: 'x_2' });
    const last = listEnvelope(rows.slice(2), 2, (r) => r.id, (r) => ({ sort: r.at, id: r.id }));
    expect(last).to.include({ has_more: false, next_cursor: null });
  });

  it('refuses a cursor it did not issue with a validation error', () => {
    expect(() => decodeCursor('garbage')).to.throw(ApiError).with.property('code', 'validation_error');
    expect(decodeCursor(encodeCursor({ sort: 'a', id: 'b' }))).to.deep.equal({ sort: 'a', id: 'b' });
  });

  it('refuses a time cursor PostgreSQL timestamptz would not read (year 0, offsets beyond ±15:59) and takes the edges it reads', () => {
    const timeCursor = (at: unknown) => encodeCursor({ sort: at as string, id: 'x' });
    for (const at of ['0000-01-01 00:00:00Z', '0000-12-31T23:59:59+15', '2026-01-01 00:00:00+23', '2026-01-01 00:00:00-20:00', '2026-01-01 00:00:00+16', '2026-01-01 00:00:00+1600', '2026-01-01 00:00:00+05:60', 'garbage', 12345]) {
      expect(() => decodeTimeCursor(timeCursor(at)), String(at)).to.throw(ApiError).with.property('code', 'validation_error');
    }
    for (const at of ['0001-01-01 00:00:00+15:59', '9999-12-31 23:59:59.999999-15:59', '2026-01-01 00:00:00+1559', '2026-01-01 00:00:00-00', '2026-01-01T00:00:00.123456Z', '2026-05-06 07:08:09.5+05:30']) {
      expect(decodeTimeCursor(timeCursor(at)), at).to.deep.equal({ at, id: 'x' });
    }
  });

  it('bounds the page size', () => {
    const q = z.object(listQuery);
    expect(q.parse({}).limit).to.equal(20);
    expect(q.safeParse({ limit: '500' }).success).to.equal(false);
  });
});
