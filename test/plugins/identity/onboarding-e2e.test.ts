import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { signUp } from '../../support/world';

describe('agent onboarding end to end over HTTP', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  it('registration → compute-ready key → rotation → claim by a person → /api/me shows the origin fields', async () => {
    const api = client(svc.url);
    const reg = await api.post<Record<string, any>>('/api/agents/register', { name: 'e2e-agent/pricing' });
    expect(reg.status).to.equal(201);
    const firstKey = reg.body.api_key.key as string;
    const claimUrl = new URL(reg.body.claim.url as string);

    const me1 = await api.get<Record<string, any>>('/api/me', { 'x-api-key': firstKey });
    expect(me1.status).to.equal(200);
    expect(me1.body.scopes).to.include('price:compute');
    expect(me1.body.workspace.plan).to.equal('agent_starter');
    expect(me1.body).not.to.have.property('claimed_at');

    const rot = await api.post<Record<string, any>>('/api/api-keys/rotate', {}, { 'x-api-key': firstKey });
    expect(rot.status).to.equal(201);
    const key = rot.body.api_key.key as string;
    expect(rot.body.api_key.expires_at).to.equal(reg.body.api_key.expires_at);
    expect((await api.get('/api/me', { 'x-api-key': firstKey })).status).to.equal(401);

    const person = await signUp(svc, 'claimer');
    const look = await api.get<Record<string, any>>(claimUrl.pathname);
    expect(look.status).to.equal(200);
    expect(look.body.sandbox.id).to.equal(reg.body.workspace.id);
    const claim = await api.post<Record<string, any>>(claimUrl.pathname, { keep_key: true }, { cookie: person.cookie });
    expect(claim.status).to.equal(200);
    expect(claim.body.workspace.parent_id).to.equal(person.workspaceId);

    const me2 = await api.get<Record<string, any>>('/api/me', { 'x-api-key': key });
    expect(me2.status).to.equal(200);
    expect(me2.body.tenant_id).to.equal(reg.body.workspace.id);
    expect(me2.body.workspace.plan).to.equal('free');
    expect(me2.body.origin).to.equal('agent_self_registration');
    expect(me2.body.created_by_agent).to.equal(true);
    expect(me2.body.claimed_at).to.be.a('string');
    expect(me2.body.key.expires_at).to.equal(null);

    const again = await api.post(claimUrl.pathname, {}, { cookie: person.cookie });
    expect(again.status).to.equal(404);
  });
});
