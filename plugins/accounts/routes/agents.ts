import type { Transaction } from 'sequelize';
import type { Principal } from '../../../core/auth';
import type { EventBus } from '../../../core/events';
import { ApiError } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { decodeTimeCursor, listEnvelope, listQuery } from '../../../core/pagination';
import { z } from 'zod';
import { assertWorkspaceRoom, keyView, lockWorkspace } from '../../identity';
import type { AgentRow } from '../../identity';
import * as r from '../responses';
import * as s from '../schemas';
import type { AccountsDeps } from './deps';
import { assertManagesAgent } from './agent-access';
import { assertMayRevoke } from './key-access';
import { checkRequestedScopes, requestedExpiry } from './keys';

const PERSON_ONLY = {
  accepts: ['person'] as const,
  wrongCredentialMessage: 'Agent management accepts person credentials only, not API keys.',
  wrongCredentialHint: 'Sign in (POST /api/auth/signin) and use the session cookie or Authorization: Bearer <person token>.',
};

function agentView(a: AgentRow): Record<string, unknown> {
  return { id: a.id, name: a.name, status: a.status, created_by: a.created_by_person_id, created_at: new Date(a.created_at).toISOString() };
}

export function agentRoutes(d: AccountsDeps, events: EventBus): RouteSpec[] {
  const find = async (p: Principal, id: string): Promise<AgentRow> => {
    const a = await d.sql.one<AgentRow>('SELECT * FROM agents WHERE id = $1 AND workspace_id = $2', [id, p.workspaceId]);
    // The same answer whether the agent is missing or another workspace's (ownership is not revealed by id); the hint
    // covers the common case of a person acting in their default workspace for an agent of another of theirs.
    if (!a) throw new ApiError('not_found', 'No agent with this id in the workspace.', { hint: 'Agents are per workspace: for an agent of another of your workspaces, send x-workspace-id with that workspace (GET /api/user lists yours); GET /api/agents lists the agents of this one.' });
    return a;
  };
  const findToManage = async (p: Principal, id: string): Promise<AgentRow> => {
    const a = await find(p, id);
    assertManagesAgent(p, a, 'manage');
    return a;
  };
  /**
   * Active agents of a workspace have distinct names, compared without case: lists, audit entries and key names ("<agent>
   * key") show the name, and two alike cannot be told apart there. Disabled agents keep theirs (history shows it), so a
   * re-enable is checked as a create is. Run inside the transaction after lockWorkspace, so two changes racing for one
   * name cannot both pass.
   */
  const assertNameFree = async (tx: Transaction, workspaceId: string, name: string, exceptId: string | null): Promise<void> => {
    const other = await d.sql.one<{ id: string; name: string }>(
      `SELECT id, name FROM agents WHERE workspace_id = $1 AND status = 'active' AND lower(name) = lower($2) AND id <> $3 LIMIT 1`,
      [workspaceId, name, exceptId ?? ''],
      tx,
    );
    if (other) {
      throw new ApiError('conflict', `An active agent of this workspace is already named "${other.name}".`, {
        hint: `Active agents' names are distinct (without regard to case) so lists and audit entries tell them apart: choose another name, or rename or disable the other agent (PATCH /api/agents/${other.id}).`,
        fields: { agent_id: other.id, reason: 'agent name taken' },
      });
    }
  };
  /** AGENTS_PER_WORKSPACE: the active agents a workspace holds, for a create and a re-enable alike. */
  const activeAgentsLimit = () => ({
    setting: 'AGENTS_PER_WORKSPACE',
    value: d.config.limits.perWorkspace.agents,
    what: 'active agents',
    count: `SELECT count(*)::int AS n FROM agents WHERE workspace_id = $1 AND status = 'active'`,
    hint: 'Disable an agent no longer in use (DELETE /api/agents/{id} disables it and revokes its keys; its usage history stays; GET /api/agents lists them); disabled agents do not count.',
  });
  return [
    defineRoute({
      id: 'agents.list',
      method: 'get',
      path: '/api/agents',
      summary: 'Agents of the workspace.',
      tags: ['Agents'],
      ...PERSON_ONLY,
      query: z.object(listQuery),
      responses: { 200: { description: 'A page of agents.', schema: r.agentListResponse } },
      handler: async ({ principal, query }) => {
        const p = principal as Principal;
        const after = query.cursor ? decodeTimeCursor(query.cursor) : null;
        const rows = await d.sql.many<AgentRow & { sort_key: string }>(
          `SELECT *, created_at::text AS sort_key FROM agents
            WHERE workspace_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::text))
            ORDER BY created_at DESC, id DESC LIMIT $4`,
          [p.workspaceId, after?.at ?? null, after?.id ?? null, query.limit + 1],
        );
        return ok(listEnvelope(rows, query.limit, agentView, (r) => ({ sort: r.sort_key, id: r.id })));
      },
    }),
    defineRoute({
      id: 'agents.create',
      method: 'post',
      path: '/api/agents',
      fullAccess: true,
      summary: 'Create an agent in the workspace (then mint its keys with POST /api/agents/{id}/keys).',
      tags: ['Agents'],
      ...PERSON_ONLY,
      body: s.createAgentBody,
      example: s.createAgentExample,
      responses: { 201: { description: 'The new agent.', schema: r.agentResponse } },
      handler: async ({ principal, body }) => {
        const p = principal as Principal;
        const row = await d.sql.tx(async (tx) => {
          // assertWorkspaceRoom takes the workspace's lock (lockWorkspace's) before counting: the name check runs under it.
          await assertWorkspaceRoom(d.sql, tx, p.workspaceId, activeAgentsLimit());
          await assertNameFree(tx, p.workspaceId, body.name, null);
          return d.sql.one<AgentRow>('INSERT INTO agents (id, workspace_id, name, created_by_person_id) VALUES ($1, $2, $3, $4) RETURNING *', [newId('agt'), p.workspaceId, body.name, p.personId ?? null], tx);
        });
        return created({ agent: agentView(row as AgentRow) });
      },
    }),
    defineRoute({
      id: 'agents.read',
      method: 'get',
      path: '/api/agents/:id',
      summary: 'One agent of the workspace.',
      tags: ['Agents'],
      ...PERSON_ONLY,
      params: s.agentIdParams,
      responses: { 200: { description: 'The agent.', schema: r.agentResponse } },
      handler: async ({ principal, params }) => ok({ agent: agentView(await find(principal as Principal, params.id)) }),
    }),
    defineRoute({
      id: 'agents.update',
      method: 'patch',
      path: '/api/agents/:id',
      fullAccess: true,
      summary: 'Rename, disable or re-enable an agent (disabling revokes its keys, refused while it holds a key you may not revoke; members: only agents they created).',
      tags: ['Agents'],
      ...PERSON_ONLY,
      params: s.agentIdParams,
      body: s.updateAgentBody,
      example: s.updateAgentExample,
      responses: { 200: { description: 'The agent as changed.', schema: r.agentResponse } },
      handler: async ({ principal, params, body }) => {
        const p = principal as Principal;
        const found = await findToManage(p, params.id);
        if (body.status === 'disabled') await assertMayRevokeAgentKeys(d, p, found.id);
        // Re-enabling takes a place among the active agents as creating one does, counted the same way.
        const row = await d.sql.tx(async (tx) => {
          // Decided on the agent as it is under the lock, not as read before it: a rename racing a re-enable of the same
          // agent would otherwise each see it as it was and pass checks the other makes wrong.
          // Every change that can make an agent active or rename one takes the workspace's lock first: one at a time.
          await lockWorkspace(d.sql, p.workspaceId, tx);
          const a = (await d.sql.one<AgentRow>('SELECT * FROM agents WHERE id = $1 AND workspace_id = $2', [found.id, p.workspaceId], tx)) ?? found;
          const enabling = body.status === 'active' && a.status !== 'active';
          if (enabling) await assertWorkspaceRoom(d.sql, tx, p.workspaceId, activeAgentsLimit());
          // Only a name an active agent will carry can clash: a rename of an agent staying disabled cannot.
          const activeAfter = body.status === 'active' || (body.status === undefined && a.status === 'active');
          if (activeAfter && (enabling || body.name !== undefined)) await assertNameFree(tx, p.workspaceId, body.name ?? a.name, a.id);
          return d.sql.one<AgentRow>('UPDATE agents SET name = COALESCE($3, name), status = COALESCE($4, status), updated_at = now() WHERE id = $1 AND workspace_id = $2 RETURNING *', [a.id, p.workspaceId, body.name ?? null, body.status ?? null], tx);
        });
        if (body.status === 'disabled') await revokeAgentKeys(d, events, p, found.id);
        return ok({ agent: agentView(row as AgentRow) });
      },
    }),
    defineRoute({
      id: 'agents.delete',
      method: 'delete',
      path: '/api/agents/:id',
      fullAccess: true,
      summary: 'Disable an agent and revoke its keys (its usage history stays; refused while it holds a key you may not revoke; members: only agents they created).',
      tags: ['Agents'],
      ...PERSON_ONLY,
      params: s.agentIdParams,
      responses: { 200: { description: 'The agent is disabled and its keys revoked.', schema: r.deleteAgentResponse } },
      handler: async ({ principal, params }) => {
        const p = principal as Principal;
        const a = await findToManage(p, params.id);
        await assertMayRevokeAgentKeys(d, p, a.id);
        await d.sql.exec(`UPDATE agents SET status = 'disabled', updated_at = now() WHERE id = $1`, [a.id]);
        const revoked = await revokeAgentKeys(d, events, p, a.id);
        return ok({ id: a.id, status: 'disabled', revoked_keys: revoked });
      },
    }),
    defineRoute({
      id: 'agents.keys.create',
      returnsSecret: true,
      method: 'post',
      path: '/api/agents/:id/keys',
      fullAccess: true,
      summary: 'Mint an agent-bound key (shown once; members: only for agents they created).',
      tags: ['Agents'],
      ...PERSON_ONLY,
      keyManagement: true,
      params: s.agentIdParams,
      body: s.agentKeyBody,
      example: s.agentKeyExample,
      responses: { 201: { description: 'The agent-bound key; its secret is shown this once.', schema: r.agentKeyResponse } },
      handler: async ({ principal, params, body }) => {
        const p = principal as Principal;
        const a = await findToManage(p, params.id);
        if (a.status !== 'active') throw new ApiError('conflict', 'The agent is disabled; enable it first (PATCH /api/agents/{id} {"status":"active"}).');
        const { scopes, legacy } = checkRequestedScopes(p, body.scopes);
        const expiresAt = requestedExpiry(body.expires_at);
        const { row, secret } = await d.keys.create({ workspaceId: p.workspaceId, name: body.name ?? `${a.name} key`, kind: 'agent', scopes, legacy, createdByPersonId: p.personId ?? null, agentId: a.id, expiresAt });
        return created({ api_key: { ...keyView(row), key: secret, shown_once: true }, agent: agentView(a) });
      },
    }),
  ];
}

/**
 * Disabling an agent revokes its keys, so it is refused when one of them is a key the person may not revoke (an owner's
 * key, which may act as the owner on the team): the rule of DELETE /api/api-keys, not a way around it.
 */
async function assertMayRevokeAgentKeys(d: AccountsDeps, p: Principal, agentId: string): Promise<void> {
  const keys = await d.sql.many<{ id: string; created_by_person_id: string | null }>(
    'SELECT id, created_by_person_id FROM api_keys WHERE agent_id = $1 AND workspace_id = $2 AND revoked_at IS NULL ORDER BY created_at, id',
    [agentId, p.workspaceId],
  );
  for (const k of keys) await assertMayRevoke(d.workspaces, p, k, agentId);
}

async function revokeAgentKeys(d: AccountsDeps, events: EventBus, p: Principal, agentId: string): Promise<number> {
  const workspaceId = p.workspaceId;
  const keys = await d.sql.many<{ id: string }>('SELECT id FROM api_keys WHERE agent_id = $1 AND workspace_id = $2 AND revoked_at IS NULL', [agentId, workspaceId]);
  for (const k of keys) {
    await d.keys.revoke(k.id, 'agent disabled');
    await events.emit('api_key.revoked', { workspaceId, keyId: k.id, reason: 'agent disabled', by: p.personId ? { type: 'person', id: p.personId } : null });
  }
  return keys.length;
}
