import { expect } from 'chai';
import type { PricingPool } from '../../../engine/pool';
import { PRICING } from '../../../plugins/pricing';
import { FIXTURE_MODULE } from '../../engine/harness';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

type Body = Record<string, any>;

const TIMEOUT_MS = 200;
const CONTEXT = { product_type: 'coffee', currency: 'USD', current_price: 4.5 };

describe('pricing: compute while every pricing worker is busy (HTTP)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let pool: PricingPool;

  before(async () => {
    svc = await startTestService({ config: { engine: { threads: 1, functionTimeoutMs: TIMEOUT_MS, cacheTtlMs: 0, breakerMinCalls: 1, extraWorkerModules: [FIXTURE_MODULE] } } });
    const person = await signUp(svc, 'busy');
    api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'busy' })).key });
    pool = svc.container.resolve<PricingPool>(PRICING.Pool);
  });
  after(() => svc.close());

  it('answers 503 service_busy with Retry-After, charges nothing, records the error, and leaves the function\'s breaker closed', async () => {
    const held = pool.run('test-slow', { sleep_ms: TIMEOUT_MS * 4 }, 10_000);
    const res = await api.post<Body>('/api/compute/price', { context: CONTEXT, function_id: 'fn_builtin_anchored' });
    expect(res.status, res.text).to.equal(503);
    expect(res.headers.get('retry-after')).to.equal('1');
    expect(res.body).to.include({ code: 'service_busy', error: 'Every pricing worker was busy: no function could be run in time.', retryable: true, retry_after: 1 });
    expect(res.body.hint).to.equal('Nothing was charged and no function was at fault. Retry after 1 s.');
    expect(res.body.attempts).to.have.length(1);
    expect(res.body.attempts[0]).to.include({ function: 'anchored-adjustment', role: 'chosen', outcome: 'pool_busy' });
    expect(res.body.request_id).to.be.a('string');

    const [rows] = await svc.sequelize.query('SELECT status, error_code, cost::text AS cost, billable, function_id FROM usage_events WHERE request_id = $1', { bind: [res.body.request_id] });
    // No function is named: the failure must not count against its reliability.
    expect(rows).to.deep.equal([{ status: 'error', error_code: 'service_busy', cost: '0.00000000', billable: false, function_id: null }]);

    const health = await api.get<Body>('/api/routing/health');
    const anchored = (health.body.data as Body[]).find((d) => d.function.name === 'anchored-adjustment') as Body;
    expect(anchored.breaker).to.include({ state: 'closed', failures: 0 });
    expect((await client(svc.url).get('/metrics')).text).to.match(/pricing_function_calls_total\{function="anchored-adjustment",outcome="pool_busy"\} 1/);

    await held;
    const after = await api.post<Body>('/api/compute/price', { context: CONTEXT, function_id: 'fn_builtin_anchored' });
    expect(after.status, after.text).to.equal(200);
  });

  it('a batch answers each item that found no worker with its own service_busy error under 200', async () => {
    const held = pool.run('test-slow', { sleep_ms: TIMEOUT_MS * 4 }, 10_000);
    const res = await api.post<Body>('/api/compute/batch', { items: [{ context: CONTEXT, function_id: 'fn_builtin_anchored' }] });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.summary).to.deep.equal({ total: 1, succeeded: 0, failed: 1, replayed: 0 });
    const item = res.body.items[0] as Body;
    expect(item).to.include({ index: 0, status: 503 });
    expect(item.error).to.include({ code: 'service_busy', retryable: true, retry_after: 1 });
    await held;
  });
});
