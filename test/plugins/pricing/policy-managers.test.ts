import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, joinWorkspace, mintToken, signUp } from '../../support/world';
import type { Person } from '../../support/world';

/**
 * Who may create, change and delete a workspace's routing policies: as for its functions, owners and admins and the
 * keys they made while they are; the default policy decides which function, and so what cost, every call gets.
 */
describe('pricing: who may manage routing policies', function () {
  this.timeout(60_000);
  let svc: TestService;
  let owner: Person;
  let ownerKey: string;

  before(async () => {
    svc = await startTestService();
    owner = await signUp(svc, 'policy-owner');
    ownerKey = (await createKey(svc, owner, { name: 'owner key' })).key;
  });
  after(() => svc?.close());

  const api = (headers: Record<string, string> = { 'x-api-key': ownerKey }) => client(svc.url, headers);
  const join = async (label: string, role: 'admin' | 'member') => (await joinWorkspace(svc, owner, label, role)).session;
  const ownerDefault = async (label: string): Promise<string> => {
    const res = await api().post<Record<string, any>>('/api/routing-policies', { name: `default-${label}`, strategy: 'cheapest', is_default: true });
    expect(res.status, res.text).to.equal(201);
    return res.body.policy.id as string;
  };
  /** The three writes, each refused with `check`; the owner's default policy is left as it was, and the caller still reads it. */
  const refusedEveryWrite = async (headers: Record<string, string>, check: (res: { status: number; body: Record<string, any>; text: string }) => void) => {
    const id = await ownerDefault(Object.values(headers)[0]?.slice(-6) ?? 'x');
    check(await api(headers).post<Record<string, any>>('/api/routing-policies', { name: 'takeover', strategy: 'fastest', is_default: true }));
    // Refused before the body is read: an empty body gets the same 403, not a 400 coaching a caller who can never write.
    check(await api(headers).post<Record<string, any>>('/api/routing-policies', {}));
    check(await api(headers).patch<Record<string, any>>(`/api/routing-policies/${id}`, { strategy: 'fastest' }));
    check(await api(headers).delete<Record<string, any>>(`/api/routing-policies/${id}`));
    const read = await api(headers).get<Record<string, any>>(`/api/routing-policies/${id}`);
    expect(read.status, read.text).to.equal(200);
    expect(read.body.policy).to.include({ id, strategy: 'cheapest', is_default: true });
  };

  it('lets owners and admins, and the keys they created, create, change and delete policies', async () => {
    const asAdmin = await join('policy-admin', 'admin');
    const adminKey = (await api(asAdmin).post<Record<string, any>>('/api/api-keys', { name: 'admin key' })).body.api_key.key as string;
    for (const headers of [{ cookie: owner.cookie }, { 'x-api-key': ownerKey }, asAdmin, { 'x-api-key': adminKey }]) {
      const created = await api(headers).post<Record<string, any>>('/api/routing-policies', { name: 'allowed', strategy: 'cheapest' });
      expect(created.status, created.text).to.equal(201);
      const id = created.body.policy.id as string;
      expect((await api(headers).patch<Record<string, any>>(`/api/routing-policies/${id}`, { strategy: 'fastest' })).status).to.equal(200);
      expect((await api(headers).delete<Record<string, any>>(`/api/routing-policies/${id}`)).status).to.equal(200);
    }
  });

  it("refuses a member's session and a member's key with 403 forbidden, role too low, changing nothing", async () => {
    const asMember = await join('policy-member', 'member');
    const memberKey = (await api(asMember).post<Record<string, any>>('/api/api-keys', { name: 'member key' })).body.api_key.key as string;
    for (const headers of [asMember, { 'x-api-key': memberKey }]) {
      await refusedEveryWrite(headers, (res) => {
        expect(res.status, res.text).to.equal(403);
        expect(res.body).to.include({ code: 'forbidden', reason: 'role too low', hint: 'Ask an owner or admin of this workspace.' });
        expect(res.body.error).to.match(/^Only owners and admins create, change or delete this workspace's routing policies/);
      });
    }
  });

  it("refuses the workspace's agent keys and their access tokens with 403 forbidden (an agent acts for itself)", async () => {
    const agent = await api({ cookie: owner.cookie }).post<Record<string, any>>('/api/agents', { name: 'policy-agent' });
    const minted = await api({ cookie: owner.cookie }).post<Record<string, any>>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'agent key' });
    const key = minted.body.api_key.key as string;
    for (const [headers, error] of [
      [{ 'x-api-key': key }, "Agent keys cannot create, change or delete this workspace's routing policies; use a workspace key or a person's session."],
      [{ authorization: `Bearer ${await mintToken(svc, key)}` }, "Agent keys and their access tokens cannot create, change or delete this workspace's routing policies; use a workspace key or a person's session."],
    ] as const) {
      await refusedEveryWrite(headers, (res) => {
        expect(res.status, res.text).to.equal(403);
        expect(res.body).to.include({ code: 'forbidden', reason: 'agent-bound key', error });
      });
    }
  });
});
