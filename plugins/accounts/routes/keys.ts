import type { Principal } from '../../../core/auth';
import type { EventBus } from '../../../core/events';
import { ApiError } from '../../../core/errors';
import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { decodeTimeCursor, listEnvelope, listQuery } from '../../../core/pagination';
import { z } from 'zod';
import { CONFIGURATION_ACCESS, createIdempotencyHeaders, effectiveScopes, fullAccessRequired, identityOf, insufficientScope, lackingFullAccess, keyView, LEGACY_SCOPES, NAME_ONLY_SCOPES, NAMED_SCOPES, unknownScopes } from '../../identity';
import * as r from '../responses';
import * as s from '../schemas';
import type { AccountsDeps } from './deps';
import { assertManagesAgent } from './agent-access';
import { assertMayRevoke } from './key-access';

const PERSON_ONLY = {
  accepts: ['person'] as const,
  keyManagement: true,
  wrongCredentialMessage: 'API keys are managed by people: this route accepts a person\'s session or person token only, not an API key.',
  wrongCredentialHint: 'Sign in (POST /api/auth/signin) and use the session cookie or Authorization: Bearer <person token>. An agent rotates its own key with POST /api/api-keys/rotate.',
};

/** The expiry asked for on a new key (person's or agent's); one already past would mint a dead key. */
export function requestedExpiry(expiresAt: string | undefined): Date | null {
  if (!expiresAt) return null;
  const at = new Date(expiresAt);
  if (at.getTime() <= Date.now()) {
    throw new ApiError('validation_error', 'expires_at must be in the future.', {
      issues: [{ path: 'expires_at', reason: 'in the past' }],
      hint: 'Send a future ISO 8601 date-time with a time zone (2027-01-01T00:00:00Z), or leave expires_at out for a key that does not expire.',
    });
  }
  return at;
}

/** 400 naming each scope in `names` that is not one (a new key's, a narrower person token's). */
/** `sent` is the list as sent, duplicates included, so each issue's path points at the element the caller wrote. */
export function unknownScopesRefusal(sent: readonly string[], unknown: readonly string[], extras: { hint: string; example: unknown; fields?: Record<string, unknown> }): ApiError {
  return new ApiError('validation_error', `Unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`, {
    issues: unknown.map((u) => ({ path: `scopes.${sent.indexOf(u)}`, reason: `"${u}" is not a scope` })),
    ...extras,
  });
}

/**
 * Checks the scopes a person asks for on a new key: known names only; permissions granted by name
 * only need an owner or admin; a scoped person token may only grant scopes it holds.
 */
export function checkRequestedScopes(principal: Principal, requested: string[] | undefined): { scopes: string[] | null; legacy: boolean } {
  const names = requested && requested.length > 0 ? [...new Set(requested)] : null;
  if (names) {
    const unknown = unknownScopes(names);
    if (unknown.length > 0) {
      throw unknownScopesRefusal(requested ?? names, unknown, {
        hint: `Valid scopes: ${NAMED_SCOPES.join(', ')} (legacy choices ${LEGACY_SCOPES.join(', ')} are still accepted). Omit scopes for full access.`,
        fields: { valid_scopes: NAMED_SCOPES, legacy_scopes: LEGACY_SCOPES },
        example: { name: 'checkout service', scopes: ['price:compute'] },
      });
    }
    const nameOnly = names.filter((n) => (NAME_ONLY_SCOPES as readonly string[]).includes(n));
    const role = identityOf(principal).role;
    if (nameOnly.length > 0 && role !== 'owner' && role !== 'admin') {
      throw new ApiError('forbidden', `Only workspace owners and admins can create keys with ${nameOnly.join(', ')}.`, {
        hint: `Ask an owner or admin of this workspace to create it, or create the key without ${nameOnly.join(' and ')}.`,
        fields: { reason: 'role too low', role },
      });
    }
    const { isTest, parentWorkspaceId } = identityOf(principal);
    if (nameOnly.length > 0 && isTest) {
      // Its team is the parent's and nothing is claimed into it: such a key would be refused on every use.
      throw new ApiError('conflict', `A test workspace cannot hold ${nameOnly.join(', ')}: it has no team of its own and agent workspaces are claimed into production workspaces only.`, {
        hint: `Create the key in the parent workspace (x-workspace-id: ${parentWorkspaceId ?? 'the parent workspace id'}).`,
        fields: { reason: 'test workspace', parent_workspace_id: parentWorkspaceId },
      });
    }
  }
  const held = principal.scopes ?? [];
  const fullAccess = identityOf(principal).authMethod === 'session' || held.length >= effectiveScopes(null).length;
  if (!fullAccess) {
    // A scoped token never holds the permissions granted by name only, so a key naming them is wider.
    const wanted = names ? effectiveScopes(names) : effectiveScopes(null);
    const beyond = wanted.filter((w) => !held.includes(w));
    if (beyond.length > 0) throw insufficientScope(beyond, 'A key cannot be wider than the credential creating it: your person token does not hold these scopes.');
  }
  return { scopes: names, legacy: names ? names.some((n) => (LEGACY_SCOPES as readonly string[]).includes(n)) : false };
}

export function keyRoutes(d: AccountsDeps, events: EventBus): RouteSpec[] {
  return [
    defineRoute({
      id: 'apiKeys.list',
      method: 'get',
      path: '/api/api-keys',
      summary: 'API keys of the workspace (never their secrets).',
      tags: ['API keys'],
      ...PERSON_ONLY,
      query: z.object(listQuery),
      responses: { 200: { description: 'A page of API keys.', schema: r.apiKeyListResponse } },
      handler: async ({ principal, query }) => {
        const ws = (principal as Principal).workspaceId;
        const rows = await d.keys.list(ws, query.limit, query.cursor ? decodeTimeCursor(query.cursor) : undefined);
        return ok(listEnvelope(rows, query.limit, keyView, (r) => ({ sort: r.sort_key, id: r.id })));
      },
    }),
    defineRoute({
      id: 'apiKeys.create',
      returnsSecret: true,
      method: 'post',
      path: '/api/api-keys',
      summary: 'Create an API key (shown once); a scoped creator may only grant scopes it holds.',
      tags: ['API keys'],
      ...PERSON_ONLY,
      body: s.createKeyBody,
      example: s.createKeyExample,
      headers: createIdempotencyHeaders,
      responses: { 201: { description: 'The new key; its secret is shown this once (a replay of an Idempotency-Key shows the key without it).', schema: r.createApiKeyResponse } },
      handler: async ({ principal, body, req }) => {
        const p = principal as Principal;
        const { scopes, legacy } = checkRequestedScopes(p, body.scopes);
        let agentId: string | null = null;
        if (body.agent_id) {
          // As POST /api/agents/{id}/keys (fullAccess): minting an agent's key is managing agents, which a narrowed person
          // token does not do even within its scopes; a plain key within them it may create.
          const lacking = lackingFullAccess(p);
          if (lacking.length > 0) throw fullAccessRequired(CONFIGURATION_ACCESS, lacking, 'POST /api/api-keys with agent_id (an agent-bound key)', 'person_token');
          const agent = await d.sql.one<{ id: string; created_by_person_id: string | null }>(`SELECT id, created_by_person_id FROM agents WHERE id = $1 AND workspace_id = $2 AND status = 'active'`, [body.agent_id, p.workspaceId]);
          if (!agent) throw new ApiError('not_found', 'No active agent with this id in the workspace.', { hint: "GET /api/agents lists this workspace's agents and their ids (a disabled agent gets no new key; an agent of another workspace is answered as a missing one)." });
          // The rule of POST /api/agents/{id}/keys.
          assertManagesAgent(p, agent, 'mint keys for');
          agentId = agent.id;
        }
        const expiresAt = requestedExpiry(body.expires_at);
        const claim = d.idempotency.claimOf(req, 'apiKeys.create', p.workspaceId, body);
        return d.idempotency.run(
          claim,
          async (take) => {
            const { row, secret } = await d.keys.create({ workspaceId: p.workspaceId, name: body.name, kind: agentId ? 'agent' : 'person', scopes, legacy, createdByPersonId: p.personId ?? null, agentId, expiresAt }, undefined, take);
            return created({ api_key: { ...keyView(row), key: secret, shown_once: true } });
          },
          async (id) => {
            // Only the hash of the secret is kept: the replay names the key the first request created, and the way out if
            // its answer (the one showing the secret) never arrived.
            const row = await d.keys.get(p.workspaceId, id);
            if (!row) return null;
            return created({
              api_key: { ...keyView(row), key: null, shown_once: true },
              hint: `This key was created by the first request with this Idempotency-Key, and its secret was shown only in that answer. If that answer never arrived, revoke the key (DELETE /api/api-keys/${row.id}) and create another with a new Idempotency-Key.`,
              next: [{ action: 'revoke', method: 'DELETE', path: `/api/api-keys/${row.id}` }],
            });
          },
        );
      },
    }),
    defineRoute({
      id: 'apiKeys.delete',
      method: 'delete',
      path: '/api/api-keys/:keyId',
      fullAccess: true,
      summary: 'Revoke an API key of the workspace (members: only keys they created; admins: not keys an owner or another admin created); it stops at once (and its team invitations are cancelled).',
      tags: ['API keys'],
      ...PERSON_ONLY,
      givesUpAccess: true,
      params: s.keyIdParams,
      responses: { 200: { description: 'The key is revoked.', schema: r.deleteApiKeyResponse } },
      handler: async ({ principal, params }) => {
        const p = principal as Principal;
        const key = await d.keys.get(p.workspaceId, params.keyId);
        if (!key) {
          throw new ApiError('not_found', 'No API key with this id in the workspace.', {
            hint: 'Keys are per workspace: for a key of another of your workspaces, send x-workspace-id with that workspace (GET /api/user lists yours); GET /api/api-keys lists the keys of this one.',
          });
        }
        await assertMayRevoke(d.workspaces, p, key);
        const revoked = await d.keys.revoke(key.id, 'revoked by a person');
        if (revoked) await events.emit('api_key.revoked', { workspaceId: p.workspaceId, keyId: key.id, reason: 'revoked', by: p.personId ? { type: 'person', id: p.personId } : null });
        return ok({ id: key.id, revoked: true });
      },
    }),
  ];
}
