import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import type { HttpResult } from '../../support/http';
import { call } from '../../support/http';
import { asPerson, createKey, exec, identityConfig, rows, signUp, uniqueEmail } from '../../support/identity';
import type { Person } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

type Body = Record<string, any>;

const LIMIT = 3;

/** One kind of record a workspace creates, with its limit, how to create one and how many the workspace holds. */
interface Kind {
  setting: string;
  create: (p: Person, i: string) => Promise<HttpResult<Body>>;
  held: (p: Person) => Promise<number>;
}

describe('identity: how many records one workspace may create', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seq = 0;
  const unique = () => `${Date.now().toString(36)}-${seq++}`;
  const post = (p: Person, path: string, body: Body) => call<Body>(svc.url, 'POST', path, { body, headers: asPerson(p) });
  const count = async (sql: string, p: Person) => (await rows<{ n: number }>(svc, sql, [p.workspaceId]))[0]?.n ?? 0;

  const kinds: Record<string, Kind> = {
    functions: {
      setting: 'FUNCTIONS_PER_WORKSPACE',
      create: (p, i) => post(p, '/api/functions', { name: `limit-fn-${i}`, execution_type: 'pipeline', cost_per_unit: '0.001' }),
      held: (p) => count('SELECT count(*)::int AS n FROM pricing_functions WHERE workspace_id = $1', p),
    },
    routingPolicies: {
      setting: 'ROUTING_POLICIES_PER_WORKSPACE',
      create: (p, i) => post(p, '/api/routing-policies', { name: `limit-policy-${i}`, strategy: 'cheapest' }),
      held: (p) => count('SELECT count(*)::int AS n FROM routing_policies WHERE workspace_id = $1', p),
    },
    apiKeys: {
      setting: 'API_KEYS_PER_WORKSPACE',
      create: (p, i) => post(p, '/api/api-keys', { name: `limit key ${i}` }),
      held: (p) => count('SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())', p),
    },
    agents: {
      setting: 'AGENTS_PER_WORKSPACE',
      create: (p, i) => post(p, '/api/agents', { name: `limit-agent-${i}` }),
      held: (p) => count(`SELECT count(*)::int AS n FROM agents WHERE workspace_id = $1 AND status = 'active'`, p),
    },
    pendingInvitations: {
      setting: 'PENDING_INVITATIONS_PER_WORKSPACE',
      create: (p) => post(p, `/api/workspaces/${p.workspaceId}/invitations`, { email: uniqueEmail(), role: 'member' }),
      held: (p) => count(`SELECT count(*)::int AS n FROM invitations WHERE workspace_id = $1 AND status = 'pending' AND expires_at > now()`, p),
    },
  };

  before(async () => {
    svc = await startTestService({
      config: {
        ...identityConfig({ perWorkspace: { functions: LIMIT, routingPolicies: LIMIT, apiKeys: LIMIT, agents: LIMIT, pendingInvitations: LIMIT } }),
        engine: { threads: 1 },
      },
    });
  });
  after(() => svc.close());

  const fill = async (kind: Kind, p: Person, n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await kind.create(p, unique());
      expect(res.status, res.text).to.equal(201);
    }
  };
  const expectLimitReached = (kind: Kind, res: HttpResult<Body>) => {
    expect(res.status, res.text).to.equal(409);
    expect(res.body.code).to.equal('conflict');
    expect(res.body.error).to.include(kind.setting);
    expect(res.body.limit).to.deep.equal({ [kind.setting.toLowerCase()]: LIMIT, setting: kind.setting });
    expect(res.body.reason).to.match(/limit reached$/);
    expect(res.body.hint).to.be.a('string').and.not.equal('');
    expect(res.body.request_id).to.match(/^req_/);
  };

  for (const [name, kind] of Object.entries(kinds)) {
    it(`${name}: the create past ${kind.setting} answers 409 conflict naming the setting and its value, and creates nothing`, async () => {
      const p = await signUp(svc.url);
      const before = await kind.held(p);
      await fill(kind, p, LIMIT - before);
      const refused = await kind.create(p, unique());
      expectLimitReached(kind, refused);
      expect(await kind.held(p)).to.equal(LIMIT);
    });

    it(`${name}: concurrent creates for the last place of ${kind.setting} let exactly one through`, async () => {
      const p = await signUp(svc.url);
      await fill(kind, p, LIMIT - 1 - (await kind.held(p)));
      const answers = await Promise.all(Array.from({ length: 6 }, () => kind.create(p, unique())));
      expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join('\n')).to.deep.equal([201, 409, 409, 409, 409, 409]);
      for (const a of answers.filter((x) => x.status === 409)) expectLimitReached(kind, a);
      expect(await kind.held(p)).to.equal(LIMIT);
    });
  }

  it('apiKeys: revoked and expired keys leave room, and agent keys count as keys of the workspace', async () => {
    const p = await signUp(svc.url);
    const keys = kinds.apiKeys as Kind;
    await fill(keys, p, LIMIT);
    const listed = await call<Body>(svc.url, 'GET', '/api/api-keys', { headers: asPerson(p) });
    const [first, second] = listed.body.data as Array<{ id: string }>;
    expect((await call(svc.url, 'DELETE', `/api/api-keys/${first?.id}`, { headers: asPerson(p) })).status).to.equal(200);
    expect((await keys.create(p, unique())).status).to.equal(201);
    await exec(svc, `UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [second?.id]);
    expect((await keys.create(p, unique())).status).to.equal(201);
    const agent = await post(p, '/api/agents', { name: `limit-agent-${unique()}` });
    expect(agent.status, agent.text).to.equal(201);
    expectLimitReached(keys, await post(p, `/api/agents/${agent.body.agent.id}/keys`, { name: 'one too many' }));
    expectLimitReached(keys, await keys.create(p, unique()));
  });

  it('agents: a disabled agent leaves room', async () => {
    const p = await signUp(svc.url);
    const agents = kinds.agents as Kind;
    await fill(agents, p, LIMIT);
    expectLimitReached(agents, await agents.create(p, unique()));
    const [one] = await rows<{ id: string }>(svc, 'SELECT id FROM agents WHERE workspace_id = $1 LIMIT 1', [p.workspaceId]);
    expect((await call(svc.url, 'DELETE', `/api/agents/${one?.id}`, { headers: asPerson(p) })).status).to.equal(200);
    expect((await agents.create(p, unique())).status).to.equal(201);
    // Its place is taken: re-enabling the disabled agent is refused as a create would be, and changes nothing.
    const reenable = await call<Body>(svc.url, 'PATCH', `/api/agents/${one?.id}`, { body: { status: 'active' }, headers: asPerson(p) });
    expectLimitReached(agents, reenable);
    expect(await agents.held(p)).to.equal(LIMIT);
    // A rename of a disabled agent takes no place.
    expect((await call(svc.url, 'PATCH', `/api/agents/${one?.id}`, { body: { name: 'renamed while disabled' }, headers: asPerson(p) })).status).to.equal(200);
  });

  it('pendingInvitations: a revoked or expired invitation leaves room', async () => {
    const p = await signUp(svc.url);
    const invitations = kinds.pendingInvitations as Kind;
    await fill(invitations, p, LIMIT);
    expectLimitReached(invitations, await invitations.create(p, unique()));
    const [one, two] = await rows<{ id: string }>(svc, 'SELECT id FROM invitations WHERE workspace_id = $1 ORDER BY created_at', [p.workspaceId]);
    expect((await call(svc.url, 'DELETE', `/api/workspaces/${p.workspaceId}/invitations/${one?.id}`, { headers: asPerson(p) })).status).to.equal(200);
    expect((await invitations.create(p, unique())).status).to.equal(201);
    await exec(svc, `UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = $1`, [two?.id]);
    expect((await invitations.create(p, unique())).status).to.equal(201);
  });

  it('routingPolicies: a deleted policy leaves room', async () => {
    const p = await signUp(svc.url);
    const policies = kinds.routingPolicies as Kind;
    await fill(policies, p, LIMIT);
    const [one] = await rows<{ id: string }>(svc, 'SELECT id FROM routing_policies WHERE workspace_id = $1 LIMIT 1', [p.workspaceId]);
    expect((await call(svc.url, 'DELETE', `/api/routing-policies/${one?.id}`, { headers: asPerson(p) })).status).to.equal(200);
    expect((await policies.create(p, unique())).status).to.equal(201);
    expectLimitReached(policies, await policies.create(p, unique()));
  });
});

describe('identity: pending invitations counted on the service clock', function () {
  this.timeout(60_000);
  let svc: TestService;
  const clock = new ManualClock(Date.now());
  before(async () => {
    svc = await startTestService({ clock, config: identityConfig({ perWorkspace: { pendingInvitations: 1 } }) });
  });
  after(() => svc.close());

  it('an invitation expired by the service clock leaves room, as it can no longer be accepted', async () => {
    const p = await signUp(svc.url);
    // A key outlives the person's session across the month the clock moves.
    const { key } = await createKey(svc.url, asPerson(p), { name: 'inviter', scopes: ['team:admin'] });
    const invite = () => call<Body>(svc.url, 'POST', `/api/workspaces/${p.workspaceId}/invitations`, { body: { email: uniqueEmail(), role: 'member' }, headers: { 'x-api-key': key } });
    const first = await invite();
    expect(first.status, first.text).to.equal(201);
    expect((await invite()).status, 'the one place is taken').to.equal(409);
    clock.advance(31 * 86_400_000);
    const res = await invite();
    expect(res.status, res.text).to.equal(201);
  });
});
