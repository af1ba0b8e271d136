import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { auditListResponse, leftResponse, memberRemovedResponse, membersListResponse, memberUpdatedResponse } from '../responses';
import * as s from '../schemas';
import { memberView } from '../services/members';
import { PERSON_ONLY, principalOf, TEAM_ADMIN_KEY, TEAM_TAGS } from './common';
import type { TeamDeps } from './deps';

export function memberRoutes(d: TeamDeps): RouteSpec[] {
  return [
    defineRoute({
      id: 'team.members.list',
      method: 'get',
      path: '/api/workspaces/:workspace_id/members',
      summary: 'Members of the workspace and their roles, in joining order (every member, or a team:admin key).',
      tags: TEAM_TAGS,
      ...TEAM_ADMIN_KEY,
      params: s.workspaceParams,
      query: s.memberListQuery,
      responses: { 200: { description: 'A page of the members, in joining order.', schema: membersListResponse } },
      handler: async ({ principal, params, query }) => ok(await d.members.list(principalOf(principal), params.workspace_id, query.limit, query.cursor)),
    }),
    defineRoute({
      id: 'team.members.update',
      method: 'patch',
      path: '/api/workspaces/:workspace_id/members/:person_id',
      summary: "Change a member's role to admin or member (owners are never changed; only owners promote to or demote from admin).",
      tags: TEAM_TAGS,
      ...TEAM_ADMIN_KEY,
      params: s.memberParams,
      body: s.updateMemberBody,
      example: s.updateMemberExample,
      responses: { 200: { description: 'The member with their role now.', schema: memberUpdatedResponse } },
      handler: async ({ principal, params, body }) => ok({ member: memberView(await d.members.changeRole(principalOf(principal), params.workspace_id, params.person_id, body.role)) }),
    }),
    defineRoute({
      id: 'team.members.remove',
      method: 'delete',
      path: '/api/workspaces/:workspace_id/members/:person_id',
      summary: 'Remove a member (owners are never removed; only owners remove admins).',
      tags: TEAM_TAGS,
      ...TEAM_ADMIN_KEY,
      params: s.memberParams,
      responses: { 200: { description: 'The member removed, as they were.', schema: memberRemovedResponse } },
      handler: async ({ principal, params }) => {
        const removed = await d.members.remove(principalOf(principal), params.workspace_id, params.person_id);
        return ok({ removed: true, member: memberView(removed) });
      },
    }),
    defineRoute({
      id: 'team.members.leave',
      method: 'post',
      path: '/api/workspaces/:workspace_id/leave',
      fullAccess: true,
      summary: "Leave the workspace (its only owner cannot: no route makes another owner).",
      tags: TEAM_TAGS,
      ...PERSON_ONLY,
      params: s.workspaceParams,
      body: s.emptyBody,
      example: {},
      responses: { 200: { description: 'The workspace left and the role held there.', schema: leftResponse } },
      handler: async ({ principal, params }) => {
        const left = await d.members.leave(principalOf(principal), params.workspace_id);
        return ok({ left: true, workspace_id: params.workspace_id, role: left.role });
      },
    }),
    defineRoute({
      id: 'team.audit.list',
      method: 'get',
      path: '/api/workspaces/:workspace_id/audit-log',
      summary: 'Team changes and refused attempts, newest first (owners and admins, or a team:admin key whose creator is one).',
      tags: TEAM_TAGS,
      ...TEAM_ADMIN_KEY,
      params: s.workspaceParams,
      query: s.auditListQuery,
      responses: { 200: { description: 'A page of the audit log, newest first.', schema: auditListResponse } },
      handler: async ({ principal, params, query }) => ok(await d.members.auditLog(principalOf(principal), params.workspace_id, query.limit, query.cursor, query.outcome)),
    }),
  ];
}
