import { ApiError } from '../../../core/errors';
import type { Role } from '../../identity';

/**
 * Who acts on the team. A person acts by their own membership role; a `team:admin` key acts as its
 * creator, with the creator's current role in the key's workspace.
 */
export interface Actor {
  kind: 'person' | 'api_key';
  workspaceId: string;
  /** The person acting: the signed-in person, or the key's creator. */
  personId: string;
  /** That person's current role in the workspace. */
  role: Role;
  /** The key acting, for `api_key`. */
  keyId: string | null;
}

/** A refusal by the team rules: 403 `forbidden` with a machine-readable reason and a hint. */
export function refuse(reason: string, hint: string, message = `Refused: ${reason}.`): ApiError {
  return new ApiError('forbidden', message, { hint, fields: { reason } });
}

const who = (a: Actor): string => (a.kind === 'api_key' ? "the key's creator" : 'you');

/** Owners and admins manage the team; members only read it and may leave. */
export function assertCanManage(actor: Actor): void {
  if (actor.role === 'owner' || actor.role === 'admin') return;
  throw refuse('members cannot manage the team', 'Ask a workspace owner or admin.', 'Members cannot manage the team; owners and admins can.');
}

/**
 * Whether someone of role `inviter` may invite (or promote) at `role`. Decisions: nobody invites an
 * owner; owners invite admins and members; admins invite members only (an admin may not create
 * admins, which they could then neither demote nor remove); members invite no one.
 */
export function canInviteAt(inviter: Role | null, role: Role): boolean {
  if (role === 'owner' || inviter === null) return false;
  if (role === 'admin') return inviter === 'owner';
  return inviter === 'owner' || inviter === 'admin';
}

export function assertCanInvite(actor: Actor, role: Role): void {
  assertCanManage(actor);
  if (role === 'owner') throw noOwners();
  if (!canInviteAt(actor.role, role)) {
    throw refuse(
      `${who(actor)} (${actor.role}) cannot invite at role ${role}`,
      actor.kind === 'api_key'
        ? 'A team:admin key acts as its creator: only a key created by an owner may invite admins. Invite a member, or have an owner do it.'
        : 'Only owners invite admins; admins invite members.',
    );
  }
}

function noOwners(): ApiError {
  return refuse('nobody can be made an owner through the team routes', 'Invite or set role admin or member.', 'Nobody can be made an owner through the team routes.');
}

/**
 * Who can do what the actor may not do to themselves (for a key, to its creator): nobody changes their own role, so
 * the hint names who may, by the role in question; owners are changed by no one here.
 */
function selfHint(actor: Actor, what: 'change' | 'remove'): string {
  const key = actor.kind === 'api_key';
  const leave = `POST /api/workspaces/${actor.workspaceId}/leave`;
  if (what === 'change') {
    if (actor.role === 'owner') return key ? "The key's creator is an owner, and owners are never changed through the team routes." : 'Owners are never changed through the team routes.';
    return key ? "Only an owner (or a key an owner created) changes an admin's role: ask a workspace owner." : 'Ask an owner to change your role.';
  }
  if (actor.role === 'owner') {
    return key
      ? `The key's creator is an owner: owners are never removed through the team routes, and the owner cannot leave either (no route makes anyone else an owner). ${OWNER_STAYS}`
      : `Owners are never removed through the team routes, and you cannot leave either (no route makes anyone else an owner). ${OWNER_STAYS}`;
  }
  const how = key ? `The creator may leave, signed in as themselves (${leave})` : `Leave the workspace with ${leave}`;
  return key ? `${how}, or a workspace owner may remove them.` : `${how}, or ask a workspace owner to remove you.`;
}

/**
 * What a workspace's owner can do instead of leaving it or being removed. Nothing hands ownership over (no route makes
 * anyone an owner) and no route deletes a workspace, so the hint offers neither: the workspace stays its owner's, who
 * may stop its use and work elsewhere.
 */
export const OWNER_STAYS =
  "The workspace stays its owner's: to stop its use, revoke its keys (DELETE /api/api-keys/{keyId}) and remove its other members (DELETE /api/workspaces/{workspace_id}/members/{person_id}); to work elsewhere, act in another workspace of theirs with x-workspace-id (GET /api/user lists them).";

function assertNotSelfOrOwner(actor: Actor, target: { personId: string; role: Role }, what: 'change' | 'remove'): void {
  if (target.personId === actor.personId) {
    if (actor.kind === 'api_key') throw refuse(`a team:admin key never ${what === 'change' ? 'changes' : 'removes'} its creator`, selfHint(actor, what));
    throw refuse(what === 'change' ? 'you cannot change your own role' : 'you cannot remove yourself', selfHint(actor, what));
  }
  if (target.role === 'owner') {
    throw refuse(
      `the workspace owner cannot be ${what === 'change' ? 'changed' : 'removed'}`,
      'Owners are never changed or removed through the team routes.',
      `The workspace owner cannot be ${what === 'change' ? 'changed' : 'removed'} through the team routes.`,
    );
  }
}

function onlyOwnersTouchAdmins(actor: Actor, verb: 'change' | 'demote' | 'remove'): void {
  if (actor.role === 'owner') return;
  throw refuse(
    actor.kind === 'api_key' ? `only a key created by an owner may ${verb} an admin` : `only owners may ${verb} an admin`,
    actor.kind === 'api_key' ? "This key's creator is an admin; an owner (or a key an owner created) can do this." : 'Ask a workspace owner.',
  );
}

/** Changing a member's role (`newRole` as asked, `owner` included so it can be refused and recorded). */
export function assertCanChangeRole(actor: Actor, target: { personId: string; role: Role }, newRole: Role): void {
  assertCanManage(actor);
  assertNotSelfOrOwner(actor, target, 'change');
  if (newRole === 'owner') throw noOwners();
  if (target.role === 'admin') onlyOwnersTouchAdmins(actor, newRole === 'admin' ? 'change' : 'demote');
  if (newRole === 'admin' && !canInviteAt(actor.role, 'admin')) {
    throw refuse(
      actor.kind === 'api_key' ? 'only a key created by an owner may make someone an admin' : 'only owners may make someone an admin',
      'Admins manage members; an owner grants the admin role.',
    );
  }
}

export function assertCanRemove(actor: Actor, target: { personId: string; role: Role }): void {
  assertCanManage(actor);
  assertNotSelfOrOwner(actor, target, 'remove');
  if (target.role === 'admin') onlyOwnersTouchAdmins(actor, 'remove');
}

/** Revoking an invitation: an admin-level invitation is an owner's business, like admins themselves. */
export function assertCanRevokeInvitation(actor: Actor, invitationRole: Role): void {
  assertCanManage(actor);
  if (invitationRole === 'admin' && actor.role !== 'owner') {
    throw refuse(
      actor.kind === 'api_key' ? 'only a key created by an owner may revoke an admin invitation' : 'only owners may revoke an admin invitation',
      'Ask a workspace owner.',
    );
  }
}

/** Owners and admins read the audit log; members do not. */
export function assertCanReadAudit(actor: Actor): void {
  if (actor.role === 'owner' || actor.role === 'admin') return;
  throw refuse('the audit log is visible only to owners and admins', 'Ask a workspace owner or admin.', 'The audit log is visible only to owners and admins.');
}
