import type { TestService } from './service';
import { client } from './http';

export interface Person {
  id: string;
  email: string;
  workspaceId: string;
  testWorkspaceId: string;
  cookie: string;
  token: string;
  sessionId: string;
}

export interface Tenant {
  owner: Person;
  /** Person-created key with no scopes (full access except name-only permissions). */
  key: string;
  keyId: string;
  /** Key of the workspace holding only billing:read. */
  narrowKey: string;
  /** The owner's person token narrowed to billing:read (POST /api/user/tokens). */
  narrowPersonToken: string;
  revokedKey: string;
  expiredKey: string;
  agentId: string;
  agentKey: string;
  agentKeyId: string;
  /** OAuth access token minted from the agent key. */
  agentToken: string;
}

export interface Sandbox {
  workspaceId: string;
  agentId: string;
  key: string;
  keyId: string;
  claimToken: string;
  token: string;
}

export interface World {
  a: Tenant;
  b: Tenant;
  sandbox: Sandbox;
}

let counter = 0;

export async function signUp(svc: TestService, label: string): Promise<Person> {
  const api = client(svc.url);
  const email = `${label}-${Date.now()}-${counter++}@example.com`;
  const res = await api.post<Record<string, any>>('/api/auth/signup', { email, password: 'correct horse battery', date_of_birth: '1990-01-01', display_name: label });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  const setCookie = res.headers.get('set-cookie') ?? '';
  return {
    id: res.body.person.id,
    email,
    workspaceId: res.body.workspace.id,
    testWorkspaceId: res.body.workspace.test_workspace_id,
    cookie: setCookie.split(';')[0] ?? '',
    token: res.body.token.access_token,
    sessionId: res.body.session.id,
  };
}

export async function createKey(svc: TestService, person: Person, body: Record<string, unknown>): Promise<{ key: string; id: string }> {
  const res = await client(svc.url).post<Record<string, any>>('/api/api-keys', body, { cookie: person.cookie });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
  return { key: res.body.api_key.key, id: res.body.api_key.id };
}

/** A person signed up as `label` who joined `owner`'s workspace with `role` (invited and accepted), with the headers of their session there. */
export async function joinWorkspace(svc: TestService, owner: Person, label: string, role: 'admin' | 'member'): Promise<{ person: Person; session: Record<string, string> }> {
  const person = await signUp(svc, label);
  const inv = await client(svc.url, { cookie: owner.cookie }).post<Record<string, any>>(`/api/workspaces/${owner.workspaceId}/invitations`, { email: person.email, role });
  if (inv.status !== 201) throw new Error(`invitation failed: ${inv.status} ${inv.text}`);
  const accepted = await client(svc.url, { cookie: person.cookie }).post('/api/invitations/accept', { token: inv.body.accept.token });
  if (accepted.status !== 200) throw new Error(`accepting failed: ${accepted.status} ${accepted.text}`);
  return { person, session: { cookie: person.cookie, 'x-workspace-id': owner.workspaceId } };
}

export async function mintToken(svc: TestService, key: string): Promise<string> {
  const res = await client(svc.url).raw<Record<string, any>>('POST', '/api/oauth/token', {
    rawBody: 'grant_type=client_credentials',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key },
  });
  if (res.status !== 200) throw new Error(`token failed: ${res.status} ${res.text}`);
  return res.body.access_token;
}

async function tenant(svc: TestService, label: string): Promise<Tenant> {
  const owner = await signUp(svc, label);
  const api = client(svc.url, { cookie: owner.cookie });
  const full = await createKey(svc, owner, { name: `${label} full` });
  const narrow = await createKey(svc, owner, { name: `${label} narrow`, scopes: ['billing:read'] });
  const narrowToken = await api.post<Record<string, any>>('/api/user/tokens', { scopes: ['billing:read'] });
  if (narrowToken.status !== 201) throw new Error(`person token failed: ${narrowToken.status} ${narrowToken.text}`);
  const revoked = await createKey(svc, owner, { name: `${label} revoked` });
  await api.delete(`/api/api-keys/${revoked.id}`);
  const expired = await createKey(svc, owner, { name: `${label} expired` });
  await svc.sequelize.query(`UPDATE api_keys SET expires_at = now() - interval '1 day' WHERE id = $1`, { bind: [expired.id] });
  const agent = await api.post<Record<string, any>>('/api/agents', { name: `${label}-agent` });
  const agentKey = await api.post<Record<string, any>>(`/api/agents/${agent.body.agent.id}/keys`, { name: `${label} agent key` });
  const token = await mintToken(svc, agentKey.body.api_key.key);
  return {
    owner,
    key: full.key,
    keyId: full.id,
    narrowKey: narrow.key,
    narrowPersonToken: narrowToken.body.token.access_token,
    revokedKey: revoked.key,
    expiredKey: expired.key,
    agentId: agent.body.agent.id,
    agentKey: agentKey.body.api_key.key,
    agentKeyId: agentKey.body.api_key.id,
    agentToken: token,
  };
}

export async function registerSandbox(svc: TestService, name = 'sandbox-agent'): Promise<Sandbox> {
  const res = await client(svc.url).post<Record<string, any>>('/api/agents/register', { name });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  const key = res.body.api_key.key as string;
  return { workspaceId: res.body.workspace.id, agentId: res.body.agent.id, key, keyId: res.body.api_key.id, claimToken: res.body.claim.token, token: await mintToken(svc, key) };
}

/** Two ordinary workspaces (A and B) with people, keys of every kind, agents and tokens, plus a sandbox. */
export async function buildWorld(svc: TestService): Promise<World> {
  return { a: await tenant(svc, 'alice'), b: await tenant(svc, 'bob'), sandbox: await registerSandbox(svc) };
}
