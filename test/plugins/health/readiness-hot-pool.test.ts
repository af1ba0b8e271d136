import { expect } from 'chai';
import { Client } from 'pg';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

type Body = Record<string, any>;

/**
 * A database that serves the sessions already open and refuses new ones (PostgreSQL shutting down in smart mode, a
 * connection limit, a changed password): the usage writer's pool, which opens its own connections, cannot write, so
 * every priced call answers 503. /readyz said ready while Sequelize's pool held a live connection.
 */
describe('health: readiness checks the pool the usage writer uses, not only Sequelize\'s', function () {
  this.timeout(30_000);
  let svc: TestService;
  let admin: Client;
  let database: string;

  before(async () => {
    svc = await startTestService({ config: { metrics: { readinessCacheMs: 0 } } });
    // A database's connections are barred from another database's session.
    const url = new URL(svc.databaseUrl);
    database = decodeURIComponent(url.pathname.slice(1));
    url.pathname = '/postgres';
    admin = new Client({ connectionString: url.toString() });
    await admin.connect();
  });
  after(async () => {
    await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`).catch(() => undefined);
    await admin.end();
    await svc.close();
  });

  it('answers 503 naming the database when the hot pool cannot open a connection, and ready again once it can', async () => {
    const api = client(svc.url);
    expect((await api.get<Body>('/readyz')).status).to.equal(200);
    await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pricing-compute-hot' AND datname = $1", [database]);
    const refused = await api.get<Body>('/readyz');
    expect(refused.status, refused.text).to.equal(503);
    expect(refused.body).to.include({ code: 'not_ready' });
    expect(refused.body.failing).to.deep.equal(['database']);
    await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`);
    const ready = await api.get<Body>('/readyz');
    expect(ready.status, ready.text).to.equal(200);
  });
});
