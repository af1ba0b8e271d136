import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, joinWorkspace, mintToken, signUp } from '../../support/world';
import type { Person } from '../../support/world';

/**
 * Authoring workspace functions: who may register and change them (owners and admins, and keys
 * they made while they are), and which costs the service stores exactly (refused otherwise).
 */

let seq = 0;
const fnName = (label: string) => `auth-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
const draft = (label: string, extra: Record<string, unknown> = {}) => ({ name: fnName(label), execution_type: 'pipeline', cost_per_unit: '0.001', ...extra });

describe('pricing: authoring workspace functions', function () {
  this.timeout(60_000);
  let svc: TestService;
  let owner: Person;
  let ownerKey: string;

  before(async () => {
    svc = await startTestService();
    owner = await signUp(svc, 'fn-author');
    ownerKey = (await createKey(svc, owner, { name: 'owner key' })).key;
  });
  after(() => svc?.close());

  const api = (headers: Record<string, string> = { 'x-api-key': ownerKey }) => client(svc.url, headers);

  /** A person who joined the owner's workspace with `role`, as headers of their session there. */
  const join = (label: string, role: 'admin' | 'member') => joinWorkspace(svc, owner, label, role);
  const keyOf = async (session: Record<string, string>, name: string): Promise<string> => {
    const res = await api(session).post<Record<string, any>>('/api/api-keys', { name });
    expect(res.status, res.text).to.equal(201);
    return res.body.api_key.key as string;
  };
  const expectRoleTooLow = (res: { status: number; body: Record<string, any>; text: string }) => {
    expect(res.status, res.text).to.equal(403);
    expect(res.body).to.include({ code: 'forbidden', reason: 'role too low', hint: 'Ask an owner or admin of this workspace.' });
    expect(res.body.error).to.match(/^Only owners and admins register or change this workspace's functions/);
  };

  describe('who may register and change functions', () => {
    it('lets owners and admins, and the keys they created, register and change functions', async () => {
      const { session: asAdmin } = await join('fn-admin', 'admin');
      const adminKey = await keyOf(asAdmin, 'admin key');
      for (const headers of [{ cookie: owner.cookie }, { 'x-api-key': ownerKey }, asAdmin, { 'x-api-key': adminKey }]) {
        const created = await api(headers).post<Record<string, any>>('/api/functions', draft('allowed'));
        expect(created.status, created.text).to.equal(201);
        const patched = await api(headers).patch<Record<string, any>>(`/api/functions/${created.body.function.id}`, { description: 'changed', status: 'active' });
        expect(patched.status, patched.text).to.equal(200);
        expect(patched.body.function).to.include({ description: 'changed', status: 'active' });
      }
    });

    it("refuses a member's session and a member's key with 403 forbidden naming the rule, and changes nothing; the member still reads the function", async () => {
      const fn = await api().post<Record<string, any>>('/api/functions', draft('members'));
      expect(fn.status, fn.text).to.equal(201);
      const id = fn.body.function.id as string;
      const { session: asMember } = await join('fn-member', 'member');
      const memberKey = await keyOf(asMember, 'member key');
      for (const headers of [asMember, { 'x-api-key': memberKey }]) {
        for (const body of [{ status: 'active' }, { is_public: true }, { cost_per_unit: '0' }, { description: 'hijacked' }]) {
          expectRoleTooLow(await api(headers).patch<Record<string, any>>(`/api/functions/${id}`, body));
        }
        expectRoleTooLow(await api(headers).post<Record<string, any>>('/api/functions', draft('by-member')));
        const read = await api(headers).get<Record<string, any>>(`/api/functions/${id}`);
        expect(read.status, read.text).to.equal(200);
        expect(read.body.function).to.include({ status: 'draft', is_public: false, cost_per_unit: '0.001', description: '' });
      }
      const byKey = await api({ 'x-api-key': memberKey }).patch<Record<string, any>>(`/api/functions/${id}`, { status: 'active' });
      expect(byKey.body.error).to.equal("Only owners and admins register or change this workspace's functions, and a key only while its creator is one; this key's creator is not.");
    });

    it("refuses an admin's key once its creator is demoted to member", async () => {
      const { person: admin, session: asAdmin } = await join('fn-demoted', 'admin');
      const adminKey = await keyOf(asAdmin, 'admin key');
      const fn = await api({ 'x-api-key': adminKey }).post<Record<string, any>>('/api/functions', draft('demoted'));
      expect(fn.status, fn.text).to.equal(201);
      expect((await api({ cookie: owner.cookie }).patch(`/api/workspaces/${owner.workspaceId}/members/${admin.id}`, { role: 'member' })).status).to.equal(200);
      expectRoleTooLow(await api({ 'x-api-key': adminKey }).patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { status: 'active' }));
    });

    it("refuses the workspace's agent keys and their access tokens with 403 forbidden (an agent acts for itself, not for the workspace's functions)", async () => {
      const fn = await api().post<Record<string, any>>('/api/functions', draft('agents'));
      const agent = await api({ cookie: owner.cookie }).post<Record<string, any>>('/api/agents', { name: 'fn-agent' });
      const agentKey = await api({ cookie: owner.cookie }).post<Record<string, any>>(`/api/agents/${agent.body.agent.id}/keys`, { name: 'agent key' });
      const key = agentKey.body.api_key.key as string;
      const token = await mintToken(svc, key);
      for (const [headers, error] of [
        [{ 'x-api-key': key }, "Agent keys cannot register or change this workspace's functions; use a workspace key or a person's session."],
        [{ authorization: `Bearer ${token}` }, "Agent keys and their access tokens cannot register or change this workspace's functions; use a workspace key or a person's session."],
      ] as const) {
        // Refused before the body is read: an empty body gets the same 403, not a 400 coaching a caller who can never register.
        for (const res of [await api(headers).post<Record<string, any>>('/api/functions', draft('by-agent')), await api(headers).post<Record<string, any>>('/api/functions', {}), await api(headers).patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { status: 'active' })]) {
          expect(res.status, res.text).to.equal(403);
          expect(res.body).to.include({ code: 'forbidden', reason: 'agent-bound key', error });
        }
      }
    });

    it('lets the key an agent kept at its claim register and change functions (SPEC: full access of an API key), but not that key\'s access token nor the key before the claim', async () => {
      const reg = await client(svc.url).post<Record<string, any>>('/api/agents/register', { name: 'fn-kept' });
      expect(reg.status, reg.text).to.equal(201);
      const kept = { 'x-api-key': reg.body.api_key.key as string };
      const before = await api(kept).post<Record<string, any>>('/api/functions', draft('before-claim'));
      expect(before.status, before.text).to.equal(403);
      // Before its claim the sandbox's plan refuses it, ahead of any role rule.
      expect(before.body.code).to.equal('plan_restricted');
      const claim = await api({ cookie: owner.cookie }).post<Record<string, any>>(`/api/agents/claim/${reg.body.claim.token}`, { keep_key: true });
      expect(claim.status, claim.text).to.equal(200);
      expect(claim.body.agent_key).to.equal('kept');
      const created = await api(kept).post<Record<string, any>>('/api/functions', draft('kept'));
      expect(created.status, created.text).to.equal(201);
      expect(created.body.function.status).to.equal('draft');
      const patched = await api(kept).patch<Record<string, any>>(`/api/functions/${created.body.function.id}`, { status: 'active' });
      expect(patched.status, patched.text).to.equal(200);
      expect(patched.body.function.status).to.equal('active');
      const token = await mintToken(svc, reg.body.api_key.key as string);
      const byToken = await api({ authorization: `Bearer ${token}` }).patch<Record<string, any>>(`/api/functions/${created.body.function.id}`, { description: 'by token' });
      expect(byToken.status, byToken.text).to.equal(403);
      expect(byToken.body.reason).to.equal('agent-bound key');
    });

    it('lets an OAuth client secret kept at its claim register functions too (it is the key registration issued)', async () => {
      const reg = await client(svc.url).post<Record<string, any>>('/api/oauth/register', { client_name: 'fn-kept-client' });
      expect(reg.status, reg.text).to.equal(201);
      const kept = { 'x-api-key': reg.body.client_secret as string };
      const claim = await api({ cookie: owner.cookie }).post<Record<string, any>>(`/api/agents/claim/${reg.body.claim.token}`, { keep_key: true });
      expect(claim.status, claim.text).to.equal(200);
      const created = await api(kept).post<Record<string, any>>('/api/functions', draft('kept-client'));
      expect(created.status, created.text).to.equal(201);
    });

    it("answers another workspace's function with the same 404 as a function that does not exist, whatever the caller's role", async () => {
      const fn = await api().post<Record<string, any>>('/api/functions', draft('foreign'));
      const other = await signUp(svc, 'fn-other');
      const { session: asMember } = await join('fn-other-member', 'member');
      const otherHeaders: Array<Record<string, string>> = [{ cookie: other.cookie }, { 'x-api-key': (await createKey(svc, other, { name: 'other' })).key }];
      for (const headers of otherHeaders) {
        const foreign = await api(headers).patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { status: 'active' });
        const missing = await api(headers).patch<Record<string, any>>('/api/functions/fn_does_not_exist', { status: 'active' });
        expect(foreign.status).to.equal(404);
        expect({ ...foreign.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
      }
      // A member of the owning workspace is told why instead (the function is theirs to see).
      expectRoleTooLow(await api(asMember).patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { status: 'active' }));
      // By name as by id, as GET and test take it: the owner changes it, others get the missing function's 404.
      const byName = await api().patch<Record<string, any>>(`/api/functions/${fn.body.function.name}`, { description: 'by name' });
      expect(byName.status, byName.text).to.equal(200);
      expect(byName.body.function).to.include({ id: fn.body.function.id, description: 'by name' });
      for (const headers of otherHeaders) {
        const foreign = await api(headers).patch<Record<string, any>>(`/api/functions/${fn.body.function.name}`, { description: 'not mine' });
        const missing = await api(headers).patch<Record<string, any>>('/api/functions/no-such-function-name', { description: 'not mine' });
        expect(foreign.status).to.equal(404);
        expect({ ...foreign.body, request_id: null }).to.deep.equal({ ...missing.body, request_id: null });
      }
    });
  });

  describe('tags', () => {
    it('keeps one of tags that differ only in case (filters match them case-insensitively), the first spelling, on create and PATCH', async () => {
      const made = await api().post<Record<string, any>>('/api/functions', draft('tags', { tags: ['Retail', 'retail', 'B2B', 'RETAIL', 'b2b'] }));
      expect(made.status, made.text).to.equal(201);
      expect(made.body.function.tags).to.deep.equal(['Retail', 'B2B']);
      const patched = await api().patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { tags: ['eu', 'EU', 'Eu'] });
      expect(patched.status, patched.text).to.equal(200);
      expect(patched.body.function.tags).to.deep.equal(['eu']);
    });

    it('refuses a tag with an invisible or control character (a zero-width space reads as nothing, or as another tag), on create and PATCH', async () => {
      for (const tag of ['\u200b', 're\u200btail', 'eu\u0007']) {
        const res = await api().post<Record<string, any>>('/api/functions', draft('invisible', { tags: ['ok', tag] }));
        expect(res.status, res.text).to.equal(400);
        expect(res.body.issues).to.deep.equal([{ path: 'tags.1', reason: 'must not contain invisible or control characters (such as a zero-width space)' }]);
      }
      const made = await api().post<Record<string, any>>('/api/functions', draft('visible', { tags: ['café', 'B2B', 'eu-west'] }));
      expect(made.status, made.text).to.equal(201);
      const patched = await api().patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { tags: ['\u200b'] });
      expect(patched.status, patched.text).to.equal(400);
    });

    it('refuses a tag holding a comma, which the catalogue filter (?tag=a,b) would read as two tags and never find, on create and PATCH', async () => {
      const reason = 'must not contain a comma: the catalogue filter (?tag=a,b) reads a comma as between two tags; send two tags';
      const res = await api().post<Record<string, any>>('/api/functions', draft('comma', { tags: ['ok', 'eu,retail'] }));
      expect(res.status, res.text).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: 'tags.1', reason }]);
      const made = await api().post<Record<string, any>>('/api/functions', draft('no-comma', { tags: ['eu', 'retail'] }));
      expect(made.status, made.text).to.equal(201);
      const patched = await api().patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { tags: ['red,blue', 'x'] });
      expect(patched.status, patched.text).to.equal(400);
      expect(patched.body.issues).to.deep.equal([{ path: 'tags.0', reason }]);
    });
  });

  it('answers an id of any length that names no function with the same 404 as any unknown id, on read, PATCH and test runs', async () => {
    const unknown = await api().get<Record<string, any>>('/api/functions/fn_no_such_function');
    expect(unknown.status, unknown.text).to.equal(404);
    for (const id of ['a', 'ab']) {
      for (const res of [
        await api().get<Record<string, any>>(`/api/functions/${id}`),
        await api().patch<Record<string, any>>(`/api/functions/${id}`, { description: 'x' }),
        await api().post<Record<string, any>>(`/api/functions/${id}/test`, { context: { current_price: 3 } }),
      ]) {
        expect(res.status, `${id}: ${res.text}`).to.equal(404);
        expect(res.body.code).to.equal(unknown.body.code);
      }
    }
  });

  describe('what an endpoint function may be given', () => {
    const external = (label: string, extra: Record<string, unknown> = {}) => ({ name: fnName(label), execution_type: 'external_api', endpoint_url: 'https://pricing.acme.example/price', cost_per_unit: '0.001', ...extra });
    const refused = (res: { status: number; body: Record<string, any>; text: string }, issues: Array<{ path: string; reason: RegExp }>) => {
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues.map((i: { path: string }) => i.path)).to.deep.equal(issues.map((i) => i.path));
      issues.forEach((want, n) => expect(res.body.issues[n].reason).to.match(want.reason));
    };

    it('refuses a timeout_ms longer than COMPUTE_CALL_MAX_MS (a priced call could never give it) on create and PATCH, and its example passes', async () => {
      const tooLong = await api().post<Record<string, any>>('/api/functions', external('too-long', { timeout_ms: 26_000 }));
      refused(tooLong, [{ path: 'timeout_ms', reason: /^must be at most 25000 \(COMPUTE_CALL_MAX_MS/ }]);
      expect(tooLong.body.error).to.equal('timeout_ms 26000 is longer than a priced call may take (25000 ms).');
      const sentBack = await api().post<Record<string, any>>('/api/functions', tooLong.body.example);
      expect(sentBack.status, sentBack.text).to.equal(201);
      expect(sentBack.body.function.timeout_ms).to.equal(2000);
      const longest = await api().post<Record<string, any>>('/api/functions', external('longest', { timeout_ms: 25_000 }));
      expect(longest.status, longest.text).to.equal(201);
      const id = longest.body.function.id as string;
      refused(await api().patch<Record<string, any>>(`/api/functions/${id}`, { timeout_ms: 25_001 }), [{ path: 'timeout_ms', reason: /^must be at most 25000/ }]);
      expect((await api().get<Record<string, any>>(`/api/functions/${id}`)).body.function.timeout_ms).to.equal(25_000);
    });

    it('refuses endpoint_url and timeout_ms on a pipeline function (stored, they would never be used) on create and PATCH, and changes nothing', async () => {
      refused(await api().post<Record<string, any>>('/api/functions', draft('pipe-url', { endpoint_url: 'https://pricing.acme.example/price', timeout_ms: 500 })), [
        { path: 'endpoint_url', reason: /^only for external_api functions \(this one is pipeline\)$/ },
        { path: 'timeout_ms', reason: /^only for external_api functions/ },
      ]);
      const pipe = await api().post<Record<string, any>>('/api/functions', draft('pipe-patched'));
      expect(pipe.status, pipe.text).to.equal(201);
      const res = await api().patch<Record<string, any>>(`/api/functions/${pipe.body.function.id}`, { endpoint_url: 'https://pricing.acme.example/price', description: 'kept' });
      refused(res, [{ path: 'endpoint_url', reason: /^only for external_api functions/ }]);
      expect(res.body.example).to.deep.equal({ description: 'kept' });
      const after = (await api().get<Record<string, any>>(`/api/functions/${pipe.body.function.id}`)).body.function;
      expect(after).not.to.have.property('endpoint_url');
      expect(after.description).to.equal('');
    });

    it('refuses an endpoint_url with a #fragment, which is never sent to the endpoint', async () => {
      refused(await api().post<Record<string, any>>('/api/functions', external('fragment', { endpoint_url: 'https://pricing.acme.example/price#eu' })), [{ path: 'endpoint_url', reason: /^must not carry a #fragment/ }]);
      const made = await api().post<Record<string, any>>('/api/functions', external('no-fragment'));
      refused(await api().patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { endpoint_url: 'https://pricing.acme.example/#x' }), [{ path: 'endpoint_url', reason: /^must not carry a #fragment/ }]);
    });

    it('checks a stored endpoint against the outbound rules in force when it is activated (an http address registered before OUTBOUND_HTTPS_ONLY)', async () => {
      const made = await api().post<Record<string, any>>('/api/functions', external('plain-http', { endpoint_url: 'http://pricing.acme.example/price' }));
      expect(made.status, made.text).to.equal(201);
      const strict = await startTestService({ databaseUrl: svc.databaseUrl, config: { outbound: { httpsOnly: true } } });
      try {
        const res = await client(strict.url, { 'x-api-key': ownerKey }).patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { status: 'active' });
        refused(res, [{ path: 'endpoint_url', reason: /^the stored address is refused: .*https/i }]);
        expect(res.body.error).to.match(/^The function's stored endpoint_url is refused under the current outbound rules: /);
        // Status alone would be refused again: the example and the hint are the activation with a new address, in one PATCH.
        expect(res.body.example).to.deep.equal({ status: 'active', endpoint_url: 'https://pricing.acme.example/price' });
        expect(res.body.hint).to.match(/^Send endpoint_url with status in one PATCH: \{"status": "active", "endpoint_url": "https:\/\/…"\}, your own public address in its place/);
        // The owner's own https address with the activation passes.
        const fixed = await client(strict.url, { 'x-api-key': ownerKey }).patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { status: 'active', endpoint_url: 'https://pricing.acme.example/price' });
        expect(fixed.status, fixed.text).to.equal(200);
        expect(fixed.body.function.status).to.equal('active');
      } finally {
        await strict.close();
      }
    });
  });

  describe('examples of a refused function body', () => {
    it('replaces every field the checks after the schema refuse at once, on a create refused by its schema, its address or its time limit: sent as given, the example registers the caller\'s function', async () => {
      const name = fnName('mended');
      const sent = { name, execution_type: 'external_api', description: 'mine', endpoint_url: 'http://10.0.0.1/price', timeout_ms: 30_000, cost_per_unit: '0.001' };
      // Schema refusal (the cost), then the address refusal, then the time limit alone: each example passes all three checks.
      for (const body of [{ ...sent, cost_per_unit: 'abc' }, sent, { ...sent, endpoint_url: 'https://pricing.acme.example/mine' }]) {
        const res = await api().post<Record<string, any>>('/api/functions', body);
        expect(res.status, res.text).to.equal(400);
        expect(res.body.example, JSON.stringify(body)).to.include({ name, description: 'mine', execution_type: 'external_api' });
        expect(res.body.example.timeout_ms, 'no time limit the next check refuses').to.be.at.most(25_000);
        expect(res.body.example.endpoint_url, 'no address the guard refuses').to.not.include('10.0.0.1');
        if (body.endpoint_url.startsWith('https://')) expect(res.body.example.endpoint_url).to.equal('https://pricing.acme.example/mine');
      }
      const last = await api().post<Record<string, any>>('/api/functions', { ...sent, cost_per_unit: 'abc' });
      const resent = await api().post<Record<string, any>>('/api/functions', last.body.example);
      expect(resent.status, resent.text).to.equal(201);
      expect(resent.body.function).to.include({ name, description: 'mine' });
    });

    it("refuses a description with a bidirectional override, a zero-width space or a control character (the marketplace shows it to others), and keeps line breaks and tabs", async () => {
      for (const description of ['Best \u202Etxt.exe\u202C pricer', 'zero\u200Bwidth', 'bell\u0007']) {
        const res = await api().post<Record<string, any>>('/api/functions', draft('desc-hidden', { description }));
        expect(res.status, JSON.stringify(description)).to.equal(400);
        expect(res.body.issues).to.deep.equal([{ path: 'description', reason: 'must not contain control (but line breaks and tabs), bidirectional-override or zero-width characters: they hide or disguise text shown to others' }]);
      }
      const made = await api().post<Record<string, any>>('/api/functions', draft('desc-lines', { description: 'First line\n\tSecond line, in עברית too' }));
      expect(made.status, made.text).to.equal(201);
      const patched = await api().patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { description: 'now \u2066isolated\u2069' });
      expect(patched.status, patched.text).to.equal(400);
      expect(patched.body.issues.map((i: { path: string }) => i.path)).to.deep.equal(['description']);
    });

    it('takes timeout_ms null on a PATCH as going back to the service default; a PATCH without it keeps the stored one', async () => {
      const made = await api().post<Record<string, any>>('/api/functions', { name: fnName('timeout-reset'), execution_type: 'external_api', endpoint_url: 'https://pricing.acme.example/price', cost_per_unit: '0.001', timeout_ms: 700 });
      expect(made.status, made.text).to.equal(201);
      const id = made.body.function.id as string;
      expect(made.body.function.timeout_ms).to.equal(700);
      const kept = await api().patch<Record<string, any>>(`/api/functions/${id}`, { description: 'kept' });
      expect(kept.body.function.timeout_ms).to.equal(700);
      const reset = await api().patch<Record<string, any>>(`/api/functions/${id}`, { timeout_ms: null });
      expect(reset.status, reset.text).to.equal(200);
      expect(reset.body.function.timeout_ms).to.equal(null);
      expect((await api().get<Record<string, any>>(`/api/functions/${id}`)).body.function.timeout_ms).to.equal(null);
      const pipeline = await api().post<Record<string, any>>('/api/functions', draft('timeout-pipeline'));
      const refusedNull = await api().patch<Record<string, any>>(`/api/functions/${pipeline.body.function.id}`, { timeout_ms: null });
      expect(refusedNull.status, refusedNull.text).to.equal(400);
    });

    it('leaves out every field the checks refuse at once on a PATCH, so its example is not refused by the next check', async () => {
      const made = await api().post<Record<string, any>>('/api/functions', { name: fnName('patch-mended'), execution_type: 'external_api', endpoint_url: 'https://pricing.acme.example/price', cost_per_unit: '0.001' });
      expect(made.status, made.text).to.equal(201);
      const res = await api().patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, { endpoint_url: 'http://10.0.0.1/x', timeout_ms: 30_000, description: 'moved' });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.example).to.deep.equal({ description: 'moved' });
      const resent = await api().patch<Record<string, any>>(`/api/functions/${made.body.function.id}`, res.body.example);
      expect(resent.status, resent.text).to.equal(200);
    });
  });

  describe('names and tags that pass for the service\'s own', () => {
    const suffix = () => `${process.pid}-${Date.now().toString(36)}-${seq++}`;
    const expectReserved = (res: { status: number; body: Record<string, any>; text: string }, name: string) => {
      expect(res.status, `${name}: ${res.text}`).to.equal(409);
      expect(res.body.code).to.equal('conflict');
      expect(res.body.error, name).to.match(new RegExp(`^The function name "${name.replace(/[.]/g, '\\.')}" is reserved`));
      expect(res.body.hint).to.include('prefixed with your company or product');
      // No suggestion is offered: every variant of a reserved name is reserved too.
      expect(res.body).not.to.have.property('example');
    };

    it('refuses with 409 conflict a name that is, or begins with, a built-in\'s name once "-", "_" and "." are left out, and suggests no reserved name', async () => {
      for (const name of ['cost-plus', 'cost_plus', 'costplus', 'cost.plus', 'cost-plus-v2', `cost-plus-${suffix()}`, 'charm_pricing.eu', 'anchoredadjustment2']) {
        const res = await api().post<Record<string, any>>('/api/functions', { name, execution_type: 'pipeline', cost_per_unit: '0.001' });
        expectReserved(res, name);
        expect(res.body.error).to.match(/passes for the built-in function (cost-plus|charm-pricing|anchored-adjustment)/);
      }
      // A name of one's own that merely contains a built-in's name further on is fine.
      const own = await api().post<Record<string, any>>('/api/functions', { name: `acme.cost-plus-${suffix()}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
      expect(own.status, own.text).to.equal(201);
    });

    it('refuses with 409 conflict the names built-in, builtin and official (separators aside)', async () => {
      for (const name of ['built-in', 'builtin', 'built_in', 'built.in', 'official']) {
        expectReserved(await api().post<Record<string, any>>('/api/functions', { name, execution_type: 'pipeline', cost_per_unit: '0.001' }), name);
      }
    });

    it('refuses the tags built-in, builtin and official (any case or separator) with 400 naming the tag, on create and PATCH; the catalogue\'s built-in tag lists no workspace function', async () => {
      for (const tag of ['built-in', 'Built-In', 'builtin', 'built_in', 'official', 'OFFICIAL']) {
        const res = await api().post<Record<string, any>>('/api/functions', draft('tagged', { tags: ['retail', tag] }));
        expect(res.status, res.text).to.equal(400);
        expect(res.body.code).to.equal('validation_error');
        expect(res.body.issues).to.deep.equal([{ path: 'tags.1', reason: `the tag "${tag}" is reserved: only the service's own functions are built-in or official (the catalogue labels them built-in itself)` }]);
      }
      const made = await api().post<Record<string, any>>('/api/functions', draft('tagged', { tags: ['retail'], is_public: true }));
      expect(made.status, made.text).to.equal(201);
      const id = made.body.function.id as string;
      const patched = await api().patch<Record<string, any>>(`/api/functions/${id}`, { tags: ['official'], status: 'active' });
      expect(patched.status, patched.text).to.equal(400);
      expect(patched.body.issues).to.deep.equal([{ path: 'tags.0', reason: 'the tag "official" is reserved: only the service\'s own functions are built-in or official (the catalogue labels them built-in itself)' }]);
      expect((await api().get<Record<string, any>>(`/api/functions/${id}`)).body.function).to.include({ status: 'draft' });
      const listed = await api().get<Record<string, any>>('/api/catalog?tag=built-in&limit=100');
      expect(listed.status, listed.text).to.equal(200);
      expect((listed.body.data as Array<{ built_in: boolean }>).filter((e) => !e.built_in)).to.deep.equal([]);
    });
  });

  it('leaves a refused optional field out of a registration\'s example rather than inventing one, and a refused tag out alone', async () => {
    const name = fnName('optional');
    const sent = { name, execution_type: 'external_api', endpoint_url: 'https://pricing.acme.example/mine', cost_per_unit: '0.001', tags: ['mine', 'a,b'], description: 'bad\u202Etext', timeout_ms: 10, is_public: 'no' };
    const refused = await api().post<Record<string, any>>('/api/functions', sent);
    expect(refused.status, refused.text).to.equal(400);
    // No stock description, tag, time limit or listing flag the caller never chose: each refused one takes its default.
    expect(refused.body.example).to.deep.equal({ name, execution_type: 'external_api', endpoint_url: 'https://pricing.acme.example/mine', cost_per_unit: '0.001', tags: ['mine'] });
    const onlyBadTags = await api().post<Record<string, any>>('/api/functions', { ...sent, tags: ['a,b'], description: 'kept', timeout_ms: 3000, is_public: true });
    expect(onlyBadTags.status, onlyBadTags.text).to.equal(400);
    expect(onlyBadTags.body.example).to.deep.equal({ name, execution_type: 'external_api', endpoint_url: 'https://pricing.acme.example/mine', cost_per_unit: '0.001', description: 'kept', timeout_ms: 3000, is_public: true });
  });

  it('answers a refused registration with what was sent as its example: a refused field the body needs takes the placeholder, an unknown one is left out, the rest is kept', async () => {
    const name = fnName('kept');
    const refused = await api().post<Record<string, any>>('/api/functions', { name, execution_type: 'pipeline', cost_per_unit: '-1', description: 'mine', is_public: true, colour: 'red' });
    expect(refused.status, refused.text).to.equal(400);
    // The caller's name, description and listing stay; the refused cost takes the placeholder; colour is left out.
    expect(refused.body.example).to.deep.equal({ name, execution_type: 'pipeline', cost_per_unit: '0.002', description: 'mine', is_public: true });
    const resent = await api().post<Record<string, any>>('/api/functions', refused.body.example);
    expect(resent.status, resent.text).to.equal(201);
    expect(resent.body.function).to.include({ name, description: 'mine', is_public: true, status: 'draft' });
    // A refused name takes the placeholder one (names are unique: sent back as is, it is offered a free variant).
    const badName = await api().post<Record<string, any>>('/api/functions', { name: 'Upper.Case', execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(badName.status).to.equal(400);
    expect(badName.body.example).to.deep.equal({ name: 'your-company.dynamic-pricer', execution_type: 'pipeline', cost_per_unit: '0.001' });
  });

  it("answers a refused PATCH with what was sent less the refused values as its example: resent, it changes only what was asked, and never activates or lists a draft", async () => {
    const made = await api().post<Record<string, any>>('/api/functions', { ...draft('example-trap'), is_public: true });
    expect(made.status, made.text).to.equal(201);
    const id = made.body.function.id as string;
    for (const [sent, example] of [
      // A reserved tag is left out alone: the example keeps the caller's other tags and the description asked for.
      [{ description: 'Better text', tags: ['retail', 'Official'] }, { description: 'Better text', tags: ['retail'] }],
      [{ description: 'Better text', tags: ['Official'] }, { description: 'Better text' }],
      [{ descripton: 'typo' }, {}],
    ] as const) {
      const refused = await api().patch<Record<string, any>>(`/api/functions/${id}`, sent);
      expect(refused.status, refused.text).to.equal(400);
      expect(refused.body.example, JSON.stringify(sent)).to.deep.equal(example);
      const resent = await api().patch<Record<string, any>>(`/api/functions/${id}`, refused.body.example);
      expect(resent.status, resent.text).to.equal(200);
    }
    // A body that is not JSON leaves nothing of what was sent: {} changes nothing (no stock description written over).
    const notJson = await api().raw<Record<string, any>>('PATCH', `/api/functions/${id}`, { rawBody: 'notjson', headers: { 'content-type': 'application/json' } });
    expect(notJson.status, notJson.text).to.equal(400);
    expect(notJson.body.code).to.equal('invalid_json');
    expect(notJson.body.example).to.deep.equal({});
    const read = await api().get<Record<string, any>>(`/api/functions/${id}`);
    expect(read.body.function).to.include({ status: 'draft', description: 'Better text' });
    // The resent examples set the tags asked for without the refused one.
    expect(read.body.function.tags).to.deep.equal(['retail']);
    expect(read.body.function.is_public).to.equal(true);
  });

  it('answers DELETE of a function with 405 saying functions are withdrawn, never deleted, and the PATCH that withdraws one as example', async () => {
    const made = await api().post<Record<string, any>>('/api/functions', draft('never-deleted'));
    expect(made.status, made.text).to.equal(201);
    // Active: a draft is out of routing already, and its answer offers no withdrawal (function-deletion.test.ts).
    expect((await api().patch(`/api/functions/${made.body.function.id}`, { status: 'active' })).status).to.equal(200);
    const res = await api().raw<Record<string, any>>('DELETE', `/api/functions/${made.body.function.id}`);
    expect(res.status, res.text).to.equal(405);
    expect(res.headers.get('allow')).to.equal('GET, PATCH, HEAD');
    expect(res.body.code).to.equal('method_not_allowed');
    expect(res.body.hint).to.include('never deleted').and.include('a PATCH of this path');
    expect(res.body.example).to.deep.equal({ status: 'inactive' });
    // Another method the path lacks keeps the plain list.
    const put = await api().raw<Record<string, any>>('PUT', `/api/functions/${made.body.function.id}`);
    expect(put.status).to.equal(405);
    expect(put.body.hint).to.equal('Use GET or PATCH on this path.');
  });

  describe('names are fixed once registered', () => {
    it('answers a PATCH of name with 400 saying names are fixed once registered (register a new function for a new name), and changes nothing', async () => {
      const made = await api().post<Record<string, any>>('/api/functions', draft('fixed-name'));
      expect(made.status, made.text).to.equal(201);
      const id = made.body.function.id as string;
      const renamed = await api().patch<Record<string, any>>(`/api/functions/${id}`, { name: 'x' });
      expect(renamed.status, renamed.text).to.equal(400);
      expect(renamed.body.code).to.equal('validation_error');
      expect(renamed.body.issues).to.deep.equal([{ path: 'name', reason: '"name" cannot be changed: names are fixed once registered; register a new function (POST /api/functions) for a new name' }]);
      // What was sent without the refused field: nothing, which changes nothing (never an activation nobody asked for).
      expect(renamed.body.example).to.deep.equal({});
      const withOther = await api().patch<Record<string, any>>(`/api/functions/${id}`, { name: 'x', colour: 'red', description: 'kept out' });
      expect(withOther.status, withOther.text).to.equal(400);
      expect(withOther.body.example).to.deep.equal({ description: 'kept out' });
      expect(withOther.body.issues).to.deep.equal([
        { path: 'name', reason: '"name" cannot be changed: names are fixed once registered; register a new function (POST /api/functions) for a new name' },
        { path: 'colour', reason: 'unknown field "colour" not accepted' },
      ]);
      expect((await api().get<Record<string, any>>(`/api/functions/${id}`)).body.function).to.include({ name: made.body.function.name, description: '' });
    });
  });

  describe('which costs are stored', () => {
    const refusedOn = (res: { status: number; body: Record<string, any>; text: string }, path: string, reason: RegExp) => {
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues).to.have.length(1);
      expect(res.body.issues[0].path).to.equal(path);
      expect(res.body.issues[0].reason).to.match(reason);
      expect(res.body.error).to.contain(path);
    };

    it('refuses a cost_per_unit or cost_multiplier beyond what its column holds with 400 naming the field and its bound, on create and PATCH (it was a 500)', async () => {
      refusedOn(await api().post<Record<string, any>>('/api/functions', draft('mult', { cost_per_unit: '0.00000001', cost_multiplier: '10000000' })), 'cost_multiplier', /^must be at most 999999\.999999/);
      refusedOn(await api().post<Record<string, any>>('/api/functions', draft('cost', { cost_per_unit: '1000000000000', cost_multiplier: '0' })), 'cost_per_unit', /^must be at most 999999999999\.99999999/);
      const fn = await api().post<Record<string, any>>('/api/functions', draft('patched-bounds'));
      expect(fn.status, fn.text).to.equal(201);
      const id = fn.body.function.id as string;
      refusedOn(await api().patch<Record<string, any>>(`/api/functions/${id}`, { cost_per_unit: '0.00000001', cost_multiplier: '10000000' }), 'cost_multiplier', /^must be at most 999999\.999999/);
      refusedOn(await api().patch<Record<string, any>>(`/api/functions/${id}`, { cost_per_unit: '1000000000000', cost_multiplier: '0' }), 'cost_per_unit', /^must be at most 999999999999\.99999999/);
      expect((await api().get<Record<string, any>>(`/api/functions/${id}`)).body.function).to.include({ cost_per_unit: '0.001', cost_multiplier: '1' });
      // The largest values the columns hold are accepted (their product stays within FUNCTION_MAX_CALL_COST here).
      const largest = await api().post<Record<string, any>>('/api/functions', draft('largest', { cost_per_unit: '0', cost_multiplier: '999999.999999' }));
      expect(largest.status, largest.text).to.equal(201);
      expect(largest.body.function).to.include({ cost_per_unit: '0.00', cost_multiplier: '999999.999999' });
    });

    it('refuses more decimals than are stored (8 for cost_per_unit, 6 for cost_multiplier) with 400 naming the field, instead of rounding them away', async () => {
      refusedOn(await api().post<Record<string, any>>('/api/functions', draft('tiny', { cost_per_unit: '0.000000004' })), 'cost_per_unit', /^must have at most 8 decimal places/);
      refusedOn(await api().post<Record<string, any>>('/api/functions', draft('fine', { cost_multiplier: '1.23456789' })), 'cost_multiplier', /^must have at most 6 decimal places/);
      const fn = await api().post<Record<string, any>>('/api/functions', draft('patched-decimals'));
      const id = fn.body.function.id as string;
      refusedOn(await api().patch<Record<string, any>>(`/api/functions/${id}`, { cost_per_unit: '0.000000004' }), 'cost_per_unit', /^must have at most 8 decimal places/);
      refusedOn(await api().patch<Record<string, any>>(`/api/functions/${id}`, { cost_multiplier: '1.23456789' }), 'cost_multiplier', /^must have at most 6 decimal places/);
      expect((await api().get<Record<string, any>>(`/api/functions/${id}`)).body.function).to.include({ cost_per_unit: '0.001', cost_multiplier: '1' });
    });

    it('says what is wrong with a cost that is no plain decimal string: a sign, an exponent, a leading zero, no digits, trailing zeros past 18 decimals', async () => {
      const cases: Array<[string, RegExp]> = [
        ['-0.001', /^must not be negative$/],
        ['+0.001', /^must be written without a sign: "0\.001"$/],
        ['1e-3', /^must be written out, without an exponent \("1e-3" is "0\.001"\)$/],
        ['007', /^must not start with a leading zero: "7"$/],
        ['abc', /^must be a decimal string of digits with an optional point, such as "0\.002"$/],
        ['1.', /^must be a decimal string of digits/],
        ['', /not empty$/],
        [`0.001${'0'.repeat(20)}`, /^must have at most 8 decimal places; drop the trailing zeros$/],
      ];
      for (const [value, reason] of cases) refusedOn(await api().post<Record<string, any>>('/api/functions', draft('odd-cost', { cost_per_unit: value })), 'cost_per_unit', reason);
      refusedOn(await api().post<Record<string, any>>('/api/functions', draft('odd-mult', { cost_multiplier: '-2' })), 'cost_multiplier', /^must not be negative$/);
      // Trailing zeros within 18 decimals are still the same amount.
      const zeros = await api().post<Record<string, any>>('/api/functions', draft('zeros-ok', { cost_per_unit: '0.00100000000' }));
      expect(zeros.status, zeros.text).to.equal(201);
      expect(zeros.body.function.cost_per_unit).to.equal('0.001');
    });

    it('refuses a priced function whose cost per call rounds to nothing (cost_per_unit x cost_multiplier under 0.00000001), on create and PATCH', async () => {
      refusedOn(await api().post<Record<string, any>>('/api/functions', draft('rounds-free', { cost_per_unit: '0.00000001', cost_multiplier: '0.1' })), 'cost_multiplier', /^cost_per_unit x cost_multiplier must be 0 or at least 0\.00000001/);
      const fn = await api().post<Record<string, any>>('/api/functions', draft('patched-free', { cost_per_unit: '0.00000001' }));
      expect(fn.status, fn.text).to.equal(201);
      refusedOn(await api().patch<Record<string, any>>(`/api/functions/${fn.body.function.id}`, { cost_multiplier: '0.5' }), 'cost_multiplier', /rounds|must be 0 or at least/);
      // Free stays free: a multiplier on a cost of 0 is 0.
      expect((await api().post<Record<string, any>>('/api/functions', draft('still-free', { cost_per_unit: '0', cost_multiplier: '0.1' }))).status).to.equal(201);
    });

    it('stores the finest costs exactly and shows cost_per_unit with 2 to 8 decimals, cost_multiplier in its shortest form (trailing zeros are not decimals lost)', async () => {
      const fine = await api().post<Record<string, any>>('/api/functions', draft('finest', { cost_per_unit: '0.00000001', cost_multiplier: '1.234567' }));
      expect(fine.status, fine.text).to.equal(201);
      expect(fine.body.function).to.include({ cost_per_unit: '0.00000001', cost_multiplier: '1.234567' });
      const zeros = await api().post<Record<string, any>>('/api/functions', draft('zeros', { cost_per_unit: '1.5000000000', cost_multiplier: '2.00000000' }));
      expect(zeros.status, zeros.text).to.equal(201);
      expect(zeros.body.function).to.include({ cost_per_unit: '1.50', cost_multiplier: '2' });
      const free = await api().post<Record<string, any>>('/api/functions', draft('free', { cost_per_unit: '0' }));
      expect(free.body.function).to.include({ cost_per_unit: '0.00', cost_multiplier: '1', effective_cost_per_call: '0.00' });
    });
  });
});
