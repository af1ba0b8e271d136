import { expect } from 'chai';
import { HIDDEN_CHARACTERS_REASON } from '../../../core/shown-name';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { signUp } from '../../support/world';
import type { Person } from '../../support/world';

/** Names other people see (members list, keys, agents, routing policies) hold nothing that hides or disguises them. */
describe('accounts: names shown to others refuse hidden characters', function () {
  this.timeout(60_000);
  let svc: TestService;
  let owner: Person;
  before(async () => {
    svc = await startTestService();
    owner = await signUp(svc, 'shown-names');
  });
  after(() => svc.close());

  const HIDDEN = ['Mallory\u001b[2J', '\u202eevil', 'ctl\u0007x', '\u200b\u200b', 'ag\u0001x', 'a\u2066b\u2069'];

  it('refuses control, bidirectional-override and zero-width characters in a display name, a workspace name, a key, agent or policy name, with 400 naming the field', async () => {
    const api = client(svc.url, { cookie: owner.cookie });
    const agent = await api.post<Record<string, any>>('/api/agents', { name: 'plain-agent' });
    expect(agent.status, agent.text).to.equal(201);
    const policy = await api.post<Record<string, any>>('/api/routing-policies', { name: 'plain policy', strategy: 'cheapest' });
    expect(policy.status, policy.text).to.equal(201);
    const signup = (field: string, name: string) =>
      client(svc.url).post<Record<string, any>>('/api/auth/signup', { email: `hidden-${Date.now()}-${Math.random()}@example.com`, password: 'correct horse battery', date_of_birth: '1990-01-01', [field]: name });
    for (const name of HIDDEN) {
      for (const [res, path] of [
        [await signup('display_name', name), 'display_name'],
        [await signup('workspace_name', name), 'workspace_name'],
        [await api.post<Record<string, any>>('/api/api-keys', { name }), 'name'],
        [await api.post<Record<string, any>>('/api/agents', { name }), 'name'],
        [await api.patch<Record<string, any>>(`/api/agents/${agent.body.agent.id as string}`, { name }), 'name'],
        [await api.post<Record<string, any>>(`/api/agents/${agent.body.agent.id as string}/keys`, { name }), 'name'],
        [await api.post<Record<string, any>>('/api/routing-policies', { name, strategy: 'cheapest' }), 'name'],
        [await api.patch<Record<string, any>>(`/api/routing-policies/${policy.body.policy.id as string}`, { name }), 'name'],
      ] as const) {
        expect(res.status, `${JSON.stringify(name)} as ${path}: ${res.text}`).to.equal(400);
        expect(res.body.code).to.equal('validation_error');
        expect(res.body.issues, JSON.stringify(name)).to.deep.include({ path, reason: HIDDEN_CHARACTERS_REASON });
      }
    }
  });

  it('keeps names in any script, with emoji joined by zero-width joiners', async () => {
    const api = client(svc.url, { cookie: owner.cookie });
    for (const name of ['Zoë Ωmega', 'क्षत्रिय', '👩‍💻 pricing', 'مدير الأسعار']) {
      const key = await api.post<Record<string, any>>('/api/api-keys', { name });
      expect(key.status, key.text).to.equal(201);
      expect(key.body.api_key.name).to.equal(name);
    }
  });
});
