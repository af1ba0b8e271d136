import { randomUUID } from 'node:crypto';
import { client } from '../support/http';
import type { SecurityCase } from '../support/security';
import { mcpSecurityCases } from './cases-mcp';
import { createKey, registerSandbox, signUp } from '../support/world';
import { verificationSecurityCases } from './cases-verification';
import { usageSecurityCases } from './cases-usage';
import type { Person } from '../support/world';
import type { TestService } from '../support/service';
import { catalogSecurityCases } from './cases-catalog';

/**
 * The security suite of every authenticated route, by route id. A route without an entry here
 * fails the coverage test in route-security.test.ts.
 */
// Plugins added later keep their cases in cases-<plugin>.ts and spread them in here.
export const securityCases: Record<string, SecurityCase> = {
  // <plugin security cases>
  ...mcpSecurityCases,
  ...verificationSecurityCases,
  ...catalogSecurityCases,
  ...usageSecurityCases,
  'agents.claim': {
    as: 'key',
    request: async (w, svc) => {
      const claimer = await createKey(svc, w.a.owner, { name: 'claimer', scopes: ['workspace:claim'] });
      const sandbox = await registerSandbox(svc, 'claimable');
      return { path: '/api/agents/claim', body: { token: sandbox.claimToken }, headers: { 'x-api-key': claimer.key } };
    },
  },
  'agents.claimLink.confirm': {
    as: 'person',
    request: async (_w, svc) => ({ path: `/api/agents/claim/${(await registerSandbox(svc, 'claim-link')).claimToken}`, body: {} }),
    cross: async (w, svc) => ({ path: `/api/agents/claim/${(await registerSandbox(svc, 'claim-cross')).claimToken}`, body: { workspace_id: w.b.owner.workspaceId } }),
  },
  'apiKeys.rotate': {
    as: 'sandboxKey',
    request: async (_w, svc) => ({ path: '/api/api-keys/rotate', body: {}, headers: { 'x-api-key': (await registerSandbox(svc, 'rotating')).key } }),
  },
  'agents.claim_link': {
    as: 'sandboxKey',
    request: async (_w, svc) => ({ path: '/api/agents/claim-link', body: {}, headers: { 'x-api-key': (await registerSandbox(svc, 'relinking')).key } }),
  },
  'me.read': { as: 'key', request: () => ({ path: '/api/me' }) },
  'agents.capabilities': {
    as: 'agentKey',
    request: (w) => ({ path: `/api/agents/${w.a.agentId}/capabilities` }),
    cross: (w) => ({ path: `/api/agents/${w.b.agentId}/capabilities`, headers: { cookie: w.a.owner.cookie } }),
  },
  'auth.signout': {
    as: 'person',
    request: async (_w, svc) => ({ path: '/api/auth/signout', body: {}, headers: { cookie: (await signUp(svc, 'leaver')).cookie } }),
  },
  'user.wallets.link': { as: 'person', request: () => ({ path: '/api/user/wallets', body: { message: 'x'.repeat(30), signature: '0x00' } }), okStatuses: [400] },
  'user.read': { as: 'person', request: () => ({ path: '/api/user' }) },
  'user.wallets.list': { as: 'person', request: () => ({ path: '/api/user/wallets' }) },
  'user.sessions.list': { as: 'person', request: () => ({ path: '/api/user/sessions' }) },
  'user.tokens.create': { as: 'person', request: () => ({ path: '/api/user/tokens', body: { scopes: ['price:compute'] } }) },
  'user.sessions.revokeAll': { as: 'person', request: (w) => ({ path: `/api/user/sessions?currentSessionId=${w.a.owner.sessionId}` }) },
  'user.sessions.revoke': {
    as: 'person',
    request: async (w, svc) => {
      const res = await client(svc.url).post<Record<string, any>>('/api/auth/signin', { email: w.a.owner.email, password: 'correct horse battery' });
      return { path: `/api/user/sessions/${res.body.session.id}` };
    },
    cross: (w) => ({ path: `/api/user/sessions/${w.b.owner.sessionId}` }),
  },
  'apiKeys.list': { as: 'person', request: () => ({ path: '/api/api-keys' }) },
  'apiKeys.create': { as: 'person', request: () => ({ path: '/api/api-keys', body: { name: 'security suite key' } }) },
  'apiKeys.delete': {
    as: 'person',
    request: async (w, svc) => ({ path: `/api/api-keys/${(await createKey(svc, w.a.owner, { name: 'to delete' })).id}` }),
    cross: (w) => ({ path: `/api/api-keys/${w.b.keyId}` }),
  },
  'agents.list': { as: 'person', request: () => ({ path: '/api/agents' }) },
  'agents.create': { as: 'person', request: () => ({ path: '/api/agents', body: { name: 'security-agent' } }) },
  'agents.read': { as: 'person', request: (w) => ({ path: `/api/agents/${w.a.agentId}` }), cross: (w) => ({ path: `/api/agents/${w.b.agentId}` }) },
  'agents.update': {
    as: 'person',
    request: (w) => ({ path: `/api/agents/${w.a.agentId}`, body: { name: 'renamed-agent' } }),
    cross: (w) => ({ path: `/api/agents/${w.b.agentId}`, body: { status: 'disabled' } }),
  },
  'agents.delete': {
    as: 'person',
    request: async (w, svc) => {
      // A name of its own each time: active agents of a workspace have distinct names.
      const res = await client(svc.url, { cookie: w.a.owner.cookie }).post<Record<string, any>>('/api/agents', { name: `doomed-agent-${randomUUID()}` });
      return { path: `/api/agents/${res.body.agent.id}` };
    },
    cross: (w) => ({ path: `/api/agents/${w.b.agentId}` }),
  },
  'agents.keys.create': {
    as: 'person',
    request: (w) => ({ path: `/api/agents/${w.a.agentId}/keys`, body: { name: 'minted' } }),
    cross: (w) => ({ path: `/api/agents/${w.b.agentId}/keys`, body: { name: 'stolen' } }),
  },
  'team.invitations.create': {
    as: 'person',
    request: (w) => ({ path: `/api/workspaces/${w.a.owner.workspaceId}/invitations`, body: { email: `invitee-${Date.now()}-${Math.random()}@example.com`, role: 'member' } }),
    cross: (w) => ({ path: `/api/workspaces/${w.b.owner.workspaceId}/invitations`, body: { email: 'intruder@example.com', role: 'member' } }),
  },
  'team.invitations.list': {
    as: 'person',
    request: (w) => ({ path: `/api/workspaces/${w.a.owner.workspaceId}/invitations` }),
    cross: (w) => ({ path: `/api/workspaces/${w.b.owner.workspaceId}/invitations` }),
  },
  'team.invitations.revoke': {
    as: 'person',
    request: async (w, svc) => {
      const res = await client(svc.url, { cookie: w.a.owner.cookie }).post<Record<string, any>>(`/api/workspaces/${w.a.owner.workspaceId}/invitations`, { email: `revokee-${Date.now()}-${Math.random()}@example.com` });
      return { path: `/api/workspaces/${w.a.owner.workspaceId}/invitations/${res.body.invitation.id}` };
    },
    cross: async (w, svc) => {
      const res = await client(svc.url, { cookie: w.b.owner.cookie }).post<Record<string, any>>(`/api/workspaces/${w.b.owner.workspaceId}/invitations`, { email: `b-invitee-${Date.now()}-${Math.random()}@example.com` });
      return { path: `/api/workspaces/${w.b.owner.workspaceId}/invitations/${res.body.invitation.id}` };
    },
  },
  'team.invitations.accept': {
    as: 'person',
    request: async (w, svc) => {
      const invitee = await signUp(svc, 'invitee');
      const res = await client(svc.url, { cookie: w.a.owner.cookie }).post<Record<string, any>>(`/api/workspaces/${w.a.owner.workspaceId}/invitations`, { email: invitee.email });
      return { path: '/api/invitations/accept', body: { token: res.body.accept.token }, headers: { cookie: invitee.cookie } };
    },
  },
  'team.members.list': {
    as: 'person',
    request: (w) => ({ path: `/api/workspaces/${w.a.owner.workspaceId}/members` }),
    cross: (w) => ({ path: `/api/workspaces/${w.b.owner.workspaceId}/members` }),
  },
  'team.members.update': {
    as: 'person',
    request: async (w, svc) => ({ path: `/api/workspaces/${w.a.owner.workspaceId}/members/${(await addMember(svc, w.a.owner)).id}`, body: { role: 'admin' } }),
    cross: (w) => ({ path: `/api/workspaces/${w.b.owner.workspaceId}/members/${w.b.owner.id}`, body: { role: 'member' } }),
  },
  'team.members.remove': {
    as: 'person',
    request: async (w, svc) => ({ path: `/api/workspaces/${w.a.owner.workspaceId}/members/${(await addMember(svc, w.a.owner)).id}` }),
    cross: (w) => ({ path: `/api/workspaces/${w.b.owner.workspaceId}/members/${w.b.owner.id}` }),
  },
  'team.members.leave': {
    as: 'person',
    request: async (w, svc) => {
      const member = await addMember(svc, w.a.owner);
      return { path: `/api/workspaces/${w.a.owner.workspaceId}/leave`, body: {}, headers: { cookie: member.cookie, 'x-workspace-id': w.a.owner.workspaceId } };
    },
    cross: (w) => ({ path: `/api/workspaces/${w.b.owner.workspaceId}/leave`, body: {} }),
  },
  'team.audit.list': {
    as: 'person',
    request: (w) => ({ path: `/api/workspaces/${w.a.owner.workspaceId}/audit-log` }),
    cross: (w) => ({ path: `/api/workspaces/${w.b.owner.workspaceId}/audit-log` }),
  },
  'compute.price': { as: 'key', request: () => ({ path: '/api/compute/price', body: { context: { current_price: 10, currency: 'USD' } } }) },
  'router.price': { as: 'key', request: () => ({ path: '/api/price-router', body: { context: { unit_cost: 4 }, function_name: 'cost-plus' } }) },
  'compute.batch': { as: 'key', request: () => ({ path: '/api/compute/batch', body: { items: [{ context: { current_price: 10 } }] } }) },
  'functions.list': { as: 'key', request: () => ({ path: '/api/functions' }) },
  'functions.read': {
    as: 'key',
    request: () => ({ path: '/api/functions/fn_builtin_cost_plus' }),
    cross: async (w, svc) => ({ path: `/api/functions/${await privateFunction(svc, w.b.key)}` }),
  },
  'functions.create': { as: 'key', request: () => ({ path: '/api/functions', body: { name: `sec-fn-${Date.now()}-${Math.floor(Math.random() * 1e6)}`, execution_type: 'pipeline', cost_per_unit: '0.001' } }) },
  'functions.update': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/functions/${await privateFunction(svc, w.a.key)}`, body: { description: 'changed' } }),
    cross: async (w, svc) => ({ path: `/api/functions/${await privateFunction(svc, w.b.key)}`, body: { status: 'inactive' } }),
  },
  'functions.test': {
    as: 'key',
    request: () => ({ path: '/api/functions/fn_builtin_anchored/test', body: { context: { current_price: 10 } } }),
    cross: async (w, svc) => ({ path: `/api/functions/${await privateFunction(svc, w.b.key)}/test`, body: { context: { current_price: 10 } } }),
  },
  'functions.rotate_signing_secret': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/functions/${await externalFunction(svc, w.a.key)}/signing-secret`, body: {} }),
    cross: async (w, svc) => ({ path: `/api/functions/${await externalFunction(svc, w.b.key)}/signing-secret`, body: {} }),
  },
  'policies.list': { as: 'key', request: () => ({ path: '/api/routing-policies' }) },
  'policies.create': { as: 'key', request: () => ({ path: '/api/routing-policies', body: { name: 'security', strategy: 'cheapest' } }) },
  'policies.read': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/routing-policies/${await policy(svc, w.a.key)}` }),
    cross: async (w, svc) => ({ path: `/api/routing-policies/${await policy(svc, w.b.key)}` }),
  },
  'policies.update': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/routing-policies/${await policy(svc, w.a.key)}`, body: { name: 'renamed' } }),
    cross: async (w, svc) => ({ path: `/api/routing-policies/${await policy(svc, w.b.key)}`, body: { name: 'stolen' } }),
  },
  'policies.delete': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/routing-policies/${await policy(svc, w.a.key)}` }),
    cross: async (w, svc) => ({ path: `/api/routing-policies/${await policy(svc, w.b.key)}` }),
  },
  'pipelines.list': { as: 'key', request: () => ({ path: '/api/pipelines' }) },
  'pipelines.stages': { as: 'key', request: () => ({ path: '/api/pipelines/stages' }) },
  'pipelines.run': { as: 'key', request: () => ({ path: '/api/pipelines/pl_cost_to_shelf/run', body: {} }), okStatuses: [501] },
  'routing.health': { as: 'key', request: () => ({ path: '/api/routing/health' }) },
};

/** Signs a new person up and has them join `owner`'s workspace as a member. */
async function addMember(svc: TestService, owner: Person): Promise<Person> {
  const member = await signUp(svc, 'member');
  const inv = await client(svc.url, { cookie: owner.cookie }).post<Record<string, any>>(`/api/workspaces/${owner.workspaceId}/invitations`, { email: member.email });
  await client(svc.url, { cookie: member.cookie }).post('/api/invitations/accept', { token: inv.body.accept.token });
  return member;
}

/** A private draft function of the key's workspace; returns its id. */
async function privateFunction(svc: TestService, key: string): Promise<string> {
  const res = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/functions', { name: `sec-private-${Date.now()}-${Math.floor(Math.random() * 1e6)}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
  return res.body.function.id as string;
}

/** An external_api function (a draft: never called) of the key's workspace; returns its id. */
async function externalFunction(svc: TestService, key: string): Promise<string> {
  const res = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/functions', {
    name: `sec-external-${Date.now()}-${Math.floor(Math.random() * 1e6)}`,
    execution_type: 'external_api',
    endpoint_url: 'https://pricing.acme.example/price',
    cost_per_unit: '0.001',
  });
  return res.body.function.id as string;
}

/** A routing policy of the key's workspace; returns its id. */
async function policy(svc: TestService, key: string): Promise<string> {
  const res = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/routing-policies', { name: 'sec policy', strategy: 'cheapest' });
  return res.body.policy.id as string;
}
