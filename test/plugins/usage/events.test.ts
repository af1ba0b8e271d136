import { expect } from 'chai';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import type { Person } from '../../support/world';
import { demo, ids, insertEvent, listAll, price, unique, usageConfig } from './helpers';
import type { ListBody, Priced } from './helpers';

/**
 * GET /api/usage/events and /api/usage/events/{id}: which events a workspace W sees and how each
 * is classified relative to W (mine, testers, others), caller details, filters and pagination.
 * Events come from real compute and demo calls over HTTP; paid ones are inserted (no payments yet).
 */
describe('usage: events list and receipt', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  let w: { owner: Person; key: string; keyId: string; agentId: string; agentKey: string; agentKeyId: string };
  let x: { owner: Person; key: string; keyId: string };
  let fn: { id: string; name: string };
  let wApi: ReturnType<typeof client>;

  const ev = {} as Record<'wKey' | 'wAgent' | 'wPerson' | 'uaTester' | 'addrTester' | 'stranger' | 'xBuiltin' | 'xCallsW' | 'paidX402' | 'paidPass' | 'march', string>;
  const uaPart = unique('acme-qa-bot');
  const strangerUa = unique('stranger-browser');
  const testerAddress = '198.51.100.23';

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 42.5, confidence: 0.8, currency: 'USD' }));
    svc = await startTestService({ config: usageConfig });
    const wOwner = await signUp(svc, 'usage-w');
    const wKey = await createKey(svc, wOwner, { name: 'w full' });
    const agent = await client(svc.url, { cookie: wOwner.cookie }).post<Record<string, any>>('/api/agents', { name: 'w-pricer' });
    const agentKey = await client(svc.url, { cookie: wOwner.cookie }).post<Record<string, any>>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'w agent key' });
    w = { owner: wOwner, key: wKey.key, keyId: wKey.id, agentId: agent.body.agent.id, agentKey: agentKey.body.api_key.key, agentKeyId: agentKey.body.api_key.id };
    const xOwner = await signUp(svc, 'usage-x');
    const xKey = await createKey(svc, xOwner, { name: 'x full' });
    x = { owner: xOwner, key: xKey.key, keyId: xKey.id };
    wApi = client(svc.url, { 'x-api-key': w.key });

    // W's public function, reachable by every workspace once active.
    const name = unique('w-public');
    const created = await wApi.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0.002', is_public: true });
    expect(created.status, created.text).to.equal(201);
    fn = { id: created.body.function.id, name };
    expect((await wApi.patch(`/api/functions/${fn.id}`, { status: 'active' })).status).to.equal(200);

    const tags = await client(svc.url, { cookie: w.owner.cookie }).put('/api/settings/tester-tags', {
      tags: [
        { label: 'QA bot', user_agent_contains: uaPart.toUpperCase() },
        { label: 'office', address: testerAddress },
      ],
    });
    expect(tags.status, tags.text).to.equal(200);

    ev.wKey = (await price(svc, { 'x-api-key': w.key, 'user-agent': 'w-backend/1.0' })).eventId;
    ev.wAgent = (await price(svc, { 'x-api-key': w.agentKey, 'user-agent': 'w-agent/2.0' })).eventId;
    ev.wPerson = (await price(svc, { cookie: w.owner.cookie })).eventId;
    ev.uaTester = await demo(svc, `Mozilla/5.0 (${uaPart}; test run)`);
    ev.addrTester = await demo(svc, unique('curl'), testerAddress);
    ev.stranger = await demo(svc, strangerUa, '203.0.113.99');
    ev.xBuiltin = (await price(svc, { 'x-api-key': x.key, 'user-agent': 'x-internal/1.0' })).eventId;
    ev.xCallsW = (await price(svc, { 'x-api-key': x.key, 'user-agent': 'x-shop-bot/3.1' }, { context: { current_price: 40, currency: 'USD' }, function_id: fn.id })).eventId;
    ev.paidX402 = await insertEvent(svc, { workspaceId: w.owner.workspaceId, paidVia: 'x402', cost: '0.0012', keyId: w.keyId });
    ev.paidPass = await insertEvent(svc, { workspaceId: w.owner.workspaceId, paidVia: 'day_pass', cost: '0.001', keyId: w.keyId, channel: 'mcp' });
    ev.march = await insertEvent(svc, { workspaceId: w.owner.workspaceId, createdAt: '2025-03-15T12:00:00Z', keyId: w.keyId });
  });
  after(async () => {
    await svc?.close();
    await upstream?.close();
  });

  const byId = (items: Array<Record<string, any>>, id: string) => {
    const found = items.find((i) => i.id === id);
    expect(found, `event ${id} listed`).to.not.equal(undefined);
    return found as Record<string, any>;
  };

  describe('classification relative to the viewer', () => {
    let items: Array<Record<string, any>>;
    before(async () => {
      items = await listAll(svc, { 'x-api-key': w.key });
    });

    it("shows W's own calls as mine, with the key, agent or person that made them, verified", () => {
      const key = byId(items, ev.wKey);
      expect(key.classification).to.equal('mine');
      expect(key.caller).to.deep.equal({ type: 'api_key', agent_id: null, key_id: w.keyId, person_id: null, user_agent: 'w-backend/1.0', verified: true });
      expect(key.channel).to.equal('api');
      expect(key.links.self).to.equal(`/api/usage/events/${ev.wKey}`);
      const agent = byId(items, ev.wAgent);
      expect(agent.classification).to.equal('mine');
      expect(agent.caller).to.include({ type: 'agent', agent_id: w.agentId, key_id: w.agentKeyId, verified: true });
      const person = byId(items, ev.wPerson);
      expect(person.caller).to.include({ type: 'person', person_id: w.owner.id, key_id: null, verified: true });
    });

    it('shows a keyless demo caller matching a User-Agent tag (case-insensitively) as testers, labelled, unverified', () => {
      const item = byId(items, ev.uaTester);
      expect(item.classification).to.equal('testers');
      expect(item.tester_tag).to.equal('QA bot');
      expect(item.channel).to.equal('demo');
      expect(item.caller).to.deep.equal({ type: 'anonymous', agent_id: null, key_id: null, person_id: null, user_agent: `Mozilla/5.0 (${uaPart}; test run)`, verified: false });
      expect(item).not.to.have.property('links');
      expect(item).not.to.have.property('request_id');
    });

    it('shows a keyless demo caller from a tagged address as testers', () => {
      const item = byId(items, ev.addrTester);
      expect(item.classification).to.equal('testers');
      expect(item.tester_tag).to.equal('office');
    });

    it("shows another workspace's call to W's public function as others, User-Agent shown and unverified, no ids of theirs", () => {
      const item = byId(items, ev.xCallsW);
      expect(item.classification).to.equal('others');
      expect(item.function).to.deep.equal({ id: fn.id, name: fn.name });
      expect(item.price).to.equal('42.50');
      expect(item.caller).to.deep.equal({ type: 'api_key', agent_id: null, key_id: null, person_id: null, user_agent: 'x-shop-bot/3.1', verified: false });
      const text = JSON.stringify(item);
      for (const secret of [x.keyId, x.owner.id, x.owner.workspaceId, x.owner.email]) expect(text).not.to.contain(secret);
    });

    it('never shows W keyless callers matching no tag, nor other workspaces calling anything but W\'s functions', () => {
      expect(ids(items)).not.to.include(ev.stranger);
      expect(ids(items)).not.to.include(ev.xBuiltin);
      expect(JSON.stringify(items)).not.to.contain(strangerUa);
    });

    it('classifies for the viewer: X sees its call to W\'s function as mine and none of W\'s events', async () => {
      const xs = await listAll(svc, { 'x-api-key': x.key });
      expect(byId(xs, ev.xCallsW).classification).to.equal('mine');
      expect(byId(xs, ev.xCallsW).caller).to.include({ key_id: x.keyId, verified: true });
      expect(ids(xs)).to.include(ev.xBuiltin);
      for (const id of [ev.wKey, ev.wAgent, ev.uaTester, ev.addrTester, ev.paidX402]) expect(ids(xs)).not.to.include(id);
    });

    it('lists newest first, each page at most limit items, without repeats', async () => {
      const seen: string[] = [];
      const stamps: string[] = [];
      let cursor: string | null = null;
      do {
        const q: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : '?limit=2';
        const res = await wApi.get<ListBody>(`/api/usage/events${q}`);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.object).to.equal('list');
        expect(res.body.limit).to.equal(2);
        expect(res.body.data.length).to.be.at.most(2);
        seen.push(...ids(res.body.data));
        stamps.push(...res.body.data.map((i) => i.created_at as string));
        cursor = res.body.next_cursor;
        expect(res.body.has_more).to.equal(cursor !== null);
      } while (cursor);
      expect(new Set(seen).size).to.equal(seen.length);
      expect(seen).to.have.members(ids(items));
      expect([...stamps].sort().reverse()).to.deep.equal(stamps);
    });
  });

  describe('filters', () => {
    const list = async (query: string) => ids(await listAll(svc, { 'x-api-key': w.key }, query));

    it('classification', async () => {
      expect(await list('classification=mine')).to.have.members([ev.wKey, ev.wAgent, ev.wPerson, ev.paidX402, ev.paidPass, ev.march]);
      expect(await list('classification=testers')).to.have.members([ev.uaTester, ev.addrTester]);
      expect(await list('classification=others')).to.have.members([ev.xCallsW]);
    });

    it('channel', async () => {
      expect(await list('channel=demo')).to.have.members([ev.uaTester, ev.addrTester]);
      expect(await list('channel=mcp')).to.have.members([ev.paidPass]);
      expect(await list('channel=api')).to.include.members([ev.wKey, ev.xCallsW]).and.not.include(ev.uaTester);
    });

    it('function, by id or by name', async () => {
      expect(await list(`function=${fn.id}`)).to.have.members([ev.xCallsW]);
      expect(await list(`function=${fn.name.toUpperCase()}`)).to.have.members([ev.xCallsW]);
      const anchored = await list('function=anchored-adjustment');
      expect(anchored).to.include.members([ev.wKey, ev.paidX402]).and.not.include(ev.xCallsW);
      expect(await list('function=fn_builtin_anchored')).to.have.members(anchored);
    });

    it('outcome: accepted, rejected, none', async () => {
      expect((await wApi.patch(`/api/usage/events/${ev.wKey}/outcome`, { outcome: 'accepted', quality_score: 0.8 })).status).to.equal(200);
      expect((await wApi.patch(`/api/usage/events/${ev.wAgent}/outcome`, { outcome: 'rejected' })).status).to.equal(200);
      expect(await list('outcome=accepted')).to.have.members([ev.wKey]);
      expect(await list('outcome=rejected')).to.have.members([ev.wAgent]);
      const none = await list('outcome=none');
      expect(none).to.include.members([ev.wPerson, ev.uaTester, ev.xCallsW]).and.not.include.members([ev.wKey, ev.wAgent]);
    });

    it('paid_via: x402, day_pass, balance, none', async () => {
      expect(await list('paid_via=x402')).to.have.members([ev.paidX402]);
      expect(await list('paid_via=day_pass')).to.have.members([ev.paidPass]);
      expect(await list('paid_via=balance')).to.deep.equal([]);
      const none = await list('paid_via=none');
      expect(none).to.include.members([ev.wKey, ev.march, ev.xCallsW]).and.not.include.members([ev.paidX402, ev.paidPass]);
    });

    it('date range: from inclusive, to exclusive, dates or date-times', async () => {
      expect(await list('from=2025-03-01&to=2025-04-01')).to.deep.equal([ev.march]);
      expect(await list('from=2025-03-15T12:00:00Z&to=2025-03-15T12:00:00.001Z')).to.deep.equal([ev.march]);
      expect(await list('from=2025-03-15T12:00:00.001%2B00:00&to=2025-04-01')).to.deep.equal([]);
      const recent = await list(`from=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}`);
      expect(recent).to.include(ev.wKey).and.not.include(ev.march);
    });

    it('operation: the kind of call recorded (compute, demo, …)', async () => {
      expect(await list('operation=demo')).to.have.members([ev.uaTester, ev.addrTester]);
      const compute = await list('operation=compute');
      expect(compute).to.include.members([ev.wKey, ev.wAgent, ev.xCallsW, ev.march]).and.not.include.members([ev.uaTester, ev.addrTester]);
      expect(await list('operation=verify')).to.deep.equal([]);
    });

    it('writes no usage event for a function test run: the events are the same before and after one', async () => {
      const before = ids(await listAll(svc, { 'x-api-key': w.key }, ''));
      const run = await client(svc.url, { 'x-api-key': w.key }).post<Record<string, any>>('/api/functions/fn_builtin_cost_plus/test', { context: { unit_cost: 4 } });
      expect(run.status, run.text).to.equal(200);
      expect(run.body.ok).to.equal(true);
      expect(ids(await listAll(svc, { 'x-api-key': w.key }, ''))).to.deep.equal(before);
    });

    it("request_id: the event of a failed answer found by the answer's request id, only among W's own calls", async () => {
      const failed = await client(svc.url, { 'x-api-key': w.key }).post<Record<string, any>>('/api/compute/price', { context: {}, function_id: 'fn_builtin_cost_plus' });
      expect(failed.status, failed.text).to.be.within(400, 599);
      const requestId = failed.body.request_id as string;
      expect(requestId).to.equal(failed.headers.get('x-request-id'));
      const found = await listAll(svc, { 'x-api-key': w.key }, `request_id=${requestId}`);
      expect(found).to.have.length(1);
      expect(found[0]).to.include({ classification: 'mine', status: 'error', request_id: requestId });
      // X's call to W's function is others for W, which never shows its request id: not matched by it either.
      const xRequest = (await listAll(svc, { 'x-api-key': x.key }, 'classification=mine')).find((e) => e.id === ev.xCallsW)?.request_id as string;
      expect(xRequest).to.be.a('string');
      expect(await list(`request_id=${xRequest}`)).to.deep.equal([]);
      expect(ids(await listAll(svc, { 'x-api-key': x.key }, `request_id=${xRequest}`))).to.deep.equal([ev.xCallsW]);
    });

    it('combines filters', async () => {
      expect(await list(`classification=mine&paid_via=none&from=2025-01-01&to=2025-12-31`)).to.deep.equal([ev.march]);
    });

    it('refuses a to not later than from, naming that from in the issue and the error text', async () => {
      const res = await wApi.get<Record<string, any>>('/api/usage/events?from=2025-04-01&to=2025-03-01');
      expect(res.status, res.text).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: 'to', reason: 'must be later than from (2025-04-01T00:00:00.000Z)' }]);
      expect(res.body.error).to.equal('Request query failed validation (to: must be later than from (2025-04-01T00:00:00.000Z)).');
    });

    it('refuses a bound with more than 3 decimals on the seconds with 400 naming it, also beside a valid other bound', async () => {
      for (const [query, path] of [
        ['from=2025-03-01T00:00:00.0001Z', 'from'],
        ['from=2025-03-01T00:00:00.0001Z&to=2025-04-01', 'from'],
        ['from=2025-03-01&to=2025-04-01T00:00:00.1234Z', 'to'],
      ]) {
        const res = await wApi.get<Record<string, any>>(`/api/usage/events?${query}`);
        expect(res.status, `${query}: ${res.text}`).to.equal(400);
        expect(res.body.code).to.equal('validation_error');
        expect(res.body.issues, query).to.deep.equal([{ path, reason: 'at most 3 decimals on the seconds (milliseconds)' }]);
      }
    });

    it('takes a date-time without seconds; refuses an empty cursor like any cursor not issued, and operation=test saying a test run writes no event', async () => {
      expect((await wApi.get('/api/usage/events?from=2025-03-01T00:00Z&to=2025-04-01T00:00%2B02:00')).status).to.equal(200);
      expect(await list('from=2025-03-14T11:59Z&to=2025-03-16T00:00Z')).to.deep.equal(await list('from=2025-03-14T11:59:00Z&to=2025-03-16T00:00:00Z'));
      const empty = await wApi.get<Record<string, any>>('/api/usage/events?cursor=');
      expect([empty.status, empty.body.issues?.[0]?.path], empty.text).to.deep.equal([400, 'cursor']);
      expect(empty.body.issues[0].reason).to.contain('leave cursor out for the first page');
      const test = await wApi.get<Record<string, any>>('/api/usage/events?operation=test');
      expect([test.status, test.body.issues?.[0]?.path], test.text).to.deep.equal([400, 'operation']);
      expect(test.body.issues[0].reason).to.match(/^a function's test run writes no usage event/);
    });

    it("says a time offset's unencoded '+' arrived as a space and is sent as %2B", async () => {
      const res = await wApi.get<Record<string, any>>('/api/usage/events?from=2026-11-27T12:00:00+01:00');
      expect(res.status, res.text).to.equal(400);
      const reason = "a '+' in a query string arrives as a space: send it as %2B (2026-11-27T12:00:00%2B01:00)";
      expect(res.body.issues).to.deep.equal([{ path: 'from', reason }]);
      expect(res.body.error).to.equal(`Request query failed validation (from: ${reason}).`);
      expect((await wApi.get('/api/usage/events?from=2026-11-27T12:00:00%2B01:00')).status).to.equal(200);
    });

    it('tells a date-time sent without its time zone to add Z or an offset', async () => {
      const res = await wApi.get<Record<string, any>>('/api/usage/events?to=2026-11-27T12:00:00');
      expect(res.status, res.text).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: 'to', reason: 'a date-time needs its time zone: add Z for UTC (2026-11-27T12:00:00Z) or an offset such as %2B02:00' }]);
      expect((await wApi.get('/api/usage/events?to=2026-11-27T12:00:00Z')).status).to.equal(200);
    });

    it('refuses a repeated single-valued parameter with the message a repeated limit gets, whichever it is', async () => {
      const reasonFor = async (query: string) => {
        const res = await wApi.get<Record<string, any>>(`/api/usage/events?${query}`);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.code).to.equal('validation_error');
        return res.body.issues as Array<{ path: string; reason: string }>;
      };
      const limit = await reasonFor('limit=1&limit=2');
      expect(limit).to.deep.equal([{ path: 'limit', reason: 'sent 2 times (limit=1&limit=2); send it once' }]);
      for (const [name, a, b] of [
        ['channel', 'api', 'mcp'],
        ['classification', 'mine', 'others'],
        ['outcome', 'accepted', 'none'],
        ['paid_via', 'x402', 'none'],
        ['operation', 'compute', 'demo'],
        ['function', 'a', 'b'],
        ['request_id', 'req_a', 'req_b'],
        ['from', '2025-01-01', '2025-02-01'],
        ['to', '2025-01-01', '2025-02-01'],
        ['cursor', 'a', 'b'],
      ] as const) {
        expect(await reasonFor(`${name}=${a}&${name}=${b}`), name).to.deep.equal([{ path: name, reason: `sent 2 times (${name}=${a}&${name}=${b}); send it once` }]);
      }
    });

    for (const [query, path] of [
      ['channel=email', 'channel'],
      ['classification=friends', 'classification'],
      ['outcome=maybe', 'outcome'],
      ['paid_via=card', 'paid_via'],
      ['operation=price', 'operation'],
      ['operation=test', 'operation'],
      [`request_id=${'r'.repeat(129)}`, 'request_id'],
      ['from=yesterday', 'from'],
      ['to=2025-13-45', 'to'],
      ['from=2025-04-01&to=2025-03-01', 'to'],
      ['limit=0', 'limit'],
      ['status=ok', 'status'],
      ['cursor=bm90LWEtY3Vyc29y', 'cursor'],
      [`cursor=${Buffer.from(JSON.stringify(['2026-02-30T00:00:00.000000Z', 'use_x'])).toString('base64url')}`, 'cursor'],
      ['limit=0x10', 'limit'],
      ['limit=1e1', 'limit'],
      ['from=2025-03-15T12:00:00.0001Z', 'from'],
    ] as const) {
      it(`refuses ${query} with 400 and issues naming ${path}`, async () => {
        const res = await wApi.get<Record<string, any>>(`/api/usage/events?${query}`);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.code).to.equal('validation_error');
        expect(res.body.issues.map((i: { path: string }) => i.path)).to.include(path);
      });
    }
  });

  describe('one event (the receipt link)', () => {
    it('opens the receipt URL of a compute response for the workspace that made the call', async () => {
      const priced = await price(svc, { 'x-api-key': w.agentKey });
      const res = await client(svc.url, { 'x-api-key': w.key }).get<Record<string, any>>(new URL(priced.receiptUrl).pathname);
      expect(res.status, res.text).to.equal(200);
      const e = res.body.usage_event;
      expect(e.id).to.equal(priced.eventId);
      expect(e.classification).to.equal('mine');
      expect(e.price).to.equal(priced.body.price);
      expect(e.cost).to.equal(priced.cost);
      expect(e.billable).to.equal(true);
      expect(e.paid_via).to.equal(null);
      expect(e.outcome).to.equal(null);
      expect(e.function).to.deep.equal({ id: priced.body.function.id, name: priced.body.function.name });
      expect(e.caller).to.include({ type: 'agent', agent_id: w.agentId, key_id: w.agentKeyId });
      expect(e.context).to.deep.equal({ currency: 'USD' });
      // Also through the person's session.
      expect((await client(svc.url, { cookie: w.owner.cookie }).get(`/api/usage/events/${priced.eventId}`)).status).to.equal(200);
      // The receipt carries the record itself, exactly as the link opens it.
      expect(priced.body.receipt.usage_event).to.deep.equal(e);
      expect(priced.body.receipt.recorded_at).to.equal(e.created_at);
    });

    it('the receipt shows context strings as the row stores them: cut at 100 characters without halving a pair; NUL and lone surrogates are refused at the door', async () => {
      const api = client(svc.url, { 'x-api-key': w.key });
      for (const productType of [`x${String.fromCharCode(0)}y`, 'lone \ud800 half']) {
        const refused = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: productType, unit_cost: 2 } });
        expect(refused.status, refused.text).to.equal(400);
        expect(refused.body.issues[0].path).to.equal('context.product_type');
      }
      for (const productType of [`${'a'.repeat(99)}\u{1F600}`]) {
        const priced = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: productType, unit_cost: 2 } });
        expect(priced.status, priced.text).to.equal(200);
        const stored = await api.get<Record<string, any>>(`/api/usage/events/${priced.body.receipt.usage_event_id as string}`);
        expect(priced.body.receipt.usage_event, JSON.stringify(productType)).to.deep.equal(stored.body.usage_event);
        const kept = stored.body.usage_event.context.product_type as string;
        expect(kept.includes(String.fromCharCode(0))).to.equal(false);
        // Well formed: it survives a UTF-8 round trip unchanged.
        expect(Buffer.from(kept, 'utf8').toString('utf8')).to.equal(kept);
      }
    });

    it('keeps a UTF-8 User-Agent as the text sent (Node reads header bytes as latin-1), and a latin-1 one as it came', async () => {
      const utf8Bytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
      for (const [sent, kept] of [
        [utf8Bytes('café-agent/1.0 (日本)'), 'café-agent/1.0 (日本)'],
        ['caf\u00e9-latin1/1.0', 'caf\u00e9-latin1/1.0'],
      ] as const) {
        const priced = await client(svc.url, { 'x-api-key': w.key, 'user-agent': sent }).post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 2 } });
        expect(priced.status, priced.text).to.equal(200);
        expect(priced.body.receipt.usage_event.caller.user_agent).to.equal(kept);
        const stored = await client(svc.url, { 'x-api-key': w.key }).get<Record<string, any>>(`/api/usage/events/${priced.body.receipt.usage_event_id as string}`);
        expect(stored.body.usage_event.caller.user_agent).to.equal(kept);
      }
    });

    it('gives a keyless demo caller its record in the receipt as the usage API shows Others: no ids, no tester tag', async () => {
      const res = await client(svc.url, { 'user-agent': `Mozilla/5.0 (${uaPart}; receipt)` }).post<Record<string, any>>('/api/public/compute/demo', { context: { unit_cost: 4 } });
      expect(res.status, res.text).to.equal(200);
      const e = res.body.receipt.usage_event;
      expect(e).to.include({ object: 'usage_event', id: res.body.receipt.usage_event_id, classification: 'others', channel: 'demo', operation: 'demo', status: 'ok', price: res.body.price });
      expect(e.caller).to.deep.equal({ type: 'anonymous', agent_id: null, key_id: null, person_id: null, user_agent: `Mozilla/5.0 (${uaPart}; receipt)`, verified: false });
      expect(e).not.to.have.property('tester_tag');
      expect(e).not.to.have.property('context');
      expect(res.body.receipt.hint).to.be.a('string');
    });

    it("answers another workspace's event, and an unknown id, with the same 404 and none of its data", async () => {
      const theirs = await client(svc.url, { 'x-api-key': x.key }).get<Record<string, any>>(`/api/usage/events/${ev.wKey}`);
      const missing = await client(svc.url, { 'x-api-key': x.key }).get<Record<string, any>>('/api/usage/events/use_doesnotexist00000000');
      expect(theirs.status).to.equal(404);
      expect(missing.status).to.equal(404);
      expect({ ...theirs.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
      expect(theirs.text).not.to.contain(w.keyId);
    });

    describe("a claimed sandbox's receipt link", () => {
      let sandboxEvent: Priced;
      let claimer: Person;
      let claimerKey: string;
      let sandboxWs: string;
      before(async () => {
        const sandbox = await registerSandbox(svc, unique('usage-claimed'));
        sandboxWs = sandbox.workspaceId;
        sandboxEvent = await price(svc, { 'x-api-key': sandbox.key });
        claimer = await signUp(svc, 'usage-claimer');
        claimerKey = (await createKey(svc, claimer, { name: 'claimer default' })).key;
        // The default claim: into the person's current workspace, the agent's key revoked.
        const claim = await client(svc.url, { cookie: claimer.cookie }).post(`/api/agents/claim/${sandbox.claimToken}`, {});
        expect(claim.status, claim.text).to.equal(200);
        expect((await client(svc.url, { 'x-api-key': sandbox.key }).get(new URL(sandboxEvent.receiptUrl).pathname)).status).to.equal(401);
      });

      it('opens for the claiming person, by session or person token, without x-workspace-id, as the sandbox workspace sees it', async () => {
        const path = new URL(sandboxEvent.receiptUrl).pathname;
        const withHeader = await client(svc.url, { cookie: claimer.cookie, 'x-workspace-id': sandboxWs }).get<Record<string, any>>(path);
        expect(withHeader.status, withHeader.text).to.equal(200);
        for (const headers of [{ cookie: claimer.cookie }, { authorization: `Bearer ${claimer.token}` }] as Array<Record<string, string>>) {
          const res = await client(svc.url, headers).get<Record<string, any>>(path);
          expect(res.status, res.text).to.equal(200);
          expect(res.headers.get('content-type')).to.match(/^application\/json/);
          expect(res.body.usage_event).to.deep.equal(withHeader.body.usage_event);
          expect(res.body.usage_event).to.include({ id: sandboxEvent.eventId, classification: 'mine' });
          expect(res.body.usage_event.caller).to.include({ key_id: sandboxEvent.body.receipt.usage_event.caller.key_id, verified: true });
        }
      });

      it("takes an outcome at the receipt's outcome link from the claiming person without x-workspace-id; others keep the identical 404", async () => {
        const opened = await client(svc.url, { cookie: claimer.cookie }).get<Record<string, any>>(new URL(sandboxEvent.receiptUrl).pathname);
        const link = opened.body.usage_event.links.outcome as string;
        const missing = await client(svc.url, { cookie: claimer.cookie }).patch<Record<string, any>>('/api/usage/events/use_doesnotexist00000000/outcome', { outcome: 'accepted' });
        expect(missing.status).to.equal(404);
        for (const headers of [{ cookie: x.owner.cookie }, { 'x-api-key': claimerKey }, { cookie: claimer.cookie, 'x-workspace-id': claimer.workspaceId }] as Array<Record<string, string>>) {
          const refused = await client(svc.url, headers).patch<Record<string, any>>(link, { outcome: 'rejected' });
          expect(refused.status, `${Object.keys(headers).join(',')}: ${refused.text}`).to.equal(404);
          expect({ ...refused.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
        }
        const res = await client(svc.url, { cookie: claimer.cookie }).patch<Record<string, any>>(link, { outcome: 'accepted', quality_score: 0.8 });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.usage_event).to.include({ id: sandboxEvent.eventId, outcome: 'accepted', quality_score: 0.8 });
      });

      it('keeps the identical 404 for non-members, API keys of other workspaces, and a person whose x-workspace-id chose another workspace', async () => {
        const path = new URL(sandboxEvent.receiptUrl).pathname;
        const missing = await client(svc.url, { cookie: claimer.cookie }).get<Record<string, any>>('/api/usage/events/use_doesnotexist00000000');
        expect(missing.status).to.equal(404);
        for (const headers of [{ cookie: x.owner.cookie }, { authorization: `Bearer ${x.owner.token}` }, { 'x-api-key': x.key }, { 'x-api-key': claimerKey }, { cookie: claimer.cookie, 'x-workspace-id': claimer.workspaceId }] as Array<Record<string, string>>) {
          const res = await client(svc.url, headers).get<Record<string, any>>(path);
          expect(res.status, `${Object.keys(headers).join(',')}: ${res.text}`).to.equal(404);
          expect({ ...res.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
        }
      });
    });

    it('refuses a query parameter on one event as the list does: 400 naming it', async () => {
      const res = await wApi.get<Record<string, any>>(`/api/usage/events/${ev.wKey}?foo=1`);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues).to.deep.equal([{ path: 'foo', reason: 'unknown query parameter (this route takes none)' }]);
      const outcome = await wApi.patch<Record<string, any>>(`/api/usage/events/${ev.wKey}/outcome?outcome=accepted`, { outcome: 'accepted' });
      expect(outcome.status, outcome.text).to.equal(400);
      expect(outcome.body.issues[0].path).to.equal('outcome');
    });

    it('opens the events W sees as others or testers by id exactly as its list shows them', async () => {
      const listed = await wApi.get<{ data: Array<Record<string, any>> }>('/api/usage/events?limit=100');
      for (const id of [ev.xCallsW, ev.uaTester]) {
        const res = await wApi.get<{ usage_event: Record<string, any> }>(`/api/usage/events/${id}`);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.usage_event).to.deep.equal(listed.body.data.find((e) => e.id === id));
      }
      expect((await wApi.get<{ usage_event: { classification: string } }>(`/api/usage/events/${ev.xCallsW}`)).body.usage_event.classification).to.equal('others');
      expect((await wApi.get<{ usage_event: { classification: string } }>(`/api/usage/events/${ev.uaTester}`)).body.usage_event.classification).to.equal('testers');
    });
  });
});
