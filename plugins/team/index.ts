import type { PluginDefinition } from '../../core/plugin';
import { IDENTITY } from '../identity';
import type { AuditLog, KeyService, Workspaces } from '../identity';
import { invitationRoutes } from './routes/invitations';
import { memberRoutes } from './routes/members';
import { ActorResolver } from './services/actors';
import { Invitations } from './services/invitations';
import { Members } from './services/members';
import { TEAM_ADMIN } from './services/actors';
import { TeamKeyAuthorizer, TeamStatusAuthorizer } from './services/restrictions';
import { TeamTrail } from './services/trail';
import { TEAM } from './tokens';

export { TEAM } from './tokens';
export type { Invitations, InvitationRow } from './services/invitations';
export type { Members } from './services/members';

/**
 * The team of a workspace: invitations (with one-time accept tokens), members and roles, leaving,
 * and the audit log of changes and refused attempts. People act by their role; an API key acts
 * only when it names team:admin, as its creator.
 */
export const teamPlugin: PluginDefinition = {
  name: 'team',
  description: 'Team invitations, members and roles, leaving, and the team audit log.',
  dependsOn: ['identity', 'accounts'],
  register(ctx) {
    const { config, sql, clock, container, events, hooks } = ctx;
    const audit = container.resolve<AuditLog>(IDENTITY.Audit);
    const trail = new TeamTrail(audit, sql, ctx.log);
    const actors = new ActorResolver(container.resolve<Workspaces>(IDENTITY.Workspaces));
    const invitations = new Invitations(sql, clock, config, actors, trail);
    const members = new Members(sql, actors, trail, invitations, container.resolve<KeyService>(IDENTITY.Keys));
    container.register(TEAM.Invitations, { useValue: invitations });
    container.register(TEAM.Members, { useValue: members });

    events.on('api_key.revoked', 'team', async ({ keyId, reason, by }) => {
      const n = await invitations.cancelForKey(keyId, reason, by);
      if (n > 0) ctx.log.info({ keyId, cancelled: n }, 'cancelled pending invitations of a revoked key');
    });

    const deps = { invitations, members, publicUrl: ctx.publicUrl, now: () => clock.now() };
    const routes = [...invitationRoutes(deps), ...memberRoutes(deps)];
    // Restricted accounts cannot change team membership: checked (and recorded) ahead of the
    // identity authorizer, which would refuse suspended workspaces without a record.
    const changing = new Set(routes.filter((r) => r.method !== 'get').map((r) => r.id));
    hooks.authorizers.unshift(new TeamStatusAuthorizer(sql, trail, changing));
    // After the identity authorizer: a key that may not use these routes is refused before its body is read.
    hooks.authorizers.push(new TeamKeyAuthorizer(actors, trail, new Set(routes.filter((r) => r.handlerScopes?.includes(TEAM_ADMIN)).map((r) => r.id))));
    for (const route of routes) ctx.route(route);
  },
};
