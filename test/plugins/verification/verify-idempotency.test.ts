import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';

type Body = Record<string, any>;

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

const verifyBody = { context: { product_type: 'idem-widget', currency: 'usd', unit_cost: 5 }, proposed_price: '9.50' };

// The SDK ships ESM and CJS; dynamic import keeps the test independent of the module format.
async function mcpClient(svc: TestService, key: string) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const c = new Client({ name: 'verify-idempotency', version: '0.0.1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/api/mcp/rpc`), { requestInit: { headers: { 'x-api-key': key } } }));
  return c;
}

/**
 * Idempotency-Key on price verification (REST header, MCP _meta.idempotency_key): a retry after an answer that never
 * arrived answers the first verdict and counts once against a sandbox's daily calls, as a priced call's retry does.
 */
describe('verification: Idempotency-Key', function () {
  this.timeout(90_000);
  let svc: TestService;
  let key: string;
  let workspaceId: string;

  before(async () => {
    svc = await startTestService({ config: lenient });
    const person = await signUp(svc, 'idem-verify');
    workspaceId = person.workspaceId;
    key = (await createKey(svc, person, { name: 'full' })).key;
  });
  after(() => svc.close());

  const verifyEvents = async (ws: string) => {
    const [rows] = await svc.sequelize.query("SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1 AND operation = 'verify'", { bind: [ws] });
    return (rows as Array<{ n: number }>)[0]?.n as number;
  };

  it('answers a repeated verification with the first verdict (200, Idempotent-Replayed), recording nothing more', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const idem = randomUUID();
    const before = await verifyEvents(workspaceId);
    const first = await api.post<Body>('/api/price-router/verify', verifyBody, { 'idempotency-key': idem });
    expect(first.status, first.text).to.equal(200);
    expect(first.headers.get('idempotent-replayed')).to.equal(null);
    expect(first.body).to.not.have.property('idempotent_replay');
    // The same request, keys in another order and the currency spelt as the service reads it.
    const again = await api.post<Body>('/api/price-router/verify', { proposed_price: '9.50', context: { unit_cost: 5, currency: 'USD', product_type: 'idem-widget' } }, { 'idempotency-key': idem });
    expect(again.status, again.text).to.equal(200);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    for (const field of ['verdict', 'proposed_price', 'currency', 'reasons', 'band', 'confidence', 'constraints', 'evidence']) expect(again.body[field], field).to.deep.equal(first.body[field]);
    expect(again.body.receipt.usage_event_id).to.equal(first.body.receipt.usage_event_id);
    expect(again.body.request_id).to.be.a('string').and.not.equal(first.body.request_id);
    expect(again.body.idempotent_replay).to.deep.equal({ first_request_id: first.body.request_id, recorded_at: first.body.receipt.recorded_at });
    expect(await verifyEvents(workspaceId)).to.equal(before + 1);
  });

  it('refuses another body, or a compute, under a key a verification holds (422 idempotency_key_reused naming its usage event), and a malformed key (400)', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const idem = randomUUID();
    const first = await api.post<Body>('/api/price-router/verify', verifyBody, { 'idempotency-key': idem });
    expect(first.status).to.equal(200);
    const other = await api.post<Body>('/api/price-router/verify', { ...verifyBody, proposed_price: '9.60' }, { 'idempotency-key': idem });
    expect(other.status, other.text).to.equal(422);
    expect(other.body).to.include({ code: 'idempotency_key_reused', usage_event_id: first.body.receipt.usage_event_id });
    expect(other.body.hint).to.be.a('string');
    const compute = await api.post<Body>('/api/compute/price', { context: { unit_cost: 5 } }, { 'idempotency-key': idem });
    expect(compute.status, compute.text).to.equal(422);
    expect(compute.body).to.include({ code: 'idempotency_key_reused', usage_event_id: first.body.receipt.usage_event_id });
    const bad = await api.post<Body>('/api/price-router/verify', verifyBody, { 'idempotency-key': 'has spaces' });
    expect(bad.status, bad.text).to.equal(400);
    expect(bad.body.code).to.equal('validation_error');
    expect(bad.body.issues[0].path).to.equal('headers.idempotency-key');
  });

  it('counts a sandbox\'s retried verification once against its daily calls, over REST and over MCP with the same key', async () => {
    const sandbox = await registerSandbox(svc, 'idem-verify-agent');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    const idem = randomUUID();
    const first = await api.post<Body>('/api/price-router/verify', verifyBody, { 'idempotency-key': idem });
    expect(first.status, first.text).to.equal(200);
    expect(first.body.remaining.daily_compute_calls).to.include({ limit: 25, remaining: 24 });
    for (let i = 0; i < 3; i++) {
      const again = await api.post<Body>('/api/price-router/verify', verifyBody, { 'idempotency-key': idem });
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body.remaining.daily_compute_calls).to.include({ limit: 25, remaining: 24 });
    }
    const mcp = await mcpClient(svc, sandbox.key);
    try {
      const viaMcp = (await mcp.callTool({ name: 'verify_price', arguments: verifyBody, _meta: { idempotency_key: idem } })) as { structuredContent: Body; isError?: boolean };
      expect(viaMcp.isError, JSON.stringify(viaMcp)).to.not.equal(true);
      expect(viaMcp.structuredContent.idempotent_replay).to.include({ first_request_id: first.body.request_id });
      expect(viaMcp.structuredContent.receipt.usage_event_id).to.equal(first.body.receipt.usage_event_id);
      const bad = (await mcp.callTool({ name: 'verify_price', arguments: verifyBody, _meta: { idempotency_key: 'has spaces' } })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(bad.isError).to.equal(true);
      const body = JSON.parse(bad.content[0]?.text ?? '{}') as Body;
      expect(body.code).to.equal('validation_error');
      expect(body.issues[0].path).to.equal('_meta.idempotency_key');
    } finally {
      await mcp.close();
    }
    expect(await verifyEvents(sandbox.workspaceId)).to.equal(1);
    const next = await api.post<Body>('/api/price-router/verify', verifyBody);
    expect(next.body.remaining.daily_compute_calls).to.include({ remaining: 23 });
  });

  it('answers concurrent retries under one key with one verdict, recorded once', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const idem = randomUUID();
    const before = await verifyEvents(workspaceId);
    const all = await Promise.all(Array.from({ length: 8 }, () => api.post<Body>('/api/price-router/verify', verifyBody, { 'idempotency-key': idem })));
    for (const r of all) expect(r.status, r.text).to.equal(200);
    expect(new Set(all.map((r) => r.body.receipt.usage_event_id)).size).to.equal(1);
    expect(all.filter((r) => r.headers.get('idempotent-replayed') === 'true')).to.have.length(7);
    expect(await verifyEvents(workspaceId)).to.equal(before + 1);
  });

  it('records in the usage event only the currency the caller sent', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const none = await api.post<Body>('/api/price-router/verify', { context: { unit_cost: 5 }, proposed_price: 9 });
    expect(none.status, none.text).to.equal(200);
    const sent = await api.post<Body>('/api/price-router/verify', { context: { unit_cost: 5, currency: 'eur' }, proposed_price: 9 });
    const [rows] = await svc.sequelize.query('SELECT id, context_keys FROM usage_events WHERE id IN ($1, $2)', { bind: [none.body.receipt.usage_event_id, sent.body.receipt.usage_event_id] });
    const byId = new Map((rows as Array<{ id: string; context_keys: Record<string, unknown> }>).map((r) => [r.id, r.context_keys]));
    expect(byId.get(none.body.receipt.usage_event_id)).to.deep.equal({});
    expect(byId.get(sent.body.receipt.usage_event_id)).to.deep.equal({ currency: 'EUR' });
  });
});
