import { expect } from 'chai';
import { ID_PATTERN, newId, newSortableId } from '../../core/ids';

describe('ids', () => {
  it('makes prefixed random ids of the documented shape', () => {
    const ids = new Set(Array.from({ length: 2000 }, () => newId('ws')));
    expect(ids.size).to.equal(2000);
    for (const id of ids) expect(id).to.match(ID_PATTERN);
  });

  it('makes sortable ids of the same shape whose byte order follows creation time', () => {
    const t0 = Date.UTC(2026, 10, 24, 1, 2, 3, 4);
    const times = [0, 1, 57, 58, 59, 3363, 86_400_000, t0 - 1, t0, t0 + 1, Date.UTC(2040, 0, 1), Date.UTC(6000, 0, 1)];
    const ids = times.map((t) => newSortableId('use', t));
    for (const id of ids) expect(id).to.match(ID_PATTERN);
    // Plain code-unit comparison, as PostgreSQL's C collation and Array.prototype.sort use.
    expect([...ids].sort()).to.deep.equal(ids);
    expect(newSortableId('use', t0).slice(0, 12)).to.equal(newSortableId('use', t0).slice(0, 12));
  });

  it('keeps sortable ids made in the same millisecond distinct', () => {
    const ids = new Set(Array.from({ length: 5000 }, () => newSortableId('use', 1_700_000_000_000)));
    expect(ids.size).to.equal(5000);
  });
});
