import { expect } from 'chai';
import { randomToken } from '../../../core/ids';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import type { TestService } from '../../support/service';

type Body = Record<string, any>;

/**
 * Two instances on one database and one Redis. A sandbox's last allowed call, sent with one
 * Idempotency-Key to both at once (a retry that a load balancer sent to the other instance while the
 * first was in flight), gets one answer and its replay: the copy that came second waits for the
 * first's turn on the shared store instead of reaching admission and being refused 429.
 */
describe('pricing: one Idempotency-Key sent to two instances at once', function () {
  this.timeout(90_000);
  let a: TestService;
  let b: TestService;

  before(async function () {
    const url = process.env.REDIS_URL;
    if (!url) {
      if (process.env.CI) throw new Error('REDIS_URL is not set: CI must run the two-instance idempotency test.');
      return this.skip();
    }
    const env = { REDIS_URL: url, REDIS_KEY_PREFIX: `pcs-two-${randomToken(6)}:`, SANDBOX_COMPUTE_CALLS_PER_DAY: '2' };
    a = await startTestService({ env });
    b = await startTestService({ databaseUrl: a.databaseUrl, env });
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  it("answers a sandbox's last call sent to both with one 200 and its replay, never a 429, and charges it once", async () => {
    for (let round = 0; round < 6; round++) {
      const registered = await client(a.url, { 'x-forwarded-for': `198.51.100.${round + 10}` }).post<Body>('/api/agents/register', { name: `two-instances-${round}` });
      expect(registered.status, registered.text).to.equal(201);
      const key = registered.body.api_key.key as string;
      const body = { context: { current_price: 9.5, unit_cost: 4, round } };
      expect((await client(a.url, { 'x-api-key': key }).post('/api/compute/price', body)).status).to.equal(200);
      const headers = { 'x-api-key': key, 'idempotency-key': `last-call-${round}` };
      const answers = await Promise.all([client(a.url, headers).post<Body>('/api/compute/price', body), client(b.url, headers).post<Body>('/api/compute/price', body)]);
      expect(answers.map((r) => r.status), answers.map((r) => r.text).join('\n')).to.deep.equal([200, 200]);
      expect(answers.map((r) => r.headers.get('idempotent-replayed')).sort()).to.deep.equal(['true', null].sort());
      expect(answers[0]?.body.receipt.usage_event_id).to.equal(answers[1]?.body.receipt.usage_event_id);
      const [rows] = await a.sequelize.query(`SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1 AND status = 'ok'`, { bind: [registered.body.workspace.id] });
      expect(rows).to.deep.equal([{ n: 2 }]);
    }
  });
});

/**
 * Two instances on one database and no shared store: nothing takes turns between them, so only the
 * claims written with the items' usage events keep a batch sent to both at once from being charged twice.
 */
describe('pricing: one keyed batch sent to two instances at once, without Redis', function () {
  this.timeout(90_000);
  let a: TestService;
  let b: TestService;

  before(async () => {
    a = await startTestService();
    b = await startTestService({ databaseUrl: a.databaseUrl });
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  it('charges each item once: both answer every item with the same usage event, and a third copy is a whole replay', async () => {
    const person = await signUp(a, 'two-instances-batch');
    const apiKey = (await createKey(a, person, { name: 'k' })).key;
    for (let round = 0; round < 4; round++) {
      const items = Array.from({ length: 5 }, (_, i) => ({ context: { unit_cost: 2 + i, round } }));
      const headers = { 'x-api-key': apiKey, 'idempotency-key': `batch-two-${round}-${randomToken(6)}` };
      const answers = await Promise.all([client(a.url, headers).post<Body>('/api/compute/batch', { items }), client(b.url, headers).post<Body>('/api/compute/batch', { items })]);
      for (const res of answers) {
        expect(res.status, res.text).to.equal(200);
        expect(res.body.items.map((i: Body) => i.status)).to.deep.equal([200, 200, 200, 200, 200]);
      }
      const ids = (res: Body) => res.body.items.map((i: Body) => i.result.receipt.usage_event_id);
      expect(ids(answers[1])).to.deep.equal(ids(answers[0]));
      // Between them, the two answers replay exactly the items the other charged.
      expect((answers[0]?.body.summary.replayed as number) + (answers[1]?.body.summary.replayed as number)).to.equal(5);
      const third = await client(round % 2 ? a.url : b.url, headers).post<Body>('/api/compute/batch', { items });
      expect(third.headers.get('idempotent-replayed')).to.equal('true');
      expect(ids(third)).to.deep.equal(ids(answers[0]));
      const [rows] = await a.sequelize.query(`SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1 AND operation = 'batch_item' AND status = 'ok'`, { bind: [person.workspaceId] });
      expect(rows).to.deep.equal([{ n: 5 * (round + 1) }]);
    }
  });
});
