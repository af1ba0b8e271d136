import { expect } from 'chai';
import { writeMayHaveHappened } from '../../core/http/middleware';

/** Sequelize's error for a statement that broke: the driver's error as parent, the statement's text on both. */
function broken(sql: string, message = 'Query read timeout'): Error {
  const parent = Object.assign(new Error(message), { sql });
  return Object.assign(new Error(message), { name: 'SequelizeDatabaseError', parent, original: parent, sql });
}

describe('core: whether a 503 must say a write may have happened', () => {
  it('a COMMIT or an INSERT left without an answer on a write request: it may have happened', () => {
    expect(writeMayHaveHappened({ method: 'POST' }, broken('COMMIT;'))).to.equal(true);
    expect(writeMayHaveHappened({ method: 'PATCH' }, broken('INSERT INTO routing_policies VALUES ($1)', 'Connection terminated unexpectedly'))).to.equal(true);
  });

  it('a SELECT that broke changed nothing, whatever the request; nor did a read request, or a statement never sent', () => {
    expect(writeMayHaveHappened({ method: 'POST' }, broken('SELECT count(*) FROM usage_events'))).to.equal(false);
    expect(writeMayHaveHappened({ method: 'POST' }, broken('  select 1'))).to.equal(false);
    expect(writeMayHaveHappened({ method: 'GET' }, broken('COMMIT;'))).to.equal(false);
    expect(writeMayHaveHappened({ method: 'POST' }, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).to.equal(false);
    // PostgreSQL's own statement timeout answered: nothing committed.
    expect(writeMayHaveHappened({ method: 'POST' }, Object.assign(broken('UPDATE x SET y = 1', 'canceling statement due to statement timeout'), { parent: Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }) }))).to.equal(false);
  });
});
