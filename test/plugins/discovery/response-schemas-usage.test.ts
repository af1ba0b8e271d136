import { expect } from 'chai';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, mintToken, registerSandbox, signUp } from '../../support/world';
import type { Person } from '../../support/world';
import { declaredSchema, expectFitsDeclared } from '../../support/response-schema';
import { demo, insertEvent, price, unique, usageConfig } from '../usage/helpers';

/** The usage, settings, team, onboarding and OAuth routes whose success bodies the document describes: method, path there, status. */
const ROUTES = {
  'usage.events.list': ['get', '/api/usage/events', 200],
  'usage.events.read': ['get', '/api/usage/events/{id}', 200],
  'usage.outcome': ['patch', '/api/usage/events/{id}/outcome', 200],
  'usage.summary': ['get', '/api/usage/summary', 200],
  'settings.testerTags.read': ['get', '/api/settings/tester-tags', 200],
  'settings.testerTags.replace': ['put', '/api/settings/tester-tags', 200],
  'team.invitations.create': ['post', '/api/workspaces/{workspace_id}/invitations', 201],
  'team.invitations.list': ['get', '/api/workspaces/{workspace_id}/invitations', 200],
  'team.invitations.revoke': ['delete', '/api/workspaces/{workspace_id}/invitations/{invitation_id}', 200],
  'team.invitations.accept': ['post', '/api/invitations/accept', 200],
  'team.members.list': ['get', '/api/workspaces/{workspace_id}/members', 200],
  'team.members.update': ['patch', '/api/workspaces/{workspace_id}/members/{person_id}', 200],
  'team.members.remove': ['delete', '/api/workspaces/{workspace_id}/members/{person_id}', 200],
  'team.members.leave': ['post', '/api/workspaces/{workspace_id}/leave', 200],
  'team.audit.list': ['get', '/api/workspaces/{workspace_id}/audit-log', 200],
  'agents.register': ['post', '/api/agents/register', 201],
  'agents.claim': ['post', '/api/agents/claim', 200],
  'agents.claimLink.read': ['get', '/api/agents/claim/{token}', 200],
  'agents.claimLink.confirm': ['post', '/api/agents/claim/{token}', 200],
  'apiKeys.rotate': ['post', '/api/api-keys/rotate', 201],
  'agents.capabilities': ['get', '/api/agents/{id}/capabilities', 200],
  'oauth.register': ['post', '/api/oauth/register', 201],
  'oauth.token': ['post', '/api/oauth/token', 200],
  'oauth.metadata': ['get', '/.well-known/oauth-authorization-server', 200],
} as const;
type RouteId = keyof typeof ROUTES;

type Body = Record<string, any>;

describe('OpenAPI response schemas of the usage, tester-tag, team, onboarding and OAuth routes', function () {
  this.timeout(120_000);
  let svc: TestService;
  let upstream: Upstream;

  before(async () => {
    upstream = await startUpstream((_req, res) => sendJson(res, 200, { price: 42.5, confidence: 0.8, currency: 'USD' }));
    svc = await startTestService({ config: usageConfig });
  });
  after(async () => {
    await svc?.close();
    await upstream?.close();
  });

  /** The paths of fields `answer` has and `parsed` (the answer parsed by a schema, which drops what a nested object does not declare) lacks. */
  function undeclared(answer: unknown, parsed: unknown, path = ''): string[] {
    if (Array.isArray(answer) && Array.isArray(parsed)) return answer.flatMap((item, i) => undeclared(item, parsed[i], `${path}[${i}]`));
    if (answer === null || typeof answer !== 'object' || parsed === null || typeof parsed !== 'object') return [];
    const kept = parsed as Body;
    return Object.entries(answer).flatMap(([k, v]) => (k in kept ? undeclared(v, kept[k], `${path}.${k}`) : [`${path}.${k}`]));
  }

  /**
   * The answer has the route's success status and fits its declared schema: unknown fields refused
   * at the top level by the shared check, and in nested objects (open-ended ones aside) here.
   */
  function expectFits(id: RouteId, res: HttpResult<unknown>): void {
    const status = ROUTES[id][2];
    expect(res.status, `${id}: ${res.text}`).to.equal(status);
    expectFitsDeclared(svc, id, res.body, status);
    expect(undeclared(res.body, declaredSchema(svc, id, status).parse(res.body)), `${id}: nested fields the schema does not declare`).to.deep.equal([]);
  }

  describe('usage and tester tags', () => {
    let owner: Person;
    let key: string;
    let token: string;
    const creds = {} as Record<'key' | 'token' | 'person', Record<string, string>>;
    const ev = {} as Record<'mine' | 'tester' | 'other' | 'failed', string>;
    const uaPart = unique('schemas-qa-bot');

    before(async () => {
      owner = await signUp(svc, 'schemas-usage');
      key = (await createKey(svc, owner, { name: 'usage full' })).key;
      const api = client(svc.url, { cookie: owner.cookie });
      const agent = await api.post<Body>('/api/agents', { name: 'usage-agent' });
      const agentKey = await api.post<Body>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'usage agent key' });
      token = await mintToken(svc, agentKey.body.api_key.key);
      Object.assign(creds, { key: { 'x-api-key': key }, token: { authorization: `Bearer ${token}` }, person: { cookie: owner.cookie } });

      const created = await client(svc.url, creds.key).post<Body>('/api/functions', { name: unique('schemas-fn'), execution_type: 'external_api', endpoint_url: upstream.url('/price'), cost_per_unit: '0.002', is_public: true });
      expect(created.status, created.text).to.equal(201);
      expect((await client(svc.url, creds.key).patch(`/api/functions/${created.body.function.id}`, { status: 'active' })).status).to.equal(200);
      const other = await signUp(svc, 'schemas-usage-other');
      const otherKey = (await createKey(svc, other, { name: 'other' })).key;

      const tags = await client(svc.url, creds.person).put('/api/settings/tester-tags', { tags: [{ label: 'QA bot', user_agent_contains: uaPart }] });
      expect(tags.status, tags.text).to.equal(200);
      ev.mine = (await price(svc, { ...creds.key, 'user-agent': 'schemas/1.0' }, { context: { product_type: 'coffee', current_price: 10, currency: 'USD' } })).eventId;
      ev.tester = await demo(svc, `Mozilla/5.0 (${uaPart})`);
      ev.other = (await price(svc, { 'x-api-key': otherKey }, { context: { current_price: 40, currency: 'USD' }, function_id: created.body.function.id })).eventId;
      ev.failed = await insertEvent(svc, { workspaceId: owner.workspaceId, status: 'error', functionId: null, functionName: null, cost: '0', billable: false });
    });

    it('lists mine, testers and others events that fit the declared schema, for a key, an access token and a person, filtered or not', async () => {
      for (const [who, headers] of Object.entries(creds)) {
        const res = await client(svc.url, headers).get<Body>('/api/usage/events?limit=100');
        expectFits('usage.events.list', res);
        expect(new Set(res.body.data.map((e: Body) => e.classification)), who).to.have.all.keys('mine', 'testers', 'others');
      }
      const page = await client(svc.url, creds.key).get<Body>('/api/usage/events?limit=1');
      expect(page.body.next_cursor).to.be.a('string');
      expectFits('usage.events.list', page);
      expectFits('usage.events.list', await client(svc.url, creds.key).get(`/api/usage/events?limit=1&cursor=${page.body.next_cursor}`));
      expectFits('usage.events.list', await client(svc.url, creds.key).get('/api/usage/events?classification=testers&channel=demo'));
      const none = await client(svc.url, creds.key).get<Body>('/api/usage/events?request_id=req_none');
      expect(none.body.data).to.deep.equal([]);
      expectFits('usage.events.list', none);
    });

    it('opens a mine, a testers, an others and a failed event with answers that fit the declared schema', async () => {
      for (const [kind, id] of Object.entries(ev)) {
        const res = await client(svc.url, creds.token).get<Body>(`/api/usage/events/${id}`);
        expectFits('usage.events.read', res);
        expect(res.body.usage_event.classification, kind).to.equal(kind === 'tester' ? 'testers' : kind === 'other' ? 'others' : 'mine');
      }
      const failed = await client(svc.url, creds.person).get<Body>(`/api/usage/events/${ev.failed}`);
      expect(failed.body.usage_event).to.include({ status: 'error', function: null });
    });

    it('reports outcomes with answers that fit the declared schema: previous null at first, then the replaced report, for a key, a token and a person', async () => {
      const first = await client(svc.url, creds.key).patch<Body>(`/api/usage/events/${ev.mine}/outcome`, { outcome: 'accepted', quality_score: 0.9 });
      expectFits('usage.outcome', first);
      expect(first.body.previous).to.equal(null);
      const again = await client(svc.url, creds.token).patch<Body>(`/api/usage/events/${ev.mine}/outcome`, { outcome: 'rejected' });
      expectFits('usage.outcome', again);
      expect(again.body.previous).to.include({ outcome: 'accepted', quality_score: 0.9 });
      const third = await client(svc.url, creds.person).patch<Body>(`/api/usage/events/${ev.mine}/outcome`, { outcome: 'accepted' });
      expectFits('usage.outcome', third);
      expect(third.body.previous).to.include({ outcome: 'rejected', quality_score: null });
    });

    it("opens a claimed sandbox's event and takes its outcome for a person without x-workspace-id, with answers that fit the declared schemas", async () => {
      const sandbox = await registerSandbox(svc, 'schemas-usage-sandbox');
      const priced = await price(svc, { 'x-api-key': sandbox.key });
      const claimer = await signUp(svc, 'schemas-usage-claimer');
      const claimed = await client(svc.url, { cookie: claimer.cookie }).post(`/api/agents/claim/${sandbox.claimToken}`, {});
      expect(claimed.status, claimed.text).to.equal(200);
      const read = await client(svc.url, { cookie: claimer.cookie }).get<Body>(`/api/usage/events/${priced.eventId}`);
      expectFits('usage.events.read', read);
      expect(read.body.usage_event.classification).to.equal('mine');
      expectFits('usage.outcome', await client(svc.url, { cookie: claimer.cookie }).patch(`/api/usage/events/${priced.eventId}/outcome`, { outcome: 'accepted' }));
    });

    it('summarises this month and a chosen period with answers that fit the declared schema, for a key, a token and a person', async () => {
      for (const headers of Object.values(creds)) {
        expectFits('usage.summary', await client(svc.url, headers).get('/api/usage/summary'));
        const from = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
        const chosen = await client(svc.url, headers).get<Body>(`/api/usage/summary?from=${from}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
        expectFits('usage.summary', chosen);
        expect(chosen.body.requests).to.be.greaterThan(0);
      }
      expectFits('usage.summary', await client(svc.url, creds.key).get('/api/usage/summary?from=2020-01-01&to=2020-02-01'));
    });

    it('reads and replaces tester tags with answers that fit the declared schema: none, by User-Agent and by address, for a person and a key', async () => {
      const fresh = await signUp(svc, 'schemas-tags');
      const freshKey = (await createKey(svc, fresh, { name: 'tags' })).key;
      const empty = await client(svc.url, { 'x-api-key': freshKey }).get<Body>('/api/settings/tester-tags');
      expectFits('settings.testerTags.read', empty);
      expect(empty.body.tags).to.deep.equal([]);
      const put = await client(svc.url, { 'x-api-key': freshKey }).put<Body>('/api/settings/tester-tags', { tags: [{ label: 'bot', user_agent_contains: 'schemas-bot' }, { label: 'office', address: '203.0.113.7' }] });
      expectFits('settings.testerTags.replace', put);
      const kept = await client(svc.url, { cookie: fresh.cookie }).put<Body>('/api/settings/tester-tags', { tags: put.body.tags });
      expectFits('settings.testerTags.replace', kept);
      expect(kept.body.tags[1]).to.include({ address: '203.0.*.*', user_agent_contains: null });
      expectFits('settings.testerTags.read', await client(svc.url, { cookie: fresh.cookie }).get('/api/settings/tester-tags'));
    });
  });

  describe('team', () => {
    let owner: Person;
    let joiner: Person;
    let keyInvitee: Person;
    let leaver: Person;
    let teamKey: string;
    let ws: string;
    const person = (p: Person) => ({ cookie: p.cookie });

    before(async () => {
      owner = await signUp(svc, 'schemas-owner');
      joiner = await signUp(svc, 'schemas-joiner');
      keyInvitee = await signUp(svc, 'schemas-key-invitee');
      leaver = await signUp(svc, 'schemas-leaver');
      teamKey = (await createKey(svc, owner, { name: 'team admin', scopes: ['team:admin'] })).key;
      ws = owner.workspaceId;
    });

    const invite = (headers: Record<string, string>, email: string, role = 'member') => client(svc.url, headers).post<Body>(`/api/workspaces/${ws}/invitations`, { email, role });
    const accept = (p: Person, token: string) => client(svc.url, person(p)).post<Body>('/api/invitations/accept', { token });

    it('invites by a person and by a team:admin key, lists, accepts and revokes with answers that fit the declared schemas', async () => {
      const byPerson = await invite(person(owner), joiner.email);
      expectFits('team.invitations.create', byPerson);
      const byKey = await invite({ 'x-api-key': teamKey }, keyInvitee.email, 'admin');
      expectFits('team.invitations.create', byKey);
      expect(byKey.body.invitation.via_key_id).to.be.a('string');
      expectFits('team.invitations.list', await client(svc.url, person(owner)).get(`/api/workspaces/${ws}/invitations`));
      expectFits('team.invitations.list', await client(svc.url, { 'x-api-key': teamKey }).get(`/api/workspaces/${ws}/invitations?limit=1`));
      const accepted = await accept(joiner, byPerson.body.accept.token);
      expectFits('team.invitations.accept', accepted);
      const revoked = await client(svc.url, person(owner)).delete<Body>(`/api/workspaces/${ws}/invitations/${byKey.body.invitation.id}`);
      expectFits('team.invitations.revoke', revoked);
      expect(revoked.body.invitation.status).to.equal('revoked');
    });

    it("lists members, changes a role, removes a member and leaves with answers that fit the declared schemas, for a person and a team:admin key", async () => {
      expectFits('team.members.list', await client(svc.url, person(owner)).get(`/api/workspaces/${ws}/members`));
      expectFits('team.members.list', await client(svc.url, { 'x-api-key': teamKey }).get(`/api/workspaces/${ws}/members?limit=1`));
      expectFits('team.members.update', await client(svc.url, person(owner)).patch(`/api/workspaces/${ws}/members/${joiner.id}`, { role: 'admin' }));
      expectFits('team.members.update', await client(svc.url, { 'x-api-key': teamKey }).patch(`/api/workspaces/${ws}/members/${joiner.id}`, { role: 'member' }));
      expectFits('team.members.remove', await client(svc.url, { 'x-api-key': teamKey }).delete(`/api/workspaces/${ws}/members/${joiner.id}`));
      const inv = await invite(person(owner), leaver.email);
      expect((await accept(leaver, inv.body.accept.token)).status).to.equal(200);
      const left = await client(svc.url, { ...person(leaver), 'x-workspace-id': ws }).post<Body>(`/api/workspaces/${ws}/leave`, {});
      expectFits('team.members.leave', left);
      expect(left.body).to.include({ left: true, role: 'member' });
    });

    it('lists the audit log, its changes and refused attempts, with answers that fit the declared schema, for a person and a team:admin key', async () => {
      const refused = await invite(person(owner), owner.email);
      expect(refused.status, refused.text).to.equal(409);
      const all = await client(svc.url, person(owner)).get<Body>(`/api/workspaces/${ws}/audit-log?limit=100`);
      expectFits('team.audit.list', all);
      expect(new Set(all.body.data.map((e: Body) => e.actor.type))).to.include.members(['person', 'api_key']);
      const onlyRefused = await client(svc.url, { 'x-api-key': teamKey }).get<Body>(`/api/workspaces/${ws}/audit-log?outcome=refused`);
      expectFits('team.audit.list', onlyRefused);
      expect(onlyRefused.body.data).to.not.be.empty;
    });
  });

  describe('agent onboarding and OAuth', () => {
    it('registers a sandbox and shows its claim link with answers that fit the declared schemas', async () => {
      const reg = await client(svc.url).post<Body>('/api/agents/register', { name: 'schemas-agent/register' });
      expectFits('agents.register', reg);
      expectFits('agents.claimLink.read', await client(svc.url).get(new URL(reg.body.claim.url).pathname));
    });

    it('claims by a signed-in person (keeping the key or not, into a chosen workspace) and by a workspace:claim key with answers that fit the declared schema', async () => {
      const owner = await signUp(svc, 'schemas-claimer');
      const plain = await registerSandbox(svc, 'schemas-agent/plain');
      const confirmed = await client(svc.url, { cookie: owner.cookie }).post<Body>(`/api/agents/claim/${plain.claimToken}`, {});
      expectFits('agents.claimLink.confirm', confirmed);
      expect(confirmed.body.agent_key).to.equal('revoked');
      const kept = await registerSandbox(svc, 'schemas-agent/kept');
      const keeping = await client(svc.url, { cookie: owner.cookie }).post<Body>(`/api/agents/claim/${kept.claimToken}`, { workspace_id: owner.workspaceId, keep_key: true });
      expectFits('agents.claimLink.confirm', keeping);
      expect(keeping.body.agent_key).to.equal('kept');
      const claimKey = (await createKey(svc, owner, { name: 'claimer', scopes: ['workspace:claim'] })).key;
      const byKey = await client(svc.url, { 'x-api-key': claimKey }).post('/api/agents/claim', { token: (await registerSandbox(svc, 'schemas-agent/by-key')).claimToken });
      expectFits('agents.claim', byKey);
      // A kept key is no sandbox key any more: its rotation answers the workspace's plan now.
      expectFits('apiKeys.rotate', await client(svc.url, { 'x-api-key': kept.key }).post('/api/api-keys/rotate', {}));
    });

    it("rotates a sandbox key, an ordinary workspace's agent key and an OAuth client secret with answers that fit the declared schema", async () => {
      const sandbox = await registerSandbox(svc, 'schemas-agent/rotate');
      const rotated = await client(svc.url, { 'x-api-key': sandbox.key }).post<Body>('/api/api-keys/rotate', {});
      expectFits('apiKeys.rotate', rotated);
      expect(rotated.body.previous_key).to.deep.equal({ id: sandbox.keyId, status: 'revoked' });
      const owner = await signUp(svc, 'schemas-rotator');
      const agent = await client(svc.url, { cookie: owner.cookie }).post<Body>('/api/agents', { name: 'schemas-rotating-agent' });
      const agentKey = await client(svc.url, { cookie: owner.cookie }).post<Body>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'rotating' });
      expectFits('apiKeys.rotate', await client(svc.url, { 'x-api-key': agentKey.body.api_key.key }).post('/api/api-keys/rotate', {}));
      const oauthClient = await client(svc.url).post<Body>('/api/oauth/register', {});
      expectFits('apiKeys.rotate', await client(svc.url, { 'x-api-key': oauthClient.body.client_secret }).post('/api/api-keys/rotate', {}));
    });

    it("answers an agent's capabilities to its sandbox key, its token, an ordinary agent's key and a person of its workspace with bodies that fit the declared schema", async () => {
      const sandbox = await registerSandbox(svc, 'schemas-agent/capabilities');
      const forSandbox = await client(svc.url, { 'x-api-key': sandbox.key }).get<Body>(`/api/agents/${sandbox.agentId}/capabilities`);
      expectFits('agents.capabilities', forSandbox);
      expect(forSandbox.body).to.have.property('limits');
      expectFits('agents.capabilities', await client(svc.url, { authorization: `Bearer ${sandbox.token}` }).get(`/api/agents/${sandbox.agentId}/capabilities`));
      const owner = await signUp(svc, 'schemas-capabilities');
      const agent = await client(svc.url, { cookie: owner.cookie }).post<Body>('/api/agents', { name: 'schemas-capable-agent' });
      const agentKey = await client(svc.url, { cookie: owner.cookie }).post<Body>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'capable' });
      const ordinary = await client(svc.url, { 'x-api-key': agentKey.body.api_key.key }).get<Body>(`/api/agents/${agent.body.agent.id}/capabilities`);
      expectFits('agents.capabilities', ordinary);
      expect(ordinary.body).to.not.have.property('limits');
      expectFits('agents.capabilities', await client(svc.url, { cookie: owner.cookie }).get(`/api/agents/${agent.body.agent.id}/capabilities`));
    });

    it('registers OAuth clients, with default and chosen metadata, with answers that fit the declared schema', async () => {
      expectFits('oauth.register', await client(svc.url).post('/api/oauth/register', {}));
      const chosen = await client(svc.url).post<Body>('/api/oauth/register', { client_name: 'schemas-framework', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_post', software_id: 'schemas', software_version: '1.0' });
      expectFits('oauth.register', chosen);
      expect(chosen.body).to.include({ client_name: 'schemas-framework', token_endpoint_auth_method: 'client_secret_post' });
    });

    it('issues access tokens to HTTP Basic, body credentials, an agent key and a narrowed scope with answers that fit the declared schema', async () => {
      const reg = (await client(svc.url).post<Body>('/api/oauth/register', {})).body;
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const basic = `Basic ${Buffer.from(`${reg.client_id}:${reg.client_secret}`).toString('base64')}`;
      expectFits('oauth.token', await client(svc.url).raw('POST', '/api/oauth/token', { rawBody: 'grant_type=client_credentials', headers: { ...form, authorization: basic } }));
      expectFits('oauth.token', await client(svc.url).post('/api/oauth/token', { grant_type: 'client_credentials', client_id: reg.client_id, client_secret: reg.client_secret }));
      const sandbox = await registerSandbox(svc, 'schemas-agent/token');
      const narrowed = await client(svc.url).raw<Body>('POST', '/api/oauth/token', { rawBody: 'grant_type=client_credentials&scope=price%3Acompute', headers: { ...form, 'x-api-key': sandbox.key } });
      expectFits('oauth.token', narrowed);
      expect(narrowed.body).to.include({ token_type: 'Bearer', scope: 'price:compute' });
    });

    it('answers the authorization server metadata with a body that fits the declared schema', async () => {
      expectFits('oauth.metadata', await client(svc.url).get('/.well-known/oauth-authorization-server'));
    });
  });

  it("the OpenAPI document describes each route's success body with its declared fields, where it showed an object of anything", async () => {
    const doc = (await client(svc.url).get<Body>('/api/openapi.json?format=json')).body;
    const resolve = (s: Body): Body => (typeof s.$ref === 'string' ? doc.components.schemas[s.$ref.split('/').pop() as string] : s);
    for (const [id, [method, path, status]] of Object.entries(ROUTES) as Array<[RouteId, (typeof ROUTES)[RouteId]]>) {
      const op = doc.paths[path]?.[method];
      expect(op, `${id}: ${method} ${path} in the document`).to.be.an('object');
      const schema = resolve(op.responses[String(status)].content['application/json'].schema);
      expect(Object.keys(schema.properties ?? {}).sort(), id).to.deep.equal(Object.keys(declaredSchema(svc, id, status).shape).sort()).and.not.be.empty;
    }
  });
});
