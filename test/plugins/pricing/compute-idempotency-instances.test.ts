import { expect } from 'chai';
import { randomToken } from '../../../core/ids';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
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
