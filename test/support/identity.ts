import { expect } from 'chai';
import { QueryTypes } from 'sequelize';
import type { ConfigInput } from '../../config';
import { randomToken } from '../../core/ids';
import { call } from './http';
import type { HttpResult } from './http';
import type { TestService } from './service';

/** SPEC's common error shape, with every optional recovery field the identity routes use. */
export interface ErrorBody {
  error: string;
  code: string;
  message: string;
  hint?: string;
  next?: Array<Record<string, unknown>>;
  example?: unknown;
  issues?: Array<{ path: string; reason: string }>;
  retry_after?: number;
  limit?: Record<string, unknown>;
  retryable?: boolean;
  required_scopes?: string[];
  reason?: string;
  valid_scopes?: string[];
  request_id?: string;
}

export interface KeyView {
  id: string;
  name: string;
  workspace_id: string;
  kind: string;
  prefix: string;
  last4: string;
  scopes: string[];
  legacy: boolean;
  agent_id: string | null;
  created_by: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  created_at: string;
  key?: string;
  shown_once?: boolean;
}

export interface WorkspaceView {
  id: string;
  name: string;
  plan: string;
  status: string;
  origin: string;
  sandbox: boolean;
  is_test: boolean;
  created_by_agent: boolean;
  former_sandbox: boolean;
  parent_id: string | null;
  test_workspace_id: string | null;
  claimed_at: string | null;
}

export interface RegistrationBody {
  workspace: WorkspaceView;
  agent: { id: string; name: string };
  api_key: KeyView & { key: string };
  claim: { url: string; token: string; expires_at: string; one_time: boolean };
  plan: { id: string; name: string; capabilities: string[] };
  limits: {
    compute_calls_per_day: number;
    key_lifetime_days: number;
    key_rotations_per_day: number;
    requests_per_minute: number;
    requests_per_minute_per_address: number;
    registrations: { per_address_per_day: number; overall_per_day: number; remaining_for_this_address_today: number };
  };
  changelog: string;
}

export interface MeBody {
  tenant_id: string;
  auth_method: string;
  scopes: string[];
  workspace: { id: string; plan: string; sandbox: boolean; is_test: boolean };
  key?: { id: string; kind: string; expires_at: string | null };
  agent?: { id: string; name: string | null };
  person?: { id: string; role: string | null };
  origin?: string;
  created_by_agent?: boolean;
  former_sandbox?: boolean;
  claimed_at?: string;
}

export interface ClaimBody {
  claimed: boolean;
  workspace: WorkspaceView;
  test_workspace: WorkspaceView;
  agent_key: 'kept' | 'revoked';
  hint: string;
  next: Array<{ action: string; method: string; path: string; headers: Record<string, string>; body?: Record<string, unknown>; description: string }>;
}

export interface TokenBody {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

/** A signed-up person with the credentials sign-up returned. */
export interface Person {
  id: string;
  email: string;
  password: string;
  /** `pcs_session=<value>`, ready for a Cookie header. */
  cookie: string;
  /** The person token (Authorization: Bearer). */
  token: string;
  sessionId: string;
  workspaceId: string;
  testWorkspaceId: string;
}

type Limits = NonNullable<ConfigInput['limits']>;

/**
 * Configuration for a shared test service: generous registration, rate and failed-credential
 * limits (every request comes from 127.0.0.1), plus whatever the test sets.
 */
export function identityConfig(limits: Limits = {}, identity: ConfigInput['identity'] = {}): ConfigInput {
  return {
    identity,
    limits: {
      ...limits,
      registrations: { perAddressPerDay: 100_000, overallPerDay: 100_000, ...limits.registrations },
      rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000, ...limits.rateLimit },
    },
  };
}

export function uniqueEmail(): string {
  return `p-${randomToken(10).toLowerCase()}@example.com`;
}

/** `pcs_session=<value>` from a response's Set-Cookie header. */
export function sessionCookieOf(res: HttpResult<unknown>): string {
  const header = res.headers.get('set-cookie') ?? '';
  const pair = header.split(';')[0] ?? '';
  expect(pair).to.match(/^pcs_session=./, 'a session cookie is set');
  return pair;
}

export function claimPath(reg: RegistrationBody): string {
  return new URL(reg.claim.url).pathname;
}

/** A well-formed API key that was never issued. */
export function unknownKey(tag: 'sbx' | 'agt' | 'usr' | 'oac' = 'usr'): string {
  return `pcs_${tag}_${randomToken(32)}`;
}

export async function register(url: string, name = 'pricing-agent/test', address?: string): Promise<RegistrationBody> {
  const res = await call<RegistrationBody>(url, 'POST', '/api/agents/register', { body: { name }, headers: address ? { 'x-forwarded-for': address } : {} });
  expect(res.status, res.text).to.equal(201);
  return res.body;
}

/** `address`: sent as X-Forwarded-For, so a test of per-address limits keeps its sign-ups off the addresses it counts. */
export async function signUp(url: string, opts: { email?: string; password?: string; dateOfBirth?: string; address?: string } = {}): Promise<Person> {
  const email = opts.email ?? uniqueEmail();
  const password = opts.password ?? 'correct horse battery';
  const res = await call<{ person: { id: string }; session: { id: string }; token: { access_token: string }; workspace: WorkspaceView }>(url, 'POST', '/api/auth/signup', {
    body: { email, password, date_of_birth: opts.dateOfBirth ?? '1990-12-10' },
    headers: opts.address ? { 'x-forwarded-for': opts.address } : {},
  });
  expect(res.status, res.text).to.equal(201);
  return {
    id: res.body.person.id,
    email,
    password,
    cookie: sessionCookieOf(res),
    token: res.body.token.access_token,
    sessionId: res.body.session.id,
    workspaceId: res.body.workspace.id,
    testWorkspaceId: res.body.workspace.test_workspace_id ?? '',
  };
}

/** Headers of a person acting by session cookie, optionally in another workspace of theirs. */
export function asPerson(p: Person, workspaceId?: string): Record<string, string> {
  return { cookie: p.cookie, ...(workspaceId ? { 'x-workspace-id': workspaceId } : {}) };
}

export async function createKey(url: string, headers: Record<string, string>, body: Record<string, unknown> = { name: 'test key' }): Promise<KeyView & { key: string }> {
  const res = await call<{ api_key: KeyView & { key: string } }>(url, 'POST', '/api/api-keys', { body, headers });
  expect(res.status, res.text).to.equal(201);
  return res.body.api_key;
}

let agentsMade = 0;

/** An agent in the caller's workspace; active agents' names are distinct there, so the default one is numbered. */
export async function createAgent(url: string, headers: Record<string, string>, name = `pricing-agent/returns-${++agentsMade}`): Promise<string> {
  const res = await call<{ agent: { id: string } }>(url, 'POST', '/api/agents', { body: { name }, headers });
  expect(res.status, res.text).to.equal(201);
  return res.body.agent.id;
}

export async function createAgentKey(url: string, headers: Record<string, string>, agentId: string, body: Record<string, unknown> = {}): Promise<KeyView & { key: string }> {
  const res = await call<{ api_key: KeyView & { key: string } }>(url, 'POST', `/api/agents/${agentId}/keys`, { body, headers });
  expect(res.status, res.text).to.equal(201);
  return res.body.api_key;
}

/** Exchanges an agent, sandbox or client key (sent in x-api-key) for an access token. */
export async function accessToken(url: string, key: string, scope?: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
  const res = await call<TokenBody>(url, 'POST', '/api/oauth/token', { rawBody: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key } });
  expect(res.status, res.text).to.equal(200);
  return res.body.access_token;
}

export async function rows<T extends object>(svc: TestService, sql: string, bind: unknown[] = []): Promise<T[]> {
  return svc.sequelize.query<T>(sql, { bind, type: QueryTypes.SELECT });
}

export async function exec(svc: TestService, sql: string, bind: unknown[] = []): Promise<void> {
  await svc.sequelize.query(sql, { bind });
}

/** Gives a person a role in a workspace directly in the database. */
export async function setRole(svc: TestService, workspaceId: string, personId: string, role: 'owner' | 'admin' | 'member'): Promise<void> {
  await exec(
    svc,
    `INSERT INTO memberships (workspace_id, person_id, role) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id, person_id) DO UPDATE SET role = EXCLUDED.role, updated_at = now()`,
    [workspaceId, personId, role],
  );
}

/** Asserts SPEC's 429 recovery fields: retry_after equal to the Retry-After header, and a limit. */
export function expectRetryAfter(res: HttpResult<ErrorBody>): void {
  expect(res.status, res.text).to.equal(429);
  const header = res.headers.get('retry-after');
  expect(header, 'Retry-After header').to.be.a('string');
  expect(res.body.retry_after).to.be.a('number').and.to.be.greaterThan(0);
  expect(res.body.retry_after).to.equal(Number(header));
  expect(res.body.limit, 'limit').to.be.an('object');
}
