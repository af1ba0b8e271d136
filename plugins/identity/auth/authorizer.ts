import type { Request } from 'express';
import type { Principal } from '../../../core/auth';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import type { Authorizer } from '../../../core/hooks';
import { openApiPath } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { CONFIGURATION_ACCESS, NAME_ONLY_SCOPES } from '../scopes';
import type { Scope } from '../scopes';
import { fullAccessRequired, insufficientScope, sandboxRefusal } from '../errors';
import { credentialKind, identityOf, lackingFullAccess } from './principal';

const READ_METHODS = new Set(['get', 'head']);
const READ_ONLY_STATUSES: ReadonlySet<string> = new Set(['suspended', 'rejected']);

/**
 * SPEC's "Scopes", "Permissions granted by name only", the sandbox capabilities and account
 * status, checked for every authenticated request before the handler runs.
 */
export class IdentityAuthorizer implements Authorizer {
  readonly name = 'identity';

  constructor(
    private readonly sql: Sql,
    /** Whether a sandbox can be claimed here (claimOffered): its refusals offer the claim only then. */
    private readonly claimOffered: boolean,
  ) {}

  async authorize(principal: Principal, route: RouteSpec, _req: Request): Promise<void> {
    const id = identityOf(principal);
    // A route carrying several operations (MCP) is a read here: its handler refuses each write itself (readOnlyRefusal).
    if (!READ_METHODS.has(route.method) && !route.givesUpAccess && !route.authorizesEachOperation) {
      const refusal = readOnlyRefusal(principal);
      if (refusal) throw refusal;
    }
    if (id.sandbox && !route.sandbox) {
      const operation = `${route.method.toUpperCase()} ${openApiPath(route.path)}`;
      throw sandboxRefusal(`use ${operation}`, this.claimOffered, { operation, summary: sentenceTail(route.summary) });
    }

    if (route.fullAccess) {
      const lacking = lackingFullAccess(principal);
      if (lacking.length > 0) throw fullAccessRequired(CONFIGURATION_ACCESS, lacking, `${route.method.toUpperCase()} ${openApiPath(route.path)}`, credentialKind(principal));
    }
    const required = route.scopes ?? [];
    if (required.length === 0) return;
    const nameOnly = required.filter((s) => NAME_ONLY_SCOPES.includes(s as Scope));
    const ordinary = required.filter((s) => !NAME_ONLY_SCOPES.includes(s as Scope));

    const missing = ordinary.filter((s) => !(principal.scopes ?? []).includes(s));
    if (missing.length > 0) throw insufficientScope(missing, missingScopeHint(principal));
    // People act by their role; the handler checks it. Keys must name the permission themselves.
    if (principal.kind === 'person' || nameOnly.length === 0) return;
    if (principal.kind !== 'api_key') {
      throw insufficientScope(nameOnly, `${nameOnly.join(' and ')} must be used with the key itself; a token made from the key is refused.`);
    }
    if (id.sandbox) throw insufficientScope(nameOnly, 'An unclaimed agent workspace never holds this permission.');
    const notNamed = nameOnly.filter((s) => !(id.namedScopes ?? []).includes(s));
    if (notNamed.length > 0) {
      throw insufficientScope(notNamed, `${notNamed.join(' and ')} is granted by name only: a key with no scopes, a wildcard or a legacy choice does not carry it. A workspace owner or admin can create a key naming it.`);
    }
    const role = id.creatorPersonId
      ? await this.sql.one<{ role: string }>('SELECT role FROM memberships WHERE workspace_id = $1 AND person_id = $2', [principal.workspaceId, id.creatorPersonId])
      : null;
    if (!role || (role.role !== 'owner' && role.role !== 'admin')) {
      throw insufficientScope(
        nameOnly,
        `${nameOnly.join(' and ')} holds only while the key's creator is an owner or admin of this workspace, which is no longer the case.`,
        `This key names ${nameOnly.join(' and ')}, but it no longer holds: the key's creator is not an owner or admin of this workspace.`,
      );
    }
  }
}

/** Where the holder of `principal` gets a scope it lacks, by the kind of credential it sent. */
export function missingScopeHint(principal: Principal): string {
  if (principal.kind === 'access_token') return 'Access tokens carry the scopes they were minted with (never more than their key); request a token with the scope, from a key that has it.';
  if (principal.kind === 'person') return 'A person token narrowed with POST /api/user/tokens does only the work its scopes name: mint one with this scope, or use your session.';
  // Keys are made by people (POST /api/api-keys takes a session or person token, never a key).
  return 'Use a key with this scope, or one created with no scopes: a person of the workspace creates it (POST /api/api-keys, with their session or person token).';
}

/**
 * Why `principal` may only read, or null when it may write: its account (for a person, the stricter of theirs and the
 * workspace's) is suspended or rejected, or the person who created the key is.
 */
export function readOnlyRefusal(principal: Principal): ApiError | null {
  const id = identityOf(principal);
  // For a person the status is the stricter of theirs and the workspace's (person-authenticator).
  if (READ_ONLY_STATUSES.has(id.workspaceStatus)) {
    return new ApiError('account_restricted', `This account is ${id.workspaceStatus}; it can only read, sign out, end sessions and revoke keys.`, {
      hint: 'Contact support to have the account reviewed.',
      fields: { reason: `account ${id.workspaceStatus}` },
    });
  }
  // A key acts for the person who made it: their own session is refused, so are their keys.
  if (id.creatorStatus && READ_ONLY_STATUSES.has(id.creatorStatus)) {
    return new ApiError('account_restricted', `The account of the person who created this key is ${id.creatorStatus}; the key can only read (a person of the workspace revokes it).`, {
      hint: 'Use a key created by an active member of this workspace, or contact support to have the account reviewed.',
      fields: { reason: `key creator's account ${id.creatorStatus}` },
    });
  }
  return null;
}

/** A route summary as the end of a sentence: first letter lowered (unless an acronym), no final period. */
function sentenceTail(summary: string): string {
  const text = summary.replace(/\.$/, '');
  return /^[A-Z][a-z]/.test(text) ? text.charAt(0).toLowerCase() + text.slice(1) : text;
}
