import type { PluginDefinition } from '../../core/plugin';
import { IDENTITY } from '../identity';
import type { AuditLog, IdempotencyKeys, KeyService, Workspaces } from '../identity';
import { FailedAuthGuard } from '../identity';
import { agentRoutes } from './routes/agents';
import { authRoutes } from './routes/auth';
import { keyRoutes } from './routes/keys';
import { userRoutes } from './routes/user';
import { personTokenRoutes } from './routes/person-tokens';
import { People } from './services/people';
import { PersonAuthenticator } from './services/person-authenticator';
import { Sessions, secureSessionCookies } from './services/sessions';
import { WalletSignIn } from './services/wallet-signin';
import { ACCOUNTS } from './tokens';

export { ACCOUNTS } from './tokens';
export type { People, PersonRow } from './services/people';
export type { Sessions } from './services/sessions';
export type { IdentityProvider, ProviderIdentity } from './provider';

/**
 * People: sign-up and sign-in (email and password, wallet), sessions and person tokens, and the
 * person-only routes (API keys, agents, agent keys).
 */
export const accountsPlugin: PluginDefinition = {
  name: 'accounts',
  description: 'People, sign-in, sessions, API key and agent management.',
  dependsOn: ['identity'],
  async register(ctx) {
    const { config, sql, kv, clock, container, hooks, events } = ctx;
    const keys = container.resolve<KeyService>(IDENTITY.Keys);
    const workspaces = container.resolve<Workspaces>(IDENTITY.Workspaces);
    const audit = container.resolve<AuditLog>(IDENTITY.Audit);
    const secret = container.resolve<Uint8Array>(IDENTITY.TokenSecret);
    const idempotency = container.resolve<IdempotencyKeys>(IDENTITY.Idempotency);
    const people = new People(sql, kv, workspaces, clock, config);
    const sessions = new Sessions(sql, kv, clock, secret, config.identity.sessionTtlHours, config.identity.personTokenTtlS, config.identity.credentialCacheMaxEntries);
    await sessions.start();
    ctx.onClose(() => sessions.stop());
    const wallets = new WalletSignIn(kv, clock, ctx.publicUrl);
    container.register(ACCOUNTS.People, { useValue: people });
    container.register(ACCOUNTS.Sessions, { useValue: sessions });

    const failures = new FailedAuthGuard(kv, config.limits.rateLimit.failedAuthPerAddressPer15Min, config.limits.rateLimit.ipv6Prefix);
    const ownOrigin = () => new URL(ctx.publicUrl()).origin;
    hooks.addAuthenticator(new PersonAuthenticator(sessions, people, sql, clock, secret, failures, ownOrigin, secureSessionCookies(config)));
    const deps = { config, sql, people, sessions, wallets, keys, workspaces, audit, failures, idempotency, ownOrigin };
    for (const route of [...authRoutes(deps), ...userRoutes(deps), ...personTokenRoutes(deps), ...keyRoutes(deps, events), ...agentRoutes(deps, events)]) ctx.route(route);
  },
};
