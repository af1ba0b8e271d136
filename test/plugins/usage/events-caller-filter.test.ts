import { expect } from 'chai';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import { ids, listAll, price, unique, usageConfig } from './helpers';

/**
 * GET /api/usage/events?agent_id=…&key_id=…: the events list filtered by the caller (SPEC: the usage
 * events API returns these details and filters), among the viewer's own calls, the only ones whose
 * caller it is shown.
 */
describe('usage: events filtered by caller (agent_id, key_id)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  let w: { key: string; keyId: string; agentId: string; agentKey: string; agentKeyId: string; cookie: string };
  let x: { key: string; keyId: string; agentId: string; agentKey: string; agentKeyId: string };
  const ev = {} as Record<'wKey' | 'wAgent' | 'wAgentToo' | 'wPerson' | 'xCallsW' | 'xAgentCallsW', string>;

  const withAgent = async (cookie: string, name: string) => {
    const agent = await client(svc.url, { cookie }).post<Record<string, any>>('/api/agents', { name });
    expect(agent.status, agent.text).to.equal(201);
    const key = await client(svc.url, { cookie }).post<Record<string, any>>(`/api/agents/${agent.body.agent.id}/keys`, { name: `${name} key` });
    expect(key.status, key.text).to.equal(201);
    return { agentId: agent.body.agent.id as string, agentKey: key.body.api_key.key as string, agentKeyId: key.body.api_key.id as string };
  };

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 30, confidence: 0.8, currency: 'USD' }));
    svc = await startTestService({ config: usageConfig });
    const wOwner = await signUp(svc, 'usage-caller-w');
    const wKey = await createKey(svc, wOwner, { name: 'w' });
    w = { key: wKey.key, keyId: wKey.id, cookie: wOwner.cookie, ...(await withAgent(wOwner.cookie, 'w-agent')) };
    const xOwner = await signUp(svc, 'usage-caller-x');
    const xKey = await createKey(svc, xOwner, { name: 'x' });
    x = { key: xKey.key, keyId: xKey.id, ...(await withAgent(xOwner.cookie, 'x-agent')) };

    const wApi = client(svc.url, { 'x-api-key': w.key });
    const made = await wApi.post<Record<string, any>>('/api/functions', { name: unique('w-caller-fn'), execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0.002', is_public: true });
    expect(made.status, made.text).to.equal(201);
    expect((await wApi.patch(`/api/functions/${made.body.function.id}`, { status: 'active' })).status).to.equal(200);
    const toW = { context: { current_price: 25, currency: 'USD' }, function_id: made.body.function.id };

    ev.wKey = (await price(svc, { 'x-api-key': w.key })).eventId;
    ev.wAgent = (await price(svc, { 'x-api-key': w.agentKey })).eventId;
    ev.wAgentToo = (await price(svc, { 'x-api-key': w.agentKey })).eventId;
    ev.wPerson = (await price(svc, { cookie: w.cookie })).eventId;
    ev.xCallsW = (await price(svc, { 'x-api-key': x.key }, toW)).eventId;
    ev.xAgentCallsW = (await price(svc, { 'x-api-key': x.agentKey }, toW)).eventId;
  });
  after(async () => {
    await svc?.close();
    await upstream?.close();
  });

  const list = (query: string) => listAll(svc, { 'x-api-key': w.key }, query);

  it("agent_id: the calls made with the agent's keys, newest first", async () => {
    const items = await list(`agent_id=${w.agentId}`);
    expect(ids(items)).to.deep.equal([ev.wAgentToo, ev.wAgent]);
    for (const item of items) expect(item).to.deep.include({ classification: 'mine' }).and.nested.include({ 'caller.agent_id': w.agentId });
  });

  it('key_id: the calls made with the key, an agent key included', async () => {
    expect(ids(await list(`key_id=${w.keyId}`))).to.deep.equal([ev.wKey]);
    expect(ids(await list(`key_id=${w.agentKeyId}`))).to.deep.equal([ev.wAgentToo, ev.wAgent]);
    expect(ids(await list(`key_id=${w.agentKeyId}&agent_id=${w.agentId}&classification=mine`))).to.deep.equal([ev.wAgentToo, ev.wAgent]);
    expect(ids(await list(`key_id=${w.keyId}&agent_id=${w.agentId}`))).to.deep.equal([]);
  });

  it("matches nothing of others: another workspace's calls to W's functions keep their caller hidden", async () => {
    // W sees both of X's calls, as others, without their caller ids.
    expect(ids(await list('classification=others'))).to.have.members([ev.xCallsW, ev.xAgentCallsW]);
    for (const query of [`key_id=${x.keyId}`, `agent_id=${x.agentId}`, `key_id=${x.agentKeyId}`, `classification=others&key_id=${x.keyId}`, `classification=others&agent_id=${x.agentId}`]) {
      expect(ids(await list(query)), query).to.deep.equal([]);
    }
    // X finds its own.
    expect(ids(await listAll(svc, { 'x-api-key': x.key }, `agent_id=${x.agentId}`))).to.deep.equal([ev.xAgentCallsW]);
  });

  it('takes an unknown id as matching nothing, and refuses an empty or over-long one with 400 naming it', async () => {
    expect(ids(await list('agent_id=agt_unknown&key_id=key_unknown'))).to.deep.equal([]);
    for (const [query, path] of [
      ['agent_id=', 'agent_id'],
      ['key_id=', 'key_id'],
      [`key_id=${'k'.repeat(101)}`, 'key_id'],
    ] as const) {
      const res = await client(svc.url, { 'x-api-key': w.key }).get<Record<string, any>>(`/api/usage/events?${query}`);
      expect(res.status, query).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect((res.body.issues as Array<{ path: string }>).map((i) => i.path)).to.deep.equal([path]);
    }
  });
});
