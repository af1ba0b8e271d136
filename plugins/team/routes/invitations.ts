import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { invitationAcceptedResponse, invitationCreatedResponse, invitationRevokedResponse, invitationsListResponse } from '../responses';
import * as s from '../schemas';
import { invitationView } from '../services/invitations';
import { PERSON_ONLY, principalOf, TEAM_ADMIN_KEY, TEAM_TAGS } from './common';
import type { TeamDeps } from './deps';

export function invitationRoutes(d: TeamDeps): RouteSpec[] {
  return [
    defineRoute({
      id: 'team.invitations.create',
      returnsSecret: true,
      method: 'post',
      path: '/api/workspaces/:workspace_id/invitations',
      summary: 'Invite a person by email (role member, or admin by an owner); returns a one-time accept token.',
      description:
        'People act by their role (owners invite admins and members, admins invite members). An API key acts only when it names team:admin, as its creator with the creator\'s current role. Nobody is invited as owner.',
      tags: TEAM_TAGS,
      ...TEAM_ADMIN_KEY,
      params: s.workspaceParams,
      body: s.createInvitationBody,
      example: s.createInvitationExample,
      responses: { 201: { description: 'The invitation and its one-time accept token (only its hash is stored).', schema: invitationCreatedResponse } },
      handler: async ({ principal, params, body }) => {
        const { invitation, token } = await d.invitations.create(principalOf(principal), params.workspace_id, body.email, body.role);
        return created({
          invitation: invitationView(invitation, d.now()),
          accept: {
            url: `${d.publicUrl()}/api/invitations/accept`,
            method: 'POST',
            body: { token },
            token,
            expires_at: new Date(invitation.expires_at).toISOString(),
            one_time: true,
            how: 'Give the token to the person invited: signed in with the invited email, they POST it to the url.',
          },
          shown_once: true,
        });
      },
    }),
    defineRoute({
      id: 'team.invitations.list',
      method: 'get',
      path: '/api/workspaces/:workspace_id/invitations',
      summary: 'Invitations of the workspace, newest first (owners and admins, or a team:admin key).',
      tags: TEAM_TAGS,
      ...TEAM_ADMIN_KEY,
      params: s.workspaceParams,
      query: s.invitationListQuery,
      responses: { 200: { description: 'A page of the workspace\'s invitations, newest first.', schema: invitationsListResponse } },
      handler: async ({ principal, params, query }) => ok(await d.invitations.list(principalOf(principal), params.workspace_id, query.limit, query.cursor)),
    }),
    defineRoute({
      id: 'team.invitations.revoke',
      method: 'delete',
      path: '/api/workspaces/:workspace_id/invitations/:invitation_id',
      summary: 'Revoke a pending invitation (an admin invitation only by an owner, or a key an owner created).',
      tags: TEAM_TAGS,
      ...TEAM_ADMIN_KEY,
      params: s.invitationParams,
      responses: { 200: { description: 'The invitation, now revoked.', schema: invitationRevokedResponse } },
      handler: async ({ principal, params }) => ok({ invitation: invitationView(await d.invitations.revoke(principalOf(principal), params.workspace_id, params.invitation_id), d.now()) }),
    }),
    defineRoute({
      id: 'team.invitations.accept',
      method: 'post',
      path: '/api/invitations/accept',
      fullAccess: true,
      summary: 'Accept an invitation, signed in with the email it names; you join the workspace at the invited role.',
      tags: TEAM_TAGS,
      ...PERSON_ONLY,
      body: s.acceptInvitationBody,
      example: s.acceptInvitationExample,
      responses: { 200: { description: 'The accepted invitation and the membership it made.', schema: invitationAcceptedResponse } },
      handler: async ({ principal, body }) => {
        const { invitation, workspace } = await d.invitations.accept(principalOf(principal), body.token);
        return ok({
          invitation: invitationView(invitation, d.now()),
          membership: { workspace_id: workspace.id, workspace_name: workspace.name, role: invitation.role },
          hint: `Send the header x-workspace-id: ${workspace.id} to act in this workspace.`,
        });
      },
    }),
  ];
}
