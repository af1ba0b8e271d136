import { expect } from 'chai';
import type { DomainEvents } from '../../../core/events';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import { demo, insertEvent, price, unique, usageConfig } from './helpers';

type OutcomeEvent = DomainEvents['usage.outcome_recorded'];

/** PATCH /api/usage/events/{id}/outcome: validation, ownership, last write wins, the domain event. */
describe('usage: reporting an outcome', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  let otherKey: string;
  let workspaceId: string;
  const emitted: OutcomeEvent[] = [];

  before(async () => {
    svc = await startTestService({ config: usageConfig });
    const owner = await signUp(svc, 'outcome-owner');
    workspaceId = owner.workspaceId;
    key = (await createKey(svc, owner, { name: 'reporter' })).key;
    otherKey = (await createKey(svc, await signUp(svc, 'outcome-other'), { name: 'other' })).key;
    svc.events.on('usage.outcome_recorded', 'test', (e) => {
      emitted.push(e);
    });
  });
  after(() => svc?.close());
  beforeEach(() => {
    emitted.length = 0;
  });

  const patch = (id: string, body: unknown, k = key) => client(svc.url, { 'x-api-key': k }).patch<Record<string, any>>(`/api/usage/events/${id}/outcome`, body);

  it('records accepted with a quality score, shows it on the event and emits usage.outcome_recorded', async () => {
    const priced = await price(svc, { 'x-api-key': key }, { context: { product_type: 'coffee', current_price: 4.5, currency: 'USD' } });
    const before = Date.now();
    const res = await patch(priced.eventId, { outcome: 'accepted', quality_score: 0.9 });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.usage_event).to.include({ id: priced.eventId, outcome: 'accepted', quality_score: 0.9 });
    expect(Date.parse(res.body.usage_event.outcome_at)).to.be.within(before - 1000, Date.now() + 1000);
    expect(res.body.previous).to.equal(null);

    const read = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/events/${priced.eventId}`);
    expect(read.body.usage_event).to.include({ outcome: 'accepted', quality_score: 0.9, outcome_at: res.body.usage_event.outcome_at });

    expect(emitted).to.have.length(1);
    expect(emitted[0]).to.deep.equal({
      eventId: priced.eventId,
      workspaceId,
      outcome: 'accepted',
      qualityScore: 0.9,
      functionId: priced.body.function.id,
      functionName: priced.body.function.name,
      price: priced.body.price,
      currency: 'USD',
      contextKeys: { product_type: 'coffee', currency: 'USD' },
      networkEvidence: false,
      at: res.body.usage_event.outcome_at,
      calledAt: res.body.usage_event.created_at,
    });
  });

  it('lets the outcome change later: the last report wins, the time moves, the replaced one is returned', async () => {
    const { eventId } = await price(svc, { 'x-api-key': key });
    const first = await patch(eventId, { outcome: 'accepted', quality_score: 0.4 });
    await new Promise((r) => setTimeout(r, 5));
    const second = await patch(eventId, { outcome: 'rejected' });
    expect(second.status, second.text).to.equal(200);
    expect(second.body.usage_event).to.include({ outcome: 'rejected', quality_score: null });
    expect(Date.parse(second.body.usage_event.outcome_at)).to.be.greaterThan(Date.parse(first.body.usage_event.outcome_at));
    expect(second.body.previous).to.deep.equal({ outcome: 'accepted', quality_score: 0.4, recorded_at: first.body.usage_event.outcome_at });
    expect(emitted.map((e) => [e.outcome, e.qualityScore])).to.deep.equal([
      ['accepted', 0.4],
      ['rejected', null],
    ]);
  });

  it('takes quality_score null as none, as absent: what a read shows can be sent back', async () => {
    const { eventId } = await price(svc, { 'x-api-key': key });
    expect((await patch(eventId, { outcome: 'accepted', quality_score: 0.6 })).status).to.equal(200);
    const read = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/events/${eventId}`);
    const res = await patch(eventId, { outcome: 'accepted', quality_score: null });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.usage_event).to.include({ outcome: 'accepted', quality_score: null });
    expect(res.body.previous).to.include({ outcome: 'accepted', quality_score: 0.6 });
    // The event as read, its score now null, sent back as it reads.
    const again = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/events/${eventId}`);
    expect(again.body.usage_event.quality_score).to.equal(null);
    expect(read.body.usage_event.quality_score).to.equal(0.6);
    const resent = await patch(eventId, { outcome: again.body.usage_event.outcome, quality_score: again.body.usage_event.quality_score });
    expect(resent.status, resent.text).to.equal(200);
    expect(emitted.map((e) => e.qualityScore)).to.deep.equal([0.6, null, null]);
  });

  it('accepts the bounds 0 and 1 of the quality score', async () => {
    const { eventId } = await price(svc, { 'x-api-key': key });
    expect((await patch(eventId, { outcome: 'rejected', quality_score: 0 })).body.usage_event.quality_score).to.equal(0);
    expect((await patch(eventId, { outcome: 'accepted', quality_score: 1 })).body.usage_event.quality_score).to.equal(1);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['an unknown outcome', { outcome: 'maybe' }, 'outcome'],
    ['no outcome', { quality_score: 0.5 }, 'outcome'],
    ['a quality score above 1', { outcome: 'accepted', quality_score: 1.5 }, 'quality_score'],
    ['a negative quality score', { outcome: 'accepted', quality_score: -0.1 }, 'quality_score'],
    ['a quality score as a string', { outcome: 'accepted', quality_score: '0.5' }, 'quality_score'],
    ['an extra field', { outcome: 'accepted', note: 'great' }, 'note'],
  ];
  for (const [what, body, path] of invalid) {
    it(`refuses ${what} with 400 validation_error, issues and an example, changing nothing`, async () => {
      const { eventId } = await price(svc, { 'x-api-key': key });
      const res = await patch(eventId, body);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues.map((i: { path: string }) => i.path)).to.include(path);
      expect(res.body.example).to.deep.equal({ outcome: 'accepted', quality_score: 0.9 });
      const read = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/events/${eventId}`);
      expect(read.body.usage_event.outcome).to.equal(null);
      expect(emitted).to.deep.equal([]);
    });
  }

  it('refuses a body that is not JSON with 400 invalid_json, a hint and the example', async () => {
    const { eventId } = await price(svc, { 'x-api-key': key });
    const res = await client(svc.url).raw<Record<string, any>>('PATCH', `/api/usage/events/${eventId}/outcome`, {
      rawBody: '{"outcome": accepted',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
    });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('invalid_json');
    expect(res.body.hint).to.be.a('string');
    expect(res.body.example).to.deep.equal({ outcome: 'accepted', quality_score: 0.9 });
  });

  it("answers another workspace's event with 404, leaves it unchanged and emits nothing", async () => {
    const { eventId } = await price(svc, { 'x-api-key': key });
    const res = await patch(eventId, { outcome: 'rejected' }, otherKey);
    expect(res.status, res.text).to.equal(404);
    expect(res.text).not.to.contain(workspaceId);
    const missing = await patch('use_doesnotexist00000000', { outcome: 'rejected' }, otherKey);
    expect({ ...res.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
    const read = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/events/${eventId}`);
    expect(read.body.usage_event.outcome).to.equal(null);
    expect(emitted).to.deep.equal([]);
  });

  it('refuses an event W sees as testers or others with 403 forbidden saying only the calling workspace reports it, changing nothing', async () => {
    const wOwner = await signUp(svc, 'outcome-viewer');
    const wKey = (await createKey(svc, wOwner, { name: 'viewer' })).key;
    const w = client(svc.url, { 'x-api-key': wKey });
    const ua = unique('outcome-qa-bot');
    expect((await w.put('/api/settings/tester-tags', { tags: [{ label: 'QA', user_agent_contains: ua }] })).status).to.equal(200);
    const tester = await demo(svc, `${ua}/1.0`);
    const created = await w.post<Record<string, any>>('/api/functions', { name: unique('outcome-fn'), execution_type: 'external_api', endpoint_url: 'http://127.0.0.1:9/price', cost_per_unit: '0.002' });
    expect(created.status, created.text).to.equal(201);
    const other = await insertEvent(svc, { workspaceId, functionId: created.body.function.id as string, functionName: created.body.function.name as string });
    for (const [id, classification] of [[tester, 'testers'], [other, 'others']] as const) {
      expect((await w.get<Record<string, any>>(`/api/usage/events/${id}`)).body.usage_event.classification).to.equal(classification);
      const res = await patch(id, { outcome: 'accepted' }, wKey);
      expect(res.status, res.text).to.equal(403);
      expect(res.body.code).to.equal('forbidden');
      expect(res.body.error).to.equal(`Only the workspace that made this call reports its outcome; your workspace sees it as ${classification}.`);
      expect(res.body.reason).to.equal('not your call');
      expect(res.body.hint).to.be.a('string').and.contain('classification=mine');
      expect((await w.get<Record<string, any>>(`/api/usage/events/${id}`)).body.usage_event.outcome).to.equal(null);
    }
    expect(emitted).to.deep.equal([]);
    // An event W does not see at all keeps the 404 of an unknown id.
    const unseen = await patch((await price(svc, { 'x-api-key': otherKey })).eventId, { outcome: 'accepted' }, wKey);
    const missing = await patch('use_doesnotexist00000000', { outcome: 'accepted' }, wKey);
    expect(unseen.status).to.equal(404);
    expect({ ...unseen.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
  });

  it('is offered as a next action of a compute response, and that action works as shown', async () => {
    const priced = await price(svc, { 'x-api-key': key });
    const action = (priced.body.next_actions as Array<Record<string, any>>).find((a) => a.action === 'report_outcome');
    expect(action).to.include({ method: 'PATCH', path: `/api/usage/events/${priced.eventId}/outcome` });
    const res = await client(svc.url, { 'x-api-key': key }).patch(action?.path as string, action?.example);
    expect(res.status).to.equal(200);
  });

  it('needs price:compute: a key holding only billing:read is refused with 403', async () => {
    const owner = await signUp(svc, 'outcome-scoped');
    const full = (await createKey(svc, owner, { name: 'full' })).key;
    const narrow = (await createKey(svc, owner, { name: 'narrow', scopes: ['billing:read'] })).key;
    const { eventId } = await price(svc, { 'x-api-key': full });
    const res = await patch(eventId, { outcome: 'accepted' }, narrow);
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('insufficient_scope');
  });
});
