import type { ClaimOutcome } from '../services/onboarding';
import { workspaceView } from '../services/workspaces';

/**
 * The answer of both claim routes. A person acts in their default workspace unless `x-workspace-id` names another, and the
 * claimed workspace is never that default: without saying so, the key the person then makes for the agent lands in their
 * own workspace and the agent is cut off. So the answer names the header, and its `next` steps carry it (the shape of
 * registration's `next`: action, method, path, headers, example body, description).
 */
export function claimAnswer(r: ClaimOutcome) {
  const id = r.workspace.id;
  const kept = r.keptKeys.length > 0;
  const headers = { 'x-workspace-id': id };
  const inIt = `A person acts in the claimed workspace ${id} with the header x-workspace-id: ${id} (session cookie or person token); without it a request acts in their default workspace, and a key created there is made there.`;
  const checkWorkspace = {
    action: 'check_workspace',
    method: 'GET',
    path: '/api/me',
    headers,
    description: 'Shows the workspace a request with this header acts in (tenant_id): the claimed one, on the free plan.',
  };
  const next = kept
    ? [
        checkWorkspace,
        {
          action: 'list_api_keys',
          method: 'GET',
          path: '/api/api-keys',
          headers,
          description: "The claimed workspace's keys, the agent's kept key among them (full access until revoked: DELETE /api/api-keys/{keyId} with the same header).",
        },
      ]
    : [
        ...(r.agentId
          ? [
              {
                action: 'create_agent_key',
                method: 'POST',
                path: `/api/agents/${r.agentId}/keys`,
                headers,
                body: { name: 'pricing agent key' },
                description: "An owner or admin of the claimed workspace mints the agent a key there (shown once; hand it to the agent). Scopes left out give full access; { \"scopes\": [\"price:compute\"] } keeps it to pricing.",
              },
            ]
          : []),
        {
          action: 'create_api_key',
          method: 'POST',
          path: '/api/api-keys',
          headers,
          body: { name: 'for my agent' },
          description: 'Or a workspace key bound to no agent, made in the claimed workspace because of the header (the answer names it in api_key.workspace_id).',
        },
        checkWorkspace,
      ];
  return {
    claimed: true as const,
    workspace: workspaceView(r.workspace),
    test_workspace: workspaceView(r.testWorkspace),
    agent_key: kept ? ('kept' as const) : ('revoked' as const),
    hint: kept
      ? `${inIt} The agent's key keeps working there, with full access until revoked.`
      : `${inIt} The agent's key was revoked: give it a new key made in this workspace (next: create_agent_key).`,
    next,
  };
}
