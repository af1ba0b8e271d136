import { expect } from 'chai';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import { ids, listAll, price, unique, usageConfig } from './helpers';

/**
 * A function owner A sees as others the calls where its function was tried and failed and another
 * answered (SPEC: Others are everyone else, calling A's functions); the event names the function
 * that answered, so these are found through the event's failed_function_ids.
 */
describe('usage: a function owner sees calls where its function failed and another answered', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  let aApi: ReturnType<typeof client>;
  let bApi: ReturnType<typeof client>;
  let a: { key: string; workspaceId: string };
  let b: { key: string; keyId: string; workspaceId: string };
  const fns = {} as Record<'down' | 'downToo' | 'up' | 'bPrivate', { id: string; name: string }>;
  /** B's call answered by anchored-adjustment after A's function failed; after A's failed, by A's other; by B's private function. */
  const ev = {} as Record<'builtinRescue' | 'ownRescue' | 'privateRescue', string>;

  const makeFunction = async (api: ReturnType<typeof client>, label: string, path: string, isPublic: boolean) => {
    const name = unique(label);
    const made = await api.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: upstream.url(path), cost_per_unit: '0.002', is_public: isPublic });
    expect(made.status, made.text).to.equal(201);
    expect((await api.patch(`/api/functions/${made.body.function.id}`, { status: 'active' })).status).to.equal(200);
    return { id: made.body.function.id as string, name };
  };

  /** B's default policy: `candidate` first, `fallback` when it fails; returns the event of one call through it. */
  const callThrough = async (candidate: string, fallback: string) => {
    const policy = await bApi.post<Record<string, any>>('/api/routing-policies', { name: unique('rescue'), is_default: true, strategy: 'cheapest', config: { candidates: [candidate] }, fallback_function: fallback });
    expect(policy.status, policy.text).to.equal(201);
    const call = await price(svc, { 'x-api-key': b.key, 'user-agent': 'b-shop/1.0' }, { context: { current_price: 20, currency: 'USD' } });
    const attempts = call.body.trace.attempts as Array<Record<string, unknown>>;
    expect(attempts[0], JSON.stringify(attempts)).to.include({ function: candidate, outcome: 'failed' });
    return call.eventId;
  };

  before(async () => {
    upstream = await startUpstream((req, res) => (req.path.startsWith('/down') ? sendJson(res, 500, { error: 'down' }) : sendJson(res, 200, { price: 18.5, confidence: 0.7, currency: 'USD' })));
    svc = await startTestService({ config: usageConfig });
    const aOwner = await signUp(svc, 'usage-fail-a');
    a = { key: (await createKey(svc, aOwner, { name: 'a' })).key, workspaceId: aOwner.workspaceId };
    const bOwner = await signUp(svc, 'usage-fail-b');
    const bKey = await createKey(svc, bOwner, { name: 'b' });
    b = { key: bKey.key, keyId: bKey.id, workspaceId: bOwner.workspaceId };
    aApi = client(svc.url, { 'x-api-key': a.key });
    bApi = client(svc.url, { 'x-api-key': b.key });
    fns.down = await makeFunction(aApi, 'walk-pricer', '/down', true);
    fns.downToo = await makeFunction(aApi, 'walk-pricer-2', '/down-too', true);
    fns.up = await makeFunction(aApi, 'walk-backup', '/up', true);
    fns.bPrivate = await makeFunction(bApi, 'b-secret-fallback', '/up', false);
    ev.builtinRescue = await callThrough(fns.down.name, 'anchored-adjustment');
    ev.ownRescue = await callThrough(fns.downToo.name, fns.up.name);
    ev.privateRescue = await callThrough(fns.downToo.name, fns.bPrivate.name);
  });
  after(async () => {
    await svc?.close();
    await upstream?.close();
  });

  it('opens the event by id as others, with the redactions of others: no caller ids, request id, context or links', async () => {
    const res = await aApi.get<Record<string, any>>(`/api/usage/events/${ev.builtinRescue}`);
    expect(res.status, res.text).to.equal(200);
    const item = res.body.usage_event;
    expect(item).to.include({ classification: 'others', status: 'ok', fallback_used: true });
    expect(item.function).to.deep.equal({ id: 'fn_builtin_anchored', name: 'anchored-adjustment' });
    expect(item.caller).to.deep.equal({ type: 'api_key', agent_id: null, key_id: null, person_id: null, user_agent: 'b-shop/1.0', verified: false });
    for (const hidden of ['request_id', 'context', 'links']) expect(item).not.to.have.property(hidden);
    expect(JSON.stringify(item)).not.to.contain(b.keyId).and.not.to.contain(b.workspaceId);
  });

  it('lists it among others, and with the function filter by the failed function\'s name or id', async () => {
    const all = await listAll(svc, { 'x-api-key': a.key });
    expect(ids(all)).to.include.members([ev.builtinRescue, ev.ownRescue, ev.privateRescue]);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, 'classification=others'))).to.include(ev.builtinRescue);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, 'classification=mine'))).to.deep.equal([]);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, `function=${fns.down.name.toUpperCase()}`))).to.deep.equal([ev.builtinRescue]);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, `function=${fns.down.id}`))).to.deep.equal([ev.builtinRescue]);
    // The answering function names it too, as any event is found by the function it names.
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, 'function=anchored-adjustment'))).to.deep.equal([ev.builtinRescue]);
  });

  it('shows a call where one of its functions failed and another of its own answered once, not twice', async () => {
    const all = await listAll(svc, { 'x-api-key': a.key });
    expect(ids(all).filter((id) => id === ev.ownRescue)).to.have.length(1);
    expect(new Set(ids(all)).size).to.equal(all.length);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, `function=${fns.downToo.name}`))).to.have.members([ev.ownRescue, ev.privateRescue]);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, `function=${fns.up.name}`))).to.deep.equal([ev.ownRescue]);
  });

  it("does not disclose the caller's private function that answered: no function shown, and filtering by it finds nothing", async () => {
    const res = await aApi.get<Record<string, any>>(`/api/usage/events/${ev.privateRescue}`);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.usage_event.function).to.equal(null);
    expect(res.text).not.to.contain(fns.bPrivate.id).and.not.to.contain(fns.bPrivate.name);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, `function=${fns.bPrivate.name}`))).to.deep.equal([]);
    expect(ids(await listAll(svc, { 'x-api-key': a.key }, `function=${fns.bPrivate.id}`))).to.deep.equal([]);
  });

  it('stays mine for the caller, who finds it by the function that failed as well', async () => {
    const own = await listAll(svc, { 'x-api-key': b.key }, `function=${fns.down.name}`);
    expect(ids(own)).to.deep.equal([ev.builtinRescue]);
    expect(own[0]).to.include({ classification: 'mine' });
    const priv = await bApi.get<Record<string, any>>(`/api/usage/events/${ev.privateRescue}`);
    expect(priv.body.usage_event.function).to.deep.equal(fns.bPrivate);
  });

  it("counts none of them in the owner's summary, and each once in the caller's", async () => {
    const aSummary = await aApi.get<Record<string, any>>('/api/usage/summary');
    expect(aSummary.status, aSummary.text).to.equal(200);
    expect(aSummary.body).to.include({ requests: 0, billable_requests: 0, billable_cost: '0.00', total_cost: '0.00' });
    const bSummary = await bApi.get<Record<string, any>>('/api/usage/summary');
    expect(bSummary.body).to.include({ requests: 3, succeeded_requests: 3 });
  });
});
