import { expect } from 'chai';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

/**
 * What the service reads in an external endpoint's answer, beyond a price: the reason it gives with a refusal of the
 * context (quoted to the caller), and the optional fields it leaves null. Each endpoint is a real HTTP server of this
 * test's own on 127.0.0.1, which OUTBOUND_ALLOW_LIST opens.
 */

let seq = 0;
const uniqueName = (label: string) => `ans-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
const CONTEXT = { product_type: 'coffee', currency: 'USD', current_price: 4.5 };

describe('pricing: what an external endpoint answers besides a price', () => {
  let svc: TestService;
  let upstream: Upstream;
  let owner: ReturnType<typeof client>;
  let stranger: ReturnType<typeof client>;

  before(async () => {
    upstream = await startUpstream((req, res) => {
      switch (req.path) {
        case '/error-field':
          return sendJson(res, 422, { error: 'no' });
        case '/detail-field':
          return sendJson(res, 400, { detail: 'product_id is required for this catalogue' });
        case '/nested-error':
          return sendJson(res, 422, { error: { code: 'unknown_sku', message: 'unknown SKU' } });
        case '/plain-text':
          res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
          return void res.end('no such\u0007 product\r\n\u202Eyet\ttoday');
        case '/long':
          return sendJson(res, 422, { message: `${'too long '.repeat(200)}end` });
        case '/names-itself':
          return sendJson(res, 422, { error: `POST ${upstream.url('/names-itself')} refused: see 127.0.0.1:${upstream.port} logs` });
        case '/html':
          res.writeHead(404, { 'content-type': 'text/html' });
          return void res.end('<html><body>Cannot POST /html</body></html>');
        case '/empty':
          res.writeHead(413);
          return void res.end();
        case '/other-fields':
          return sendJson(res, 422, { code: 42, errors: ['a', 'b'] });
        case '/eur-only':
          return sendJson(res, 200, { price: 12, confidence: 0.5, currency: 'EUR' });
        case '/null-currency':
          return sendJson(res, 200, { price: 12, confidence: 0.5, currency: null });
        case '/null-notes':
          return sendJson(res, 200, { price: 12, confidence: 0.5, notes: null });
        case '/null-optionals':
          return sendJson(res, 200, { price: '12.5', confidence: 0.5, currency: null, notes: null, details: null });
        case '/null-price':
          return sendJson(res, 200, { price: null, confidence: 0.5 });
        case '/null-confidence':
          return sendJson(res, 200, { price: 12, confidence: null, currency: null });
        default:
          return sendJson(res, 500, { error: 'unexpected path' });
      }
    });
    svc = await startTestService({ config: { outbound: { allowList: ['127.0.0.1'] }, engine: { cacheTtlMs: 0 } } });
    owner = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ans-owner'), { name: 'o' })).key });
    stranger = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ans-stranger'), { name: 's' })).key });
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  /** A public active function at `path` of the test's endpoint. */
  const listed = async (path: string) => {
    const name = uniqueName(path.replace(/\W/g, ''));
    const res = await owner.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: upstream.url(path), cost_per_unit: '0.002', is_public: true });
    expect(res.status, res.text).to.equal(201);
    expect((await owner.patch(`/api/functions/${res.body.function.id}`, { status: 'active' })).status).to.equal(200);
    return { id: res.body.function.id as string, name };
  };
  const pinned = (as: ReturnType<typeof client>, id: string) => as.post<Record<string, any>>('/api/compute/price', { context: CONTEXT, function_id: id });

  describe("an endpoint's refusal of the context quotes the reason it gave", () => {
    it('quotes the error string of a JSON refusal in the message and the attempt, and the hint says so', async () => {
      const fn = await listed('/error-field');
      const res = await pinned(stranger, fn.id);
      expect(res.status, res.text).to.equal(422);
      expect(res.body).to.include({ code: 'insufficient_context', error: `The context cannot be priced by ${fn.name}: The endpoint refused this context (HTTP 422), saying "no".` });
      expect(res.body.attempts[0]).to.include({ outcome: 'not_applicable', error: 'The endpoint refused this context (HTTP 422), saying "no".' });
      expect(res.body.hint).to.match(new RegExp(`^No input is missing: the endpoint of ${fn.name} refused this context as sent, and the message quotes its answer\\. `));
    });

    it("quotes a detail field, an error object's message and a plain-text answer; a test run quotes it too", async () => {
      const detail = await listed('/detail-field');
      expect((await pinned(stranger, detail.id)).body.attempts[0].error).to.equal('The endpoint refused this context (HTTP 400), saying "product_id is required for this catalogue".');
      const nested = await listed('/nested-error');
      expect((await pinned(stranger, nested.id)).body.attempts[0].error).to.equal('The endpoint refused this context (HTTP 422), saying "unknown SKU".');
      const text = await listed('/plain-text');
      const tested = await stranger.post<Record<string, any>>(`/api/functions/${text.id}/test`, { context: CONTEXT });
      expect(tested.status, tested.text).to.equal(200);
      // Control and bidirectional characters taken out, the answer kept on one line.
      expect(tested.body).to.include({ ok: false, error: 'The endpoint refused this context (HTTP 404), saying "no such product yet today".' });
    });

    it('bounds the quote to a note\'s length (500 characters) and never quotes the registered address', async () => {
      const long = await listed('/long');
      const error = (await pinned(stranger, long.id)).body.attempts[0].error as string;
      const quote = JSON.parse(/saying (".*")\.$/.exec(error)?.[1] ?? '""') as string;
      expect(Array.from(quote).length).to.be.within(490, 500);
      expect(quote.endsWith('…')).to.equal(true);
      const named = await listed('/names-itself');
      for (const as of [stranger, owner]) {
        const res = await pinned(as, named.id);
        expect(res.status, res.text).to.equal(422);
        expect(res.text).to.not.include('127.0.0.1').and.not.include(String(upstream.port)).and.not.include('/names-itself');
        expect(res.body.attempts[0].error).to.equal('The endpoint refused this context (HTTP 422), saying "POST (its address) refused: see (its address) logs".');
      }
    });

    it('an answer with no reason to quote (an HTML page, an empty body, other fields) keeps the status alone, and the hint does not claim a quote', async () => {
      for (const [path, status] of [['/html', 404], ['/empty', 413], ['/other-fields', 422]] as const) {
        const fn = await listed(path);
        const res = await pinned(stranger, fn.id);
        expect(res.status, res.text).to.equal(422);
        expect(res.body.attempts[0].error, path).to.equal(`The endpoint refused this context (HTTP ${status}).`);
        expect(res.body.hint, path).to.include('without a reason the message could quote').and.not.include('the message quotes');
      }
    });
  });

  describe('an optional field of an answer sent as null reads as absent', () => {
    it('a null currency is the context\'s currency, null notes none, null details none: a price (200), no failed attempt', async () => {
      for (const path of ['/null-currency', '/null-notes', '/null-optionals']) {
        const fn = await listed(path);
        const res = await pinned(stranger, fn.id);
        expect(res.status, `${path}: ${res.text}`).to.equal(200);
        expect(res.body).to.include({ currency: 'USD', confidence: 0.5 });
        expect(res.body.price).to.equal(path === '/null-optionals' ? '12.50' : '12.00');
        expect(res.body.method.notes).to.deep.equal([]);
        expect(res.body.method).to.not.have.property('details');
        expect(res.body.trace.attempts.map((a: { outcome: string }) => a.outcome)).to.deep.equal(['ok']);
      }
    });

    it('a null price or confidence is still a failed attempt (502), the field named as required', async () => {
      const price = await listed('/null-price');
      const noPrice = await pinned(stranger, price.id);
      expect(noPrice.status, noPrice.text).to.equal(502);
      expect(noPrice.body.attempts[0]).to.include({ outcome: 'failed', error: 'The endpoint\'s answer is not a price: price: required, a positive number or a decimal string such as "12.50".' });
      const confidence = await listed('/null-confidence');
      const noConfidence = await pinned(stranger, confidence.id);
      expect(noConfidence.status, noConfidence.text).to.equal(502);
      expect(noConfidence.body.attempts[0]).to.include({ outcome: 'failed', error: 'The endpoint\'s answer is not a price: confidence: required, a number between 0 and 1.' });
    });
  });

  describe('a pinned call to an endpoint answering in another currency', () => {
    it('is told to omit the field it pinned with (function_id or function_name), not to name a function it already named', async () => {
      const fn = await listed('/eur-only');
      const byId = await pinned(stranger, fn.id);
      expect(byId.status, byId.text).to.equal(422);
      expect(byId.body.refused).to.deep.equal(['currency']);
      expect(byId.body.hint).to.equal(
        'No input is missing: the function you named with function_id would not price currency as sent (issues give why, attempts its reason). Send a value it prices, or omit function_id to let routing choose a function that prices what you sent.',
      );
      const byName = await stranger.post<Record<string, any>>('/api/price-router', { context: CONTEXT, function_name: fn.name });
      expect(byName.status, byName.text).to.equal(422);
      expect(byName.body.hint).to.include('the function you named with function_name would not price currency as sent').and.include('omit function_name to let routing choose');
      expect(byName.body.hint).to.not.include('name a function that prices this one');
    });

    it('a routed call the endpoint declines keeps the advice to name a function that prices the value', async () => {
      const fn = await listed('/eur-only');
      const router = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'ans-router'), { name: 'r' })).key });
      expect((await router.post('/api/routing-policies', { name: 'eur only', strategy: 'priority', is_default: true, config: { order: [fn.id] } })).status).to.equal(201);
      const res = await router.post<Record<string, any>>('/api/compute/price', { context: CONTEXT });
      expect(res.status, res.text).to.equal(422);
      expect(res.body.refused).to.deep.equal(['currency']);
      expect(res.body.hint).to.include('Send a value they price, or name a function that prices this one with function_id.');
    });
  });
});
