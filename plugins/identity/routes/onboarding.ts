import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { errorBodySchema } from '../../../core/errors';
import type { Principal } from '../../../core/auth';
import { identityOf } from '../auth/principal';
import { unknownClaimLink, WHERE_TO_GET_A_CREDENTIAL, wrongKindOfCredential } from '../errors';
import { AGENT_STARTER_PLAN, changelogFeedUrl, claimHow, claimOffered, registrationLimits, sandboxLimits } from '../limits';
import { claimLinkReissueResponse, claimLinkResponse, claimResponse, registerResponse, rotateResponse } from '../responses';
import * as s from '../schemas';
import { keyView } from '../services/key-service';
import { workspaceView } from '../services/workspaces';
import { claimAnswer } from './claim-answer';
import type { IdentityDeps } from './deps';
import { userAgentOf } from '../../../core/http/header-text';
import { dailyQuotaRefusal } from '../../../core/daily-quota';
import { crossSiteRegistrationRefusal, pausedRegistrationRefusal, REGISTRATION_QUOTA_NEXT, registrationClosed, registrationScreen } from './registration-screen';

/** What a credential of the wrong kind is told, by the pipeline (the route's `accepts`) and by the handler alike. */
const CONFIRM_NEEDS_PERSON = {
  message: 'A claim link is confirmed by a signed-in person, not by an API key.',
  hint: 'Sign in (POST /api/auth/signin) and send the session cookie or person token; a trusted agent uses POST /api/agents/claim with a workspace:claim key instead.',
};
/** SPEC "Permissions granted by name only": the key itself is sent (a token made from it is refused by the authorizer, 403). */
const CLAIM_NEEDS_KEY = {
  message: "A workspace:claim key is required: this route takes an API key naming workspace:claim, not a person's session.",
  hint: 'A signed-in person confirms a claim link with POST /api/agents/claim/{token}; a trusted agent sends a key with workspace:claim in x-api-key.',
};
const ROTATE_NEEDS_KEY = { message: 'Rotation needs the key itself in x-api-key.', hint: 'Send the sandbox or agent key to rotate in x-api-key.' };

export function onboardingRoutes(d: IdentityDeps): RouteSpec[] {
  const claimUrl = (token: string) => `${d.publicUrl()}/api/agents/claim/${token}`;
  return [
    defineRoute({
      id: 'agents.register',
      returnsSecret: true,
      method: 'post',
      path: '/api/agents/register',
      screen: registrationScreen(d),
      closed: registrationClosed(d),
      summary: 'Create an Agent Starter sandbox workspace and key, with no credential.',
      tags: ['Agent onboarding'],
      auth: 'public',
      rateLimit: 'none',
      body: s.registerBody,
      example: s.registerExample,
      responses: {
        201: { description: 'The sandbox, its key (shown once), a one-time claim link, plan, limits and changelog pointer.', schema: registerResponse },
        429: dailyQuotaRefusal('REGISTRATIONS_PER_ADDRESS_PER_DAY registrations from this network address today, or REGISTRATIONS_PER_DAY on the whole service', false, REGISTRATION_QUOTA_NEXT),
        403: crossSiteRegistrationRefusal,
        503: pausedRegistrationRefusal,
      },
      handler: async ({ body, clientIp, req }) => {
        const r = await d.onboarding.registerSandbox({ name: body.name, ip: clientIp, userAgent: userAgentOf(req), origin: 'agent_self_registration', keyKind: 'sandbox' });
        const base = d.publicUrl();
        return created({
          workspace: workspaceView(r.workspace),
          agent: { id: r.agentId, name: r.agentName },
          api_key: { ...keyView(r.key), key: r.secret, shown_once: true },
          claim: {
            url: claimUrl(r.claimToken),
            token: r.claimToken,
            expires_at: r.claimExpiresAt.toISOString(),
            one_time: true,
            how: claimHow(claimOffered(d.config)),
          },
          plan: AGENT_STARTER_PLAN,
          limits: { ...sandboxLimits(d.config), registrations: { ...registrationLimits(d.config), remaining_for_this_address_today: r.remainingForAddress } },
          changelog: changelogFeedUrl(base),
          next: [
            { action: 'compute_price', method: 'POST', path: '/api/compute/price', headers: { 'x-api-key': '<API_KEY>' }, body: { context: { product_type: 'coffee', current_price: 4.5, currency: 'USD' } } },
            { action: 'check_identity', method: 'GET', path: '/api/me', headers: { 'x-api-key': '<API_KEY>' } },
            {
              action: 'rotate_key',
              method: 'POST',
              path: '/api/api-keys/rotate',
              headers: { 'x-api-key': '<API_KEY>' },
              description: 'Only when the key may have leaked: it returns a new key and revokes this one at once, so keep the new one before anything else.',
            },
          ],
        });
      },
    }),
    defineRoute({
      id: 'agents.claim',
      method: 'post',
      path: '/api/agents/claim',
      summary: 'Claim an agent sandbox into this key\'s workspace (key with workspace:claim).',
      tags: ['Agent onboarding'],
      scopes: ['workspace:claim'],
      // Access tokens pass here to hear the authorizer's 403 (the scope is the key's own); people are refused at once.
      accepts: ['api_key', 'access_token'],
      wrongCredentialMessage: CLAIM_NEEDS_KEY.message,
      wrongCredentialHint: CLAIM_NEEDS_KEY.hint,
      // Sent mostly by a signed-in person, who already holds what the claim link takes: the link's route first, then where
      // the credential this route takes comes from (not sign-up or a sandbox, which cannot claim).
      wrongCredentialNext: [
        {
          action: 'confirm_claim_link',
          method: 'POST',
          path: '/api/agents/claim/<CLAIM_TOKEN>',
          body: { keep_key: false },
          description: 'A signed-in person confirms a claim with the link itself (the token this body sent), with the session cookie or person token; GET on the link first shows what it claims.',
        },
        {
          action: 'create_claim_key',
          method: 'POST',
          path: '/api/api-keys',
          body: { name: 'claims agents', scopes: ['workspace:claim'] },
          description: 'An owner or admin, signed in, creates the key this route takes, for a trusted agent that claims sandboxes into this workspace.',
        },
      ],
      body: s.claimBody,
      example: s.claimExample,
      responses: { 200: { description: 'The claimed workspace, its new test workspace, and what became of the agent\'s key.', schema: claimResponse } },
      handler: async ({ body, principal }) => {
        if (!principal?.keyId) throw wrongKindOfCredential(CLAIM_NEEDS_KEY.message, CLAIM_NEEDS_KEY.hint, WHERE_TO_GET_A_CREDENTIAL);
        const r = await d.onboarding.claim({
          token: body.token,
          targetWorkspaceId: principal.workspaceId,
          claimer: { type: 'api_key', keyId: principal.keyId, workspaceId: principal.workspaceId },
          keepKey: body.keep_key ?? false,
        });
        return ok(claimAnswer(r));
      },
    }),
    defineRoute({
      id: 'agents.claimLink.read',
      method: 'get',
      path: '/api/agents/claim/:token',
      summary: 'What a claim link would claim (no credential needed to look).',
      tags: ['Agent onboarding'],
      auth: 'public',
      params: s.claimTokenParams,
      responses: { 200: { description: 'The sandbox the link would claim, and how to confirm.', schema: claimLinkResponse } },
      handler: async ({ params }) => {
        const found = await d.onboarding.findClaimable(params.token);
        if (!found) throw unknownClaimLink();
        return ok({
          sandbox: { id: found.workspace.id, name: found.workspace.name, plan: found.workspace.plan, created_at: new Date(found.workspace.created_at).toISOString() },
          expires_at: found.expiresAt.toISOString(),
          agent_key: found.agentKey,
          confirm: {
            method: 'POST',
            url: claimUrl(params.token),
            body: s.claimConfirmExample,
            fields: {
              workspace_id: 'Optional: the workspace to claim into, one you own or administer; left out, your current workspace (tenant_id in GET /api/me).',
              keep_key: "Optional: true keeps the agent's key working with full access (unless it has expired: an expired key is revoked, never revived); default false revokes it.",
            },
            who: 'A signed-in person who owns or administers the target workspace (session cookie or person token, from POST /api/auth/signup or POST /api/auth/signin).',
          },
        });
      },
    }),
    defineRoute({
      id: 'agents.claimLink.confirm',
      method: 'post',
      path: '/api/agents/claim/:token',
      fullAccess: true,
      summary: 'A signed-in person confirms a claim link.',
      tags: ['Agent onboarding'],
      accepts: ['person'],
      wrongCredentialMessage: CONFIRM_NEEDS_PERSON.message,
      wrongCredentialHint: CONFIRM_NEEDS_PERSON.hint,
      params: s.claimTokenParams,
      body: s.claimConfirmBody,
      example: s.claimConfirmExample,
      responses: { 200: { description: 'The claimed workspace, its new test workspace, and what became of the agent\'s key.', schema: claimResponse } },
      handler: async ({ params, body, principal }) => {
        if (!principal?.personId) throw wrongKindOfCredential(CONFIRM_NEEDS_PERSON.message, CONFIRM_NEEDS_PERSON.hint);
        const r = await d.onboarding.claim({
          token: params.token,
          targetWorkspaceId: body.workspace_id ?? principal.workspaceId,
          claimer: { type: 'person', personId: principal.personId },
          keepKey: body.keep_key ?? false,
        });
        return ok(claimAnswer(r));
      },
    }),
    defineRoute({
      id: 'agents.claim_link',
      returnsSecret: true,
      method: 'post',
      path: '/api/agents/claim-link',
      summary: "An unclaimed sandbox's credential: a new one-time claim link, for an agent that lost the one registration gave (earlier unused links end).",
      tags: ['Agent onboarding'],
      // A new link ends the one the agent gave its person: only the key itself may, never an hour's token made from it.
      accepts: ['api_key'],
      wrongCredentialMessage: 'A claim link is issued to the sandbox key itself; a token made from the key cannot end the link its agent gave out.',
      wrongCredentialHint: 'Send the sandbox key (or the OAuth client secret) in x-api-key.',
      sandbox: true,
      body: s.claimLinkBody,
      example: {},
      responses: {
        201: { description: 'The new claim link; the links not used yet end.', schema: claimLinkReissueResponse },
        409: { description: 'The workspace is not an unclaimed sandbox (claimed already, or never one).', schema: errorBodySchema },
      },
      handler: async ({ principal }) => {
        const p = principal as Principal;
        const r = await d.onboarding.reissueClaimLink(p.workspaceId);
        return created({
          claim: { url: claimUrl(r.claimToken), token: r.claimToken, expires_at: r.claimExpiresAt.toISOString(), one_time: true, how: claimHow(claimOffered(d.config)) },
          ended_links: r.ended,
        });
      },
    }),
    defineRoute({
      id: 'apiKeys.rotate',
      returnsSecret: true,
      method: 'post',
      path: '/api/api-keys/rotate',
      summary: 'Rotate the sandbox or agent key sent in x-api-key.',
      tags: ['Agent onboarding'],
      accepts: ['api_key'],
      keyManagement: true,
      wrongCredentialMessage: ROTATE_NEEDS_KEY.message,
      wrongCredentialHint: ROTATE_NEEDS_KEY.hint,
      sandbox: true,
      body: s.rotateBody,
      example: {},
      responses: {
        201: { description: 'The new key (shown once); the key sent is revoked.', schema: rotateResponse },
        429: dailyQuotaRefusal("the key's agent (a sandbox's, or an agent of a claimed workspace) made its SANDBOX_KEY_ROTATIONS_PER_DAY rotations today", true),
      },
      handler: async ({ principal }) => {
        if (!principal?.keyId) throw wrongKindOfCredential(ROTATE_NEEDS_KEY.message, ROTATE_NEEDS_KEY.hint, WHERE_TO_GET_A_CREDENTIAL);
        const r = await d.onboarding.rotate(principal.keyId, principal.workspaceId);
        return created({
          api_key: { ...keyView(r.row), key: r.secret, shown_once: true },
          previous_key: { id: principal.keyId, status: 'revoked' },
          rotations_left_today: r.rotationsLeftToday,
          plan: identityOf(principal).plan,
        });
      },
    }),
  ];
}
