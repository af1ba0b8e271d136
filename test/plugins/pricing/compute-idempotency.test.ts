import { expect } from 'chai';
import { batchExample, computeExample } from '../../../plugins/pricing/schemas';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { rowsOnceSettled } from '../../support/abandoned-call';
import { createTestDatabase } from '../../support/db';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { tcpProxy } from '../../support/tcp-proxy';
import type { TcpProxy } from '../../support/tcp-proxy';
import { createKey, registerSandbox, signUp } from '../../support/world';

type Body = Record<string, any>;
type Api = ReturnType<typeof client>;

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

const priced = { context: { unit_cost: 4, target_margin: 0.3, currency: 'USD' }, function_id: 'fn_builtin_cost_plus' };

/**
 * Idempotency-Key on priced calls: a retry after an answer that never arrived (a client timeout, a
 * cut connection) answers the first call's result and is not charged a second time; the key rides
 * in the usage event's own insert, so it exists exactly when a charged event does.
 */
describe('compute: Idempotency-Key on priced calls', function () {
  this.timeout(90_000);
  let svc: TestService;
  let api: Api;
  let apiKey: string;
  let workspaceId: string;

  before(async () => {
    svc = await startTestService({ config: lenient });
    const person = await signUp(svc, 'idem-compute');
    workspaceId = person.workspaceId;
    apiKey = (await createKey(svc, person, { name: 'full' })).key;
    api = client(svc.url, { 'x-api-key': apiKey });
  });
  after(() => svc.close());

  const eventCount = async (ws: string) => {
    const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1', { bind: [ws] });
    return (rows as Array<{ n: number }>)[0]?.n as number;
  };

  it('answers a repeated call with the first call\'s result (200, Idempotent-Replayed), recording and charging nothing more', async () => {
    const key = randomUUID();
    const before = await eventCount(workspaceId);
    const first = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(200);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    expect(await eventCount(workspaceId)).to.equal(before + 1);

    // The same body with its keys in another order is the same request.
    const again = await api.post<Body>('/api/compute/price', { function_id: 'fn_builtin_cost_plus', context: { currency: 'USD', target_margin: 0.3, unit_cost: 4 } }, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(200);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    for (const field of ['price', 'currency', 'confidence', 'function', 'strategy', 'method']) expect(again.body[field], field).to.deep.equal(first.body[field]);
    expect(again.body.receipt.usage_event_id).to.equal(first.body.receipt.usage_event_id);
    expect(again.body.receipt.usage_event).to.deep.equal(first.body.receipt.usage_event);
    expect(again.body.receipt.url).to.equal(first.body.receipt.url);
    expect(again.body.request_id).to.be.a('string').and.not.equal(first.body.request_id);
    expect(again.body.idempotent_replay).to.deep.equal({ first_request_id: first.body.request_id, recorded_at: first.body.receipt.recorded_at });
    // What this request did is the replay; what the first charged is in the receipt, and nothing now.
    const stages = (again.body.trace.stages as Array<{ stage: string }>).map((s) => s.stage);
    expect(stages).to.deep.equal(['authenticate_and_validate', 'idempotency_wait', 'idempotent_replay']);
    expect(again.body.trace.charged).to.deep.equal({ amount: '0.00', currency: 'USDC', paid_via: null, billable: false });
    // Nothing ran and no cache was asked in this request; the answer (and its function) is the first call's.
    expect(again.body.trace).to.deep.include({ cache: 'not_consulted', chosen_function: first.body.trace.chosen_function, fallback_used: first.body.trace.fallback_used });
    expect(again.body.trace.attempts).to.deep.equal([]);
    expect(again.body.next_actions).to.deep.equal(first.body.next_actions);
    expect(await eventCount(workspaceId)).to.equal(before + 1);

    // Without the header every call is a call of its own.
    const plain = await api.post<Body>('/api/compute/price', priced);
    expect(plain.status).to.equal(200);
    expect(plain.headers.get('idempotent-replayed')).to.equal(null);
    expect(await eventCount(workspaceId)).to.equal(before + 2);
  });

  it('takes a retry whose currency differs only in case (usd, USD) for the same call: a replay, as the cache takes it for the same context', async () => {
    const key = randomUUID();
    const before = await eventCount(workspaceId);
    const body = (currency: string) => ({ context: { unit_cost: 4, target_margin: 0.25, currency }, function_id: 'fn_builtin_cost_plus' });
    const first = await api.post<Body>('/api/compute/price', body('usd'), { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(200);
    expect(first.body.currency).to.equal('USD');
    const again = await api.post<Body>('/api/compute/price', body('USD'), { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(200);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(await eventCount(workspaceId)).to.equal(before + 1);
    // Without a key: the second spelling is answered from the cache the first filled.
    const unkeyed = await api.post<Body>('/api/compute/price', body('Usd'));
    expect(unkeyed.status, unkeyed.text).to.equal(200);
    expect(unkeyed.body.trace.cache, JSON.stringify(unkeyed.body.trace)).to.equal('hit');
  });

  it('refuses the same key with another body with 422 idempotency_key_reused naming the first call\'s usage event, recording nothing', async () => {
    const key = randomUUID();
    const first = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(200);
    const before = await eventCount(workspaceId);
    const other = await api.post<Body>('/api/compute/price', { ...priced, context: { ...priced.context, unit_cost: 5 } }, { 'idempotency-key': key });
    expect(other.status, other.text).to.equal(422);
    expect(other.body.code).to.equal('idempotency_key_reused');
    expect(other.body.usage_event_id).to.equal(first.body.receipt.usage_event_id);
    expect(other.body.hint).to.include('new key');
    // The price router is another route: the key stands for the first call, not for this one.
    const router = await api.post<Body>('/api/price-router', priced, { 'idempotency-key': key });
    expect(router.status, router.text).to.equal(422);
    expect(router.body.code).to.equal('idempotency_key_reused');
    expect(await eventCount(workspaceId)).to.equal(before);
  });

  it("reports the wait for a call with the same key in flight as the trace's idempotency_wait, not as authenticating", async () => {
    const key = randomUUID();
    // The first call holds its key's turn while its usage event cannot be written.
    const holder = await svc.sequelize.transaction();
    await svc.sequelize.query('LOCK TABLE usage_events IN SHARE MODE', { transaction: holder });
    let first: Promise<HttpResult<Body>>;
    let second: Promise<HttpResult<Body>>;
    try {
      first = api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
      await new Promise((r) => setTimeout(r, 100));
      second = api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
      await new Promise((r) => setTimeout(r, 400));
    } finally {
      await holder.rollback();
    }
    const [a, b] = await Promise.all([first, second]);
    expect([a.status, b.status]).to.deep.equal([200, 200]);
    const stage = (res: HttpResult<Body>, name: string) => (res.body.trace.stages as Array<{ stage: string; ms: number }>).find((x) => x.stage === name)?.ms ?? NaN;
    expect(b.headers.get('idempotent-replayed')).to.equal('true');
    expect(stage(b, 'idempotency_wait')).to.be.above(300);
    expect(stage(b, 'authenticate_and_validate')).to.be.below(100);
    expect(stage(a, 'idempotency_wait'), 'the first found the key free').to.be.below(50);
  });

  it('records one event for 20 concurrent calls with one key; every answer names it and all but one are replays', async () => {
    const key = randomUUID();
    const before = await eventCount(workspaceId);
    const answers = await Promise.all(Array.from({ length: 20 }, () => api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key })));
    for (const a of answers) expect(a.status, a.text).to.equal(200);
    const ids = new Set(answers.map((a) => a.body.receipt.usage_event_id));
    expect(ids.size).to.equal(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).to.have.length(19);
    expect(await eventCount(workspaceId)).to.equal(before + 1);
  });

  it('leaves the key free when the call was not charged: a refused context, or a call marked not delivered', async () => {
    const key = randomUUID();
    const refused = { context: { unit_cost: -4 }, function_id: 'fn_builtin_cost_plus' };
    const first = await api.post<Body>('/api/compute/price', refused, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(422);
    const again = await api.post<Body>('/api/compute/price', refused, { 'idempotency-key': key });
    expect(again.status).to.equal(422);
    expect(again.headers.get('idempotent-replayed')).to.equal(null);
    const [keys] = await svc.sequelize.query('SELECT 1 FROM compute_idempotency_keys WHERE workspace_id = $1 AND key = $2', { bind: [workspaceId, key] });
    expect(keys).to.have.length(0);

    // A call whose answer reached nobody is recorded not delivered and not charged: its retry is priced afresh, once.
    const lostKey = randomUUID();
    const lost = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': lostKey });
    expect(lost.status).to.equal(200);
    await svc.sequelize.query("UPDATE usage_events SET status = 'error', error_code = 'not_delivered', billable = false, cost = 0 WHERE id = $1", { bind: [lost.body.receipt.usage_event_id] });
    const retry = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': lostKey });
    expect(retry.status, retry.text).to.equal(200);
    expect(retry.headers.get('idempotent-replayed')).to.equal(null);
    expect(retry.body.receipt.usage_event_id).not.to.equal(lost.body.receipt.usage_event_id);
    const third = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': lostKey });
    expect(third.headers.get('idempotent-replayed')).to.equal('true');
    expect(third.body.receipt.usage_event_id).to.equal(retry.body.receipt.usage_event_id);
  });

  it('says an Idempotency-Key header sent twice is sent twice, not that the key "got a space" (Node joins the two), pricing nothing', async () => {
    const before = await eventCount(workspaceId);
    const { status, body } = await new Promise<{ status: number; body: Body }>((resolve, reject) => {
      const payload = JSON.stringify(priced);
      const req = httpRequest(
        `${svc.url}/api/compute/price`,
        // An array sends the header once per value, as a client adding it twice does.
        { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'idempotency-key': [randomUUID(), randomUUID()] } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Body }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
    expect(status, JSON.stringify(body)).to.equal(400);
    expect(body.code).to.equal('validation_error');
    expect(body.error).to.equal('The Idempotency-Key header is sent 2 times; send it once.');
    expect(body.issues).to.deep.equal([{ path: 'headers.idempotency-key', reason: 'sent 2 times (one key per request)' }]);
    expect(await eventCount(workspaceId)).to.equal(before);
  });

  it('takes a key afresh once it is older than IDEMPOTENCY_KEY_TTL_H', async () => {
    const key = randomUUID();
    const first = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    await svc.sequelize.query("UPDATE compute_idempotency_keys SET created_at = now() - interval '25 hours' WHERE workspace_id = $1 AND key = $2", { bind: [workspaceId, key] });
    const later = await api.post<Body>('/api/compute/price', { ...priced, context: { ...priced.context, unit_cost: 6 } }, { 'idempotency-key': key });
    expect(later.status, later.text).to.equal(200);
    expect(later.headers.get('idempotent-replayed')).to.equal(null);
    expect(later.body.receipt.usage_event_id).not.to.equal(first.body.receipt.usage_event_id);
  });

  it('refuses a key of the wrong shape with 400 naming the header, before pricing anything, with the body sent as the example (a batch: its own example)', async () => {
    const before = await eventCount(workspaceId);
    for (const [key, got] of [
      ['has spaces in it', 'a space'],
      [Buffer.from('clé-ünïcode', 'utf8').toString('latin1'), 'a character outside printable ASCII'],
      ['k'.repeat(256), '256 characters'],
    ] as const) {
      const res = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues).to.deep.equal([{ path: 'headers.idempotency-key', reason: `1 to 255 printable ASCII characters without spaces (got ${got})` }]);
      // As every compute 400: an example body that passes; the body sent passed, so it is the body sent (only the header was wrong).
      expect(res.body.example).to.deep.equal(priced);
      expect(priced).not.to.deep.equal(computeExample);
    }
    const batch = await api.post<Body>('/api/compute/batch', { items: [priced] }, { 'idempotency-key': 'has spaces in it' });
    expect(batch.status, batch.text).to.equal(400);
    expect(batch.body.example).to.deep.equal(batchExample);
    expect(await eventCount(workspaceId)).to.equal(before);
  });

  it('replays batch items one by one: a retried batch records only the items that were not charged before', async () => {
    const key = randomUUID();
    const items = [priced, { context: { unit_cost: -1 }, function_id: 'fn_builtin_cost_plus' }, { context: { current_price: 10, currency: 'EUR' } }];
    const before = await eventCount(workspaceId);
    const first = await api.post<Body>('/api/compute/batch', { items }, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(200);
    expect(first.body.items.map((i: Body) => i.status)).to.deep.equal([200, 422, 200]);
    const recorded = await eventCount(workspaceId);
    expect(recorded).to.be.above(before + 1);
    const again = await api.post<Body>('/api/compute/batch', { items }, { 'idempotency-key': key });
    expect(again.status).to.equal(200);
    expect(again.body.items.map((i: Body) => i.status)).to.deep.equal([200, 422, 200]);
    expect(again.body.items[0].result.receipt.usage_event_id).to.equal(first.body.items[0].result.receipt.usage_event_id);
    expect(again.body.items[2].result.receipt.usage_event_id).to.equal(first.body.items[2].result.receipt.usage_event_id);
    expect(again.body.items[0].result.idempotent_replay).to.be.an('object');
    // Only the refused item ran again (its error event is not charged).
    expect(await eventCount(workspaceId)).to.equal(recorded + 1);
    expect(first.body.summary).to.deep.equal({ total: 3, succeeded: 2, failed: 1, replayed: 0 });
    expect(again.body.summary).to.deep.equal({ total: 3, succeeded: 2, failed: 1, replayed: 2 });
    // Not every item of this answer is a replay: the refused item was priced again.
    expect(again.headers.get('idempotent-replayed')).to.equal(null);
  });

  it('answers a batch whose every item is a replay with Idempotent-Replayed: true and summary.replayed, charging nothing', async () => {
    const key = randomUUID();
    const items = [priced, { context: { current_price: 10, currency: 'EUR' } }];
    const first = await api.post<Body>('/api/compute/batch', { items }, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(200);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    expect(first.body.summary).to.deep.equal({ total: 2, succeeded: 2, failed: 0, replayed: 0 });
    const recorded = await eventCount(workspaceId);
    const again = await api.post<Body>('/api/compute/batch', { items }, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(200);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.summary).to.deep.equal({ total: 2, succeeded: 2, failed: 0, replayed: 2 });
    expect(again.body.items.map((i: Body) => i.result.receipt.usage_event_id)).to.deep.equal(first.body.items.map((i: Body) => i.result.receipt.usage_event_id));
    expect(again.body.request_id).to.be.a('string').and.not.equal(first.body.request_id);
    expect(await eventCount(workspaceId)).to.equal(recorded);
  });

  it('answers two identical batches sent at once under one key in turn: one charges each item once, the other is a whole replay', async () => {
    const key = randomUUID();
    const items = Array.from({ length: 6 }, (_, i) => ({ context: { unit_cost: 2 + i } }));
    const before = await eventCount(workspaceId);
    const t = Date.now();
    const [a, b] = await Promise.all([api.post<Body>('/api/compute/batch', { items }, { 'idempotency-key': key }), api.post<Body>('/api/compute/batch', { items }, { 'idempotency-key': key })]);
    expect(Date.now() - t, 'no item waited out IDEMPOTENCY_WAIT_MS').to.be.below(10_000);
    for (const res of [a, b]) expect(res.body.items.map((i: Body) => i.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
    for (let i = 0; i < 6; i++) expect(a.body.items[i].result.receipt.usage_event_id).to.equal(b.body.items[i].result.receipt.usage_event_id);
    expect(await eventCount(workspaceId)).to.equal(before + 6);
    // The batch's key is taken in turn, as a single call's: the second waits for the first and replays it whole.
    expect([a, b].map((r) => r.body.summary.replayed).sort()).to.deep.equal([0, 6]);
    expect([a, b].map((r) => r.headers.get('idempotent-replayed')).sort()).to.deep.equal(['true', null].sort());
  });

  it('keeps a batch item\'s key apart from any single call\'s key, "<key>#0" included', async () => {
    const key = randomUUID();
    const single = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': `${key}#0` });
    expect(single.status, single.text).to.equal(200);
    const batch = await api.post<Body>('/api/compute/batch', { items: [priced] }, { 'idempotency-key': key });
    expect(batch.status, batch.text).to.equal(200);
    expect(batch.body.items[0].status, JSON.stringify(batch.body.items[0])).to.equal(200);
    expect(batch.body.items[0].result).to.not.have.property('idempotent_replay');
  });

  it('refuses a key a batch used on compute and on the router, and a key a single call used on a batch: 422 idempotency_key_reused for the whole request, nothing charged', async () => {
    const refused = { context: { unit_cost: -1 }, function_id: 'fn_builtin_cost_plus' };
    // A batch whose only charged item is not its first: the key is the batch's all the same.
    const batchKey = randomUUID();
    const batch = await api.post<Body>('/api/compute/batch', { items: [refused, priced] }, { 'idempotency-key': batchKey });
    expect(batch.body.items.map((i: Body) => i.status)).to.deep.equal([422, 200]);
    const charged = batch.body.items[1].result.receipt.usage_event_id as string;
    const before = await eventCount(workspaceId);
    for (const path of ['/api/compute/price', '/api/price-router']) {
      const single = await api.post<Body>(path, priced, { 'idempotency-key': batchKey });
      expect(single.status, `${path}: ${single.text}`).to.equal(422);
      expect(single.headers.get('idempotent-replayed')).to.equal(null);
      expect(single.body).to.include({ code: 'idempotency_key_reused', usage_event_id: charged });
      expect(single.body.hint).to.include('new key');
    }
    expect(await eventCount(workspaceId)).to.equal(before);

    const singleKey = randomUUID();
    const first = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': singleKey });
    expect(first.status, first.text).to.equal(200);
    const after = await eventCount(workspaceId);
    const reused = await api.post<Body>('/api/compute/batch', { items: [priced] }, { 'idempotency-key': singleKey });
    expect(reused.status, reused.text).to.equal(422);
    expect(reused.headers.get('idempotent-replayed')).to.equal(null);
    expect(reused.body).to.include({ code: 'idempotency_key_reused', usage_event_id: first.body.receipt.usage_event_id });
    expect(reused.body).to.not.have.property('items');
    // No item ran: not even an error event was written.
    expect(await eventCount(workspaceId)).to.equal(after);
  });

  it('refuses a batch retried under its key with another body (an item changed, added or removed) with 422 for the whole batch, before any item runs', async () => {
    const key = randomUUID();
    const refused = { context: { unit_cost: -1 }, function_id: 'fn_builtin_cost_plus' };
    const other = { context: { current_price: 12, currency: 'EUR' } };
    const first = await api.post<Body>('/api/compute/batch', { items: [refused, priced] }, { 'idempotency-key': key });
    expect(first.body.items.map((i: Body) => i.status)).to.deep.equal([422, 200]);
    const charged = first.body.items[1].result.receipt.usage_event_id as string;
    const before = await eventCount(workspaceId);
    for (const [what, items] of [
      ['changed', [refused, other]],
      ['added', [refused, priced, other]],
      ['removed', [refused]],
      ['reordered', [priced, refused]],
    ] as const) {
      const res = await api.post<Body>('/api/compute/batch', { items }, { 'idempotency-key': key });
      expect(res.status, `${what}: ${res.text}`).to.equal(422);
      expect(res.body, what).to.include({ code: 'idempotency_key_reused', usage_event_id: charged });
      expect(res.body, what).to.not.have.property('items');
    }
    expect(await eventCount(workspaceId), 'no item ran').to.equal(before);
    // The same body (its keys in another order) is the same batch: the charged item is replayed, the refused one runs again.
    const again = await api.post<Body>('/api/compute/batch', { items: [refused, { function_id: 'fn_builtin_cost_plus', context: { currency: 'USD', target_margin: 0.3, unit_cost: 4 } }] }, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(200);
    expect(again.body.items.map((i: Body) => i.status)).to.deep.equal([422, 200]);
    expect(again.body.items[1].result.receipt.usage_event_id).to.equal(charged);
    expect(again.body.summary).to.deep.equal({ total: 2, succeeded: 1, failed: 1, replayed: 1 });
  });

  it('a replayed call pinned by name and answered by a fallback offers the first answer\'s next actions, price_in_batch pinned to the same function included', async () => {
    const owner = await signUp(svc, 'idem-pinned-fallback');
    const own = client(svc.url, { 'x-api-key': (await createKey(svc, owner, { name: 'full' })).key });
    const policy = await own.post<Body>('/api/routing-policies', { name: 'anchored rescues', strategy: 'default', is_default: true, fallback_function: 'anchored-adjustment' });
    expect(policy.status, policy.text).to.equal(201);
    // cost-plus lacks unit_cost here: the fallback answers.
    const body = { context: { current_price: 20 }, function_name: 'cost-plus' };
    const key = randomUUID();
    const first = await own.post<Body>('/api/price-router', body, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(200);
    expect(first.body.trace.fallback_used).to.equal(true);
    expect(first.body.function.name).to.equal('anchored-adjustment');
    const batchOf = (res: HttpResult<Body>) => (res.body.next_actions as Array<{ action: string; example: Body }>).find((a) => a.action === 'price_in_batch');
    expect(batchOf(first)?.example, first.text).to.deep.equal({ items: [{ context: body.context, function_id: 'fn_builtin_cost_plus' }] });
    const again = await own.post<Body>('/api/price-router', body, { 'idempotency-key': key });
    expect(again.status, again.text).to.equal(200);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.next_actions).to.deep.equal(first.body.next_actions);
  });
});

describe('compute: Idempotency-Key and the sandbox daily allowance', function () {
  this.timeout(90_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService({ config: { ...lenient, limits: { ...lenient.limits, sandbox: { computeCallsPerDay: 3 } } } });
  });
  after(() => svc.close());

  it('replays a call without spending the allowance, and answers the last allowed call\'s retry rather than 429', async () => {
    const sandbox = await registerSandbox(svc, 'idem-sandbox');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    const key = randomUUID();
    const first = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    expect(first.status, first.text).to.equal(200);
    expect(first.body.remaining.daily_compute_calls.remaining).to.equal(2);
    const replay = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.body.remaining.request_rate).to.be.an('object');
    // What is left of the day, read without spending any of it.
    expect(replay.body.remaining.daily_compute_calls).to.deep.equal(first.body.remaining.daily_compute_calls);
    const second = await api.post<Body>('/api/compute/price', priced);
    expect(second.body.remaining.daily_compute_calls.remaining, 'the replay spent no call').to.equal(1);
    const lastKey = randomUUID();
    const last = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': lastKey });
    expect(last.status).to.equal(200);
    expect(last.body.remaining.daily_compute_calls.remaining).to.equal(0);
    expect((await api.post<Body>('/api/compute/price', priced)).status).to.equal(429);
    const lastAgain = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': lastKey });
    expect(lastAgain.status, lastAgain.text).to.equal(200);
    expect(lastAgain.headers.get('idempotent-replayed')).to.equal('true');
    expect(lastAgain.body.receipt.usage_event_id).to.equal(last.body.receipt.usage_event_id);
    expect(lastAgain.body.remaining.daily_compute_calls.remaining).to.equal(0);
  });
});

describe('compute: Idempotency-Key after a usage insert whose answer was lost', function () {
  this.timeout(90_000);
  let svc: TestService;
  let proxy: TcpProxy;

  before(async () => {
    const url = new URL(await createTestDatabase());
    proxy = await tcpProxy(url.hostname, Number(url.port));
    svc = await startTestService({ databaseUrl: proxy.via(url.toString()), config: { ...lenient, database: { statementTimeoutMs: 500, answerGraceMs: 500 } } });
  });
  after(async () => {
    await svc.close();
    await proxy.close();
  });

  it('a call answered 503 (nothing charged) whose insert did commit is priced afresh on retry with its key: one charged event, not two', async () => {
    const person = await signUp(svc, 'idem-lost');
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'k' })).key });
    const key = randomUUID();
    expect((await api.post('/api/compute/price', priced)).status).to.equal(200);

    // The claiming insert is the only statement whose parameters carry the answer to replay.
    proxy.muteRepliesAfter('chosen_function');
    const lost = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    proxy.mode = 'pass';
    expect(lost.status, lost.text).to.equal(503);
    expect(lost.body.hint).to.include('Nothing was charged');

    // The insert reached the database and committed; the writer turns its event into not delivered once the database answers.
    const marked = await rowsOnceSettled<{ error_code: string | null; billable: boolean }>(
      svc,
      `SELECT error_code, billable FROM usage_events WHERE workspace_id = '${person.workspaceId}' AND request_id = '${String(lost.body.request_id)}'`,
      (rows) => rows[0]?.error_code === 'not_delivered',
      200,
    );
    expect(marked).to.deep.equal([{ error_code: 'not_delivered', billable: false }]);

    const retry = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    expect(retry.status, retry.text).to.equal(200);
    expect(retry.headers.get('idempotent-replayed'), 'the first call was not charged: this one is priced').to.equal(null);
    const again = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key });
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.receipt.usage_event_id).to.equal(retry.body.receipt.usage_event_id);
    const [rows] = await svc.sequelize.query('SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1 AND billable', { bind: [person.workspaceId] });
    expect((rows as Array<{ n: number }>)[0]?.n, 'the warm-up call and the retry').to.equal(2);
  });
});
