import { ApiError } from '../../../core/errors';
import { defineRoute, ok } from '../../../core/http/route';
import { badCursor, decodeTimeCursor, listEnvelope } from '../../../core/pagination';
import type { RouteSpec } from '../../../core/http/route';
import * as r from '../responses';
import * as s from '../schemas';
import { personView } from '../services/people';
import { clearedSessionCookie, secureSessionCookies } from '../services/sessions';
import type { AccountsDeps } from './deps';

// Any UUID in its text form (RFC 9562), the nil and max UUIDs included: one no session holds is not found (404), not malformed.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function assertUuid(value: unknown, path: string): asserts value is string {
  if (typeof value !== 'string' || !UUID.test(value)) {
    throw new ApiError('invalid_session_id', 'Invalid session ID format', { issues: [{ path, reason: 'must be a UUID' }], hint: 'Session ids are UUIDs as listed by GET /api/user/sessions.' });
  }
}

/** currentSessionId from the query or the body (the same in both when sent twice), checked to be one UUID. */
function sessionToKeep(fromQuery: unknown, fromBody: unknown): string | undefined {
  if (Array.isArray(fromQuery)) {
    throw new ApiError('invalid_session_id', 'Invalid session ID format', { issues: [{ path: 'currentSessionId', reason: 'must be one UUID, sent once' }], hint: 'Name one session to keep.' });
  }
  if (fromQuery !== undefined) assertUuid(fromQuery, 'currentSessionId');
  // The bare field, as every validation error names it: the query and the body carry one parameter.
  if (fromBody !== undefined) assertUuid(fromBody, 'currentSessionId');
  // A UUID is one value in either case: the canonical (lower-case) form is compared, kept and answered.
  const query = typeof fromQuery === 'string' ? fromQuery.toLowerCase() : undefined;
  const sent = typeof fromBody === 'string' ? fromBody.toLowerCase() : undefined;
  if (query !== undefined && sent !== undefined && query !== sent) {
    throw new ApiError('validation_error', 'currentSessionId is sent twice with two values.', {
      issues: [{ path: 'currentSessionId', reason: 'differs from the query parameter' }],
      hint: 'Send it once, in the query or in the body.',
    });
  }
  return query ?? sent;
}

export function userRoutes(d: AccountsDeps): RouteSpec[] {
  // The caller's own session ended: its cookie is cleared, as signing out clears it, so a browser does not send a dead
  // cookie whose 401s count against its address's failed credentials.
  const endedOwn = (ended: boolean): Record<string, string> | undefined => (ended ? { 'Set-Cookie': clearedSessionCookie(secureSessionCookies(d.config)) } : undefined);
  const personOf = (p: { personId?: string } | null): string => {
    if (!p?.personId) throw new ApiError('unauthorized', 'Sign in first.');
    return p.personId;
  };
  return [
    defineRoute({
      id: 'user.read',
      method: 'get',
      path: '/api/user',
      summary: 'Your account, your workspaces and roles, and linked wallets.',
      tags: ['People'],
      accepts: ['person'],
      responses: { 200: { description: 'Your account, workspaces and wallets.', schema: r.userResponse } },
      handler: async ({ principal }) => {
        const id = personOf(principal);
        const person = await d.people.get(id);
        if (!person) throw new ApiError('not_found', 'Account not found.');
        return ok({ person: personView(person), workspaces: await d.people.memberships(id), wallets: await d.people.wallets(id), current_workspace_id: principal?.workspaceId });
      },
    }),
    defineRoute({
      id: 'user.wallets.list',
      method: 'get',
      path: '/api/user/wallets',
      summary: 'Wallets linked to your account.',
      tags: ['People'],
      accepts: ['person'],
      responses: { 200: { description: 'Your linked wallets.', schema: r.walletListResponse } },
      handler: async ({ principal }) => {
        // Never paged (a person links a handful): the list envelope whole, as every list answers.
        const data = await d.people.wallets(personOf(principal));
        return ok({ object: 'list', data, has_more: false, next_cursor: null, limit: data.length });
      },
    }),
    defineRoute({
      id: 'user.sessions.list',
      method: 'get',
      path: '/api/user/sessions',
      summary: 'Your open sessions, newest first, a page at a time.',
      tags: ['People'],
      accepts: ['person'],
      query: s.sessionListQuery,
      responses: { 200: { description: 'A page of your open sessions.', schema: r.sessionListResponse } },
      handler: async ({ principal, query }) => {
        const after = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor);
        // The cursor's id goes to a uuid column: one that is not a UUID was not issued here.
        if (after && !UUID.test(after.id)) throw badCursor();
        const rows = await d.sessions.list(personOf(principal), query.limit, after);
        return ok(
          listEnvelope(
            rows,
            query.limit,
            (r) => ({
              id: r.id,
              method: r.method,
              user_agent: r.user_agent,
              created_at: new Date(r.created_at).toISOString(),
              expires_at: new Date(r.expires_at).toISOString(),
              current: r.id === principal?.sessionId,
            }),
            (r) => ({ sort: r.sort_key, id: r.id }),
          ),
        );
      },
    }),
    defineRoute({
      id: 'user.sessions.revokeAll',
      method: 'delete',
      path: '/api/user/sessions',
      fullAccess: true,
      summary: 'End all your sessions, except currentSessionId when given (query parameter or JSON body, a UUID naming one of your open sessions).',
      tags: ['People'],
      givesUpAccess: true,
      accepts: ['person'],
      query: s.revokeAllQuery,
      body: s.revokeAllBody,
      example: s.revokeAllExample,
      responses: { 200: { description: 'How many sessions ended, and the one kept.', schema: r.revokeAllSessionsResponse } },
      handler: async ({ principal, query, body }) => {
        const personId = personOf(principal);
        const keep = sessionToKeep(query.currentSessionId, body.currentSessionId);
        const ended = await d.sessions.revokeAll(personId, keep);
        // Keeping a session that is not open would end every one, the caller's own included, while
        // the answer says one was kept: refused, nothing ended.
        if (ended === null) {
          throw new ApiError('not_found', 'No open session of yours has this id: nothing was ended.', {
            issues: [{ path: 'currentSessionId', reason: 'names no open session of yours' }],
            hint: 'Send the id of the session to keep as listed by GET /api/user/sessions (the one marked current is this one), or leave currentSessionId out to end every session.',
          });
        }
        const own = principal?.sessionId;
        return ok({ revoked: ended, kept: keep ?? null }, endedOwn(own !== undefined && own !== keep));
      },
    }),
    defineRoute({
      id: 'user.sessions.revoke',
      method: 'delete',
      path: '/api/user/sessions/:sessionId',
      fullAccess: true,
      summary: 'End one of your sessions.',
      tags: ['People'],
      givesUpAccess: true,
      accepts: ['person'],
      params: s.uuidParam,
      responses: { 200: { description: 'The session is ended.', schema: r.revokeSessionResponse } },
      handler: async ({ principal, params }) => {
        assertUuid(params.sessionId, 'sessionId');
        const id = params.sessionId.toLowerCase();
        const done = await d.sessions.revoke(personOf(principal), id);
        if (!done) {
          // Ended already (signed out, expired), another person's, or never issued: one answer, as for currentSessionId.
          throw new ApiError('not_found', 'No open session of yours has this id.', {
            issues: [{ path: 'sessionId', reason: 'names no open session of yours' }],
            hint: 'GET /api/user/sessions lists your open sessions with their ids (the one marked current is this one); a session that was signed out, ended or expired is gone already.',
          });
        }
        return ok({ revoked: id }, endedOwn(id === principal?.sessionId));
      },
    }),
  ];
}
