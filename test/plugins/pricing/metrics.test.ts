import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { PricingPool } from '../../../engine/pool';
import { PRICING } from '../../../plugins/pricing';
import { FIXTURE_MODULE } from '../../engine/harness';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';

type Body = Record<string, any>;

/** The samples of a Prometheus text exposition: name, labels and value of each line. */
function samples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] === undefined || m[3] === undefined) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) if (l[1] !== undefined && l[2] !== undefined) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of one series in a scrape (exactly these labels), or undefined when the scrape does not have it. */
function series(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  return samples(text).find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

const HOLD_MS = 2000;

describe('pricing: compute metrics at GET /metrics (HTTP)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let api: ReturnType<typeof client>;
  let pool: PricingPool;

  const scrape = async () => {
    const res = await client(svc.url).get('/metrics');
    expect(res.status).to.equal(200);
    return res.text;
  };
  const compute = async (body: Body) => {
    const res = await api.post<Body>('/api/compute/price', body);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };

  before(async () => {
    // One worker, so a held worker makes a call wait; a function timeout long enough that the waiting call then runs.
    svc = await startTestService({ config: { engine: { threads: 1, functionTimeoutMs: 5000, extraWorkerModules: [FIXTURE_MODULE] } } });
    const person = await signUp(svc, 'metrics');
    api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'metrics' })).key });
    pool = svc.container.resolve<PricingPool>(PRICING.Pool);
  });
  after(() => svc.close());

  it('documents every pricing metric it exports in docs/routing.md (the Metrics table)', async () => {
    const text = await scrape();
    const exported = [...text.matchAll(/^# TYPE ((?:pricing|http)_[a-z_]+) /gm)].map((m) => m[1] as string);
    expect(exported).to.include.members(['pricing_compute_requests_total', 'pricing_function_calls_total', 'pricing_pool_queue_length', 'http_request_duration_seconds']);
    const doc = readFileSync(path.join(__dirname, '..', '..', '..', '..', 'docs', 'routing.md'), 'utf8');
    expect(exported.filter((name) => !doc.includes(`| \`${name}\` |`))).to.deep.equal([]);
  });

  it('counts a call answered by a fallback in pricing_fallbacks_total and times the function that answered in pricing_function_duration_seconds', async () => {
    const policy = await api.post<Body>('/api/routing-policies', { name: 'competitive then cost-plus', strategy: 'cheapest', is_default: true, fallback_chain: ['cost-plus'], config: { candidates: ['competitive-position'] } });
    expect(policy.status, policy.text).to.equal(201);
    const before = await scrape();
    // competitive-position cannot price a context without competitor prices; cost-plus, the fallback chain, answers.
    const body = await compute({ context: { unit_cost: 10, note: 'metrics-fallback' } });
    expect(body.function.name).to.equal('cost-plus');
    expect(body.trace.fallback_used).to.equal(true);
    const after = await scrape();
    expect(series(after, 'pricing_fallbacks_total', { function: 'cost-plus' })).to.equal((series(before, 'pricing_fallbacks_total', { function: 'cost-plus' }) ?? 0) + 1);
    expect(series(after, 'pricing_function_duration_seconds_count', { function: 'cost-plus' })).to.equal((series(before, 'pricing_function_duration_seconds_count', { function: 'cost-plus' }) ?? 0) + 1);
    expect(series(after, 'pricing_function_calls_total', { function: 'competitive-position', outcome: 'not_applicable' })).to.equal((series(before, 'pricing_function_calls_total', { function: 'competitive-position', outcome: 'not_applicable' }) ?? 0) + 1);
    expect(series(after, 'pricing_compute_requests_total', { function: 'cost-plus', outcome: 'ok' })).to.equal((series(before, 'pricing_compute_requests_total', { function: 'cost-plus', outcome: 'ok' }) ?? 0) + 1);
    // A function that could not price the context was not timed.
    expect(series(after, 'pricing_function_duration_seconds_count', { function: 'competitive-position' })).to.equal(series(before, 'pricing_function_duration_seconds_count', { function: 'competitive-position' }));
    // The histogram has its buckets, cumulative up to +Inf (the count).
    expect(series(after, 'pricing_function_duration_seconds_bucket', { function: 'cost-plus', le: '+Inf' })).to.equal(series(after, 'pricing_function_duration_seconds_count', { function: 'cost-plus' }));
  });

  it('counts a cached answer in pricing_cache_hits_total, and does not time a function that did not run', async () => {
    const request = { context: { current_price: 7.25, note: 'metrics-cache' }, function_id: 'fn_builtin_anchored' };
    const first = await compute(request);
    expect(first.trace.cache).to.equal('miss');
    const before = await scrape();
    const again = await compute(request);
    expect(again.trace.cache).to.equal('hit');
    const after = await scrape();
    expect(series(after, 'pricing_cache_hits_total', { function: 'anchored-adjustment' })).to.equal((series(before, 'pricing_cache_hits_total', { function: 'anchored-adjustment' }) ?? 0) + 1);
    expect(series(after, 'pricing_function_duration_seconds_count', { function: 'anchored-adjustment' })).to.equal(series(before, 'pricing_function_duration_seconds_count', { function: 'anchored-adjustment' }));
    expect(series(after, 'pricing_compute_requests_total', { function: 'anchored-adjustment', outcome: 'ok' })).to.equal((series(before, 'pricing_compute_requests_total', { function: 'anchored-adjustment', outcome: 'ok' }) ?? 0) + 1);
    expect(series(after, 'pricing_fallbacks_total', { function: 'anchored-adjustment' }) ?? 0).to.equal(series(before, 'pricing_fallbacks_total', { function: 'anchored-adjustment' }) ?? 0);
  });

  it('shows a call waiting for the busy pool in pricing_pool_queue_length, and the busy time in pricing_pool_utilization', async () => {
    const idle = await scrape();
    expect(series(idle, 'pricing_pool_queue_length')).to.equal(0);
    expect(series(idle, 'pricing_pool_threads')).to.equal(1);
    const utilizationBefore = series(idle, 'pricing_pool_utilization');
    expect(utilizationBefore).to.be.within(0, 1);

    // The only worker is held: the compute call waits for it.
    const held = pool.run('test-slow', { sleep_ms: HOLD_MS }, 10_000);
    const waiting = api.post<Body>('/api/compute/price', { context: { current_price: 8.5, note: 'metrics-busy' }, function_id: 'fn_builtin_anchored' });
    const deadline = Date.now() + HOLD_MS * 0.75;
    while (pool.queueSize === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    const busy = await scrape();
    expect(series(busy, 'pricing_pool_queue_length')).to.equal(1);

    expect((await held).ok).to.equal(true);
    const answered = await waiting;
    expect(answered.status, answered.text).to.equal(200);
    const after = await scrape();
    expect(series(after, 'pricing_pool_queue_length')).to.equal(0);
    // The worker was busy for at least the hold: a larger share of the pool's time than before it.
    const utilizationAfter = series(after, 'pricing_pool_utilization') ?? 0;
    // Busy for the whole hold (2 s of a 10 s average): well above what it was (Piscina's lifetime average barely moved).
    expect(utilizationAfter).to.be.above((utilizationBefore ?? 0) + 0.08);
    expect(utilizationAfter).to.be.at.most(1);
    // Another scraper reading it at once sees the same value: a scrape resets nothing.
    const again = series(await scrape(), 'pricing_pool_utilization') ?? 0;
    expect(Math.abs(again - utilizationAfter)).to.be.below(0.02);
    // Idle since: the average falls.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(series(await scrape(), 'pricing_pool_utilization') ?? 0).to.be.below(again);
  });
});

describe('pricing metrics: functions past METRICS_MAX_FUNCTION_LABELS share the label other', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  before(async () => {
    // The second function fails on {"fail": true}: its breaker opens under the shared label.
    upstream = await startUpstream((req, res) => (JSON.parse(req.body || '{}').context?.fail ? sendJson(res, 500, {}) : sendJson(res, 200, { price: 9, confidence: 0.5, currency: 'USD' })));
    svc = await startTestService({ config: { metrics: { maxFunctionLabels: 1 }, outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 0, breakerMinFailingCallers: 1 } } });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  it('labels the first function it runs by id, every later one other, and built-ins by name whatever the cap', async () => {
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'labels'), { name: 'labels' })).key });
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const made = await api.post<Body>('/api/functions', { name: `label-cap-${process.pid}-${Date.now().toString(36)}-${n}`, execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0.01' });
      expect(made.status, made.text).to.equal(201);
      ids.push(made.body.function.id);
      expect((await api.patch(`/api/functions/${made.body.function.id}`, { status: 'active' })).status).to.equal(200);
    }
    const [first, second, third] = ids as [string, string, string];
    for (const id of [first, second, third, first]) expect((await api.post<Body>('/api/compute/price', { context: { current_price: 10 }, function_id: id })).status).to.equal(200);
    expect((await api.post<Body>('/api/compute/price', { context: { current_price: 10 }, function_id: 'fn_builtin_anchored' })).status).to.equal(200);
    let text = (await client(svc.url).get('/metrics')).text;
    expect(series(text, 'pricing_compute_requests_total', { function: first, outcome: 'ok' })).to.equal(2);
    expect(series(text, 'pricing_compute_requests_total', { function: 'other', outcome: 'ok' })).to.equal(2);
    expect(series(text, 'pricing_function_calls_total', { function: 'other', outcome: 'ok' })).to.equal(2);
    expect(series(text, 'pricing_compute_requests_total', { function: 'anchored-adjustment', outcome: 'ok' })).to.equal(1);
    expect(text).not.to.include(second).and.not.to.include(third);

    // The shared breaker series shows the most open of the functions under it.
    for (let i = 0; i < 5; i++) expect((await api.post<Body>('/api/compute/price', { context: { current_price: 10, fail: true }, function_id: second })).status).to.equal(502);
    text = (await client(svc.url).get('/metrics')).text;
    expect(series(text, 'pricing_breaker_state', { function: 'other' })).to.equal(2);
    expect(series(text, 'pricing_breaker_state', { function: first })).to.equal(0);
    expect(text).not.to.include(second);
  });
});
