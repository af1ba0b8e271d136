import { expect } from 'chai';
import { client } from '../../support/http';
import { accessToken, asPerson, claimPath, createAgentKey, identityConfig, register, signUp } from '../../support/identity';
import type { ClaimBody, ErrorBody, Person, RegistrationBody } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import * as world from '../../support/world';

type Body = Record<string, any>;
type Refused = { operation: string; status: number; reason: string };

/**
 * Workspace configuration (functions, routing policies, tester tags) is for owners and admins and the keys they made,
 * and the key an agent kept at its workspace's claim: an agent key a person mints after the claim holds full access and
 * is refused all the same. The OpenAPI document, /api/me and the agent's capabilities say so, as the routes answer.
 */
describe('identity: workspace configuration and agent keys after a claim', function () {
  this.timeout(90_000);
  let svc: TestService;
  let owner: Person;
  let reg: RegistrationBody;
  let kept: string;
  let minted: string;
  let doc: Body;
  let functionId: string;
  let policyId: string;

  before(async () => {
    svc = await startTestService({ config: identityConfig() });
    const api = client(svc.url);
    owner = await signUp(svc.url);
    reg = await register(svc.url, 'pricing-agent/managers');
    const claim = await api.post<ClaimBody>(claimPath(reg), { keep_key: true }, asPerson(owner));
    expect([claim.status, claim.body.agent_key], claim.text).to.deep.equal([200, 'kept']);
    kept = reg.api_key.key;
    const ws = asPerson(owner, reg.workspace.id);
    const key = await createAgentKey(svc.url, ws, reg.agent.id, {});
    expect([key.kind, (key as unknown as Body).full_access]).to.deep.equal(['agent', true]);
    minted = key.key;
    // Records of the claimed workspace for the routes that find one before the rule (PATCH, DELETE, the signing secret).
    const fn = await api.post<Body>('/api/functions', { name: `managers-${Date.now().toString(36)}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.001' }, ws);
    expect(fn.status, fn.text).to.equal(201);
    functionId = fn.body.function.id as string;
    const policy = await api.post<Body>('/api/routing-policies', { name: 'managers', strategy: 'cheapest' }, ws);
    expect(policy.status, policy.text).to.equal(201);
    policyId = policy.body.policy.id as string;
    doc = (await api.get<Body>('/api/openapi.json?format=json')).body;
  });
  after(() => svc.close());

  /** The operations of workspace configuration as the document marks them: full access, taking an API key. */
  const configuration = (): Array<{ method: string; path: string; op: Body }> =>
    Object.entries(doc.paths as Record<string, Record<string, Body>>).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op['x-full-access'] === true && (op.security as Array<Record<string, string[]>>).some((r) => 'ApiKey' in r))
        .map(([method, op]) => ({ method, path, op })),
    );
  const sent = (path: string): string => path.replace('{id}', path.startsWith('/api/functions') ? functionId : policyId);

  it('refuses each workspace-configuration operation to an agent key minted after the claim (403, reason "agent-bound key"), lets the kept key through, and OpenAPI says so on each', async () => {
    const operations = configuration();
    expect(operations.map((o) => `${o.method.toUpperCase()} ${o.path}`)).to.include.members(['POST /api/functions', 'POST /api/routing-policies', 'PUT /api/settings/tester-tags', 'PATCH /api/functions/{id}']);
    for (const { method, path, op } of operations) {
      const at = `${method.toUpperCase()} ${path}`;
      const refused = await client(svc.url).raw<ErrorBody & { reason?: string }>(method.toUpperCase(), sent(path), { body: {}, headers: { 'x-api-key': minted } });
      expect([refused.status, refused.body.code, refused.body.reason], `${at}: ${refused.text}`).to.deep.equal([403, 'forbidden', 'agent-bound key']);
      const allowed = await client(svc.url).raw<ErrorBody>(method.toUpperCase(), sent(path), { body: {}, headers: { 'x-api-key': kept } });
      expect(allowed.status, `${at} with the kept key: ${allowed.text}`).to.not.be.oneOf([401, 403]);
      expect(op.description, at).to.contain('Only owners and admins change it').and.contain('the key an agent kept').and.contain('"agent-bound key"');
    }
  });

  it('lists those operations in not_allowed of /api/me and the capabilities for the minted key and its token, as refused; none for the kept key or the owner', async () => {
    const expected = configuration().map(({ method, path }) => `${method.toUpperCase()} ${path}`).sort();
    const asAgent = client(svc.url, { 'x-api-key': minted });
    for (const res of [await asAgent.get<Body>('/api/me'), await asAgent.get<Body>(`/api/agents/${reg.agent.id}/capabilities`)]) {
      expect(res.status, res.text).to.equal(200);
      const refused = res.body.not_allowed as Refused[];
      expect(refused.map((r) => r.operation).sort()).to.deep.equal(expected);
      for (const r of refused) expect([r.status, r.reason], r.operation).to.deep.equal([403, 'agent-bound key']);
    }
    // A token of the minted key: refused the same, and 401 where the route takes no token (tester tags).
    const token = await accessToken(svc.url, minted);
    const viaToken = await client(svc.url).get<Body>('/api/me', { authorization: `Bearer ${token}` });
    const tags = (viaToken.body.not_allowed as Refused[]).find((r) => r.operation === 'PUT /api/settings/tester-tags');
    expect(tags).to.deep.equal({ operation: 'PUT /api/settings/tester-tags', status: 401, reason: 'credential kind not accepted' });
    const answered = await client(svc.url).put('/api/settings/tester-tags', {}, { authorization: `Bearer ${token}` });
    expect(answered.status, answered.text).to.equal(401);
    for (const headers of [{ 'x-api-key': kept }, asPerson(owner, reg.workspace.id)]) {
      const me = await client(svc.url).get<Body>('/api/me', headers);
      expect(me.status, me.text).to.equal(200);
      expect(me.body).to.not.have.property('not_allowed');
      const capabilities = await client(svc.url).get<Body>(`/api/agents/${reg.agent.id}/capabilities`, headers);
      expect(capabilities.status, capabilities.text).to.equal(200);
      expect(capabilities.body).to.not.have.property('not_allowed');
    }
  });

  it('lists them for a member too, reason "role too low", as a member\'s change is refused', async () => {
    const boss = await world.signUp(svc, 'managers-owner');
    const { session } = await world.joinWorkspace(svc, boss, 'managers-member', 'member');
    const me = await client(svc.url).get<Body>('/api/me', session);
    expect(me.status, me.text).to.equal(200);
    const tags = (me.body.not_allowed as Refused[]).find((r) => r.operation === 'PUT /api/settings/tester-tags');
    expect(tags).to.deep.equal({ operation: 'PUT /api/settings/tester-tags', status: 403, reason: 'role too low' });
    const refused = await client(svc.url).put<ErrorBody & { reason?: string }>('/api/settings/tester-tags', { tags: [] }, session);
    expect([refused.status, refused.body.reason], refused.text).to.deep.equal([403, 'role too low']);
  });
});
