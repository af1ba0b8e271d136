import { z } from 'zod';
import { listEnvelopeSchema } from '../../core/http/reply-fields';

/**
 * Response schemas of the team routes (routes/invitations.ts, routes/members.ts), for the OpenAPI
 * document; the plugin's README describes the answers.
 */

/** `invitationView` (services/invitations.ts): never the token or its hash. */
export const invitationSchema = z
  .object({
    id: z.string().describe('The invitation\'s id (inv_…).'),
    object: z.literal('invitation').describe('The kind of object.'),
    workspace_id: z.string().describe('The workspace it invites to.'),
    email: z.string().describe('The address invited: the person accepts signed in with this email.'),
    role: z.enum(['admin', 'member']).describe('The role the person joins at.'),
    status: z
      .enum(['pending', 'accepted', 'revoked', 'cancelled', 'expired'])
      .describe('pending until accepted, revoked, cancelled (its key was revoked, or the key\'s creator can no longer invite at this role) or expired (a pending one past expires_at shows as expired).'),
    invited_by: z.string().nullable().describe('The person who invited (for a key: its creator).'),
    via_key_id: z.string().nullable().describe('The team:admin key that made it; null when a person did.'),
    expires_at: z.string().describe('When the token stops being acceptable (ISO 8601).'),
    accepted_by: z.string().nullable().describe('The person who accepted; null until accepted.'),
    accepted_at: z.string().nullable().describe('When it was accepted (ISO 8601); null until then.'),
    created_at: z.string().describe('When it was made (ISO 8601).'),
  })
  .meta({ id: 'Invitation', description: 'An invitation to join a workspace\'s team.' });

/** `memberView` (services/members.ts). */
export const memberSchema = z
  .object({
    object: z.literal('member').describe('The kind of object.'),
    person_id: z.string().describe('The person\'s id (per_…).'),
    email: z.string().nullable().describe('Their email; null for a person signed up with a wallet only.'),
    display_name: z.string().describe('Their display name.'),
    role: z.enum(['owner', 'admin', 'member']).describe('Their role in the workspace.'),
    status: z.enum(['active', 'restricted', 'suspended', 'rejected']).describe('Their account status; anything but active restricts what they may change.'),
    joined_at: z.string().describe('When they joined (ISO 8601).'),
    updated_at: z.string().describe('When their membership last changed (ISO 8601).'),
  })
  .meta({ id: 'Member', description: 'A member of a workspace\'s team.' });

/** `auditView` (services/trail.ts): an entry of the identity audit log. */
const auditEntrySchema = z
  .object({
    id: z.string().describe('The entry\'s id (aud_…).'),
    object: z.literal('audit_entry').describe('The kind of object.'),
    action: z.string().describe('What was done or attempted: a team route id (team.invitations.create, team.members.update…), team.invitations.cancel, or agent.claim (a sandbox claimed into this workspace).'),
    outcome: z.enum(['done', 'refused']).describe('Whether it was done or refused.'),
    actor: z
      .object({
        type: z.enum(['person', 'api_key', 'access_token', 'system']).describe('Who acted: a person, an API key (acting as its creator), an access token, or the system (cancellations).'),
        id: z.string().describe('The person\'s or key\'s id; team for the system.'),
      })
      .describe('Who acted.'),
    via_key_id: z.string().nullable().describe('The key involved (the one that acted, or whose invitation was cancelled); null otherwise.'),
    target: z.string().nullable().describe('What it acted on (an invitation, a person, an email, a workspace); null when nothing in particular.'),
    reason: z.string().nullable().describe('Why it was refused, or why the system acted; null for an ordinary change.'),
    details: z
      .looseObject({})
      .describe('What the action recorded; it varies by action (role, invited_role, email, acting_as, revoked_keys; code and status for a refusal).'),
    created_at: z.string().describe('When it happened (ISO 8601).'),
  })
  .meta({ id: 'AuditEntry', description: 'A team change or refused attempt.' });

/** POST /api/workspaces/{workspace_id}/invitations (201). */
export const invitationCreatedResponse = z.object({
  invitation: invitationSchema,
  accept: z
    .object({
      url: z.string().describe('Where the invited person accepts: POST /api/invitations/accept.'),
      method: z.literal('POST').describe('The method to use.'),
      body: z.object({ token: z.string().describe('The token.') }).describe('The body to send.'),
      token: z.string().describe('The one-time accept token (pcs_inv_…); only its hash is stored.'),
      expires_at: z.string().describe('When it stops being acceptable (ISO 8601).'),
      one_time: z.literal(true).describe('It is accepted once.'),
      how: z.string().describe('What to do with it, in words.'),
    })
    .describe('How the invited person accepts.'),
  shown_once: z.literal(true).describe('The token is not shown again.'),
});

/** GET /api/workspaces/{workspace_id}/invitations. */
export const invitationsListResponse = listEnvelopeSchema(invitationSchema, 'The workspace\'s invitations, newest first.');

/** DELETE /api/workspaces/{workspace_id}/invitations/{invitation_id}. */
export const invitationRevokedResponse = z.object({ invitation: invitationSchema });

/** POST /api/invitations/accept. */
export const invitationAcceptedResponse = z.object({
  invitation: invitationSchema,
  membership: z
    .object({
      workspace_id: z.string().describe('The workspace joined.'),
      workspace_name: z.string().describe('Its name.'),
      role: z.enum(['admin', 'member']).describe('The role joined at.'),
    })
    .describe('The membership the acceptance made.'),
  hint: z.string().describe('How to act in the workspace joined (the x-workspace-id header).'),
});

/** GET /api/workspaces/{workspace_id}/members. */
export const membersListResponse = listEnvelopeSchema(memberSchema, 'The members, in joining order.');

/** PATCH /api/workspaces/{workspace_id}/members/{person_id}. */
export const memberUpdatedResponse = z.object({ member: memberSchema });

/** DELETE /api/workspaces/{workspace_id}/members/{person_id}. */
export const memberRemovedResponse = z.object({
  removed: z.literal(true).describe('The member was removed (the keys they made there are revoked).'),
  member: memberSchema,
});

/** POST /api/workspaces/{workspace_id}/leave. */
export const leftResponse = z.object({
  left: z.literal(true).describe('The caller left (the keys they made there are revoked).'),
  workspace_id: z.string().describe('The workspace left.'),
  role: z.enum(['admin', 'member', 'owner']).describe('The role the caller held there.'),
});

/** GET /api/workspaces/{workspace_id}/audit-log. */
export const auditListResponse = listEnvelopeSchema(auditEntrySchema, 'Team changes and refused attempts, newest first.');
