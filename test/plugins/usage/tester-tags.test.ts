import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, mintToken, signUp } from '../../support/world';
import type { Person } from '../../support/world';
import { demo, ids, listAll, unique, usageConfig } from './helpers';

/** GET/PUT /api/settings/tester-tags: shape, validation, hashing of addresses, who may change them. */
describe('usage: tester tags (Settings)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let owner: Person;
  let key: string;

  before(async () => {
    svc = await startTestService({ config: usageConfig });
    owner = await signUp(svc, 'tags-owner');
    key = (await createKey(svc, owner, { name: 'workspace key' })).key;
  });
  after(() => svc?.close());

  const put = (body: unknown, headers: Record<string, string> = { 'x-api-key': key }) => client(svc.url, headers).put<Record<string, any>>('/api/settings/tester-tags', body);
  const get = (headers: Record<string, string> = { 'x-api-key': key }) => client(svc.url, headers).get<Record<string, any>>('/api/settings/tester-tags');

  it('starts empty, replaces the whole set, echoes labels and masked addresses only, and keeps no address', async () => {
    expect((await get()).body).to.deep.equal({ tags: [] });
    const res = await put({
      tags: [
        { label: 'QA bot', user_agent_contains: 'acme-qa-bot' },
        { label: 'office', address: '203.0.113.77' },
        { label: 'lab v6', address: '2001:db8::42', user_agent_contains: 'lab-runner' },
      ],
    });
    expect(res.status, res.text).to.equal(200);
    const tags = res.body.tags as Array<Record<string, any>>;
    expect(tags.map((t) => [t.label, t.user_agent_contains, t.address])).to.deep.equal([
      ['QA bot', 'acme-qa-bot', null],
      ['office', null, '203.0.*.*'],
      ['lab v6', 'lab-runner', '2001:db8:*'],
    ]);
    for (const t of tags) expect(t.id).to.match(/^ttag_/);
    expect((await get()).body).to.deep.equal(res.body);
    expect(res.text).not.to.contain('203.0.113.77');
    const [row] = await svc.sequelize.query(`SELECT string_agg(row_to_json(t)::text, ' ') AS dump FROM usage_tester_tags t WHERE workspace_id = $1`, { bind: [owner.workspaceId] });
    const dump = (row as Array<{ dump: string }>)[0]?.dump ?? '';
    expect(dump).not.to.contain('203.0.113.77');
    expect(dump).not.to.contain('2001:db8::42');

    const replaced = await put({ tags: [{ label: 'only one', user_agent_contains: 'solo-agent' }] });
    expect(replaced.body.tags.map((t: { label: string }) => t.label)).to.deep.equal(['only one']);
    expect((await put({ tags: [] })).body).to.deep.equal({ tags: [] });
  });

  it('takes back what GET returned unchanged: the masked address with its id keeps the stored address', async () => {
    const ua = unique('roundtrip-ua');
    const first = await put({ tags: [{ label: 'office', address: '198.51.100.77' }, { label: 'ua', user_agent_contains: ua }] });
    const again = await put((await get()).body);
    expect(again.status, again.text).to.equal(200);
    expect(again.body).to.deep.equal(first.body);
    const tagged = await demo(svc, unique('anything'), '198.51.100.77');
    const items = await listAll(svc, { 'x-api-key': key }, 'classification=testers');
    expect(ids(items)).to.include(tagged);
    // Without the id, a masked address is not an address.
    const bad = await put({ tags: [{ label: 'office', address: '198.51.*.*' }] });
    expect(bad.status).to.equal(400);
    expect(bad.body.issues[0].path).to.equal('tags.0.address');
  });

  it('only changes classification in the workspace\'s own views; it grants nothing', async () => {
    const ua = unique('grants-nothing');
    await put({ tags: [{ label: 'mine', user_agent_contains: ua }] });
    const eventId = await demo(svc, `${ua}/1.0`);
    // The tagged keyless call is visible as testers (by id too, as listed), but it is not the workspace's event to change.
    expect(ids(await listAll(svc, { 'x-api-key': key }, 'classification=testers'))).to.include(eventId);
    const opened = await client(svc.url, { 'x-api-key': key }).get<{ usage_event: { classification: string; tester_tag: string } }>(`/api/usage/events/${eventId}`);
    expect(opened.body.usage_event).to.include({ classification: 'testers', tester_tag: 'mine' });
    const refused = await client(svc.url, { 'x-api-key': key }).patch<Record<string, any>>(`/api/usage/events/${eventId}/outcome`, { outcome: 'accepted' });
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.body.code).to.equal('forbidden');
    // Another workspace without the tag does not see it.
    const other = await signUp(svc, 'tags-other');
    const otherKey = (await createKey(svc, other, { name: 'other' })).key;
    expect(ids(await listAll(svc, { 'x-api-key': otherKey }))).not.to.include(eventId);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['a tag without a matcher', { tags: [{ label: 'nothing' }] }, 'tags.0.user_agent_contains'],
    ['a tag without a label', { tags: [{ user_agent_contains: 'abcd-bot' }] }, 'tags.0.label'],
    ['a User-Agent part under 4 characters', { tags: [{ label: 'short', user_agent_contains: 'Moz' }] }, 'tags.0.user_agent_contains'],
    ['an address that is not an IP', { tags: [{ label: 'host', address: 'office.example.com' }] }, 'tags.0.address'],
    ['an unknown field', { tags: [{ label: 'x', user_agent_contains: 'abcd-bot', grants: 'admin' }] }, 'tags.0.grants'],
    ['an unknown id', { tags: [{ id: 'ttag_doesnotexist00000000', label: 'x', user_agent_contains: 'abcd-bot' }] }, 'tags.0.id'],
    ['no tags field', {}, 'tags'],
    ['more than 50 tags', { tags: Array.from({ length: 51 }, (_, i) => ({ label: `t${i}`, user_agent_contains: `lab-runner-${i}` })) }, 'tags'],
    // A part every curl, browser or Python client sends would show strangers' keyless calls (and their prices) as testers'.
    ...(['curl', 'Mozi', 'pyth', 'okhttp', 'curl/8.4.0', 'Mozilla/5.0 (X11; Linux x86_64)', 'python-requests/2.31', 'HeadlessChrome', 'Claude-User', 'node-fetch/1.0', '537.36', 'ozilla/5.0', 'ython-requests/2.31', 'Intel Mac OS X', 'Win64', 'Version/17.4'] as const).map(
      (ua): [string, unknown, string] => [`the common client's User-Agent part "${ua}"`, { tags: [{ label: 'QA', user_agent_contains: 'acme-qa-bot' }, { label: 'sweep', user_agent_contains: ua }] }, 'tags.1.user_agent_contains'],
    ),
  ];
  for (const [what, body, path] of invalid) {
    it(`refuses ${what} with 400 and issues naming ${path}`, async () => {
      const before = (await get()).body;
      const res = await put(body);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues.map((i: { path: string }) => i.path)).to.include(path);
      expect((await get()).body).to.deep.equal(before);
    });
  }

  it("refuses a common client's User-Agent part with a reason and a way out, and takes a part with letters of its own around it", async () => {
    const res = await put({ tags: [{ label: 'sweep', user_agent_contains: 'curl/7.88.1' }] });
    expect(res.status, res.text).to.equal(400);
    const issue = (res.body.issues as Array<{ path: string; reason: string }>).find((i) => i.path === 'tags.0.user_agent_contains');
    expect(issue?.reason).to.match(/^would match strangers' keyless calls: "curl" is in the User-Agent of common clients; use a part only your testers send/);
    // A part without a common name but without letters of its own matches every browser (537.36 is in Chrome's, Safari's and Edge's).
    const digits = await put({ tags: [{ label: 'sweep', user_agent_contains: '537.36' }] });
    expect(digits.status, digits.text).to.equal(400);
    expect(digits.body.issues[0].reason).to.match(/^would match strangers' keyless calls: it has fewer than 4 letters: versions and punctuation are in every client's User-Agent; /);
    const taken = await put({ tags: [{ label: 'QA', user_agent_contains: 'acme-curl-tester' }] });
    expect(taken.status, taken.text).to.equal(200);
  });

  it('refuses a body that is not JSON with 400 invalid_json', async () => {
    const res = await client(svc.url).raw<Record<string, any>>('PUT', '/api/settings/tester-tags', { rawBody: '{tags: [', headers: { 'x-api-key': key, 'content-type': 'application/json' } });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('invalid_json');
  });

  it('is managed by owners and admins and by workspace keys; members read only; agent keys and tokens are refused', async () => {
    await put({ tags: [{ label: 'kept', user_agent_contains: 'kept-agent' }] });
    expect((await put({ tags: [{ label: 'by owner', user_agent_contains: 'owner-agent' }] }, { cookie: owner.cookie })).status).to.equal(200);

    const member = await signUp(svc, 'tags-member');
    const inv = await client(svc.url, { cookie: owner.cookie }).post<Record<string, any>>(`/api/workspaces/${owner.workspaceId}/invitations`, { email: member.email, role: 'member' });
    expect((await client(svc.url, { cookie: member.cookie }).post('/api/invitations/accept', { token: inv.body.accept.token })).status).to.equal(200);
    const asMember = { cookie: member.cookie, 'x-workspace-id': owner.workspaceId };
    expect((await get(asMember)).body.tags.map((t: { label: string }) => t.label)).to.deep.equal(['by owner']);
    const refused = await put({ tags: [] }, asMember);
    expect(refused.status).to.equal(403);
    expect(refused.body.code).to.equal('forbidden');
    // The role is checked before the body: a body that would be refused changes nothing for a member.
    const refusedFirst = await put({ tags: 'none' }, asMember);
    expect(refusedFirst.status, refusedFirst.text).to.equal(403);
    expect(refusedFirst.body).to.include({ code: 'forbidden', reason: 'role too low' });
    // A key the member creates does no more than the member.
    const membersKey = await client(svc.url, asMember).post<Record<string, any>>('/api/api-keys', { name: 'member key' });
    expect(membersKey.status, membersKey.text).to.equal(201);
    const byMembersKey = await put({ tags: [] }, { 'x-api-key': membersKey.body.api_key.key });
    expect(byMembersKey.status, byMembersKey.text).to.equal(403);
    expect(byMembersKey.body).to.include({ code: 'forbidden', reason: 'role too low' });
    // A scoped key, even the owner's, is not full access: tags are workspace configuration.
    for (const scopes of [['billing:read'], ['price:compute']]) {
      const scoped = await createKey(svc, owner, { name: `scoped ${scopes[0]}`, scopes });
      const res = await put({ tags: [] }, { 'x-api-key': scoped.key });
      expect(res.status, `${scopes[0]}: ${res.text}`).to.equal(403);
      expect(res.body.code).to.equal('insufficient_scope');
    }

    const agent = await client(svc.url, { cookie: owner.cookie }).post<Record<string, any>>('/api/agents', { name: 'tags-agent' });
    const agentKey = await client(svc.url, { cookie: owner.cookie }).post<Record<string, any>>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'agent key' });
    const byAgent = await put({ tags: [] }, { 'x-api-key': agentKey.body.api_key.key });
    expect(byAgent.status).to.equal(403);
    const token = await mintToken(svc, agentKey.body.api_key.key);
    expect((await get({ authorization: `Bearer ${token}` })).status).to.equal(401);
    expect((await get()).body.tags.map((t: { label: string }) => t.label)).to.deep.equal(['by owner']);
  });

  it("is private to the workspace: another workspace reads its own (empty) set", async () => {
    await put({ tags: [{ label: 'private', user_agent_contains: 'private-agent' }] });
    const other = await signUp(svc, 'tags-private');
    const otherKey = (await createKey(svc, other, { name: 'other' })).key;
    expect((await get({ 'x-api-key': otherKey })).body).to.deep.equal({ tags: [] });
  });
});
