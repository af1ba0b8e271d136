import { ApiError, errorBodySchema } from '../../../core/errors';
import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { refusedConfiguration } from '../auth/managers';
import { identityOf } from '../auth/principal';
import { wrongKindOfCredential } from '../errors';
import { AGENT_STARTER_PLAN, sandboxLimits } from '../limits';
import { capabilitiesResponse } from '../responses';
import * as s from '../schemas';
import type { IdentityDeps } from './deps';

export function meRoutes(d: IdentityDeps): RouteSpec[] {
  return [
    defineRoute({
      id: 'me.read',
      method: 'get',
      path: '/api/me',
      summary: 'Who the credential belongs to: tenant, auth method, scopes (and origin for claimed workspaces).',
      tags: ['Identity'],
      sandbox: true,
      responses: { 200: { description: 'The caller.', schema: s.meResponse } },
      handler: ({ principal }) => {
        if (!principal) throw new ApiError('unauthorized', 'Send a credential.');
        const id = identityOf(principal);
        const body: Record<string, unknown> = {
          tenant_id: principal.workspaceId,
          auth_method: id.authMethod,
          scopes: [...(principal.scopes ?? [])],
          workspace: { id: principal.workspaceId, name: id.workspaceName, plan: id.plan, status: id.workspaceStatus, sandbox: id.sandbox, is_test: id.isTest },
        };
        if (principal.keyId) {
          body.key = { id: principal.keyId, name: id.keyName, kind: id.keyKind, expires_at: id.keyExpiresAt ?? null, legacy: id.legacy };
          if (id.namedScopes) body.named_scopes = id.namedScopes;
        }
        if (principal.agentId) body.agent = { id: principal.agentId, name: id.agentName ?? null };
        if (principal.personId) body.person = { id: principal.personId, role: id.role ?? null, email: id.email ?? null };
        if (id.authMethod === 'access_token') body.token = { expires_at: id.tokenExpiresAt, key_id: id.tokenOfKeyId };
        if (id.sandbox) {
          body.plan = AGENT_STARTER_PLAN;
          body.limits = sandboxLimits(d.config);
        }
        if (id.claimedAt) {
          body.origin = id.origin;
          body.created_by_agent = id.createdByAgent;
          body.former_sandbox = id.formerSandbox;
          body.claimed_at = id.claimedAt;
        }
        // Its scopes may name what the managers rule refuses it (an agent's key after a claim): said, so it is not tried.
        const refused = refusedConfiguration(principal, d.routes());
        if (refused.length > 0) body.not_allowed = refused;
        return ok(body);
      },
    }),
    defineRoute({
      id: 'agents.capabilities',
      method: 'get',
      path: '/api/agents/:id/capabilities',
      summary: 'What an agent may do; only that agent (its key or token) or a person of its workspace may ask.',
      tags: ['Identity'],
      sandbox: true,
      params: s.agentIdParams,
      responses: {
        200: { description: 'The agent, its plan and the asking credential\'s scopes and the workspace configuration it is refused; for a sandbox also its limits and capabilities.', schema: capabilitiesResponse },
        403: { description: 'forbidden: a workspace key that belongs to no agent (reason "not an agent credential"); use the agent\'s own key or token, or a person of its workspace.', schema: errorBodySchema },
      },
      handler: async ({ params, principal }) => {
        if (!principal) throw new ApiError('unauthorized', 'Send a credential.');
        if (principal.kind !== 'person' && !principal.agentId) {
          // A valid credential of no agent (a workspace key): not a credential problem, a permission one.
          throw new ApiError('forbidden', "An agent's capabilities are read with that agent's own key or token, or by a person of its workspace; this key belongs to no agent.", {
            fields: { reason: 'not an agent credential' },
            hint: 'Sign in as a person of the workspace (session or person token), or use the agent\'s own key (POST /api/agents/{id}/keys makes one).',
          });
        }
        if (principal.kind !== 'person' && principal.agentId !== params.id) {
          // The credential is valid (its holder must not discard it), just not one this agent's route takes.
          throw wrongKindOfCredential(
            "This credential belongs to another agent and cannot reach this agent's capabilities.",
            "Use this agent's own key or token, or sign in as a person of its workspace; your credential still works for your own agent.",
          );
        }
        const agent = await d.sql.one<{ id: string; name: string; status: string; workspace_id: string }>('SELECT id, name, status, workspace_id FROM agents WHERE id = $1 AND workspace_id = $2', [
          params.id,
          principal.workspaceId,
        ]);
        if (!agent) throw new ApiError('not_found', 'No such agent in this workspace.');
        const id = identityOf(principal);
        const refused = refusedConfiguration(principal, d.routes());
        return ok({
          agent: { id: agent.id, name: agent.name, status: agent.status },
          workspace_id: agent.workspace_id,
          plan: id.plan,
          scopes: [...(principal.scopes ?? [])],
          ...(id.sandbox ? { limits: sandboxLimits(d.config), capabilities: AGENT_STARTER_PLAN.capabilities } : {}),
          ...(refused.length > 0 ? { not_allowed: refused } : {}),
        });
      },
    }),
  ];
}
