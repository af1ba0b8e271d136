import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, errorBodySchema, isApiError } from '../../../core/errors';
import { defineRoute } from '../../../core/http/route';
import { asCalledOnLoopback } from '../../../core/http/origin';
import type { Reply, RouteSpec } from '../../../core/http/route';
import { NAMED_SCOPES, NAME_ONLY_SCOPES } from '../scopes';
import { AGENT_STARTER_PLAN, changelogFeedUrl, claimHow, claimOffered, registrationLimits, sandboxLimits } from '../limits';
import { oauthMetadataResponse, oauthRegisterResponse, oauthTokenResponse, protectedResourceResponse } from '../responses';
import * as s from '../schemas';
import { OAuthError } from '../services/oauth';
import type { IdentityDeps } from './deps';
import { userAgentOf } from '../../../core/http/header-text';
import { dailyQuotaRefusal } from '../../../core/daily-quota';
import { crossSiteRegistrationRefusal, pausedRegistrationRefusal, REGISTRATION_QUOTA_NEXT, registrationClosed, registrationScreen } from './registration-screen';

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

function oauthError(err: OAuthError): Reply {
  return { status: err.status, headers: { ...NO_STORE, ...err.headers }, body: { error: err.error, error_description: err.description, code: err.error, hint: err.hint } };
}

export function oauthRoutes(d: IdentityDeps): RouteSpec[] {
  return [
    defineRoute({
      id: 'oauth.register',
      returnsSecret: true,
      method: 'post',
      path: '/api/oauth/register',
      screen: registrationScreen(d),
      closed: registrationClosed(d),
      summary: 'Dynamic client registration (RFC 7591 style): client credentials for a new sandbox workspace.',
      tags: ['OAuth'],
      auth: 'public',
      rateLimit: 'none',
      body: s.oauthRegisterBody,
      example: s.oauthRegisterExample,
      responses: {
        201: { description: 'The client: client_id and client_secret (shown once; it also works as an API key) of a new sandbox workspace.', schema: oauthRegisterResponse },
        400: {
          description: 'Metadata this server does not support (RFC 7591 invalid_client_metadata), or a body that is not JSON or fails validation (the common error shape).',
          schema: z.union([s.oauthErrorBody, errorBodySchema]),
        },
        429: dailyQuotaRefusal('REGISTRATIONS_PER_ADDRESS_PER_DAY registrations from this network address today, or REGISTRATIONS_PER_DAY on the whole service', false, REGISTRATION_QUOTA_NEXT),
        403: crossSiteRegistrationRefusal,
        503: pausedRegistrationRefusal,
      },
      handler: async ({ body, clientIp, req }): Promise<Reply> => {
        const grants = body.grant_types ?? ['client_credentials'];
        if (grants.some((g) => g !== 'client_credentials')) {
          return oauthError(new OAuthError('invalid_client_metadata', 'Only the client_credentials grant exists here; no authorization-code flow.'));
        }
        const clientName = body.client_name ?? 'oauth-client';
        const r = await d.oauth.registerClient({ clientName, ip: clientIp, userAgent: userAgentOf(req), metadata: { software_id: body.software_id, software_version: body.software_version } });
        const { registration: reg } = r;
        const base = d.publicUrl();
        return {
          status: 201,
          body: {
            client_id: r.clientId,
            client_secret: reg.secret,
            client_id_issued_at: Math.floor(new Date(reg.key.created_at).getTime() / 1000),
            client_secret_expires_at: reg.key.expires_at ? Math.floor(reg.key.expires_at.getTime() / 1000) : 0,
            client_name: clientName,
            grant_types: ['client_credentials'],
            token_endpoint_auth_method: body.token_endpoint_auth_method ?? 'client_secret_basic',
            // As the metadata names it; the claim link, for a person, keeps the service's own address.
            token_endpoint: `${serviceBase(d, req)}/api/oauth/token`,
            workspace_id: reg.workspace.id,
            api_key_note: 'client_secret is also an API key: send it in x-api-key.',
            claim: { url: `${base}/api/agents/claim/${reg.claimToken}`, token: reg.claimToken, expires_at: reg.claimExpiresAt.toISOString(), one_time: true, how: claimHow(claimOffered(d.config)) },
            plan: AGENT_STARTER_PLAN,
            limits: { ...sandboxLimits(d.config), registrations: { ...registrationLimits(d.config), remaining_for_this_address_today: reg.remainingForAddress } },
            changelog: changelogFeedUrl(base),
          },
        };
      },
    }),
    defineRoute({
      id: 'oauth.token',
      method: 'post',
      path: '/api/oauth/token',
      summary: 'Client-credentials grant: exchanges a client secret or an agent key for a short-lived access token.',
      description: 'Form-encoded (Content-Type: application/x-www-form-urlencoded) or JSON (application/json) body in UTF-8, with grant_type=client_credentials; scope, when sent, is one string of space-separated scope names (RFC 6749 §3.3); client authentication by HTTP Basic, client_id/client_secret in the body, or an agent key in x-api-key (or as Authorization: Bearer; an access token there is refused, it is no client credential). One method per request. Errors follow RFC 6749 §5.2.',
      tags: ['OAuth'],
      auth: 'public',
      rateLimit: 'none',
      rawBody: true,
      rawBodyFields: s.oauthTokenFields,
      selfAuthenticated: { schemes: ['ClientBasic', 'ApiKey', 'ApiKeyBearer'], bodyCredentials: true },
      responses: {
        200: { description: 'The access token (RFC 6749 §5.1).', schema: oauthTokenResponse },
        400: { description: 'RFC 6749 §5.2 error: invalid_request, unsupported_grant_type, invalid_scope, unauthorized_client.', schema: s.oauthErrorBody },
        401: { description: 'RFC 6749 §5.2 invalid_client: client authentication failed or was not sent.', schema: s.oauthErrorBody },
        413: { description: 'RFC 6749 §5.2 invalid_request: the body is over BODY_LIMIT_BYTES.', schema: s.oauthErrorBody },
        415: {
          description: 'RFC 6749 §5.2 invalid_request: a body of no Content-Type or another than application/x-www-form-urlencoded and application/json, a charset other than UTF-8, or a Content-Encoding the service does not read.',
          schema: s.oauthErrorBody,
        },
        429: { description: 'Too many rejected credentials from this address (RATE_LIMIT_FAILED_AUTH_PER_ADDRESS_PER_15MIN): the service\'s error shape, with Retry-After.', schema: errorBodySchema },
      },
      // RFC 6749 §5.2 for a body that could not be read too (too large, undecodable, cut short), keeping its status.
      answerBodyRefusal: (err) => oauthError(new OAuthError('invalid_request', err.message, err.status)),
      handler: async ({ req }): Promise<Reply> => {
        try {
          const token = await d.oauth.token(req, serviceBase(d, req));
          return { status: 200, headers: NO_STORE, body: token };
        } catch (err) {
          if (err instanceof OAuthError) return oauthError(err);
          // The address lockout and a store that failed are no OAuth errors: answered in the service's shape, with Retry-After.
          if (isApiError(err) && (err.code === 'rate_limited' || err.status >= 500)) throw err;
          if (err instanceof ApiError) return oauthError(new OAuthError('invalid_request', err.message));
          throw err;
        }
      },
    }),
    ...issuerPaths(d).map((at) =>
      metadataRoute(d, { id: at ? 'oauth.metadata_at_path' : 'oauth.metadata', path: `/.well-known/oauth-authorization-server${at}`, summary: at ? `OAuth 2.0 authorization server metadata (RFC 8414), at the address an issuer with the path ${at} has.` : 'OAuth 2.0 authorization server metadata (RFC 8414).', schema: oauthMetadataResponse }, (base) => ({
      issuer: base,
      authorization_endpoint: `${base}/api/oauth/authorize`,
      token_endpoint: `${base}/api/oauth/token`,
      registration_endpoint: `${base}/api/oauth/register`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      response_types_supported: [],
      scopes_supported: GRANTABLE_SCOPES,
      service_documentation: `${base}/llms.txt`,
      op_policy_uri: `${base}/.well-known/agents.json`,
    })),
    ),
    defineRoute({
      id: 'oauth.authorize',
      method: 'get',
      path: '/api/oauth/authorize',
      summary: 'Authorization endpoint: refuses every request (unsupported_response_type); tokens are issued by client_credentials only.',
      description:
        'Listed in the authorization server metadata because OAuth clients (the MCP SDK among them) require authorization_endpoint there. No authorization-code or implicit flow exists: register a client (POST /api/oauth/register) and exchange its credentials at POST /api/oauth/token.',
      tags: ['OAuth'],
      auth: 'public',
      responses: { 400: { description: 'RFC 6749 §4.1.2.1 unsupported_response_type, answered directly (no redirect URI is registered to send it to).', schema: s.oauthErrorBody } },
      handler: ({ req }): Reply =>
        oauthError(
          new OAuthError(
            'unsupported_response_type',
            `This service has no authorization-code or implicit flow: register a client (POST ${serviceBase(d, req)}/api/oauth/register) and exchange its credentials with grant_type=client_credentials at POST ${serviceBase(d, req)}/api/oauth/token.`,
          ),
        ),
    }),
    ...protectedResourceRoutes(d),
  ];
}

/**
 * RFC 9728 protected resource metadata: where a client (the MCP SDK's auth()) learns which authorization server issues
 * tokens for this service. At the root for the whole API, and at the MCP endpoint's path-specific address while MCP is served.
 */
function protectedResourceRoutes(d: IdentityDeps): RouteSpec[] {
  const metadata = (at: string, path: string, resource: (base: string) => string, name: string): RouteSpec =>
    metadataRoute(
      d,
      {
        id: `${path === '' ? 'oauth.protected_resource' : 'oauth.protected_resource_mcp'}${at ? '_at_path' : ''}`,
        path: `/.well-known/oauth-protected-resource${at}${path}`,
        summary: `OAuth 2.0 protected resource metadata (RFC 9728) of ${name}${at ? `, at the address a resource under the path ${at} has` : ''}.`,
        schema: protectedResourceResponse,
      },
      (base) => ({
        resource: resource(base),
        resource_name: name,
        authorization_servers: [base],
        bearer_methods_supported: ['header'],
        scopes_supported: GRANTABLE_SCOPES,
        resource_documentation: `${base}/llms.txt`,
      }),
    );
  return issuerPaths(d).flatMap((at) => [
    metadata(at, '', (base) => base, 'the pricing compute API'),
    ...(d.config.plugins.enabled.includes('mcp') ? [metadata(at, '/api/mcp/rpc', (base) => `${base}/api/mcp/rpc`, 'the pricing compute MCP endpoint')] : []),
  ]);
}

/**
 * Where the metadata documents are served: at the root, and, when PUBLIC_URL has a path (https://example.com/pricing),
 * also after the well-known prefix as RFC 8414 §3.1 and RFC 9728 §3.1 place an issuer's or a resource's with a path
 * (/.well-known/oauth-authorization-server/pricing): clients such as the MCP SDK look there first. The proxy in front
 * must forward those addresses, outside the path, to the service (README, "PUBLIC_URL with a path").
 */
function issuerPaths(d: IdentityDeps): string[] {
  const configured = d.config.server.publicUrl;
  const path = configured ? new URL(configured).pathname.replace(/\/+$/, '') : '';
  // Only plain segments: the path becomes a route template, where ':' or '*' would mean something else.
  return path && /^(\/[A-Za-z0-9._~-]+)+$/.test(path) ? ['', path] : [''];
}

/** The scopes a token may carry: every named scope but those granted by name only. */
const GRANTABLE_SCOPES = NAMED_SCOPES.filter((x) => !NAME_ONLY_SCOPES.includes(x));

/**
 * The address OAuth documents and the token endpoint name the service by: PUBLIC_URL when the operator set it;
 * without it, the loopback name a client on this machine used (localhost as well as 127.0.0.1), which RFC 9728 and
 * RFC 8707 clients compare with the address they called.
 */
function serviceBase(d: IdentityDeps, req: Request): string {
  return d.config.server.publicUrl ? d.publicUrl() : asCalledOnLoopback(d.publicUrl(), req.headers.host);
}

/**
 * A public metadata document of the service, made from its public address and cached for 5 minutes. Like every discovery
 * document it carries a strong ETag of its bytes, and a GET or HEAD naming it in If-None-Match gets 304 without the body.
 */
function metadataRoute(d: IdentityDeps, route: { id: string; path: string; summary: string; schema: z.ZodType }, body: (base: string) => Record<string, unknown>): RouteSpec {
  return defineRoute({
    id: route.id,
    method: 'get',
    path: route.path,
    summary: route.summary,
    tags: ['OAuth'],
    auth: 'public',
    rateLimit: 'none',
    conditional: true,
    responses: { 200: { description: route.summary, schema: route.schema } },
    handler: ({ req }): Reply => ({ status: 200, headers: { 'Cache-Control': 'public, max-age=300' }, body: body(serviceBase(d, req)), etag: true }),
  });
}
