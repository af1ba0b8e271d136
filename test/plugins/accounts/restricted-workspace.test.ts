import { expect } from 'chai';
import { client } from '../../support/http';
import { asPerson, createKey, identityConfig, setRole, signUp } from '../../support/identity';
import type { ErrorBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

describe('accounts: a suspended or rejected workspace can only read, but can always give up access', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    api = client(svc.url);
  });
  after(() => svc.close());

  const setWorkspaceStatus = (id: string, status: string) => svc.sequelize.query('UPDATE workspaces SET status = $2 WHERE id = $1', { bind: [id, status] });

  for (const status of ['suspended', 'rejected']) {
    it(`${status}: writes get 403 account_restricted; signing out, ending sessions and revoking keys still work`, async () => {
      const person = await signUp(svc.url);
      const key = await createKey(svc.url, asPerson(person), { name: 'leaked integration' });
      // A second session to end, from another sign-in.
      const other = await api.post<{ session: { id: string } }>('/api/auth/signin', { email: person.email, password: person.password });
      expect(other.status, other.text).to.equal(200);
      await setWorkspaceStatus(person.workspaceId, status);

      const write = await api.post<ErrorBody>('/api/compute/price', { context: { unit_cost: 10 } }, { 'x-api-key': key.key });
      expect(write.status, write.text).to.equal(403);
      expect(write.body.code).to.equal('account_restricted');
      expect(write.body.error).to.equal(`This account is ${status}; it can only read, sign out, end sessions and revoke keys.`);
      expect(write.body.reason).to.equal(`account ${status}`);
      expect((await api.post<ErrorBody>('/api/api-keys', { name: 'more' }, asPerson(person))).body.code).to.equal('account_restricted');
      expect((await api.get('/api/me', asPerson(person))).status).to.equal(200);

      const revoke = await api.delete<Record<string, unknown>>(`/api/api-keys/${key.id}`, asPerson(person));
      expect(revoke.status, revoke.text).to.equal(200);
      const afterRevoke = await api.get<ErrorBody>('/api/me', { 'x-api-key': key.key });
      expect(afterRevoke.status).to.equal(401);
      expect(afterRevoke.body.code).to.equal('invalid_credentials');

      const endOne = await api.delete<Record<string, unknown>>(`/api/user/sessions/${other.body.session.id}`, asPerson(person));
      expect(endOne.status, endOne.text).to.equal(200);
      const endAll = await api.delete<{ revoked: number }>(`/api/user/sessions?currentSessionId=${person.sessionId}`, asPerson(person));
      expect(endAll.status, endAll.text).to.equal(200);

      const signout = await api.post<{ signed_out: boolean }>('/api/auth/signout', {}, asPerson(person));
      expect(signout.status, signout.text).to.equal(200);
      expect(signout.body.signed_out).to.equal(true);
      expect((await api.get('/api/me', asPerson(person))).status).to.equal(401);
    });
  }

  it('a suspended person in an active workspace is as restricted, and can still sign out (with the session or the full person token; a narrowed token may not)', async () => {
    const person = await signUp(svc.url);
    const narrowed = await api.post<{ token: { access_token: string } }>('/api/user/tokens', { scopes: ['price:compute'] }, asPerson(person));
    expect(narrowed.status, narrowed.text).to.equal(201);
    await svc.sequelize.query('UPDATE people SET status = $2 WHERE id = $1', { bind: [person.id, 'suspended'] });
    const write = await api.post<ErrorBody>('/api/api-keys', { name: 'more' }, asPerson(person));
    expect(write.status).to.equal(403);
    expect(write.body).to.include({ code: 'account_restricted', reason: 'account suspended' });
    const byNarrowed = await api.post<ErrorBody>('/api/auth/signout', {}, { authorization: `Bearer ${narrowed.body.token.access_token}` });
    expect([byNarrowed.status, byNarrowed.body.code]).to.deep.equal([403, 'insufficient_scope']);
    expect((await api.post('/api/auth/signout', {}, { authorization: `Bearer ${person.token}` })).status).to.equal(200);
    expect((await api.get('/api/me', asPerson(person))).status).to.equal(401);
  });

  it("a suspended person's keys only read (writes 403 naming the key creator), while another member's key in the same workspace still writes", async () => {
    const owner = await signUp(svc.url);
    const admin = await signUp(svc.url);
    await setRole(svc, owner.workspaceId, admin.id, 'admin');
    const adminKey = await createKey(svc.url, asPerson(admin, owner.workspaceId), { name: 'admin integration' });
    const ownerKey = await createKey(svc.url, asPerson(owner), { name: 'owner integration' });
    await svc.sequelize.query('UPDATE people SET status = $2 WHERE id = $1', { bind: [admin.id, 'suspended'] });

    const write = await api.post<ErrorBody>('/api/routing-policies', { name: 'after-suspension', strategy: 'fastest' }, { 'x-api-key': adminKey.key });
    expect(write.status, write.text).to.equal(403);
    expect(write.body).to.include({
      code: 'account_restricted',
      error: 'The account of the person who created this key is suspended; the key can only read (a person of the workspace revokes it).',
      reason: "key creator's account suspended",
    });
    const compute = await api.post<ErrorBody>('/api/compute/price', { context: { unit_cost: 10 } }, { 'x-api-key': adminKey.key });
    expect(compute.status, compute.text).to.equal(403);
    expect(compute.body.code).to.equal('account_restricted');
    const read = await api.get('/api/me', { 'x-api-key': adminKey.key });
    expect(read.status, read.text).to.equal(200);

    const others = await api.post('/api/compute/price', { context: { unit_cost: 10 } }, { 'x-api-key': ownerKey.key });
    expect(others.status, others.text).to.equal(200);
    const revoke = await api.delete(`/api/api-keys/${adminKey.id}`, asPerson(owner));
    expect(revoke.status, revoke.text).to.equal(200);
  });
});
