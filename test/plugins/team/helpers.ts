import { expect } from 'chai';
import type { client, HttpResult } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

export type Api = ReturnType<typeof client>;

export interface Person {
  id: string;
  email: string;
  token: string;
  cookie: string;
  /** The workspace created at sign-up (the person owns it). */
  workspaceId: string;
}

let counter = 0;

/** A service with the team plugin and request limits high enough for a whole test file. */
export async function startTeamService(): Promise<TestService> {
  return startTestService({ config: { limits: { rateLimit: { perAddressPerMinute: 100_000, perWorkspacePerMinute: 100_000 } } } });
}

export function uniqueEmail(name: string): string {
  counter += 1;
  return `${name}.${Date.now().toString(36)}.${counter}@example.com`;
}

export async function signup(api: Api, name: string, email = uniqueEmail(name)): Promise<Person> {
  const res = await api.post<{ person: { id: string }; token: { access_token: string }; workspace: { id: string } }>('/api/auth/signup', {
    email,
    password: 'correct horse battery',
    display_name: name,
    date_of_birth: '1990-01-01',
  });
  expect(res.status, res.text).to.equal(201);
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { id: res.body.person.id, email: email.toLowerCase(), token: res.body.token.access_token, cookie: setCookie.split(';')[0] ?? '', workspaceId: res.body.workspace.id };
}

/** Headers of a person acting in `workspaceId` (default: their own workspace). */
export function as(p: Person, workspaceId?: string): Record<string, string> {
  return { authorization: `Bearer ${p.token}`, ...(workspaceId ? { 'x-workspace-id': workspaceId } : {}) };
}

export function withKey(key: string): Record<string, string> {
  return { 'x-api-key': key };
}

/** Creates an API key as `p` acting in `workspaceId`; returns the secret and id. */
export async function createKey(api: Api, p: Person, workspaceId: string, scopes?: string[]): Promise<{ key: string; id: string }> {
  const res = await api.post<{ api_key: { key: string; id: string } }>('/api/api-keys', { name: 'team key', ...(scopes ? { scopes } : {}) }, as(p, workspaceId));
  expect(res.status, res.text).to.equal(201);
  return { key: res.body.api_key.key, id: res.body.api_key.id };
}

export interface InviteResult {
  invitation: { id: string; email: string; role: string; status: string; via_key_id: string | null; invited_by: string; expires_at: string };
  accept: { token: string; url: string; method: string; body: { token: string } };
}

export async function invite(api: Api, headers: Record<string, string>, workspaceId: string, email: string, role = 'member'): Promise<HttpResult<InviteResult & Record<string, unknown>>> {
  return api.post<InviteResult & Record<string, unknown>>(`/api/workspaces/${workspaceId}/invitations`, { email, role }, headers);
}

export async function accept(api: Api, p: Person, token: string): Promise<HttpResult> {
  return api.post('/api/invitations/accept', { token }, as(p));
}

/** Makes `p` a member of `owner`'s workspace at `role` (invited by the owner, then accepted). */
export async function join(api: Api, owner: Person, p: Person, role: 'admin' | 'member' = 'member'): Promise<void> {
  const inv = await invite(api, as(owner), owner.workspaceId, p.email, role);
  expect(inv.status, inv.text).to.equal(201);
  const acc = await accept(api, p, inv.body.accept.token);
  expect(acc.status, acc.text).to.equal(200);
}

/** An owner with an admin and a member in their workspace. */
export async function team(api: Api): Promise<{ owner: Person; admin: Person; member: Person; ws: string }> {
  const owner = await signup(api, 'owner');
  const admin = await signup(api, 'admin');
  const member = await signup(api, 'member');
  await join(api, owner, admin, 'admin');
  await join(api, owner, member, 'member');
  return { owner, admin, member, ws: owner.workspaceId };
}

export interface AuditItem {
  action: string;
  outcome: 'done' | 'refused';
  actor: { type: string; id: string };
  via_key_id: string | null;
  target: string | null;
  reason: string | null;
  details: Record<string, unknown>;
  created_at: string;
}

export async function auditLog(api: Api, owner: Person, workspaceId = owner.workspaceId, query = 'limit=100'): Promise<AuditItem[]> {
  const res = await api.get<{ data: AuditItem[] }>(`/api/workspaces/${workspaceId}/audit-log?${query}`, as(owner, workspaceId));
  expect(res.status, res.text).to.equal(200);
  return res.body.data;
}

/** Asserts a 403 refusal by the team rules with its reason and a hint. */
/** Any response, whatever its success body type. */
export interface Answer {
  status: number;
  text: string;
  body: unknown;
}

function bodyOf(res: Answer): Record<string, unknown> {
  return (res.body ?? {}) as Record<string, unknown>;
}

export function expectForbidden(answer: Answer, reason: string | RegExp): void {
  const res = { ...answer, body: bodyOf(answer) };
  expect(res.status, res.text).to.equal(403);
  expect(res.body.code).to.equal('forbidden');
  expect(res.body.error).to.be.a('string').and.not.empty;
  expect(res.body.hint).to.be.a('string').and.not.empty;
  if (typeof reason === 'string') expect(res.body.reason).to.equal(reason);
  else expect(res.body.reason).to.match(reason);
}

export function expectInsufficientScope(answer: Answer, hint: RegExp): void {
  const res = { ...answer, body: bodyOf(answer) };
  expect(res.status, res.text).to.equal(403);
  expect(res.body.code).to.equal('insufficient_scope');
  expect(res.body.required_scopes).to.deep.equal(['team:admin']);
  expect(res.body.error).to.match(/team:admin/);
  expect(res.body.hint).to.match(hint);
}

export function expectRestricted(answer: Answer, reason: string): void {
  const res = { ...answer, body: bodyOf(answer) };
  expect(res.status, res.text).to.equal(403);
  expect(res.body.code).to.equal('account_restricted');
  expect(res.body.reason).to.equal(reason);
  expect(res.body.error).to.be.a('string').and.not.empty;
  expect(res.body.hint).to.match(/including leaving/);
}

export function expectNotFound(answer: Answer): void {
  const res = { ...answer, body: bodyOf(answer) };
  expect(res.status, res.text).to.equal(404);
  expect(res.body.code).to.equal('not_found');
  expect(res.body.error).to.equal('No workspace with this id.');
  expect(res.body.hint).to.be.a('string').and.not.empty;
}

/** The refused entry recorded for `action`, newest first. */
export function refusedEntry(items: AuditItem[], action: string, reason?: string | RegExp): AuditItem | undefined {
  return items.find((i) => i.action === action && i.outcome === 'refused' && (reason === undefined || (typeof reason === 'string' ? i.reason === reason : reason.test(i.reason ?? ''))));
}
