import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { leaveMidway, rowsOnceSettled, whileLocked } from '../../support/abandoned-call';
import { createKey, registerSandbox, signUp } from '../../support/world';
import { whileFrozen } from '../../support/db';
import { computeCount } from '../../support/metrics';

type Body = Record<string, any>;

const COMPUTE = { context: { product_type: 'coffee', currency: 'USD', current_price: 4.5 } };
const VERIFY = { context: { product_type: 'coffee', currency: 'USD' }, proposed_price: '4.50' };

/**
 * A usage event that cannot be written (here a constraint refusing every new row, a real database
 * error) must leave the caller unanswered and uncharged: no price without its record.
 */
describe('pricing and verification: a usage event that cannot be written', function () {
  this.timeout(60_000);
  let svc: TestService;
  let api: ReturnType<typeof client>;

  const blockWrites = () => svc.sequelize.query('ALTER TABLE usage_events ADD CONSTRAINT test_no_writes CHECK (false) NOT VALID');
  const allowWrites = () => svc.sequelize.query('ALTER TABLE usage_events DROP CONSTRAINT IF EXISTS test_no_writes');
  const dailyRemaining = (body: Body) => body.remaining.daily_compute_calls.remaining as number;

  before(async () => {
    svc = await startTestService();
    api = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'unrecorded')).key });
  });
  afterEach(allowWrites);
  after(() => svc.close());

  for (const [name, path, body] of [
    ['compute', '/api/compute/price', COMPUTE],
    ['verification', '/api/price-router/verify', VERIFY],
  ] as const) {
    it(`${name}: answers 503 service_unavailable with Retry-After, and the sandbox's daily call is given back`, async () => {
      const before = await api.post<Body>(path, body);
      expect(before.status, before.text).to.equal(200);
      const left = dailyRemaining(before.body);

      await blockWrites();
      const res = await api.post<Body>(path, body);
      expect(res.status, res.text).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal('5');
      expect(res.body).to.include({ code: 'service_unavailable', error: 'The call was not answered: its usage record could not be written.', retryable: true, retry_after: 5 });
      expect(res.body.hint).to.equal('Nothing was charged. The usage store is not reachable; retry in 5 s.');
      expect(res.body).to.not.have.property('price');
      expect(res.body).to.not.have.property('verdict');
      expect(JSON.stringify(res.body)).to.not.include('test_no_writes');

      await allowWrites();
      const after = await api.post<Body>(path, body);
      expect(after.status, after.text).to.equal(200);
      // One call counted since `before`: the refused one was not.
      expect(dailyRemaining(after.body)).to.equal(left - 1);
    });
  }

  it('counts a price whose record could not be written as not_answered in pricing_compute_requests_total, never as ok', async () => {
    const first = await api.post<Body>('/api/compute/price', COMPUTE);
    expect(first.status, first.text).to.equal(200);
    const fn = first.body.function.name as string;
    const count = (outcome: string) => computeCount(svc, fn, outcome);
    const [ok, notAnswered] = [await count('ok'), await count('not_answered')];
    await blockWrites();
    expect((await api.post<Body>('/api/compute/price', COMPUTE)).status).to.equal(503);
    expect([await count('ok'), await count('not_answered')]).to.deep.equal([ok, notAnswered + 1]);
    await allowWrites();
    expect((await api.post<Body>('/api/compute/price', COMPUTE)).status).to.equal(200);
    expect([await count('ok'), await count('not_answered')]).to.deep.equal([ok + 1, notAnswered + 1]);
  });
});

describe('pricing: a usage write that waits on a lock', function () {
  this.timeout(60_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService({ config: { database: { statementTimeoutMs: 400 } } });
  });
  after(() => svc.close());

  it('gives up after DB_STATEMENT_TIMEOUT_MS like every other session: 503, nothing recorded, nothing charged', async () => {
    const api = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'locked-out')).key });
    expect((await api.post<Body>('/api/compute/price', COMPUTE)).status).to.equal(200);
    await whileLocked(svc, 'usage_events', 'ACCESS EXCLUSIVE', async () => {
      const started = Date.now();
      const res = await api.post<Body>('/api/compute/price', { context: { ...COMPUTE.context, current_price: 4.75 } });
      const waited = Date.now() - started;
      expect(res.status, res.text).to.equal(503);
      expect(res.body).to.include({ code: 'service_unavailable', retryable: true });
      expect(waited, 'the insert waited for the lock instead of the statement timeout').to.be.below(5000);
    });
    const [recorded] = await svc.sequelize.query(`SELECT count(*)::int AS n FROM usage_events WHERE workspace_id <> 'ws_public_demo'`);
    expect(recorded).to.deep.equal([{ n: 1 }]);
  });
});

describe('pricing: an answer that can no longer be delivered', function () {
  this.timeout(60_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  for (const [name, path, payload] of [
    ['compute', '/api/compute/price', COMPUTE],
    ['verification', '/api/price-router/verify', VERIFY],
  ] as const) {
    it(`${name}: is not charged: a caller gone while its usage event was written finds it recorded as not_delivered, and its sandbox call given back`, async () => {
      const key = (await registerSandbox(svc, `gone-${name}`)).key;
      const api = client(svc.url, { 'x-api-key': key });
      const before = await api.post<Body>(path, payload);
      expect(before.status, before.text).to.equal(200);
      const left = before.body.remaining.daily_compute_calls.remaining as number;
      const fn = name === 'compute' ? (before.body.function.name as string) : null;
      const counted = fn ? [await computeCount(svc, fn, 'ok'), await computeCount(svc, fn, 'not_delivered')] : [];

      const requestId = `gone-${name}-${Date.now()}`;
      await whileLocked(svc, 'usage_events', 'ACCESS EXCLUSIVE', () => leaveMidway(svc.url, path, { headers: { 'x-api-key': key, 'x-request-id': requestId }, body: payload }));
      const rows = await rowsOnceSettled<{ status: string }>(
        svc,
        `SELECT status, error_code, billable, cost::text AS cost FROM usage_events WHERE request_id = '${requestId}'`,
        (r) => r[0]?.status === 'error',
      );
      expect(rows).to.deep.equal([{ status: 'error', error_code: 'not_delivered', billable: false, cost: '0.00000000' }]);
      // Counted as not delivered, not as answered.
      if (fn) expect([await computeCount(svc, fn, 'ok'), await computeCount(svc, fn, 'not_delivered')]).to.deep.equal([counted[0], (counted[1] as number) + 1]);
      const after = await api.post<Body>(path, payload);
      expect(after.status, after.text).to.equal(200);
      expect(after.body.remaining.daily_compute_calls.remaining, 'only the call after counted').to.equal(left - 1);
    });
  }

  it("a call given back after the store lost the sandbox's day count leaves the count to the record: the next call counts every answered call of the day", async () => {
    const sandbox = await registerSandbox(svc, 'store-lost-midway');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    for (let i = 0; i < 3; i++) expect((await api.post<Body>('/api/compute/price', COMPUTE)).status).to.equal(200);
    const key = `allowance:${sandbox.workspaceId}:${new Date().toISOString().slice(0, 10)}`;
    // The store loses the count (a Redis flush) while the call waits; the caller then leaves, so the call is given back.
    await whileLocked(svc, 'usage_events', 'ACCESS EXCLUSIVE', () =>
      leaveMidway(svc.url, '/api/compute/price', { headers: { 'x-api-key': sandbox.key }, body: COMPUTE, meanwhile: () => svc.kv.del(key) }),
    );
    await rowsOnceSettled(svc, `SELECT 1 FROM usage_events WHERE workspace_id = '${sandbox.workspaceId}' AND error_code = 'not_delivered'`, (r) => r.length > 0);
    await new Promise((r) => setTimeout(r, 100));
    expect(await svc.kv.get(key), 'the give-back created no count below zero').to.equal(null);
    const next = await api.post<Body>('/api/compute/price', COMPUTE);
    expect(next.status, next.text).to.equal(200);
    expect(next.body.remaining.daily_compute_calls.remaining, 'three answered calls before, this one now').to.equal(21);
  });
});

describe('pricing: a database that stops answering', function () {
  this.timeout(60_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService({ config: { database: { statementTimeoutMs: 300, answerGraceMs: 300 } } });
  });
  after(() => svc.close());

  it('a usage insert sent to a frozen database answers 503 after DB_STATEMENT_TIMEOUT_MS + DB_ANSWER_GRACE_MS; the insert it runs once thawed ends not delivered, and the sandbox call is given back', async function () {
    // Freezing needs the server's processes on this machine: the embedded test database.
    if (process.env.TEST_DATABASE_URL) this.skip();
    const api = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'frozen-database')).key });
    const before = await api.post<Body>('/api/compute/price', COMPUTE);
    expect(before.status, before.text).to.equal(200);
    const left = before.body.remaining.daily_compute_calls.remaining as number;

    // The usage writer's connections stop answering (a stalled host, a partition): the database's own timeout cannot fire.
    const requestId = `frozen-${Date.now()}`;
    let started = 0;
    const res = await whileFrozen(svc.databaseUrl, 'pricing-compute-hot', () => {
      started = Date.now();
      return api.post<Body>('/api/compute/price', COMPUTE, { 'x-request-id': requestId });
    });
    const waited = Date.now() - started;
    expect(res.status, res.text).to.equal(503);
    expect(res.headers.get('retry-after')).to.equal('5');
    expect(res.body).to.include({ code: 'service_unavailable', retryable: true });
    expect(res.body.hint).to.match(/^Nothing was charged/);
    expect(waited, 'bounded by the client side, not by the frozen server').to.be.within(500, 3000);

    const rows = await rowsOnceSettled<{ status: string }>(
      svc,
      `SELECT status, error_code, billable, cost::text AS cost FROM usage_events WHERE request_id = '${requestId}'`,
      (r) => r[0]?.status === 'error',
    );
    expect(rows).to.deep.equal([{ status: 'error', error_code: 'not_delivered', billable: false, cost: '0.00000000' }]);
    const after = await api.post<Body>('/api/compute/price', COMPUTE);
    expect(after.status, after.text).to.equal(200);
    expect(after.body.remaining.daily_compute_calls.remaining, 'only the call after counted').to.equal(left - 1);
  });
  it('batch: each item whose usage insert gets no answer fails alone with 503 service_unavailable inside a 200, and ends not delivered', async function () {
    if (process.env.TEST_DATABASE_URL) this.skip();
    const person = await signUp(svc, 'frozen-batch');
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'frozen batch' })).key });
    const items = [{ context: { unit_cost: 2, currency: 'USD' } }, { context: { unit_cost: 3, currency: 'USD' } }];
    expect((await api.post<Body>('/api/compute/batch', { items })).status).to.equal(200);

    const requestId = `frozen-batch-${Date.now()}`;
    const res = await whileFrozen(svc.databaseUrl, 'pricing-compute-hot', () => api.post<Body>('/api/compute/batch', { items }, { 'x-request-id': requestId }));
    expect(res.status, res.text).to.equal(200);
    expect(res.body.summary).to.deep.equal({ total: 2, succeeded: 0, failed: 2, replayed: 0 });
    for (const [index, item] of (res.body.items as Body[]).entries()) {
      expect(item).to.deep.include({ index, status: 503 });
      expect(item.error).to.include({ code: 'service_unavailable', retryable: true, retry_after: 5 });
      expect(item.error.hint).to.match(/^Nothing was charged/);
    }
    const rows = await rowsOnceSettled<{ status: string }>(
      svc,
      `SELECT status, error_code, billable FROM usage_events WHERE request_id LIKE '${requestId}%'`,
      (r) => r.length === 2 && r.every((x) => x.status === 'error'),
    );
    expect(rows).to.deep.equal([
      { status: 'error', error_code: 'not_delivered', billable: false },
      { status: 'error', error_code: 'not_delivered', billable: false },
    ]);
  });

  it('MCP: compute_price whose usage insert gets no answer is a tool error of SPEC\'s 503 body, and its event ends not delivered', async function () {
    if (process.env.TEST_DATABASE_URL) this.skip();
    const person = await signUp(svc, 'frozen-mcp');
    const key = (await createKey(svc, person, { name: 'frozen mcp' })).key;
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const mcp = new Client({ name: 'frozen-database-test', version: '0.0.1' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/api/mcp/rpc`), { requestInit: { headers: { 'x-api-key': key } } }));
    try {
      const warm = await mcp.callTool({ name: 'compute_price', arguments: { context: { unit_cost: 2 } } });
      expect(warm.isError).to.equal(false);
      const result = await whileFrozen(svc.databaseUrl, 'pricing-compute-hot', () => mcp.callTool({ name: 'compute_price', arguments: { context: { unit_cost: 2.5 } } }));
      expect(result.isError).to.equal(true);
      const body = JSON.parse((result.content as Array<{ text: string }>)[0]?.text ?? '{}') as Body;
      expect(body).to.include({ code: 'service_unavailable', retryable: true, retry_after: 5 });
      const rows = await rowsOnceSettled<{ status: string }>(
        svc,
        `SELECT status, error_code, billable FROM usage_events WHERE workspace_id = '${person.workspaceId}' AND channel = 'mcp' ORDER BY created_at`,
        (r) => r.length === 2 && r[1]?.status === 'error',
      );
      expect(rows).to.deep.equal([
        { status: 'ok', error_code: null, billable: true },
        { status: 'error', error_code: 'not_delivered', billable: false },
      ]);
    } finally {
      await mcp.close();
    }
  });
});
