import type { Request } from 'express';
import type { Transaction } from 'sequelize';
import type { Principal } from '../../../core/auth';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import type { Authorizer } from '../../../core/hooks';
import type { RouteSpec } from '../../../core/http/route';
import { personBehind } from './actors';
import type { ActorResolver } from './actors';
import type { TeamTrail } from './trail';

type Status = 'active' | 'suspended' | 'rejected' | 'restricted';

export function accountRestricted(reason: string): ApiError {
  return new ApiError('account_restricted', `Team membership cannot change: ${reason}.`, {
    hint: 'Restricted, suspended and rejected accounts cannot change team membership, including leaving. Contact support to have the account reviewed.',
    fields: { reason },
  });
}

/**
 * Why team membership cannot change for `personId` in `workspaceId` (the workspace's status, or the
 * person's), read fresh from the database; null when both are active.
 */
export async function restrictionOf(sql: Sql, workspaceId: string, personId: string | null, who: 'your' | "the key creator's" | "the invited person's" | "the inviter's", tx?: Transaction): Promise<string | null> {
  const row = await sql.one<{ workspace_status: Status; person_status: Status | null }>(
    'SELECT w.status AS workspace_status, p.status AS person_status FROM workspaces w LEFT JOIN people p ON p.id = $2 WHERE w.id = $1',
    [workspaceId, personId],
    tx,
  );
  if (!row) return null;
  if (row.workspace_status !== 'active') return `the workspace is ${row.workspace_status}`;
  if (row.person_status && row.person_status !== 'active') return `${who} account is ${row.person_status}`;
  return null;
}

/** What a team attempt refused before its handler is recorded against: the workspace, and the member or invitation named. */
function attemptScope(principal: Principal, req: Request): { workspaceId: string; target: string | null } {
  const params = req.params as Record<string, string | undefined>;
  return { workspaceId: principal.workspaceId, target: params.person_id ?? params.invitation_id ?? null };
}

/**
 * Runs before the identity authorizer on the team's changing routes, so that an account that may
 * not change team membership gets 403 `account_restricted` with a reason and the attempt is
 * recorded (the identity authorizer alone would refuse suspended and rejected workspaces without a
 * record, and lets `restricted` through).
 */
export class TeamStatusAuthorizer implements Authorizer {
  readonly name = 'team-status';

  constructor(
    private readonly sql: Sql,
    private readonly trail: TeamTrail,
    private readonly changingRoutes: ReadonlySet<string>,
  ) {}

  async authorize(principal: Principal, route: RouteSpec, req: Request): Promise<void> {
    if (!this.changingRoutes.has(route.id)) return;
    const personId = personBehind(principal);
    const reason = await restrictionOf(this.sql, principal.workspaceId, personId, principal.kind === 'api_key' ? "the key creator's" : 'your');
    if (!reason) return;
    const err = accountRestricted(reason);
    await this.trail.refused(principal, attemptScope(principal, req), route.id, err);
    throw err;
  }
}

/**
 * Runs before the body is read on the routes a key uses only when it names team:admin (`handlerScopes`), so that a key
 * or token that may never use them hears that first (docs/identity.md: credential, then permissions, then the body),
 * not "email: required". The refusal is recorded as the service records its own. People act by role: their role is
 * checked by the service, with what they sent.
 */
export class TeamKeyAuthorizer implements Authorizer {
  readonly name = 'team-key';

  constructor(
    private readonly actors: Pick<ActorResolver, 'resolve'>,
    private readonly trail: TeamTrail,
    private readonly keyRoutes: ReadonlySet<string>,
  ) {}

  async authorize(principal: Principal, route: RouteSpec, req: Request): Promise<void> {
    if (!this.keyRoutes.has(route.id) || principal.kind === 'person') return;
    try {
      await this.actors.resolve(principal);
    } catch (err) {
      if (err instanceof ApiError) await this.trail.refused(principal, attemptScope(principal, req), route.id, err);
      throw err;
    }
  }
}
