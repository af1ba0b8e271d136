import { expect } from 'chai';
import type { HttpResult } from '../../support/http';
import { call } from '../../support/http';
import { asPerson, identityConfig, signUp } from '../../support/identity';
import type { Person } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

type Body = Record<string, any>;

/** Lists, audit entries and key names show an agent by its name: two active agents of one workspace never share one. */
describe('accounts: active agents of a workspace have distinct names', function () {
  this.timeout(60_000);
  let svc: TestService;
  let owner: Person;
  before(async () => {
    svc = await startTestService({ config: { ...identityConfig(), engine: { threads: 1 } } });
    owner = await signUp(svc.url);
  });
  after(() => svc.close());

  const send = (method: 'POST' | 'PATCH', path: string, body: Body, who: Person = owner) => call<Body>(svc.url, method, path, { body, headers: asPerson(who) });
  const create = async (name: string, who: Person = owner) => send('POST', '/api/agents', { name }, who);
  const expectNameTaken = (res: HttpResult<Body>, holder: string) => {
    expect(res.status, res.text).to.equal(409);
    expect(res.body.code).to.equal('conflict');
    expect(res.body.agent_id).to.equal(holder);
    expect(res.body.reason).to.equal('agent name taken');
    expect(res.body.error).to.include('already named');
    expect(res.body.hint).to.include(`PATCH /api/agents/${holder}`);
  };

  it('refuses a create or a rename to a name another active agent holds, whatever its case, with 409 naming that agent', async () => {
    const first = await create('Returns Bot');
    expect(first.status, first.text).to.equal(201);
    const firstId = first.body.agent.id as string;
    expectNameTaken(await create('returns bot'), firstId);
    expectNameTaken(await create('  RETURNS BOT  '), firstId);

    const second = await create('Refunds Bot');
    expect(second.status, second.text).to.equal(201);
    expectNameTaken(await send('PATCH', `/api/agents/${second.body.agent.id as string}`, { name: 'returns BOT' }), firstId);
    // An agent renamed to its own name in another case clashes with nobody.
    const recased = await send('PATCH', `/api/agents/${firstId}`, { name: 'RETURNS BOT' });
    expect(recased.status, recased.text).to.equal(200);
    expect(recased.body.agent.name).to.equal('RETURNS BOT');
  });

  it('lets a new agent take a disabled agent\'s name, and refuses re-enabling the old one under it unless the same PATCH renames it', async () => {
    const old = await create('Quotes Bot');
    const oldId = old.body.agent.id as string;
    expect((await send('PATCH', `/api/agents/${oldId}`, { status: 'disabled' })).status).to.equal(200);
    const fresh = await create('quotes bot');
    expect(fresh.status, fresh.text).to.equal(201);
    const freshId = fresh.body.agent.id as string;

    expectNameTaken(await send('PATCH', `/api/agents/${oldId}`, { status: 'active' }), freshId);
    // A disabled agent may be renamed to anything: it shows beside no active one of that name.
    const renamedDisabled = await send('PATCH', `/api/agents/${oldId}`, { name: 'Quotes Bot' });
    expect(renamedDisabled.status, renamedDisabled.text).to.equal(200);
    expect(renamedDisabled.body.agent.status).to.equal('disabled');
    const back = await send('PATCH', `/api/agents/${oldId}`, { status: 'active', name: 'Quotes Bot (old)' });
    expect(back.status, back.text).to.equal(200);
    expect(back.body.agent).to.include({ status: 'active', name: 'Quotes Bot (old)' });
  });

  it('lets exactly one of several creates racing for one name through', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => create('Racing Bot')));
    const made = results.filter((r) => r.status === 201);
    expect(made, results.map((r) => r.text).join('\n')).to.have.length(1);
    const winner = made[0]?.body.agent.id as string;
    for (const r of results.filter((x) => x.status !== 201)) expectNameTaken(r, winner);
  });

  it('never leaves two active agents with one name when a rename races a re-enable of the same agent', async () => {
    const holder = await create('Held Name');
    expect(holder.status, holder.text).to.equal(201);
    for (let i = 0; i < 8; i++) {
      const racer = await create(`Racer ${i}`);
      const id = racer.body.agent.id as string;
      expect((await send('PATCH', `/api/agents/${id}`, { status: 'disabled' })).status).to.equal(200);
      // Each alone is fine (a disabled agent may take the name; an agent may come back under its own); together they would clash.
      const [enabled, renamed] = await Promise.all([send('PATCH', `/api/agents/${id}`, { status: 'active' }), send('PATCH', `/api/agents/${id}`, { name: 'held name' })]);
      expect([enabled.status, renamed.status].sort(), `${enabled.text}\n${renamed.text}`).to.deep.equal([200, 409]);
    }
    const listed = await call<Body>(svc.url, 'GET', '/api/agents?limit=100', { headers: asPerson(owner) });
    const active = (listed.body.data as Array<{ name: string; status: string }>).filter((a) => a.status === 'active').map((a) => a.name.toLowerCase());
    expect(active.length, active.join(', ')).to.equal(new Set(active).size);
  });

  it('lets another workspace use the same name', async () => {
    const other = await signUp(svc.url);
    const res = await create('Returns Bot', other);
    expect(res.status, res.text).to.equal(201);
  });
});
