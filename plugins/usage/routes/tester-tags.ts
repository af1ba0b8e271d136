import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { identityOf } from '../../identity';
import type { Workspaces } from '../../identity';
import * as s from '../schemas';
import type { TesterTags } from '../services/tester-tags';
import { principalOf } from './events';

const SETTINGS = {
  tags: ['Settings'],
  /** Settings are managed by people and workspace API keys, not by tokens (an agent's reach). */
  accepts: ['person', 'api_key'] as const,
  wrongCredentialMessage: 'Tester tags are managed with a person\'s session or person token, or a workspace API key.',
  wrongCredentialHint: 'Sign in (POST /api/auth/signin), or send a workspace API key in x-api-key.',
};

const roleTooLow = (message: string) => new ApiError('forbidden', message, { hint: 'Ask an owner or admin of this workspace.', fields: { reason: 'role too low' } });

/**
 * Who may change the tags: owners and admins, and full-access API keys an owner or admin created for
 * the workspace, while their creator still is one (a member's key does no more than the member).
 * Agent-bound and OAuth client keys act for one agent, not for the workspace's settings.
 */
async function mayManage(p: Principal, workspaces: Pick<Workspaces, 'roleOf'>): Promise<void> {
  const id = identityOf(p);
  if (p.kind === 'person') {
    if (id.role === 'owner' || id.role === 'admin') return;
    throw roleTooLow('Only owners and admins change tester tags.');
  }
  if (p.kind === 'api_key' && id.keyKind === 'person' && !p.agentId) {
    const role = id.creatorPersonId ? await workspaces.roleOf(p.workspaceId, id.creatorPersonId) : null;
    if (role === 'owner' || role === 'admin') return;
    throw roleTooLow("Only owners and admins change tester tags, and a key only while its creator is one; this key's creator is not.");
  }
  throw new ApiError('forbidden', 'Agent keys cannot change tester tags; use a workspace key or a person\'s session.', {
    hint: 'Create a workspace key (POST /api/api-keys, person only) or sign in.',
    fields: { reason: 'agent-bound key' },
  });
}

export function testerTagRoutes(d: { tags: TesterTags; workspaces: Pick<Workspaces, 'roleOf'> }): RouteSpec[] {
  return [
    defineRoute({
      id: 'settings.testerTags.read',
      method: 'get',
      path: '/api/settings/tester-tags',
      summary: 'Your private tester tags: keyless callers they match appear as Testers in your usage (they grant no access).',
      ...SETTINGS,
      handler: async ({ principal }) => ok({ tags: await d.tags.list(principalOf(principal).workspaceId) }),
    }),
    defineRoute({
      id: 'settings.testerTags.replace',
      method: 'put',
      path: '/api/settings/tester-tags',
      summary: 'Replace your tester tags; each has a label and matches by User-Agent part and/or caller address (only a hash is kept).',
      ...SETTINGS,
      // Workspace configuration no named scope covers: a scoped key is refused (403 insufficient_scope), as for policies.
      fullAccess: true,
      body: s.testerTagsBody,
      example: s.testerTagsExample,
      handler: async ({ principal, body }) => {
        const p = principalOf(principal);
        await mayManage(p, d.workspaces);
        return ok({ tags: await d.tags.replace(p.workspaceId, body) });
      },
    }),
  ];
}
