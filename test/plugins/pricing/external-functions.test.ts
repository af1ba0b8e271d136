import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import { gzipSync } from 'node:zlib';
import type { FunctionRegistry } from '../../../engine';
import { PRICING } from '../../../plugins/pricing';
import { leaveMidway, rowsOnceSettled } from '../../support/abandoned-call';
import { client } from '../../support/http';
import { sendJson, startCanary, startUpstream } from '../../support/outbound';
import type { Canary, Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, joinWorkspace, signUp } from '../../support/world';

/**
 * external_api pricing functions end to end: registration, draft → active, the call to the owner's
 * endpoint through the guarded client, validation of its answer, and the SSRF refusals at
 * registration time (literal addresses) and call time (names).
 */

interface Attempt {
  failure?: string;
  function: string;
  id: string;
  role: string;
  outcome: string;
  error?: string;
}

interface UsageRow {
  status: string;
  error_code: string | null;
  cost: string;
  billable: boolean;
}

let seq = 0;
const uniqueName = (label: string) => `ext-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

const CONTEXT = { product_type: 'coffee', currency: 'USD', current_price: 4.5 };

async function usageOf(svc: TestService, requestId: string): Promise<UsageRow[]> {
  const [rows] = await svc.sequelize.query('SELECT status, error_code, cost::text AS cost, billable FROM usage_events WHERE request_id = $1', { bind: [requestId] });
  return rows as UsageRow[];
}

/**
 * An active function whose stored address the guard now refuses: registered and activated at a name, then pointed at
 * localhost (`port`, `path`) in the database, as when OUTBOUND_ALLOW_LIST opened loopback at registration and the
 * operator later removed it (localhost itself is refused at registration, as 127.0.0.1 is), and the registry told.
 */
async function storedAtLocalhost(svc: TestService, as: ReturnType<typeof client>, port: number, body: Record<string, unknown>, path = '/price'): Promise<{ id: string; name: string }> {
  const res = await as.post<Record<string, any>>('/api/functions', { execution_type: 'external_api', cost_per_unit: '0.002', ...body, endpoint_url: 'http://moved-later.invalid/price' });
  expect(res.status, res.text).to.equal(201);
  const fn = res.body.function as { id: string; name: string };
  expect((await as.patch(`/api/functions/${fn.id}`, { status: 'active' })).status).to.equal(200);
  await svc.sequelize.query('UPDATE pricing_functions SET endpoint_url = $1 WHERE id = $2', { bind: [`http://localhost:${port}${path}`, fn.id] });
  await svc.container.resolve<FunctionRegistry>(PRICING.Registry).changed(fn.id);
  return fn;
}

describe('pricing: external_api functions over HTTP (allow-listed loopback upstream)', () => {
  let svc: TestService;
  let upstream: Upstream;
  let api: ReturnType<typeof client>;
  let ownerKey = '';

  before(async () => {
    upstream = await startUpstream((req, res) => {
      switch (req.path) {
        case '/ok':
          return sendJson(res, 200, { price: 42.5, confidence: 0.7, currency: 'USD', notes: ['from the owner endpoint'] });
        case '/negative':
          return sendJson(res, 200, { price: -1, confidence: 0.5 });
        case '/no-confidence':
          return sendJson(res, 200, { price: 10 });
        case '/zero':
          return sendJson(res, 200, { price: '0', confidence: 0.9 });
        case '/tiny':
          return sendJson(res, 200, { price: 0.004, confidence: 0.9 });
        case '/huge':
          return sendJson(res, 200, { price: 1e16, confidence: 0.9 });
        case '/long':
          return sendJson(res, 200, { price: '1'.repeat(40), confidence: 0.9 });
        case '/other-currency':
          return sendJson(res, 200, { price: 10, confidence: 0.8, currency: 'eur' });
        case '/no-currency':
          return sendJson(res, 200, { price: 10, confidence: 0.8 });
        case '/foo':
          return sendJson(res, 200, { foo: 1 });
        case '/confidence-7':
          return sendJson(res, 200, { price: 10, confidence: 7 });
        case '/bad-fields':
          return sendJson(res, 200, { price: 'ten', confidence: '0.5', currency: 'US-D', notes: 'fine' });
        case '/array':
          return sendJson(res, 200, [{ price: 10, confidence: 0.5 }]);
        case '/reset':
          return void res.socket?.destroy();
        case '/reset-midway':
          // Headers and half a body, then the connection is cut (as a crashing upstream does).
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '40' });
          res.write('{"price": 12.5, "conf');
          return void setTimeout(() => res.socket?.destroy(), 20);
        case '/server-error':
          return sendJson(res, 500, { error: 'boom' });
        case '/busy':
          res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
          return void res.end('{"error":"slow down"}');
        case '/redirect':
          res.writeHead(302, { location: upstream.url('/ok?followed=1') });
          return void res.end();
        case '/not-modified':
          res.writeHead(304);
          return void res.end();
        case '/html':
          res.writeHead(200, { 'content-type': 'text/html' });
          return void res.end('<html>not a price</html>');
        case '/gzip':
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          return void res.end(gzipSync(JSON.stringify({ price: 10, confidence: 0.5 })));
        case '/bom':
          res.writeHead(200, { 'content-type': 'application/json' });
          return void res.end(`\uFEFF${JSON.stringify({ price: 10.5, confidence: 0.5 })}`);
        case '/empty':
          res.writeHead(200, { 'content-type': 'application/json' });
          return void res.end();
        case '/big-header':
          res.writeHead(200, { 'content-type': 'application/json', 'x-padding': 'a'.repeat(60_000) });
          return void res.end(JSON.stringify({ price: 10, confidence: 0.5 }));
        case '/never':
          return; // never answers
        case '/slow':
          return void setTimeout(() => sendJson(res, 200, { price: 11, confidence: 0.6, currency: 'USD' }), 1500);
        default:
          return sendJson(res, 404, { error: 'unknown path' });
      }
    });
    svc = await startTestService({ config: { outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 0 } } });
    const owner = await signUp(svc, 'ext-owner');
    const { key } = await createKey(svc, owner, { name: 'external functions' });
    ownerKey = key;
    api = client(svc.url, { 'x-api-key': key });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  const register = async (path: string, extra: Record<string, unknown> = {}) => {
    const name = uniqueName(path.replace(/\W/g, '') || 'root');
    const res = await api.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: upstream.url(path), cost_per_unit: '0.002', ...extra });
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.function.id as string, name, res };
  };
  const activate = async (id: string) => {
    const res = await api.patch<Record<string, any>>(`/api/functions/${id}`, { status: 'active' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.function.status).to.equal('active');
  };
  const requestsTo = (path: string) => upstream.requests.filter((r) => r.path === path);

  it('refuses a cost per call above FUNCTION_MAX_CALL_COST at registration and on PATCH (such a call could not even be recorded)', async () => {
    const name = uniqueName('pricey');
    const res = await api.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: upstream.url('/ok'), cost_per_unit: '999999999999', cost_multiplier: '2' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.issues.map((i: { path: string }) => i.path)).to.deep.equal(['cost_per_unit']);
    // The whole registration as sent, its cost brought within the limit: sent back as is, it registers.
    expect(res.body.example).to.include({ name, execution_type: 'external_api', endpoint_url: upstream.url('/ok'), cost_per_unit: '0.002', cost_multiplier: '1' });
    const again = await api.post<Record<string, any>>('/api/functions', res.body.example);
    expect(again.status, again.text).to.equal(201);
    const fn = await register('/ok', { cost_per_unit: '600000' });
    const patched = await api.patch<Record<string, any>>(`/api/functions/${fn.id}`, { cost_multiplier: '2' });
    expect(patched.status, patched.text).to.equal(400);
    expect(patched.body.error).to.match(/1200000 USDC/);
    expect((await api.patch(`/api/functions/${fn.id}`, { cost_multiplier: '1.5' })).status).to.equal(200);
  });

  it('charges none of a batch whose caller left before its one reply, the items priced before the caller left included', async () => {
    const slow = await register('/slow');
    await activate(slow.id);
    const requestId = `batch-gone-${Date.now()}`;
    const builtIn = { context: { current_price: 10 }, function_id: 'fn_builtin_anchored', routing_preference: 'explicit' };
    await leaveMidway(svc.url, '/api/compute/batch', {
      headers: { 'x-api-key': ownerKey, 'x-request-id': requestId },
      body: { items: [builtIn, builtIn, builtIn, { context: CONTEXT, function_id: slow.id }] },
      afterMs: 700,
    });
    const rows = await rowsOnceSettled<{ status: string; error_code: string | null; billable: boolean }>(
      svc,
      `SELECT status, error_code, billable FROM usage_events WHERE request_id = '${requestId}'`,
      (r) => r.length === 4 && r.every((row) => row.error_code === 'not_delivered'),
      60,
      100,
    );
    expect(rows).to.have.length(4);
    expect(rows.filter((r) => r.billable), 'items recorded before the caller left stayed billable').to.deep.equal([]);
    expect(rows.map((r) => r.error_code)).to.deep.equal(['not_delivered', 'not_delivered', 'not_delivered', 'not_delivered']);
  });

  it('registers as draft, refuses routing to the draft naming the PATCH, then prices through the endpoint once active', async () => {
    const fn = await register('/ok');
    expect(fn.res.body.function).to.include({ status: 'draft', execution_type: 'external_api', endpoint_url: upstream.url('/ok'), cost_per_unit: '0.002' });
    expect(fn.res.body.next).to.deep.equal([{ action: 'activate', method: 'PATCH', path: `/api/functions/${fn.id}`, body: { status: 'active' } }]);

    const draft = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
    expect(draft.status, draft.text).to.equal(409);
    expect(draft.body.code).to.equal('function_draft');
    expect(draft.body.error).to.include(`PATCH /api/functions/${fn.id}`);
    expect(requestsTo('/ok')).to.have.length(0);

    await activate(fn.id);
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.price).to.equal('42.50');
    expect(res.body.currency).to.equal('USD');
    expect(res.body.confidence).to.equal(0.7);
    expect(res.body.function).to.deep.equal({ id: fn.id, name: fn.name, built_in: false, execution_type: 'external_api' });
    expect(res.body.method.notes).to.deep.equal(['from the owner endpoint']);

    const received = requestsTo('/ok');
    expect(received).to.have.length(1);
    expect(received[0]?.method).to.equal('POST');
    expect(received[0]?.headers['content-type']).to.equal('application/json');
    expect(JSON.parse(received[0]?.body ?? 'null')).to.deep.equal({ context: CONTEXT, function: { id: fn.id, name: fn.name } });

    const usage = await usageOf(svc, res.body.request_id);
    expect(usage).to.have.length(1);
    expect(usage[0]?.status).to.equal('ok');
    expect(Number(usage[0]?.cost)).to.be.greaterThan(0);
  });

  for (const [path, what] of [
    ['/negative', 'a negative price'],
    ['/no-confidence', 'no confidence'],
    ['/zero', 'a zero price'],
    ['/tiny', 'a price that rounds to nothing in the currency'],
    ['/huge', 'a price above the largest quotable amount'],
    ['/long', 'a price of 40 digits'],
    ['/server-error', 'a 500'],
    ['/redirect', 'a redirect (not followed)'],
  ] as const) {
    it(`an endpoint answering ${what} fails the compute with 502 functions_failed and charges nothing`, async () => {
      const fn = await register(path);
      await activate(fn.id);
      const okBefore = requestsTo('/ok?followed=1').length;

      const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
      expect(res.status, res.text).to.equal(502);
      expect(res.body.code).to.equal('functions_failed');
      expect(res.body.retryable).to.equal(true);
      expect(res.body.hint).to.include('Nothing was charged');
      const attempts = res.body.attempts as Attempt[];
      expect(attempts).to.have.length(1);
      expect(attempts[0]).to.include({ id: fn.id, function: fn.name, role: 'chosen', outcome: 'failed' });
      expect(attempts[0]?.error).to.be.a('string').and.not.equal('');
      expect(attempts[0]).to.not.have.property('retryable');
      // The endpoint was called (exactly once), so the failure is the answer's, not the address's.
      expect(requestsTo(path)).to.have.length(1);
      expect(requestsTo('/ok?followed=1')).to.have.length(okBefore);

      const usage = await usageOf(svc, res.body.request_id);
      expect(usage).to.deep.equal([{ status: 'error', error_code: 'functions_failed', cost: '0.00000000', billable: false }]);
    });
  }

  it("an endpoint's price outside what can be quoted is refused saying which bound, as a built-in's is", async () => {
    for (const [path, said] of [
      ['/tiny', "The endpoint's price 0.004 USD rounds to nothing in USD's smallest unit (0.01)."],
      ['/huge', "The endpoint's price 10000000000000000 USD is above the largest quotable amount (1000000000000000)."],
      ['/long', "The endpoint's price 1.11111e+39 USD is above the largest quotable amount (1000000000000000)."],
    ] as const) {
      const fn = await register(path);
      await activate(fn.id);
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
      expect(res.status, res.text).to.equal(502);
      expect((res.body.attempts as Attempt[])[0]?.error, path).to.equal(said);
    }
  });

  it("an endpoint's answer that is not a price is refused naming each wrong field and its rule", async () => {
    for (const [path, said] of [
      ['/foo', "The endpoint's answer is not a price: price: required, a positive number or a decimal string such as \"12.50\"; confidence: required, a number between 0 and 1."],
      ['/confidence-7', "The endpoint's answer is not a price: confidence: must be a number between 0 and 1."],
      ['/no-confidence', "The endpoint's answer is not a price: confidence: required, a number between 0 and 1."],
      ['/negative', "The endpoint's answer is not a price: price: must be a positive number or a decimal string such as \"12.50\"."],
      // Zero as a decimal string is no positive price, as the number 0 is not: not a price "that rounds to nothing".
      ['/zero', "The endpoint's answer is not a price: price: must be a positive number or a decimal string such as \"12.50\"."],
      [
        '/bad-fields',
        "The endpoint's answer is not a price: price: must be a positive number or a decimal string such as \"12.50\"; currency: must be a currency code of 3 to 5 letters such as \"USD\"; confidence: must be a number between 0 and 1; notes: must be a list of at most 20 strings of at most 500 characters each.",
      ],
      ['/array', "The endpoint's answer is not a price: it must be a JSON object such as {\"price\": 12.5, \"confidence\": 0.8}."],
    ] as const) {
      const fn = await register(path);
      const tested = await api.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: CONTEXT });
      expect(tested.status, tested.text).to.equal(200);
      expect(tested.body, path).to.include({ ok: false, error: said });
      await activate(fn.id);
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
      expect(res.status, res.text).to.equal(502);
      expect((res.body.attempts as Attempt[])[0]?.error, path).to.equal(said);
    }
  });

  it('says why each endpoint attempt failed in failure, for machines: http_status, redirect, not_json, connection, unusable_result, timeout', async () => {
    for (const [path, failure, extra] of [
      ['/server-error', 'http_status', {}],
      ['/redirect', 'redirect', {}],
      ['/html', 'not_json', {}],
      ['/reset', 'connection', {}],
      ['/foo', 'unusable_result', {}],
      ['/never', 'timeout', { timeout_ms: 100 }],
    ] as const) {
      const fn = await register(path, extra);
      // A test run says it the same way, before the function is active.
      const tested = await api.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: CONTEXT });
      expect(tested.body, `test run ${path}`).to.include({ ok: false, failure });
      await activate(fn.id);
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
      expect(res.status, res.text).to.equal(502);
      expect((res.body.attempts as Attempt[])[0], path).to.include({ outcome: 'failed', failure });
    }
  });

  it("passes on an endpoint's Retry-After in a test run as a compute attempt does (retry_after), and no failure code where the function could not price the context", async () => {
    const fn = await register('/busy');
    const tested = await api.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: CONTEXT });
    expect(tested.status, tested.text).to.equal(200);
    expect(tested.body).to.include({ ok: false, failure: 'http_status', retry_after: 7, error: 'The endpoint answered HTTP 429.' });
    await activate(fn.id);
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
    expect((res.body.attempts as Attempt[])[0]).to.include({ failure: 'http_status', retry_after: 7 });
    const builtIn = await api.post<Record<string, any>>('/api/functions/fn_builtin_cost_plus/test', { context: { current_price: 3 } });
    expect(builtIn.body.ok).to.equal(false);
    expect(builtIn.body).to.not.have.any.keys('failure', 'retry_after');
  });

  it("says to the owner why an answer could not be read (an encoding it did not ask for, an empty body, how a non-JSON body begins, headers too large), and reads JSON after a byte order mark", async () => {
    for (const [path, failure, said] of [
      ['/gzip', 'not_json', "The endpoint's answer is not JSON: it came encoded (Content-Encoding: gzip), though the request asked for none (Accept-Encoding: identity)."],
      ['/empty', 'not_json', "The endpoint's answer is not JSON: its body is empty."],
      ['/html', 'not_json', 'The endpoint\'s answer is not JSON (Content-Type: text/html); it begins "<html>not a price</html>".'],
      ['/big-header', 'connection', "The endpoint's answer headers are larger than the service reads (HPE_HEADER_OVERFLOW; Node's limit, 16 KB by default)."],
    ] as const) {
      const fn = await register(path);
      await activate(fn.id);
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
      expect(res.status, res.text).to.equal(502);
      expect((res.body.attempts as Attempt[])[0], path).to.include({ outcome: 'failed', failure, error: said });
    }
    expect(requestsTo('/gzip').at(-1)?.headers['accept-encoding']).to.equal('identity');
    const bom = await register('/bom');
    await activate(bom.id);
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: bom.id });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.price).to.equal('10.50');
  });

  it('an endpoint that closes the connection without answering is said to have done so, to its owner and to other workspaces', async () => {
    const fn = await register('/reset', { is_public: true });
    await activate(fn.id);
    const said = 'The endpoint closed the connection before answering.';
    const owned = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
    expect(owned.status, owned.text).to.equal(502);
    expect((owned.body.attempts as Attempt[])[0]).to.include({ outcome: 'failed', error: said });
    const buyer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-reset-buyer'), { name: 'b' })).key });
    const tested = await buyer.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: CONTEXT });
    expect(tested.status, tested.text).to.equal(200);
    expect(tested.body).to.include({ ok: false, error: said });
  });

  it('an endpoint answering 304 is said to have answered Not Modified, not a redirect without a Location', async () => {
    const fn = await register('/not-modified', { is_public: true });
    await activate(fn.id);
    const owned = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
    expect(owned.status, owned.text).to.equal(502);
    expect((owned.body.attempts as Attempt[])[0]).to.include({ outcome: 'failed', failure: 'redirect', error: 'The endpoint answered 304 Not Modified, which answers no POST: a price is expected (200 with JSON).' });
    const buyer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-304-buyer'), { name: 'b' })).key });
    const tested = await buyer.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: CONTEXT });
    expect(tested.body).to.include({ ok: false, error: 'The endpoint answered 304 Not Modified, which answers no POST.' });
  });

  it('an endpoint that cuts its answer short after the status is said to have done so mid-answer, not before answering', async () => {
    const fn = await register('/reset-midway', { is_public: true });
    await activate(fn.id);
    const said = 'The endpoint closed the connection in the middle of its answer (HTTP 200 begun, its body cut short).';
    const owned = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
    expect(owned.status, owned.text).to.equal(502);
    expect((owned.body.attempts as Attempt[])[0]).to.include({ outcome: 'failed', error: said, failure: 'connection' });
    const buyer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-midway-buyer'), { name: 'b' })).key });
    const tested = await buyer.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: CONTEXT });
    expect(tested.body).to.include({ ok: false, error: said });
  });

  it("signs every request to an endpoint with the function's secret (X-Pricing-Timestamp, X-Pricing-Signature over the raw body), shown once to its owner; a rotation ends the old secret", async () => {
    const fn = await register('/ok', { is_public: true });
    const secret = fn.res.body.signing_secret as string;
    expect(secret).to.match(/^pcs_fsig_[A-Za-z0-9_-]{43}$/);
    // Shown once: no cache may keep the answer that carries it.
    expect(fn.res.headers.get('cache-control')).to.equal('no-store');
    expect(fn.res.headers.get('pragma')).to.equal('no-cache');
    expect(fn.res.body.signing).to.include({ timestamp_header: 'X-Pricing-Timestamp', signature_header: 'X-Pricing-Signature' });
    await activate(fn.id);
    const verifies = (r: { headers: Record<string, unknown>; body: string }, key: string) => {
      const timestamp = String(r.headers['x-pricing-timestamp']);
      const expected = `v1=${createHmac('sha256', key).update(`${timestamp}.${r.body}`).digest('hex')}`;
      return r.headers['x-pricing-signature'] === expected;
    };
    const signedCalls = () => upstream.requests.filter((r) => r.path === '/ok' && (JSON.parse(r.body) as { function: { id: string } }).function.id === fn.id);
    expect((await api.post('/api/compute/price', { context: CONTEXT, function_id: fn.id })).status).to.equal(200);
    const first = signedCalls().at(-1);
    expect(first, 'the endpoint was called').to.not.equal(undefined);
    expect(verifies(first as never, secret)).to.equal(true);
    expect(Math.abs(Number(first?.headers['x-pricing-timestamp']) - Date.now() / 1000)).to.be.below(60);
    // Shown to its owner only: no reading of the function carries it, and another workspace cannot rotate it.
    const read = await api.get<Record<string, any>>(`/api/functions/${fn.id}`);
    expect(read.text).to.not.contain(secret);
    const stranger = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-sign-stranger'), { name: 's' })).key });
    const theirs = await stranger.post<Record<string, any>>(`/api/functions/${fn.id}/signing-secret`, {});
    // Listed on the marketplace, it is theirs to use, not to change.
    expect(theirs.status, theirs.text).to.equal(403);
    expect(theirs.body.reason).to.equal('function of another workspace');
    expect(theirs.text).to.not.contain(secret);
    // Rotated: a new secret signs from now on, and the old one no longer verifies.
    const rotated = await api.post<Record<string, any>>(`/api/functions/${fn.id}/signing-secret`, {});
    expect(rotated.status, rotated.text).to.equal(200);
    expect(rotated.headers.get('cache-control')).to.match(/no-store/);
    const renewed = rotated.body.signing_secret as string;
    expect(renewed).to.match(/^pcs_fsig_/).and.not.equal(secret);
    expect((await api.post('/api/compute/price', { context: { ...CONTEXT, current_price: 4.6 }, function_id: fn.id })).status).to.equal(200);
    const after = signedCalls().at(-1) as never;
    expect(verifies(after, renewed)).to.equal(true);
    expect(verifies(after, secret)).to.equal(false);
    // A replay of a registration shows its secret until the first rotation, never the secret that replaced it.
    const keyed = { 'Idempotency-Key': `sign-replay-${Date.now()}` };
    const body = { name: uniqueName('sign-replay'), execution_type: 'external_api', endpoint_url: upstream.url('/ok'), cost_per_unit: '0.002' };
    const made = await api.post<Record<string, any>>('/api/functions', body, keyed);
    expect(made.status, made.text).to.equal(201);
    const replayed = await api.post<Record<string, any>>('/api/functions', body, keyed);
    expect(replayed.headers.get('idempotent-replayed')).to.equal('true');
    expect(replayed.body.signing_secret).to.equal(made.body.signing_secret);
    const cut = await api.post<Record<string, any>>(`/api/functions/${made.body.function.id as string}/signing-secret`, {});
    expect(cut.status, cut.text).to.equal(200);
    const afterRotation = await api.post<Record<string, any>>('/api/functions', body, keyed);
    expect([afterRotation.status, afterRotation.headers.get('idempotent-replayed')]).to.deep.equal([201, 'true']);
    expect(afterRotation.body).to.not.have.property('signing_secret');
    expect(afterRotation.body.signing).to.include({ signature_header: 'X-Pricing-Signature' });
    expect(afterRotation.text).to.not.contain(cut.body.signing_secret as string);
    // A function that does not call an endpoint has no secret to rotate.
    const pipeline = await api.post<Record<string, any>>('/api/functions', { name: uniqueName('pipe-sign'), execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(pipeline.body).to.not.have.property('signing_secret');
    const refused = await api.post<Record<string, any>>(`/api/functions/${pipeline.body.function.id as string}/signing-secret`, {});
    expect(refused.status).to.equal(400);
    expect(refused.body.error).to.match(/only external_api functions sign their requests/);
  });

  it('a TLS handshake that fails and a refused connection are said in words to the owner (not OpenSSL\'s file and line), and without the address to others', async () => {
    const port = Number(new URL(upstream.url('/ok')).port);
    const tls = await register('/ok', { endpoint_url: `https://127.0.0.1:${port}/ok`, is_public: true });
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const free = (probe.address() as { port: number }).port;
        probe.close(() => resolve(free));
      });
    });
    const refused = await register('/none', { endpoint_url: `http://127.0.0.1:${closed}/price` });
    const tested = async (id: string) => (await api.post<Record<string, any>>(`/api/functions/${id}/test`, { context: CONTEXT })).body as { ok: boolean; error: string };
    expect(await tested(tls.id)).to.include({ ok: false, error: 'The TLS handshake with the endpoint failed (EPROTO): the address may serve plain http where https was registered.' });
    expect((await tested(refused.id)).error).to.equal('The endpoint refused the connection (ECONNREFUSED): nothing accepts connections at its address and port.');
    // Another workspace hears that the endpoint could not be reached, not where it is.
    await activate(tls.id);
    const buyer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-tls-buyer'), { name: 'b' })).key });
    const theirs = await buyer.post<Record<string, any>>(`/api/functions/${tls.id}/test`, { context: CONTEXT });
    expect(theirs.body).to.include({ ok: false, error: 'The endpoint could not be reached.' });
  });

  it("an endpoint's price in another currency names both (422: the context asked for a currency it does not price in); an answer without a currency is in the context's currency", async () => {
    const other = await register('/other-currency');
    await activate(other.id);
    const refused = await api.post<Record<string, any>>('/api/compute/price', { context: { ...CONTEXT, currency: 'USD' }, function_id: other.id });
    expect(refused.status, refused.text).to.equal(422);
    expect(refused.body.code).to.equal('insufficient_context');
    expect(refused.body.refused).to.deep.equal(['currency']);
    expect((refused.body.attempts as Attempt[])[0]).to.include({ outcome: 'not_applicable', error: 'The endpoint answered in EUR; the context asks for USD.' });
    const same = await api.post<Record<string, any>>('/api/compute/price', { context: { ...CONTEXT, currency: 'eur' }, function_id: other.id });
    expect(same.status, same.text).to.equal(200);
    expect(same.body).to.include({ price: '10.00', currency: 'EUR' });

    const bare = await register('/no-currency');
    await activate(bare.id);
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: { ...CONTEXT, currency: 'JPY' }, function_id: bare.id });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.currency).to.equal('JPY');
  });

  it("a private function is counted in /metrics (read without a credential) under its id, never under its owner's name for it", async () => {
    const fn = await register('/ok');
    await activate(fn.id);
    expect((await api.post('/api/compute/price', { context: CONTEXT, function_id: fn.id })).status).to.equal(200);
    const metrics = await client(svc.url).get('/metrics');
    expect(metrics.status).to.equal(200);
    expect(metrics.text).to.include(`pricing_compute_requests_total{function="${fn.id}",outcome="ok"} 1`);
    expect(metrics.text).to.match(new RegExp(`pricing_function_calls_total\\{function="${fn.id}"`));
    expect(metrics.text).to.not.include(fn.name);
  });

  it('an endpoint that does not answer within the function timeout fails the compute (502) naming the time limit', async () => {
    const fn = await register('/never', { timeout_ms: 100 });
    await activate(fn.id);
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: fn.id });
    expect(res.status, res.text).to.equal(502);
    expect(res.body.code).to.equal('functions_failed');
    expect((res.body.attempts as Attempt[])[0]?.error).to.include('100 ms');
  });

  it("a failed attempt's time is an execute stage of its own: overhead_ms stays the service's time when a slow function fails before the fallback answers", async () => {
    // A workspace of its own: its default policy's fallback would rescue the other tests' failures.
    const other = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-overhead'), { name: 'overhead' })).key });
    const make = async (path: string, extra: Record<string, unknown> = {}) => {
      const made = await other.post<Record<string, any>>('/api/functions', { name: uniqueName(`overhead${path.replace(/\W/g, '')}`), execution_type: 'external_api', endpoint_url: upstream.url(path), cost_per_unit: '0.002', ...extra });
      expect(made.status, made.text).to.equal(201);
      const id = made.body.function.id as string;
      expect((await other.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
      return id;
    };
    const hanging = await make('/never', { timeout_ms: 400 });
    const ok = await make('/ok');
    expect((await other.post('/api/routing-policies', { name: 'rescue', strategy: 'cheapest', is_default: true, fallback_chain: [ok] })).status).to.equal(201);
    const res = await other.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: hanging });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.trace.fallback_used).to.equal(true);
    const stages = res.body.trace.stages as Array<{ stage: string; ms: number; function_id?: string; outcome?: string; role?: string }>;
    const executed = stages.filter((st) => st.stage === 'execute');
    expect(executed.map((st) => `${st.function_id}:${st.role}:${st.outcome}`)).to.deep.equal([`${hanging}:chosen:failed`, `${ok}:fallback_chain:ok`]);
    // Node's timers run on a coarser clock than performance.now(): the 400 ms timeout can measure a fraction of a millisecond short.
    expect(executed[0]?.ms).to.be.at.least(395);
    const executeMs = executed.reduce((sum, st) => sum + st.ms, 0);
    expect(res.body.trace.overhead_ms).to.be.closeTo(res.body.trace.total_ms - executeMs, 0.01);
    expect(res.body.trace.overhead_ms, 'the 400 ms the chosen function was waited on is not overhead').to.be.below(300);
  });

  for (const endpoint of ['http://169.254.169.254/latest/meta-data/', 'http://[::ffff:a9fe:a9fe]/', 'http://0xa9fea9fe/', 'https://169.254.169.254/', 'http://[fd00:ec2::254]/']) {
    it(`refuses registration of ${endpoint} with 400 validation_error naming endpoint_url`, async () => {
      const res = await api.post<Record<string, any>>('/api/functions', { name: uniqueName('metadata'), execution_type: 'external_api', endpoint_url: endpoint, cost_per_unit: '0.002' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.error).to.include('endpoint_url');
      expect(res.body.issues).to.be.an('array').that.is.not.empty;
      expect((res.body.issues as Array<{ path: string }>).map((i) => i.path)).to.include('endpoint_url');
      expect(res.body.hint).to.include('public https address');
      expect(res.body.example).to.include({ execution_type: 'external_api', endpoint_url: 'https://pricing.acme.example/price' });
    });
  }

  it('refuses an endpoint on a port outside OUTBOUND_ALLOWED_PORTS at registration and on PATCH, naming the allowed ports and the setting', async () => {
    const endpoint = 'http://93.184.215.14:8080/price';
    const res = await api.post<Record<string, any>>('/api/functions', { name: uniqueName('port'), execution_type: 'external_api', endpoint_url: endpoint, cost_per_unit: '0.002' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.issues).to.deep.equal([{ path: 'endpoint_url', reason: 'Port 8080 of 93.184.215.14:8080 is not allowed for outbound requests (allowed: 443, 80; the operator setting OUTBOUND_ALLOWED_PORTS).' }]);
    // The hint is true to this configuration: plain http is accepted, and an allow-list is set.
    expect(res.body.hint).to.equal(
      'Register a public https address (plain http is accepted too) on port 443 or 80 (OUTBOUND_ALLOWED_PORTS); loopback, private, link-local and metadata addresses are refused unless the operator lists them in OUTBOUND_ALLOW_LIST, where any port may be used.',
    );
    const fn = await register('/ok');
    const patched = await api.patch<Record<string, any>>(`/api/functions/${fn.id}`, { endpoint_url: endpoint });
    expect(patched.status, patched.text).to.equal(400);
    expect(patched.body.issues[0].reason).to.match(/^Port 8080 .*allowed: 443, 80; the operator setting OUTBOUND_ALLOWED_PORTS/);
    expect((await api.get<Record<string, any>>(`/api/functions/${fn.id}`)).body.function.endpoint_url).to.equal(upstream.url('/ok'));
    // The allow-listed upstream keeps any port, as at call time.
    expect((await api.patch(`/api/functions/${fn.id}`, { endpoint_url: upstream.url('/never') })).status).to.equal(200);
  });

  it('refuses a PATCH moving an endpoint to the metadata address, and keeps the old one; its example is the rest of what was sent, no placeholder address', async () => {
    const fn = await register('/ok');
    const res = await api.patch<Record<string, any>>(`/api/functions/${fn.id}`, { endpoint_url: 'http://169.254.169.254/', description: 'kept' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.example).to.deep.equal({ description: 'kept' });
    expect((res.body.issues as Array<{ path: string }>).map((i) => i.path)).to.include('endpoint_url');
    const read = await api.get<Record<string, any>>(`/api/functions/${fn.id}`);
    expect(read.body.function.endpoint_url).to.equal(upstream.url('/ok'));
    const followed = await api.patch<Record<string, any>>(`/api/functions/${fn.id}`, res.body.example);
    expect(followed.status, followed.text).to.equal(200);
    expect([followed.body.function.endpoint_url, followed.body.function.description]).to.deep.equal([upstream.url('/ok'), 'kept']);
  });

  it('answers a PATCH refused for its cost or its timeout with an example that leaves cost, multiplier and endpoint as they are (the rest of what was sent)', async () => {
    const fn = await register('/ok');
    const before = (await api.get<Record<string, any>>(`/api/functions/${fn.id}`)).body.function;
    const costly = await api.patch<Record<string, any>>(`/api/functions/${fn.id}`, { cost_per_unit: '500000', cost_multiplier: '3', description: 'keep me' });
    expect(costly.status, costly.text).to.equal(400);
    expect(costly.body.example).to.deep.equal({ description: 'keep me' });
    const slow = await api.patch<Record<string, any>>(`/api/functions/${fn.id}`, { timeout_ms: 3_600_000, tags: ['kept'] });
    expect(slow.status, slow.text).to.equal(400);
    expect(slow.body.example).to.deep.equal({ tags: ['kept'] });
    for (const example of [costly.body.example, slow.body.example]) expect((await api.patch(`/api/functions/${fn.id}`, example)).status).to.equal(200);
    const after = (await api.get<Record<string, any>>(`/api/functions/${fn.id}`)).body.function;
    expect([after.cost_per_unit, after.cost_multiplier, after.endpoint_url, after.timeout_ms]).to.deep.equal([before.cost_per_unit, before.cost_multiplier, before.endpoint_url, before.timeout_ms]);
    expect([after.description, after.tags]).to.deep.equal(['keep me', ['kept']]);
  });
});

describe('pricing: external_api functions without the allow-list (loopback refused at call time)', () => {
  let svc: TestService;
  let upstream: Upstream;
  let canary: Canary;
  let api: ReturnType<typeof client>;

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 1, confidence: 0.9 }));
    // 'localhost' may resolve to ::1 too: listen there at the same port.
    canary = await startCanary({ hosts: ['127.0.0.2', '::1'], port: upstream.port });
    // Any port: the upstream's is random, and what is tested here is the address a name resolves to.
    svc = await startTestService({ config: { engine: { cacheTtlMs: 0 }, outbound: { allowedPorts: ['*'] } } });
    const owner = await signUp(svc, 'ext-loopback');
    const { key } = await createKey(svc, owner, { name: 'external functions' });
    api = client(svc.url, { 'x-api-key': key });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
    await canary.close();
  });

  it('refuses a literal loopback endpoint at registration (the literal check runs without the allow-list)', async () => {
    const res = await api.post<Record<string, any>>('/api/functions', { name: uniqueName('literal'), execution_type: 'external_api', endpoint_url: upstream.url('/'), cost_per_unit: '0.002' });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect((res.body.issues as Array<{ path: string }>).map((i) => i.path)).to.include('endpoint_url');
  });

  it('a function the guard refuses beside a fallback that lacks inputs: 422 naming each function with its own reason, the refused one as one that cannot be called', async () => {
    const name = uniqueName('refused-beside');
    const created = { body: { function: await storedAtLocalhost(svc, api, upstream.port, { name }) } };
    const policy = await api.post<Record<string, any>>('/api/routing-policies', { name: `fallback-${name}`, strategy: 'default', is_default: true, fallback_function: 'cost-plus' });
    expect(policy.status, policy.text).to.equal(201);
    try {
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: created.body.function.id });
      expect(res.status, res.text).to.equal(422);
      expect(res.body.code).to.equal('insufficient_context');
      expect(res.body.error).to.match(new RegExp(`^The context cannot be priced by cost-plus, and ${name.replace(/[.]/g, '\\.')} cannot be called: ${name.replace(/[.]/g, '\\.')}: Outbound request refused: localhost is a loopback address.* cost-plus: `));
    } finally {
      // The other tests of this workspace run without a policy.
      expect((await api.delete(`/api/routing-policies/${policy.body.policy.id as string}`)).status).to.be.oneOf([200, 204]);
    }
  });

  it('refuses http://localhost and names under it at registration, as loopback (RFC 6761), naming endpoint_url', async () => {
    for (const host of ['localhost', 'app.localhost', 'LOCALHOST.']) {
      const res = await api.post<Record<string, any>>('/api/functions', { name: uniqueName('localhost'), execution_type: 'external_api', endpoint_url: `http://${host}:${upstream.port}/price`, cost_per_unit: '0.002' });
      expect(res.status, `${host}: ${res.text}`).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect((res.body.issues as Array<{ path: string; reason: string }>).find((i) => i.path === 'endpoint_url')?.reason).to.match(/loopback/);
    }
    expect(canary.connections(), canary.seen.join(', ')).to.equal(0);
  });

  it('refuses the call of a function whose stored address is localhost (allow-list since removed); the upstream sees no connection', async () => {
    const id = (await storedAtLocalhost(svc, api, upstream.port, { name: uniqueName('localhost') })).id;

    const res = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: id });
    expect(res.status, res.text).to.equal(502);
    expect(res.body.code).to.equal('functions_failed');
    const attempts = res.body.attempts as Attempt[];
    expect(attempts).to.have.length(1);
    expect(attempts[0]).to.include({ id, outcome: 'failed', failure: 'address_refused' });
    expect(attempts[0]?.error).to.match(/refused: localhost is a loopback address/);
    // No retry changes where the function's address points: the answer says so, and asks for no wait.
    expect(attempts[0]).to.include({ retryable: false });
    expect(res.body.retryable).to.equal(false);
    expect(res.body).to.not.have.property('retry_after');
    expect(res.headers.get('retry-after')).to.equal(null);
    expect(res.body.error).to.equal('Every function tried failed at an address the service will not call: retrying will not help.');
    expect(res.body.hint).to.include(`PATCH /api/functions/${id}`).and.include('omit function_id');

    // The function was never called: its event names it not, so the leaderboard counts no failure of it (docs/leaderboard.md).
    const [rows] = await svc.sequelize.query('SELECT status, cost::text AS cost, billable, function_id, failed_function_ids FROM usage_events WHERE request_id = $1', { bind: [res.body.request_id] });
    expect(rows).to.deep.equal([{ status: 'error', cost: '0.00000000', billable: false, function_id: null, failed_function_ids: [] }]);

    expect(upstream.connections()).to.equal(0);
    expect(upstream.requests).to.have.length(0);
    expect(canary.connections(), canary.seen.join(', ')).to.equal(0);

    // Refused again past BREAKER_MIN_CALLS (5): still the same permanent refusal, never an open breaker that answers
    // retryable with Retry-After, and no latency sample (which would trip a latency ceiling).
    for (let i = 0; i < 6; i++) {
      const again = await api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: id });
      expect(again.status, again.text).to.equal(502);
      expect(again.body.retryable, `call ${i + 2}`).to.equal(false);
      expect(again.headers.get('retry-after')).to.equal(null);
      expect((again.body.attempts as Attempt[])[0]?.error).to.match(/refused: localhost is a loopback address/);
    }
    const read = await api.get<Record<string, any>>(`/api/functions/${id}`);
    expect(read.body.function.breaker).to.equal('closed');
    expect(read.body.function.latency.p50_ms, JSON.stringify(read.body.function.latency)).to.equal('no data');
  });

  it("its owner reads the guard's refusals of the address in breaker.recent_failures, though they count toward no breaker", async () => {
    const name = uniqueName('refused-seen');
    const id = (await storedAtLocalhost(svc, api, upstream.port, { name })).id;
    for (let i = 0; i < 2; i++) expect((await api.post('/api/compute/price', { context: CONTEXT, function_id: id })).status).to.equal(502);
    const read = await api.get<Record<string, any>>(`/api/functions/${id}`);
    expect(read.status, read.text).to.equal(200);
    expect(read.body.breaker).to.include({ state: 'closed', calls: 0, failures: 0 });
    const seen = read.body.breaker.recent_failures as Array<{ at: string; reason: string }>;
    expect(seen).to.have.length(2);
    for (const f of seen) expect(f.reason).to.match(/refused: localhost is a loopback address/);
  });

  it('a function refused by address, routed beside built-ins that lack their inputs: 422 naming the missing inputs, not a 502 that says retrying will not help', async () => {
    const other = await signUp(svc, 'ext-routed');
    const routed = client(svc.url, { 'x-api-key': (await createKey(svc, other, { name: 'routed' })).key });
    const made = { body: { function: await storedAtLocalhost(svc, routed, upstream.port, { name: uniqueName('routed-local') }) } };
    const res = await routed.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'nothing-known' } });
    expect(res.status, res.text).to.equal(422);
    expect(res.body.code).to.equal('insufficient_context');
    expect(res.body.missing).to.be.an('array').that.is.not.empty;
    expect(res.body.hint).to.match(/^Add the inputs a method needs/);
    const attempts = res.body.attempts as Attempt[];
    expect(attempts.find((x) => x.id === made.body.function.id)).to.include({ outcome: 'failed', retryable: false });
    expect(attempts.filter((x) => x.outcome === 'not_applicable').length).to.be.greaterThan(0);
  });

  it('a function refused by address and rescued by a fallback is not recorded as a failed call of it: it was never called (leaderboard reliability)', async () => {
    const other = await signUp(svc, 'ext-rescued');
    const rescuedApi = client(svc.url, { 'x-api-key': (await createKey(svc, other, { name: 'rescued' })).key });
    const made = { body: { function: await storedAtLocalhost(svc, rescuedApi, upstream.port, { name: uniqueName('rescued-local') }) } };
    const policy = await rescuedApi.post<Record<string, any>>('/api/routing-policies', { name: 'refused first', is_default: true, strategy: 'cheapest', config: { candidates: [made.body.function.name] }, fallback_function: 'anchored-adjustment' });
    expect(policy.status, policy.text).to.equal(201);
    const res = await rescuedApi.post<Record<string, any>>('/api/compute/price', { context: { current_price: 20 } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.function.name).to.equal('anchored-adjustment');
    expect(res.body.trace.attempts[0]).to.include({ id: made.body.function.id, outcome: 'failed', retryable: false });
    const [rows] = await svc.sequelize.query('SELECT function_id, failed_function_ids FROM usage_events WHERE id = $1', { bind: [res.body.receipt.usage_event_id] });
    expect(rows).to.deep.equal([{ function_id: 'fn_builtin_anchored', failed_function_ids: [] }]);
  });

  it("two functions refused by address: the owner's hint names each one's PATCH by id (no {id} placeholder); another workspace's names none", async () => {
    const owner = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-two-refused'), { name: 'o' })).key });
    const make = (label: string) => storedAtLocalhost(svc, owner, upstream.port, { name: uniqueName(label), is_public: true });
    const [a, b] = [await make('two-a'), await make('two-b')];
    const policy = await owner.post<Record<string, any>>('/api/routing-policies', { name: 'two refused', strategy: 'cheapest', is_default: true, config: { candidates: [a.name] }, fallback_chain: [b.name] });
    expect(policy.status, policy.text).to.equal(201);
    const res = await owner.post<Record<string, any>>('/api/compute/price', { context: CONTEXT });
    expect(res.status, res.text).to.equal(502);
    expect(res.body.retryable).to.equal(false);
    expect(res.body.hint).to.include(`PATCH /api/functions/${a.id} and PATCH /api/functions/${b.id} with a public https endpoint_url`).and.not.include('{id}');
    const stranger = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-two-stranger'), { name: 's' })).key });
    const theirs = await stranger.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: a.id });
    expect(theirs.status, theirs.text).to.equal(502);
    expect(theirs.body.hint).to.include("its owner sees which in the attempt's error and can register a public https endpoint_url").and.not.include('PATCH /api/functions/');
  });

  it('stays retryable when a function refused by address is followed by one that failed for a reason that can pass (a name that does not resolve)', async () => {
    const other = await signUp(svc, 'ext-mixed');
    const mixed = client(svc.url, { 'x-api-key': (await createKey(svc, other, { name: 'mixed' })).key });
    const make = async (label: string, endpoint_url: string) => {
      const res = await mixed.post<Record<string, any>>('/api/functions', { name: uniqueName(label), execution_type: 'external_api', endpoint_url, cost_per_unit: '0.002' });
      expect(res.status, res.text).to.equal(201);
      expect((await mixed.patch(`/api/functions/${res.body.function.id}`, { status: 'active' })).status).to.equal(200);
      return res.body.function as { id: string; name: string };
    };
    const blocked = await storedAtLocalhost(svc, mixed, upstream.port, { name: uniqueName('blocked') });
    // A name that does not resolve: a network failure, which can pass (the name may resolve later).
    const flaky = await make('flaky', 'http://pricing.no-such-host.invalid/price');
    const policy = await mixed.post<Record<string, any>>('/api/routing-policies', { name: 'mixed', strategy: 'cheapest', is_default: true, config: { candidates: [blocked.name] }, fallback_chain: [flaky.name] });
    expect(policy.status, policy.text).to.equal(201);

    const res = await mixed.post<Record<string, any>>('/api/compute/price', { context: CONTEXT });
    expect(res.status, res.text).to.equal(502);
    expect((res.body.attempts as Attempt[]).map((x) => `${x.function}:${x.outcome}`)).to.deep.equal([`${blocked.name}:failed`, `${flaky.name}:failed`]);
    expect(res.body.attempts[0]).to.include({ retryable: false });
    expect(res.body.attempts[1]).to.not.have.property('retryable');
    expect(res.body.retryable).to.equal(true);
    // It names only the parts of the attempt order the call went through: this policy has no fallback function.
    expect(res.body.error).to.equal('Every function tried failed (the chosen function, the fallback chain).');
  });
});

describe('pricing: what another workspace hears of a marketplace function\'s failures', () => {
  let svc: TestService;
  let upstream: Upstream;
  let canary: Canary;

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 1, confidence: 0.9 }));
    canary = await startCanary({ hosts: ['127.0.0.2', '::1'], port: upstream.port });
    svc = await startTestService({ config: { engine: { cacheTtlMs: 0 }, outbound: { allowedPorts: ['*'] } } });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
    await canary.close();
  });

  it('names the kind of failure to other workspaces without the owner\'s address; the owner sees it whole', async () => {
    const owner = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-lister'), { name: 'o' })).key });
    const buyer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-buyer'), { name: 'b' })).key });
    const list = async (label: string, endpoint_url: string) => {
      const res = await owner.post<Record<string, any>>('/api/functions', { name: uniqueName(label), execution_type: 'external_api', endpoint_url, cost_per_unit: '0.002', is_public: true });
      expect(res.status, res.text).to.equal(201);
      expect((await owner.patch(`/api/functions/${res.body.function.id}`, { status: 'active' })).status).to.equal(200);
      return res.body.function as { id: string; name: string };
    };
    const unresolvable = await list('dns', 'http://pricing.secret-upstream.invalid/price');
    const blocked = await storedAtLocalhost(svc, owner, upstream.port, { name: uniqueName('blocked'), is_public: true }, '/internal');
    for (const [fn, said] of [
      [unresolvable, 'The endpoint could not be reached.'],
      [blocked, "The function's registered address is refused by this service's outbound guard; only its owner can change it."],
    ] as const) {
      const bought = await buyer.post<Record<string, any>>('/api/price-router', { context: CONTEXT, function_name: fn.name });
      expect(bought.status, bought.text).to.equal(502);
      expect(bought.body.attempts[0].error).to.equal(said);
      const tested = await buyer.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: CONTEXT });
      expect(tested.status, tested.text).to.equal(200);
      expect(tested.body.error).to.equal(said);
      for (const text of [bought.text, tested.text]) expect(text).to.not.match(/secret-upstream|localhost|127\.0\.0\.1|\/internal/);
      // Nor does the hint promise the buyer an address its attempts do not carry.
      expect(bought.body.hint).to.not.match(/error names the address/);
      if (fn === blocked) expect(bought.body.hint).to.include('its owner sees which');
      // The owner debugging its own function hears the whole of it.
      const own = await owner.post<Record<string, any>>('/api/price-router', { context: CONTEXT, function_name: fn.name });
      expect(own.body.attempts[0].error).to.not.equal(said);
      expect(own.text).to.match(/secret-upstream|localhost|127\.0\.0\.1/);
    }
    expect(canary.connections()).to.equal(0);
  });

  it("shows the owner why its function's last calls failed, the buyer's included and newest first, in its own words; the buyer reads no reasons", async () => {
    const owner = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-debugger'), { name: 'o' })).key });
    const buyer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-caller'), { name: 'b' })).key });
    const created = await owner.post<Record<string, any>>('/api/functions', { name: uniqueName('why'), execution_type: 'external_api', endpoint_url: 'http://pricing.why-upstream.invalid/price', cost_per_unit: '0.002', is_public: true });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.function.id as string;
    expect((await owner.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    const before = await owner.get<Record<string, any>>(`/api/functions/${id}`);
    expect(before.body.breaker.recent_failures).to.deep.equal([]);
    for (let i = 0; i < 2; i++) expect((await buyer.post('/api/compute/price', { context: CONTEXT, function_id: id })).status).to.equal(502);
    const read = await owner.get<Record<string, any>>(`/api/functions/${id}`);
    expect(read.status, read.text).to.equal(200);
    const failures = read.body.breaker.recent_failures as Array<{ at: string; reason: string }>;
    expect(failures).to.have.length(2);
    for (const f of failures) expect(f.reason).to.match(/why-upstream/);
    expect(Date.parse(failures[0]?.at ?? '')).to.be.at.least(Date.parse(failures[1]?.at ?? ''));
    const theirs = await buyer.get<Record<string, any>>(`/api/functions/${id}`);
    expect(theirs.status, theirs.text).to.equal(200);
    expect(theirs.body.breaker).to.not.have.property('recent_failures');
    expect(theirs.text).to.not.match(/why-upstream/);
  });
});

describe('pricing: external_api endpoints under OUTBOUND_HTTPS_ONLY and the default ports, without an allow-list', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: { outbound: { httpsOnly: true } } });
    const owner = await signUp(svc, 'ext-https-only');
    const { key } = await createKey(svc, owner, { name: 'external functions' });
    api = client(svc.url, { 'x-api-key': key });
  });
  after(() => svc.close());

  const registerAt = (endpoint_url: string) => api.post<Record<string, any>>('/api/functions', { name: uniqueName('https'), execution_type: 'external_api', endpoint_url, cost_per_unit: '0.002' });

  it('refuses a plain-http endpoint at registration naming OUTBOUND_HTTPS_ONLY, with a hint true to the configuration', async () => {
    const res = await registerAt('http://93.184.215.14/price');
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues).to.deep.equal([{ path: 'endpoint_url', reason: 'Only https URLs are allowed (the operator setting OUTBOUND_HTTPS_ONLY).' }]);
    expect(res.body.hint).to.equal(
      'Register a public https address (plain http is refused: OUTBOUND_HTTPS_ONLY) on port 443 or 80 (OUTBOUND_ALLOWED_PORTS); loopback, private, link-local and metadata addresses are refused (the operator can open specific ones with OUTBOUND_ALLOW_LIST).',
    );
  });

  it('refuses a name on a port outside OUTBOUND_ALLOWED_PORTS at registration (no allow-list could exempt what it resolves to)', async () => {
    const res = await registerAt('https://pricing.acme.example:8443/price');
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues[0].reason).to.equal('Port 8443 of pricing.acme.example:8443 is not allowed for outbound requests (allowed: 443, 80; the operator setting OUTBOUND_ALLOWED_PORTS).');
    expect((await registerAt('https://pricing.acme.example/price')).status).to.equal(201);
  });
});

describe('pricing: external_api functions and the result cache', () => {
  let svc: TestService;
  let upstream: Upstream;
  let api: ReturnType<typeof client>;

  before(async () => {
    upstream = await startUpstream((req, res) => {
      switch (req.path) {
        case '/a':
          return sendJson(res, 200, { price: 10, confidence: 0.5 });
        case '/b':
          return sendJson(res, 200, { price: 99, confidence: 0.9 });
        default:
          return sendJson(res, 404, { error: 'unknown path' });
      }
    });
    svc = await startTestService({ config: { outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 60_000 } } });
    const owner = await signUp(svc, 'ext-cache-owner');
    const { key } = await createKey(svc, owner, { name: 'external cache' });
    api = client(svc.url, { 'x-api-key': key });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  it('a PATCHed endpoint_url is priced by the new endpoint at once, not from the cache of the old one', async () => {
    const created = await api.post<Record<string, any>>('/api/functions', { name: uniqueName('cache'), execution_type: 'external_api', endpoint_url: upstream.url('/a'), cost_per_unit: '0.002' });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.function.id as string;
    expect((await api.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    const price = () => api.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: id });

    const first = await price();
    expect(first.status, first.text).to.equal(200);
    expect(first.body).to.deep.include({ price: '10.00' });
    expect(first.body.trace.cache).to.equal('miss');
    expect((await price()).body.trace.cache, 'unchanged, the cache answers').to.equal('hit');

    const patched = await api.patch<Record<string, any>>(`/api/functions/${id}`, { endpoint_url: upstream.url('/b') });
    expect(patched.status, patched.text).to.equal(200);
    const after = await price();
    expect(after.status, after.text).to.equal(200);
    expect(after.body.trace.cache, 'the old endpoint\'s answer was served from the cache').to.equal('miss');
    expect(after.body.price).to.equal('99.00');
    expect(upstream.requests.filter((r) => r.path === '/b')).to.have.length(1);
  });
});

describe("pricing: a context an external endpoint refuses is the context's fault, not the function's (its breaker stays closed)", () => {
  let svc: TestService;
  let upstream: Upstream;
  let owner: ReturnType<typeof client>;
  let stranger: ReturnType<typeof client>;
  const EUR = { product_type: 'coffee', currency: 'EUR', unit_cost: 5 };
  const USD = { product_type: 'coffee', currency: 'USD', unit_cost: 5 };

  before(async () => {
    upstream = await startUpstream((req, res) => {
      const ctx = (JSON.parse(req.body || '{}') as { context?: { currency?: string } }).context ?? {};
      // A USD-only endpoint: it answers its own currency whatever the context asks for.
      if (req.path === '/usd-only') return sendJson(res, 200, { price: 12, confidence: 0.8, currency: 'usd' });
      if (req.path === '/hang') return; // never answers
      // Answers its status to a context in EUR, a price otherwise.
      const status = /^\/status\/(\d+)$/.exec(req.path)?.[1];
      if (status) return ctx.currency === 'EUR' ? sendJson(res, Number(status), { error: 'no' }) : sendJson(res, 200, { price: 12, confidence: 0.8 });
      return sendJson(res, 404, { error: 'unknown path' });
    });
    // The default breaker: 5 calls in the window, half of them failures, open it.
    svc = await startTestService({ config: { outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 0 } } });
    owner = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-usd-owner'), { name: 'o' })).key });
    stranger = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-usd-stranger'), { name: 's' })).key });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  const listed = async (path: string) => {
    const res = await owner.post<Record<string, any>>('/api/functions', { name: uniqueName(`refuses${path.replace(/\W/g, '')}`), execution_type: 'external_api', endpoint_url: upstream.url(path), cost_per_unit: '0.002', is_public: true });
    expect(res.status, res.text).to.equal(201);
    expect((await owner.patch(`/api/functions/${res.body.function.id}`, { status: 'active' })).status).to.equal(200);
    return res.body.function as { id: string; name: string };
  };
  const breakerOf = async (id: string, reader = owner) => (await reader.get<Record<string, any>>(`/api/functions/${id}`)).body.breaker as { state: string; calls: number; failures: number };

  it("a failing function's 502 hint: the owner's key is offered a whole default policy whose fallback can price the context; a member's key, which may not create one, is asked to turn to an owner or admin; the owner's key narrowed by scopes is told which credential may", async () => {
    const fn = await listed('/status/500');
    const person = await signUp(svc, 'ext-hint-owner');
    const ownKey = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'own' })).key });
    const member = await joinWorkspace(svc, person, 'ext-hint-member', 'member');
    const made = await client(svc.url, member.session).post<Record<string, any>>('/api/api-keys', { name: 'member' });
    expect(made.status, made.text).to.equal(201);
    const memberKey = client(svc.url, { 'x-api-key': made.body.api_key.key as string });
    const byOwner = await ownKey.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
    expect(byOwner.status, byOwner.text).to.equal(502);
    const body = /POST \/api\/routing-policies (\{.*?\}), a built-in/.exec(byOwner.body.hint as string)?.[1];
    expect(body, byOwner.body.hint).to.be.a('string');
    // Sent as given, the policy is created, and the call it was offered for is answered by its fallback.
    const created = await ownKey.post<Record<string, any>>('/api/routing-policies', JSON.parse(body as string));
    expect(created.status, created.text).to.equal(201);
    const again = await ownKey.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
    expect(again.status, again.text).to.equal(200);
    expect(again.body.trace.fallback_used).to.equal(true);
    // The member's key acts in the same workspace: its policy's fallback answers it too.
    const byMember = await memberKey.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
    expect(byMember.status, byMember.text).to.equal(200);
    expect((await ownKey.delete(`/api/routing-policies/${created.body.policy.id as string}`)).status).to.be.oneOf([200, 204]);
    const refused = await memberKey.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
    expect(refused.status, refused.text).to.equal(502);
    expect(refused.body.hint).to.include('ask an owner or admin of the workspace for a default routing policy with a fallback (this credential may not create one)');
    // The owner's own key narrowed to computing may not create the policy either, but its creator may: it is told with what.
    const narrowed = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'compute only', scopes: ['price:compute'] })).key });
    const byNarrowed = await narrowed.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
    expect(byNarrowed.status, byNarrowed.text).to.equal(502);
    expect(byNarrowed.body.hint).to.include('create a default routing policy with a fallback with a credential of full access (your session, or a key created with no scopes').and.not.include('ask an owner');
    const tried = await narrowed.post<Record<string, any>>('/api/routing-policies', { name: 'by narrowed', strategy: 'default', is_default: true, fallback_function: 'cost-plus' });
    expect(tried.status, tried.text).to.equal(403);
  });

  for (const status of [404, 413, 422]) {
    it(`a pinned endpoint refusing the context with HTTP ${status}: the hint says the endpoint refused it (no value to change is named), and no built-in's inputs are listed`, async () => {
      const fn = await listed(`/status/${status}`);
      const res = await stranger.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
      expect(res.status, res.text).to.equal(422);
      expect(res.body).to.include({ code: 'insufficient_context', error: `The context cannot be priced by ${fn.name}: The endpoint refused this context (HTTP ${status}), saying "no".` });
      expect(res.body.missing).to.deep.equal([]);
      expect(res.body.hint).to.equal(`No input is missing: the endpoint of ${fn.name} refused this context as sent, and the message quotes its answer. Send a context that endpoint prices (its owner says what it reads), or omit function_id to let routing choose a function that prices what you sent.`);
      // No built-in ran or was considered on this pinned call.
      expect(res.body).to.not.have.property('inputs_by_function');
    });
  }

  it("a pinned endpoint that declines the currency, beside a fallback lacking an input: the hint does not name the fallback's input as the pinned function's need", async () => {
    const fn = await listed('/usd-only');
    const caller = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-usd-fallback'), { name: 'f' })).key });
    const policy = await caller.post<Record<string, any>>('/api/routing-policies', { name: 'with fallback', strategy: 'cheapest', is_default: true, fallback_function: 'cost-plus' });
    expect(policy.status, policy.text).to.equal(201);
    const res = await caller.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'coffee', currency: 'EUR', current_price: 10 }, function_id: fn.id });
    expect(res.status, res.text).to.equal(422);
    expect(res.body).to.include({ code: 'insufficient_context' });
    expect(res.body.missing).to.deep.equal(['unit_cost']);
    expect(res.body.refused).to.deep.equal(['currency']);
    expect((res.body.attempts as Array<{ role: string; outcome: string }>).map((a) => [a.role, a.outcome])).to.deep.equal([['chosen', 'not_applicable'], ['fallback_function', 'not_applicable']]);
    expect(res.body.hint).to.match(/^The function you named with function_id lacks no input: it could not price this context as sent/);
    expect(res.body.hint).to.include("unit_cost (missing) is what your policy's fallbacks need: adding it gets a price from a fallback, not from the function you named");
    expect(res.body.hint).to.not.match(/^Add unit_cost/);
  });

  it("a stranger's calls in a currency the endpoint does not answer in: 422 insufficient_context naming currency, free, no breaker failure; the owner's call answers 200", async () => {
    const fn = await listed('/usd-only');
    for (let i = 0; i < 6; i++) {
      const res = await stranger.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
      expect(res.status, res.text).to.equal(422);
      expect(res.headers.get('retry-after')).to.equal(null);
      expect(res.body).to.include({ code: 'insufficient_context', error: `The context cannot be priced by ${fn.name}: The endpoint answered in USD; the context asks for EUR.` });
      expect(res.body.refused).to.deep.equal(['currency']);
      expect(res.body.missing).to.deep.equal([]);
      expect(res.body.issues).to.deep.equal([{ path: 'context.currency', reason: 'The endpoint answered in USD; the context asks for EUR.' }]);
      expect(res.body.hint).to.include('would not price currency as sent');
      expect(res.body.attempts).to.deep.equal([{ function: fn.name, id: fn.id, role: 'chosen', outcome: 'not_applicable', error: 'The endpoint answered in USD; the context asks for EUR.', ms: res.body.attempts[0].ms }]);
      const [rows] = await svc.sequelize.query('SELECT status, error_code, cost::text AS cost, billable, function_id, failed_function_ids FROM usage_events WHERE request_id = $1', { bind: [res.body.request_id] });
      // The event names the function the call reached (its caller finds it by function), as no failed one of it.
      expect(rows).to.deep.equal([{ status: 'error', error_code: 'insufficient_context', cost: '0.00000000', billable: false, function_id: fn.id, failed_function_ids: [] }]);
    }
    expect(await breakerOf(fn.id)).to.include({ state: 'closed', failures: 0 });
    const own = await owner.post<Record<string, any>>('/api/compute/price', { context: USD, function_id: fn.id });
    expect(own.status, own.text).to.equal(200);
    expect(own.body).to.include({ price: '12.00', currency: 'USD' });
    // A test run names the value too.
    const tested = await stranger.post<Record<string, any>>(`/api/functions/${fn.id}/test`, { context: EUR });
    expect(tested.status, tested.text).to.equal(200);
    expect(tested.body).to.include({ ok: false, error: 'The endpoint answered in USD; the context asks for EUR.' });
    expect(tested.body.refused).to.deep.equal(['currency']);
  });

  for (const status of [400, 404, 413, 422]) {
    it(`a stranger's calls the endpoint answers HTTP ${status}: 422 insufficient_context, no breaker failure; the owner's call answers 200`, async () => {
      const fn = await listed(`/status/${status}`);
      for (let i = 0; i < 6; i++) {
        const res = await stranger.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
        expect(res.status, res.text).to.equal(422);
        expect(res.body).to.include({ code: 'insufficient_context', error: `The context cannot be priced by ${fn.name}: The endpoint refused this context (HTTP ${status}), saying "no".` });
        expect(res.body).to.not.have.property('refused');
        expect(res.body.attempts[0]).to.include({ outcome: 'not_applicable', error: `The endpoint refused this context (HTTP ${status}), saying "no".` });
      }
      expect(await breakerOf(fn.id)).to.include({ state: 'closed', failures: 0 });
      const own = await owner.post<Record<string, any>>('/api/compute/price', { context: USD, function_id: fn.id });
      expect(own.status, own.text).to.equal(200);
    });
  }

  it('a refused context goes on to the next function, which answers as no fallback: no failed function in the usage event', async () => {
    const fn = await listed('/usd-only');
    const buyer = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-usd-buyer'), { name: 'b' })).key });
    expect((await buyer.post('/api/routing-policies', { name: 'usd first', strategy: 'priority', is_default: true, config: { order: [fn.id, 'cost-plus'] } })).status).to.equal(201);
    const res = await buyer.post<Record<string, any>>('/api/compute/price', { context: EUR });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.function.name).to.equal('cost-plus');
    expect(res.body.currency).to.equal('EUR');
    expect(res.body.trace.fallback_used).to.equal(false);
    expect(res.body.trace.attempts.map((a: Attempt) => `${a.function}:${a.outcome}`)).to.deep.equal([`${fn.name}:not_applicable`, 'cost-plus:ok']);
    const [rows] = await svc.sequelize.query('SELECT function_id, failed_function_ids FROM usage_events WHERE id = $1', { bind: [res.body.receipt.usage_event_id] });
    expect(rows).to.deep.equal([{ function_id: 'fn_builtin_cost_plus', failed_function_ids: [] }]);
  });

  for (const status of [401, 403, 405, 410, 429, 500, 503]) {
    it(`HTTP ${status} stays a failure of the function: five of a stranger's open the stranger's breaker (502 with Retry-After) and the owner's call is still answered; a second failing workspace opens the function's, for everyone`, async () => {
      const fn = await listed(`/status/${status}`);
      for (let i = 0; i < 5; i++) {
        const res = await stranger.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
        expect(res.status, res.text).to.equal(502);
        expect(res.body.attempts[0]).to.include({ outcome: 'failed', error: `The endpoint answered HTTP ${status}.` });
        // The failure that opens the breaker (the fifth) says when to retry, as the refusals after it do; those before it cannot.
        const opening = i === 4;
        expect(res.headers.get('retry-after') !== null, `call ${i + 1}: Retry-After`).to.equal(opening || res.body.attempts[0].retry_after !== undefined);
        if (opening) expect(res.body.error).to.match(/each now behind an open circuit breaker|or behind an open circuit breaker/);
      }
      expect(await breakerOf(fn.id, stranger)).to.include({ state: 'open', failures: 5, applies_to: 'this_workspace' });
      const kept = await stranger.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
      expect(kept.status, kept.text).to.equal(502);
      expect(kept.body.error).to.match(/circuit breaker open/);
      expect(Number(kept.headers.get('retry-after'))).to.be.greaterThan(0);
      // One workspace's failures (BREAKER_MIN_FAILING_CALLERS is 2) leave the function to the others: the endpoint fails only the
      // stranger's contexts, and the owner's call is still answered by it.
      expect(await breakerOf(fn.id)).to.include({ state: 'closed', failures: 5, failing_callers: 1, applies_to: 'everyone' });
      const served = await owner.post<Record<string, any>>('/api/compute/price', { context: USD, function_id: fn.id });
      expect(served.status, served.text).to.equal(200);
      expect(served.body.function.id).to.equal(fn.id);
      // One failure of a second workspace does not make it a failing one (its own breaker would not open on it either).
      const another = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-usd-stranger-2'), { name: 's2' })).key });
      expect((await another.post('/api/compute/price', { context: EUR, function_id: fn.id })).status).to.equal(502);
      expect(await breakerOf(fn.id)).to.include({ state: 'closed', failures: 6, failing_callers: 1 });
      // BREAKER_MIN_CALLS (5) of its calls failing do: the function's breaker opens, for everyone.
      for (let i = 0; i < 4; i++) expect((await another.post('/api/compute/price', { context: EUR, function_id: fn.id })).status).to.equal(502);
      expect(await breakerOf(fn.id)).to.include({ state: 'open', failures: 10, failing_callers: 2, applies_to: 'everyone' });
      const own = await owner.post<Record<string, any>>('/api/compute/price', { context: USD, function_id: fn.id });
      expect(own.status, own.text).to.equal(502);
      expect(own.body.error).to.match(/circuit breaker open/);
      expect(Number(own.headers.get('retry-after'))).to.be.greaterThan(0);
    });
  }

  it("an owner giving the function a new endpoint lets the next call through as its breakers' trial, instead of keeping it out for the cooldown", async () => {
    const fn = await listed('/status/500');
    const another = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ext-moved-2'), { name: 's2' })).key });
    for (const caller of [stranger, another]) for (let i = 0; i < 5; i++) expect((await caller.post('/api/compute/price', { context: EUR, function_id: fn.id })).status).to.equal(502);
    expect(await breakerOf(fn.id)).to.include({ state: 'open', applies_to: 'everyone' });
    expect(await breakerOf(fn.id, stranger)).to.include({ state: 'open' });
    // A change that leaves the address alone changes nothing.
    expect((await owner.patch(`/api/functions/${fn.id}`, { description: 'still failing' })).status).to.equal(200);
    expect(await breakerOf(fn.id)).to.include({ state: 'open' });
    const moved = await owner.patch<Record<string, any>>(`/api/functions/${fn.id}`, { endpoint_url: upstream.url('/usd-only') });
    expect(moved.status, moved.text).to.equal(200);
    expect(await breakerOf(fn.id)).to.include({ state: 'half_open' });
    // The stranger's own breaker let its call through too: the new endpoint answers (in USD), and the trial closes both.
    const served = await stranger.post<Record<string, any>>('/api/compute/price', { context: USD, function_id: fn.id });
    expect(served.status, served.text).to.equal(200);
    expect(served.body.function.id).to.equal(fn.id);
    expect(await breakerOf(fn.id)).to.include({ state: 'closed' });
    expect(await breakerOf(fn.id, stranger)).to.include({ state: 'closed' });
  });

  it("a person's own workspace and test workspace count as one caller: their failures together never open the function's breaker for the others", async () => {
    const fn = await listed('/status/500');
    const person = await signUp(svc, 'ext-two-workspaces');
    const own = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'own' })).key });
    const testKey = await client(svc.url, { cookie: person.cookie, 'x-workspace-id': person.testWorkspaceId }).post<Record<string, any>>('/api/api-keys', { name: 'test' });
    expect(testKey.status, testKey.text).to.equal(201);
    const test = client(svc.url, { 'x-api-key': testKey.body.api_key.key as string });
    for (let i = 0; i < 5; i++) expect((await own.post('/api/compute/price', { context: EUR, function_id: fn.id })).status).to.equal(502);
    // The test workspace is the same caller: its own breaker is the one the person's calls opened.
    const kept = await test.post<Record<string, any>>('/api/compute/price', { context: EUR, function_id: fn.id });
    expect(kept.status, kept.text).to.equal(502);
    expect(kept.body.error).to.match(/circuit breaker open for this workspace/);
    expect(await breakerOf(fn.id, test)).to.include({ state: 'open', applies_to: 'this_workspace' });
    expect(await breakerOf(fn.id)).to.include({ state: 'closed', callers: 1, failing_callers: 1 });
    expect((await owner.post('/api/compute/price', { context: USD, function_id: fn.id })).status).to.equal(200);
  });

  it("a timeout stays a failure of the function: five of a stranger's open the stranger's breaker, and the owner's failing too opens the function's", async () => {
    const res = await owner.post<Record<string, any>>('/api/functions', { name: uniqueName('refuses-hang'), execution_type: 'external_api', endpoint_url: upstream.url('/hang'), cost_per_unit: '0.002', is_public: true, timeout_ms: 50 });
    expect(res.status, res.text).to.equal(201);
    const id = res.body.function.id as string;
    expect((await owner.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    for (let i = 0; i < 5; i++) expect((await stranger.post('/api/compute/price', { context: EUR, function_id: id })).status).to.equal(502);
    expect(await breakerOf(id, stranger)).to.include({ state: 'open', failures: 5, applies_to: 'this_workspace' });
    expect(await breakerOf(id)).to.include({ state: 'closed', failures: 5 });
    // The endpoint hangs on every context: the owner's calls fail too, and with a second failing workspace the function's breaker opens.
    for (let i = 0; i < 5; i++) expect((await owner.post('/api/compute/price', { context: USD, function_id: id })).status).to.equal(502);
    expect(await breakerOf(id)).to.include({ state: 'open', failures: 10, failing_callers: 2, applies_to: 'everyone' });
  });
});
