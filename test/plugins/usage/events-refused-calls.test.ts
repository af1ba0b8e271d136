import { expect } from 'chai';
import { CATALOG } from '../../../plugins/catalog';
import type { LeaderboardAggregator } from '../../../plugins/catalog';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import { ids, listAll, unique, usageConfig } from './helpers';

/**
 * A failed call that reached a function, or named one within the caller's reach, and was refused by it (the endpoint
 * refused the context or answered in another currency; the pinned function is a draft or inactive) names that function
 * and the strategy in its usage event, so the caller finds it by function; one the caller cannot reach names nothing.
 * Each endpoint is a real HTTP server of this test's own on 127.0.0.1.
 */
describe('usage: a call refused by the function it reached names that function', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  let ownerApi: ReturnType<typeof client>;
  let callerApi: ReturnType<typeof client>;
  let caller: { key: string; keyId: string; workspaceId: string };
  let ownerKey = '';
  const callerHeaders = (): Record<string, string> => ({ 'x-api-key': caller.key, 'user-agent': 'caller-shop/2.0' });
  const USD = { product_type: 'coffee', currency: 'USD', current_price: 4.5 };

  const makeFunction = async (api: ReturnType<typeof client>, label: string, path: string, opts: { isPublic?: boolean; status?: 'active' | 'inactive' | 'draft' } = {}) => {
    const name = unique(label);
    const made = await api.post<Record<string, any>>('/api/functions', { name, execution_type: 'external_api', endpoint_url: upstream.url(path), cost_per_unit: '0.002', is_public: opts.isPublic ?? false });
    expect(made.status, made.text).to.equal(201);
    const id = made.body.function.id as string;
    const status = opts.status ?? 'active';
    if (status !== 'draft') expect((await api.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    if (status === 'inactive') expect((await api.patch(`/api/functions/${id}`, { status: 'inactive' })).status).to.equal(200);
    return { id, name };
  };

  /** A pinned call refused with `status`; its usage event id. */
  const refusedCall = async (api: ReturnType<typeof client>, functionId: string, status: number, code: string) => {
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: USD, function_id: functionId });
    expect(res.status, res.text).to.equal(status);
    expect(res.body.code).to.equal(code);
    expect(res.body.usage_event_id, res.text).to.be.a('string');
    return res.body.usage_event_id as string;
  };
  const eventOf = async (api: ReturnType<typeof client>, id: string) => {
    const res = await api.get<Record<string, any>>(`/api/usage/events/${id}`);
    expect(res.status, res.text).to.equal(200);
    return res.body.usage_event as Record<string, any>;
  };

  before(async () => {
    upstream = await startUpstream((req, res) => {
      if (req.path === '/eur') return sendJson(res, 200, { price: 12, confidence: 0.5, currency: 'EUR' });
      if (req.path === '/refuses') return sendJson(res, 422, { error: 'product_id is required' });
      return sendJson(res, 200, { price: 12, confidence: 0.5 });
    });
    svc = await startTestService({ config: { ...usageConfig, catalog: { leaderboardRefreshMs: 3_600_000 } } });
    const owner = await signUp(svc, 'usage-refused-owner');
    ownerKey = (await createKey(svc, owner, { name: 'owner' })).key;
    ownerApi = client(svc.url, { 'x-api-key': ownerKey });
    const callerPerson = await signUp(svc, 'usage-refused-caller');
    const key = await createKey(svc, callerPerson, { name: 'caller' });
    caller = { key: key.key, keyId: key.id, workspaceId: callerPerson.workspaceId };
    callerApi = client(svc.url, callerHeaders());
  });
  after(async () => {
    await svc?.close();
    await upstream?.close();
  });

  it('a pinned endpoint answering in another currency, or refusing with 422: the event names the function and "explicit", and the function filter finds it', async () => {
    for (const path of ['/eur', '/refuses']) {
      const fn = await makeFunction(ownerApi, `refusing${path.slice(1)}`, path, { isPublic: true });
      const eventId = await refusedCall(callerApi, fn.id, 422, 'insufficient_context');
      const event = await eventOf(callerApi, eventId);
      expect(event).to.include({ classification: 'mine', status: 'error', error_code: 'insufficient_context', strategy: 'explicit' });
      expect(event.function, path).to.deep.equal({ id: fn.id, name: fn.name });
      expect(ids(await listAll(svc, callerHeaders(), `function=${fn.name}`)), path).to.deep.equal([eventId]);
      expect(ids(await listAll(svc, callerHeaders(), `function=${fn.id}`)), path).to.deep.equal([eventId]);
    }
  });

  it("the caller's own draft and inactive functions pinned (409): the event names the function and \"explicit\"", async () => {
    const callerOwn = client(svc.url, callerHeaders());
    for (const [status, code] of [['draft', 'function_draft'], ['inactive', 'function_inactive']] as const) {
      const fn = await makeFunction(callerOwn, `own-${status}`, '/ok', { status });
      const eventId = await refusedCall(callerApi, fn.id, 409, code);
      const event = await eventOf(callerApi, eventId);
      expect(event).to.include({ status: 'error', error_code: code, strategy: 'explicit' });
      expect(event.function, status).to.deep.equal({ id: fn.id, name: fn.name });
      expect(ids(await listAll(svc, callerHeaders(), `function=${fn.name}`)), status).to.deep.equal([eventId]);
    }
  });

  it("a function out of the caller's reach (another workspace's private one, or its draft) names nothing: the same event as an unknown id", async () => {
    const hidden = await makeFunction(ownerApi, 'private', '/eur');
    const draft = await makeFunction(ownerApi, 'public-draft', '/eur', { isPublic: true, status: 'draft' });
    const events = [];
    for (const id of [hidden.id, draft.id, 'fn_does_not_exist']) {
      const event = await eventOf(callerApi, await refusedCall(callerApi, id, 404, 'function_not_found'));
      events.push({ function: event.function, strategy: event.strategy, error_code: event.error_code });
    }
    expect(events).to.deep.equal(Array.from({ length: 3 }, () => ({ function: null, strategy: null, error_code: 'function_not_found' })));
    for (const fn of [hidden, draft]) expect(ids(await listAll(svc, callerHeaders(), `function=${fn.id}`))).to.deep.equal([]);
  });

  it("the function's owner sees a stranger's refused call as others, with the redactions of others", async () => {
    const fn = await makeFunction(ownerApi, 'seen-by-owner', '/refuses', { isPublic: true });
    const eventId = await refusedCall(callerApi, fn.id, 422, 'insufficient_context');
    const seen = await eventOf(ownerApi, eventId);
    expect(seen).to.include({ classification: 'others', status: 'error', error_code: 'insufficient_context', strategy: 'explicit' });
    expect(seen.function).to.deep.equal({ id: fn.id, name: fn.name });
    expect(seen.caller).to.deep.equal({ type: 'api_key', agent_id: null, key_id: null, person_id: null, user_agent: 'caller-shop/2.0', verified: false });
    for (const hidden of ['request_id', 'context', 'links']) expect(seen).not.to.have.property(hidden);
    expect(JSON.stringify(seen)).not.to.contain(caller.keyId).and.not.to.contain(caller.workspaceId);
    expect(ids(await listAll(svc, { 'x-api-key': ownerKey }, `function=${fn.name}`))).to.deep.equal([eventId]);
    // Others cannot report its outcome, as for any call of theirs.
    const report = await ownerApi.patch<Record<string, any>>(`/api/usage/events/${eventId}/outcome`, { outcome: 'accepted' });
    expect(report.status, report.text).to.equal(403);
  });

  it('counts a refused call against nothing on the leaderboard: not a call, not a failure of the function', async () => {
    const fn = await makeFunction(ownerApi, 'not-counted', '/refuses', { isPublic: true });
    for (let i = 0; i < 3; i++) await refusedCall(callerApi, fn.id, 422, 'insufficient_context');
    const snapshot = await svc.container.resolve<LeaderboardAggregator>(CATALOG.Aggregator).refresh();
    expect(snapshot.byFunction[fn.id]).to.equal(undefined);
  });
});
