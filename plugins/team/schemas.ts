import { z } from 'zod';
import { listQuery } from '../../core/pagination';

/**
 * `owner` is accepted by the schemas on purpose: asking to make someone an owner is a well-formed
 * request that the team rules refuse (403, recorded in the audit log), not a malformed body.
 */
const role = z.enum(['owner', 'admin', 'member']);
const id = z.string().min(3).max(64);

export const workspaceParams = z.object({ workspace_id: id });
export const invitationParams = z.object({ workspace_id: id, invitation_id: id });
export const memberParams = z.object({ workspace_id: id, person_id: id });

export const createInvitationBody = z.strictObject({
  email: z.string().trim().toLowerCase().email().max(254).describe('Address of the person invited; they accept signed in with this email.'),
  role: role.default('member').describe('admin or member (member is the usual choice; only owners, or keys created by an owner, invite admins).'),
});
export const createInvitationExample = { email: 'grace@example.com', role: 'member' };

export const acceptInvitationBody = z.strictObject({
  token: z.string().min(10).max(200).describe('The one-time token exactly as the invitation returned it (accept.token, which already begins pcs_inv_).'),
});
export const acceptInvitationExample = { token: '<INVITATION_TOKEN>' };

export const updateMemberBody = z.strictObject({
  role: role.describe('admin or member; nobody is made an owner through these routes.'),
});
export const updateMemberExample = { role: 'member' };

export const invitationListQuery = z.object(listQuery);

export const memberListQuery = z.object(listQuery);

export const auditListQuery = z.object({
  ...listQuery,
  outcome: z.enum(['done', 'refused']).optional().describe('Only changes (done) or refused attempts (refused).'),
});

export const emptyBody = z.strictObject({});
