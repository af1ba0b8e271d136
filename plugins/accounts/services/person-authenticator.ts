import type { Request } from 'express';
import { decodeJwt, jwtVerify } from 'jose';
import type { Authenticator, Principal } from '../../../core/auth';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { clientIp } from '../../../core/address';
import { ApiError } from '../../../core/errors';
import { notOwnOrigin } from '../../../core/http/origin';
import { credentialOf, emptyWorkspaceHeader, FULL_ACCESS, invalidCredentials, looksLikeJwt, MEMBERSHIP_WORKSPACE, notAMember, personPrincipal } from '../../identity';
import type { FailedAuthGuard, Role, WorkspaceRow } from '../../identity';
import type { People } from './people';
import { clearedSessionCookie, PERSON_TOKEN_AUDIENCE, SESSION_COOKIE } from './sessions';
import type { Sessions } from './sessions';

export function readCookie(req: Request, name: string): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    const raw = v.join('=');
    try {
      return decodeURIComponent(raw);
    } catch {
      // Not percent-encoding this service ever wrote, so no session's cookie: passed on as sent,
      // it is refused as any unknown session is.
      return raw;
    }
  }
  return null;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const STATUS_RANK = { active: 0, restricted: 1, suspended: 2, rejected: 3 } as const;

/** A person's credential as sent: a person token (bearer value), or the session cookie. */
type PersonCredential = { kind: 'person_token'; token: string } | { kind: 'session'; cookie: string };

/**
 * The person credential a request carries, unchecked: a bearer JWT with the person audience, or
 * (with no x-api-key or bearer value) the session cookie. Null for anything else, which another
 * authenticator reads.
 */
function personCredentialOf(req: Request): PersonCredential | null {
  const cred = credentialOf(req);
  if (cred?.source === 'bearer' && looksLikeJwt(cred.value)) {
    let aud: unknown;
    try {
      aud = decodeJwt(cred.value).aud;
    } catch {
      return null;
    }
    return aud === PERSON_TOKEN_AUDIENCE ? { kind: 'person_token', token: cred.value } : null;
  }
  if (cred) return null;
  const cookie = readCookie(req, SESSION_COOKIE);
  return cookie ? { kind: 'session', cookie } : null;
}

/**
 * People: the session cookie, or a person token (JWT bound to a session) as a bearer value. The
 * workspace acted in is `x-workspace-id` when sent (must be a membership), else the default one.
 * Like every credential, a person's is refused (429) from an address that sent too many rejected
 * credentials, before it is checked, and each one rejected counts.
 */
export class PersonAuthenticator implements Authenticator {
  readonly name = 'person';

  constructor(
    private readonly sessions: Sessions,
    private readonly people: People,
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly secret: Uint8Array,
    private readonly failures: FailedAuthGuard,
    private readonly ownOrigin: () => string,
    private readonly secureCookies: boolean,
  ) {}

  async authenticate(req: Request): Promise<Principal | null> {
    const sent = personCredentialOf(req);
    if (!sent) return null;
    // A browser sends the cookie with a page of another site's request too. SameSite=Lax keeps it off
    // cross-site POSTs in today's browsers; this refuses one that arrives anyway (an older browser, a
    // sibling subdomain, a page on another port of this machine, which is the same site), whatever body
    // type it smuggled JSON in.
    if (sent.kind === 'session' && !SAFE_METHODS.has(req.method) && notOwnOrigin(req, this.ownOrigin())) {
      throw new ApiError('forbidden', 'A change sent with a session cookie from a page other than the service\'s own is refused.', {
        hint: "Make changes from the service's own pages, or from a program with a person token (Authorization: Bearer) or an API key.",
        fields: { reason: 'cross-site request with a session cookie' },
      });
    }
    return this.failures.attempt(clientIp(req), () => this.principalOf(sent, req));
  }

  private async principalOf(sent: PersonCredential, req: Request): Promise<Principal> {
    let personId: string;
    let sessionId: string;
    let scopes: readonly string[] = FULL_ACCESS;
    if (sent.kind === 'person_token') {
      let payload: { sub?: string; sid?: unknown; scope?: unknown };
      try {
        ({ payload } = await jwtVerify(sent.token, this.secret, { audience: PERSON_TOKEN_AUDIENCE, algorithms: ['HS256'], currentDate: new Date(this.clock.now()) }));
      } catch (err) {
        const expired = (err as { code?: string }).code === 'ERR_JWT_EXPIRED';
        throw invalidCredentials(expired ? 'The person token has expired.' : 'The person token is not valid.', 'Sign in again (POST /api/auth/signin) for a fresh token.');
      }
      const session = typeof payload.sid === 'string' ? await this.sessions.byId(payload.sid) : null;
      if (!session || session.person_id !== payload.sub) throw invalidCredentials('The session behind this person token has ended.', 'Sign in again (POST /api/auth/signin).');
      personId = session.person_id;
      sessionId = session.id;
      if (typeof payload.scope === 'string') scopes = payload.scope.split(' ').filter((s) => (FULL_ACCESS as readonly string[]).includes(s));
    } else {
      const session = await this.sessions.byCookie(sent.cookie);
      // Cleared, so a browser whose session was ended elsewhere stops sending it (each one sent counts as a rejected credential).
      if (!session) throw invalidCredentials('The session has ended.', 'Sign in again (POST /api/auth/signin).').with({ headers: { 'Set-Cookie': clearedSessionCookie(this.secureCookies) } });
      personId = session.person_id;
      sessionId = session.id;
    }

    const person = await this.people.get(personId);
    if (!person) throw invalidCredentials('This account no longer exists.');
    const asked = req.headers['x-workspace-id'];
    // Sent with nothing in it (an empty variable), it meant to name a workspace: acting in the default one instead could
    // change the wrong workspace, so it is refused, as an empty x-api-key is.
    if (typeof asked === 'string' && asked.trim() === '') {
      throw emptyWorkspaceHeader('Name one of your workspaces in it (GET /api/user lists them), or leave the header out to act in your default workspace.');
    }
    // A team route names its workspace in the path: without the header, a person who is a member of
    // it acts there. One who is not acts in their default workspace, so the route answers its own
    // 404 and records the refused attempt there.
    const named = (req.params as Record<string, string | undefined> | undefined)?.['workspace_id'];
    const inPath = asked === undefined && named ? await this.membership(named, personId) : null;
    const workspaceId = typeof asked === 'string' ? asked : person.default_workspace_id;
    const row = inPath ?? (workspaceId ? await this.membership(workspaceId, personId) : null);
    if (!row) {
      throw notAMember();
    }
    // A suspended or rejected person acts as restricted as their account is.
    const status = STATUS_RANK[person.status] > STATUS_RANK[row.status] ? person.status : row.status;
    return personPrincipal({ personId, sessionId, workspace: { ...row, status }, role: row.role, authMethod: sent.kind, scopes, email: person.email });
  }

  /** The workspace with the person's role in it, when they are a member (of a test workspace: of its parent). */
  private membership(workspaceId: string, personId: string): Promise<(WorkspaceRow & { role: Role }) | null> {
    return this.sql.one<WorkspaceRow & { role: Role }>(`SELECT w.*, m.role FROM workspaces w JOIN memberships m ON m.workspace_id = ${MEMBERSHIP_WORKSPACE} WHERE w.id = $1 AND m.person_id = $2`, [
      workspaceId,
      personId,
    ]);
  }
}
