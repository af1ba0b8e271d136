import type { Transaction } from 'sequelize';
import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { CONFIGURATION_ACCESS, fullAccessRequired, identityOf, insufficientScope, lackingFullAccess } from '../../identity';
import type { AuditEntry, Role, Workspaces } from '../../identity';
import type { Actor } from './policy';

export const TEAM_ADMIN = 'team:admin';

const NOT_FOUND_HINT = 'Use your own workspace id (tenant_id from GET /api/me); people choose among their workspaces with the x-workspace-id header.';

/** Any workspace id other than the caller's own answers 404, whether or not it exists. */
export function assertOwnWorkspace(principal: Principal, workspaceId: string): void {
  if (principal.workspaceId !== workspaceId) throw new ApiError('not_found', 'No workspace with this id.', { hint: NOT_FOUND_HINT, fields: { reason: 'not your workspace' } });
}

/** The person a credential speaks for: the signed-in person, or the creator of an API key. */
export function personBehind(principal: Principal): string | null {
  if (principal.kind === 'person') return principal.personId ?? null;
  if (principal.kind === 'api_key') return identityOf(principal).creatorPersonId ?? null;
  return null;
}

/** Who the audit log names for a principal (the key itself for keys, with the person it acted as). */
export function auditActor(principal: Principal): Pick<AuditEntry, 'actorType' | 'actorId' | 'viaKeyId'> {
  switch (principal.kind) {
    case 'person':
      return { actorType: 'person', actorId: principal.personId ?? 'unknown' };
    case 'api_key':
      return { actorType: 'api_key', actorId: principal.keyId ?? 'unknown', viaKeyId: principal.keyId ?? null };
    case 'access_token': {
      const keyId = identityOf(principal).tokenOfKeyId ?? principal.keyId ?? null;
      return { actorType: 'access_token', actorId: keyId ?? 'unknown', viaKeyId: keyId };
    }
    default:
      return { actorType: 'system', actorId: principal.kind };
  }
}

/**
 * Turns a principal into the actor of a team operation, or refuses it with 403
 * `insufficient_scope` naming `team:admin`:
 * - a person acts by their current membership role;
 * - an API key acts only when it names `team:admin` itself, and then as its creator with the
 *   creator's current role, which must be owner or admin;
 * - anything else (access tokens, unnamed or legacy keys, sandbox keys, other credentials) is refused.
 */
export class ActorResolver {
  constructor(private readonly workspaces: Pick<Workspaces, 'roleOf' | 'get'>) {}

  /** The person's role (in a test workspace, their role in its parent). */
  roleOf(workspaceId: string, personId: string, tx?: Transaction): Promise<Role | null> {
    return this.workspaces.roleOf(workspaceId, personId, tx);
  }

  async resolve(principal: Principal, tx?: Transaction): Promise<Actor> {
    const id = identityOf(principal);
    // A test workspace has no members of its own (docs/identity.md): its team is managed where it lives, at the parent.
    const ws = await this.workspaces.get(principal.workspaceId, tx);
    if (ws?.is_test && ws.parent_id) {
      throw new ApiError('conflict', "A test workspace has no team of its own: it shares its parent workspace's team.", {
        hint:
          principal.kind === 'person'
            ? `Manage the team at /api/workspaces/${ws.parent_id}/… with x-workspace-id: ${ws.parent_id}; its members act in this test workspace with their role there.`
            : `Manage the team at /api/workspaces/${ws.parent_id}/… with a team:admin key made in that workspace (a key acts in the workspace it was made in); its members act in this test workspace with their role there.`,
        fields: { reason: 'test workspace', parent_workspace_id: ws.parent_id },
      });
    }
    if (principal.kind === 'person') {
      // A person acts by role only with full access: a token narrowed to a few scopes is for a
      // script doing less than its person may, and no narrowed token can carry team:admin.
      const lacking = lackingFullAccess(principal);
      if (lacking.length > 0) throw fullAccessRequired(CONFIGURATION_ACCESS, lacking, 'Managing the team', 'person_token');
      const personId = principal.personId;
      const role = personId ? await this.roleOf(principal.workspaceId, personId, tx) : null;
      if (!personId || !role) throw new ApiError('forbidden', 'You are not a member of this workspace.', { hint: 'Choose one of your workspaces with x-workspace-id.', fields: { reason: 'not a member' } });
      return { kind: 'person', workspaceId: principal.workspaceId, personId, role, keyId: null };
    }
    if (principal.kind === 'access_token') {
      throw insufficientScope([TEAM_ADMIN], 'team:admin must be used with the key itself; a token made from the key is refused. Send the key in x-api-key.');
    }
    if (principal.kind !== 'api_key' || !principal.keyId) {
      throw insufficientScope([TEAM_ADMIN], 'The team is managed by people (session or person token) or by an API key that names team:admin.');
    }
    if (id.sandbox) throw insufficientScope([TEAM_ADMIN], 'An unclaimed agent workspace never holds team:admin.');
    if (!(id.namedScopes ?? []).includes(TEAM_ADMIN)) {
      throw insufficientScope(
        [TEAM_ADMIN],
        'team:admin is granted by name only: a key with no scopes, a wildcard or a legacy choice does not carry it. A workspace owner or admin can create a key naming it (POST /api/api-keys {"name": "…", "scopes": ["team:admin"]}).',
      );
    }
    const creator = id.creatorPersonId ?? null;
    const role = creator ? await this.roleOf(principal.workspaceId, creator, tx) : null;
    if (!creator || (role !== 'owner' && role !== 'admin')) {
      throw insufficientScope(
        [TEAM_ADMIN],
        "team:admin holds only while the key's creator is an owner or admin of this workspace, which is no longer the case.",
        "This key names team:admin, but it no longer holds: the key's creator is not an owner or admin of this workspace.",
      );
    }
    return { kind: 'api_key', workspaceId: principal.workspaceId, personId: creator, role, keyId: principal.keyId };
  }
}
