import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { assertManagesWorkspace } from '../../identity';
import type { Workspaces } from '../../identity';
import { testerTagsResponse } from '../responses';
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

export function testerTagRoutes(d: { tags: TesterTags; workspaces: Pick<Workspaces, 'roleOf'> }): RouteSpec[] {
  return [
    defineRoute({
      id: 'settings.testerTags.read',
      method: 'get',
      path: '/api/settings/tester-tags',
      summary: 'Your private tester tags: keyless callers they match appear as Testers in your usage (they grant no access).',
      ...SETTINGS,
      responses: { 200: { description: 'The workspace\'s tester tags.', schema: testerTagsResponse } },
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
      precheck: ({ principal }) => assertManagesWorkspace(principalOf(principal), d.workspaces, 'change tester tags'),
      body: s.testerTagsBody,
      example: s.testerTagsExample,
      responses: { 200: { description: 'The tags now in force, as GET answers them (new ones with their ids).', schema: testerTagsResponse } },
      handler: async ({ principal, body }) => {
        const p = principalOf(principal);
        return ok({ tags: await d.tags.replace(p.workspaceId, body) });
      },
    }),
  ];
}
