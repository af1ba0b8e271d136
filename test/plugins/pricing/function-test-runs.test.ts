import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import { rowsOnceSettled } from '../../support/abandoned-call';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

const PER_DAY = 3;
const START = Date.parse('2026-03-10T12:00:00Z');
let seq = 0;
const uniqueName = (label: string) => `tr-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
const charm = { context: { target_price: 20.2 } };

describe('test runs of functions a workspace does not own (FUNCTION_TEST_RUNS_PER_DAY)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  const clock = new ManualClock(START);
  const config = { limits: { functionTestRunsPerDay: PER_DAY }, outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 0 } };
  let author: ReturnType<typeof client>;
  let publicFnId: string;

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 12, confidence: 0.7, currency: 'USD' }));
    svc = await startTestService({ clock, config });
    const owner = await signUp(svc, 'tr-author');
    author = client(svc.url, { 'x-api-key': (await createKey(svc, owner, { name: 'author' })).key });
    const created = await author.post<Record<string, any>>('/api/functions', { name: uniqueName('listed'), execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0.5', is_public: true });
    expect(created.status, created.text).to.equal(201);
    publicFnId = created.body.function.id;
    expect((await author.patch(`/api/functions/${publicFnId}`, { status: 'active' })).status).to.equal(200);
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  const newConsumer = async (label: string) => {
    const { key } = await createKey(svc, await signUp(svc, label), { name: label });
    return Object.assign(client(svc.url, { 'x-api-key': key }), { key });
  };

  it("counts runs of built-ins and marketplace functions per workspace, says what is left, and refuses the next with 429 and a way to price instead", async () => {
    const consumer = await newConsumer('tr-consumer');
    const first = await consumer.post<Record<string, any>>('/api/functions/fn_builtin_charm/test', charm);
    expect(first.status, first.text).to.equal(200);
    expect(first.body.ok).to.equal(true);
    expect(first.body.test_runs).to.deep.equal({ test_runs_per_day: PER_DAY, remaining: PER_DAY - 1, resets_at: '2026-03-11T00:00:00.000Z' });
    // A run that could not price the context reached the function all the same: it counts.
    const unpriced = await consumer.post<Record<string, any>>('/api/functions/fn_builtin_cost_plus/test', { context: { current_price: 10 } });
    expect(unpriced.body).to.include({ ok: false });
    expect(unpriced.body.test_runs.remaining).to.equal(PER_DAY - 2);
    const market = await consumer.post<Record<string, any>>(`/api/functions/${publicFnId}/test`, { context: { current_price: 10 } });
    expect(market.body).to.include({ ok: true });
    expect(market.body.test_runs.remaining).to.equal(0);

    const refused = await consumer.post<Record<string, any>>('/api/functions/fn_builtin_charm/test', charm);
    expect(refused.status).to.equal(429);
    expect(refused.body.code).to.equal('daily_quota_exceeded');
    expect(refused.body.retry_after).to.equal(12 * 3600);
    expect(refused.headers.get('retry-after')).to.equal(String(12 * 3600));
    expect(refused.body.limit).to.deep.equal({ test_runs_per_day: PER_DAY, remaining: 0, scope: 'workspace', resets_at: '2026-03-11T00:00:00.000Z' });
    expect(refused.body.hint).to.match(/POST \/api\/compute\/price/).and.match(/function_id/);
    // What a test run refuses, a compute prices (recorded and charged).
    const priced = await consumer.post<Record<string, any>>('/api/compute/price', { ...charm, function_id: 'fn_builtin_charm' });
    expect(priced.status, priced.text).to.equal(200);

    // Another workspace has its own allowance.
    const other = await newConsumer('tr-other');
    const theirs = await other.post<Record<string, any>>('/api/functions/fn_builtin_charm/test', charm);
    expect(theirs.status).to.equal(200);
    expect(theirs.body.test_runs.remaining).to.equal(PER_DAY - 1);

    // The next UTC day starts again; counts older than the day before are pruned.
    const workspaceOf = async (key: string) => (await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>('/api/me')).body.tenant_id as string;
    await svc.sequelize.query(`INSERT INTO function_test_runs (workspace_id, day, runs) VALUES ($1, '2026-03-08', 7)`, { bind: [await workspaceOf(consumer.key)] });
    clock.set(Date.parse('2026-03-11T00:00:01Z'));
    try {
      const nextDay = await consumer.post<Record<string, any>>('/api/functions/fn_builtin_charm/test', charm);
      expect(nextDay.status, nextDay.text).to.equal(200);
      expect(nextDay.body.test_runs).to.deep.equal({ test_runs_per_day: PER_DAY, remaining: PER_DAY - 1, resets_at: '2026-03-12T00:00:00.000Z' });
      const days = await rowsOnceSettled<{ day: string }>(svc, `SELECT to_char(day, 'YYYY-MM-DD') AS day FROM function_test_runs ORDER BY day`, (rows) => !rows.some((r) => r.day < '2026-03-10'));
      expect([...new Set(days.map((r) => r.day))]).to.deep.equal(['2026-03-10', '2026-03-11']);
    } finally {
      clock.set(START);
    }
  });

  it('never counts runs of the workspace\'s own functions, whatever their status', async () => {
    const before = upstream.requests.length;
    for (let i = 0; i < PER_DAY + 2; i++) {
      const own = await author.post<Record<string, any>>(`/api/functions/${publicFnId}/test`, { context: { current_price: 10 } });
      expect(own.status, own.text).to.equal(200);
      expect(own.body.ok).to.equal(true);
      expect(own.body).to.not.have.property('test_runs');
    }
    expect(upstream.requests.length - before).to.equal(PER_DAY + 2);
    const draft = await author.post<Record<string, any>>('/api/functions', { name: uniqueName('draft'), execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0' });
    const run = await author.post<Record<string, any>>(`/api/functions/${draft.body.function.id}/test`, { context: {} });
    expect(run.body).to.include({ ok: true });
    expect(run.body).to.not.have.property('test_runs');
  });

  it('lets concurrent runs through exactly up to the limit, and keeps the count across a restart', async () => {
    const consumer = await newConsumer('tr-race');
    const runs = await Promise.all(Array.from({ length: PER_DAY + 5 }, () => consumer.post<Record<string, any>>('/api/functions/fn_builtin_charm/test', charm)));
    expect(runs.filter((r) => r.status === 200)).to.have.length(PER_DAY);
    expect(runs.filter((r) => r.status === 429)).to.have.length(5);
    expect(runs.map((r) => r.body.test_runs?.remaining).filter((n) => n !== undefined).sort()).to.deep.equal(Array.from({ length: PER_DAY }, (_, i) => i));

    const again = await startTestService({ clock, config, databaseUrl: svc.databaseUrl });
    try {
      const afterRestart = await client(again.url, { 'x-api-key': consumer.key }).post<Record<string, any>>('/api/functions/fn_builtin_charm/test', charm);
      expect(afterRestart.status).to.equal(429);
    } finally {
      await again.close();
    }
  });
});
