import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, joinWorkspace, signUp } from '../../support/world';
import type { Person } from '../../support/world';

/**
 * DELETE /api/functions/{id} answers 405 (functions are withdrawn, never deleted), offering the withdrawing PATCH as its
 * example only to a caller who could send it; a function out of the caller's reach answers as an id nobody holds.
 */

let seq = 0;
const fnName = (label: string) => `del-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
const pipeline = (label: string, extra: Record<string, unknown> = {}) => ({ name: fnName(label), execution_type: 'pipeline', cost_per_unit: '0.001', ...extra });

interface Refusal {
  status: number;
  allow: string | null;
  body: Record<string, any>;
}

describe('pricing: DELETE of a function offers the withdrawing PATCH only to who may send it', function () {
  this.timeout(60_000);
  let svc: TestService;
  let owner: Person;
  let ownerKey: string;
  let strangerKey: string;

  before(async () => {
    svc = await startTestService();
    owner = await signUp(svc, 'del-owner');
    ownerKey = (await createKey(svc, owner, { name: 'owner key' })).key;
    strangerKey = (await createKey(svc, await signUp(svc, 'del-stranger'), { name: 'stranger key' })).key;
  });
  after(async () => {
    await svc.close();
  });

  const as = (key: string) => client(svc.url, { 'x-api-key': key });
  const made = async (label: string, status: 'draft' | 'active' | 'inactive', extra: Record<string, unknown> = {}, key = ownerKey) => {
    const res = await as(key).post<Record<string, any>>('/api/functions', pipeline(label, extra));
    expect(res.status, res.text).to.equal(201);
    const fn = res.body.function as { id: string; name: string };
    for (const next of status === 'draft' ? [] : status === 'active' ? ['active'] : ['active', 'inactive']) {
      expect((await as(key).patch(`/api/functions/${fn.id}`, { status: next })).status).to.equal(200);
    }
    return fn;
  };
  const deleting = async (id: string, headers: Record<string, string>): Promise<Refusal> => {
    const res = await client(svc.url, headers).raw<Record<string, any>>('DELETE', `/api/functions/${id}`);
    return { status: res.status, allow: res.headers.get('allow'), body: res.body };
  };
  /** A refusal without what names the request (its id, and the path as sent in error and message). */
  const withoutRequestId = (r: Refusal) => ({ ...r, body: { ...r.body, request_id: undefined, error: undefined, message: undefined } });

  it('offers the PATCH {"status":"inactive"} as example to the owner of an active function with a full-access key, and that PATCH withdraws it', async () => {
    const fn = await made('active', 'active');
    for (const ref of [fn.id, fn.name]) {
      const res = await deleting(ref, { 'x-api-key': ownerKey });
      expect([res.status, res.allow, res.body.code], ref).to.deep.equal([405, 'GET, PATCH, HEAD', 'method_not_allowed']);
      expect(res.body.hint).to.include('never deleted').and.include('a PATCH of this path').and.include(fn.name);
      expect(res.body.example).to.deep.equal({ status: 'inactive' });
    }
    const sent = await as(ownerKey).patch<Record<string, any>>(`/api/functions/${fn.id}`, (await deleting(fn.id, { 'x-api-key': ownerKey })).body.example);
    expect(sent.status, sent.text).to.equal(200);
    expect(sent.body.function.status).to.equal('inactive');
  });

  it('a built-in: no example (its PATCH is 403), the hint saying built-ins are never withdrawn', async () => {
    for (const ref of ['fn_builtin_anchored', 'anchored-adjustment']) {
      const res = await deleting(ref, { 'x-api-key': strangerKey });
      expect(res.status).to.equal(405);
      expect(res.body).to.not.have.property('example');
      expect(res.body.hint).to.include('never deleted').and.include('anchored-adjustment is a built-in function').and.include('route around it');
      expect((await as(strangerKey).patch<Record<string, any>>(`/api/functions/${ref}`, { status: 'inactive' })).status).to.equal(403);
    }
  });

  it("another workspace's marketplace function: no example (its PATCH is 403), the hint saying only its owners and admins withdraw it", async () => {
    const listed = await made('listed', 'active', { is_public: true });
    const res = await deleting(listed.id, { 'x-api-key': strangerKey });
    expect(res.status).to.equal(405);
    expect(res.body).to.not.have.property('example');
    expect(res.body.hint).to.include(`${listed.name} is another workspace's function`).and.include('only its owners and admins can withdraw it');
    expect((await as(strangerKey).patch<Record<string, any>>(`/api/functions/${listed.id}`, { status: 'inactive' })).status).to.equal(403);
  });

  it("one out of the caller's reach answers exactly as an id nobody holds, and so does a call without a credential or with a refused one", async () => {
    const hidden = await made('private', 'active');
    const publicDraft = await made('public-draft', 'draft', { is_public: true });
    const stranger = { 'x-api-key': strangerKey };
    const unknown = await deleting('fn_nobody_holds_this', stranger);
    expect(unknown.status).to.equal(405);
    expect(unknown.body).to.not.have.property('example');
    expect(unknown.body.hint).to.include('never deleted').and.include("the owners and admins of a function's workspace withdraw it");
    for (const ref of [hidden.id, hidden.name, publicDraft.id]) expect(withoutRequestId(await deleting(ref, stranger)), ref).to.deep.equal(withoutRequestId(unknown));
    // The error names the path as sent; the rest is the same whoever asks about whatever.
    const keyless = await deleting(hidden.id, {});
    const refused = await deleting(hidden.id, { 'x-api-key': 'pcs_usr_notakeynotakeynotakeynotakeyno' });
    for (const r of [keyless, refused]) expect(withoutRequestId(r)).to.deep.equal(withoutRequestId(unknown));
    // Even the owner's function, asked about without the owner's credential, gets no example.
    expect(keyless.body).to.not.have.property('example');
  });

  it("the owner's own function through a credential that may not PATCH it: no example, the hint saying who may", async () => {
    const fn = await made('narrowed', 'active');
    const narrowed = (await createKey(svc, owner, { name: 'compute only', scopes: ['price:compute'] })).key;
    const byNarrowed = await deleting(fn.id, { 'x-api-key': narrowed });
    expect(byNarrowed.status).to.equal(405);
    expect(byNarrowed.body).to.not.have.property('example');
    expect(byNarrowed.body.hint).to.include('a credential of full access');
    expect((await as(narrowed).patch<Record<string, any>>(`/api/functions/${fn.id}`, { status: 'inactive' })).status).to.equal(403);
    const member = await joinWorkspace(svc, owner, 'del-member', 'member');
    const byMember = await deleting(fn.id, member.session);
    expect(byMember.status).to.equal(405);
    expect(byMember.body).to.not.have.property('example');
    expect(byMember.body.hint).to.include('an owner or admin of this workspace withdraws').and.include('ask one of them');
  });

  it('the owner\'s draft or already inactive function: no example ({"status":"inactive"} would be refused or change nothing)', async () => {
    const draft = await made('draft', 'draft');
    const res = await deleting(draft.id, { 'x-api-key': ownerKey });
    expect(res.status).to.equal(405);
    expect(res.body).to.not.have.property('example');
    expect(res.body.hint).to.include('is a draft');
    expect((await as(ownerKey).patch<Record<string, any>>(`/api/functions/${draft.id}`, { status: 'inactive' })).status).to.equal(409);
    const inactive = await made('inactive', 'inactive');
    const again = await deleting(inactive.id, { 'x-api-key': ownerKey });
    expect(again.body).to.not.have.property('example');
    expect(again.body.hint).to.include('withdrawn already (inactive)');
  });
});
