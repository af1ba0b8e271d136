import { z } from 'zod';
import { noticesField } from '../../core/http/reply-fields';
import { agentStarterPlanSchema, notAllowedSchema, sandboxLimitsSchema } from './responses';
import { OAUTH_ERROR_CODES } from './services/oauth';

export const agentName = z
  .string()
  .trim()
  .min(2)
  .max(80)
  .regex(/^[A-Za-z0-9][A-Za-z0-9 ._:/@()-]*$/, 'use ASCII letters (A-Z, a-z), digits, spaces and . _ : / @ ( ) -, starting with a letter or digit');

export const registerBody = z.strictObject({
  name: agentName.describe('A system/role style label for the agent, e.g. "pricing-agent/checkout".'),
});
export const registerExample = { name: 'pricing-agent/checkout' };

/**
 * The claim link handed on whole (what registration names claim.url, which people and agents forward as it is) stands
 * for its token, its last segment: read as that, not refused as a link unknown, used or expired.
 */
const tokenOfClaimLink = (sent: string): string => /^https?:\/\/\S*\/agents\/claim\/(pcs_clm_[^/?#\s]+)\/?$/.exec(sent)?.[1] ?? sent;

export const claimBody = z.strictObject({
  token: z
    .string()
    .max(500)
    .trim()
    .overwrite(tokenOfClaimLink)
    .min(10)
    .max(200)
    .describe('The claim token as registration returned it (claim.token, which already begins pcs_clm_), or the claim link (claim.url) whole, whose last segment it is; spaces around it are ignored.'),
  keep_key: z.boolean().optional().describe('Keep the agent key working after the claim (default false: the claim revokes it).'),
});
export const claimExample = { token: '<CLAIM_TOKEN>' };

export const claimConfirmBody = z.strictObject({
  workspace_id: z.string().min(3).max(64).optional().describe('Workspace to claim into (one you own or administer); default: your current workspace (x-workspace-id, else your default one; tenant_id in GET /api/me).'),
  keep_key: z.boolean().optional(),
});
/** Without workspace_id: the default (the person's current workspace) is what most claimers want, and a placeholder id sent back would name no workspace. */
export const claimConfirmExample = { keep_key: false };

export const claimTokenParams = z.object({ token: z.string().min(10).max(200) });
export const agentIdParams = z.object({ id: z.string().min(3).max(64) });

export const rotateBody = z.strictObject({});
/** POST /api/agents/claim-link takes no fields. */
export const claimLinkBody = z.strictObject({});

export const oauthRegisterBody = z
  .object({
    client_name: agentName.optional(),
    grant_types: z.array(z.string()).optional(),
    token_endpoint_auth_method: z.enum(['client_secret_basic', 'client_secret_post']).optional(),
    scope: z.string().max(500).optional(),
    software_id: z.string().max(200).optional(),
    software_version: z.string().max(100).optional(),
    redirect_uris: z.array(z.string()).max(0, 'no authorization-code flow exists, so no redirect URIs are accepted').optional(),
  })
  .passthrough();
/** What the OAuth endpoints answer instead of the common error shape, as OAuth clients expect. */
/** The token request's fields (RFC 6749 §4.4.2, §2.3.1), form-encoded or JSON; services/oauth.ts reads and checks them itself. */
export const oauthTokenFields = z
  .object({
    grant_type: z.enum(['client_credentials']).describe('The grant: client_credentials is the only one (no authorization-code flow).'),
    client_id: z.string().optional().describe('The client id (client_secret_post); with HTTP Basic it goes in the header instead.'),
    client_secret: z.string().optional().describe('The client secret (client_secret_post), or left out for HTTP Basic or an agent key in x-api-key.'),
    scope: z.string().optional().describe("Space-separated scopes to narrow the token to, in one string (RFC 6749 §3.3; in JSON too, never an array); left out, the key's own (never a name-only permission)."),
  })
  .meta({ id: 'OAuthTokenRequest' });

export const oauthErrorBody = z
  .object({
    error: z.enum(OAUTH_ERROR_CODES).describe('The RFC 6749 / RFC 7591 error code.'),
    error_description: z.string(),
    code: z.enum(OAUTH_ERROR_CODES).describe('The same as error, as in every error of this service.'),
    hint: z.string().describe('What to do about it.'),
  })
  .meta({ id: 'OAuthError' });

export const oauthRegisterExample = { client_name: 'my-agent-framework', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' };

export const meResponse = z.object({
  tenant_id: z.string().describe('The workspace the credential acts in.'),
  auth_method: z.enum(['api_key', 'access_token', 'session', 'person_token']),
  scopes: z.array(z.string()).describe('The scopes in force (a full-access credential lists every scope).'),
  workspace: z.object({ id: z.string(), name: z.string(), plan: z.string(), status: z.string(), sandbox: z.boolean(), is_test: z.boolean() }),
  key: z
    .object({ id: z.string(), name: z.string().nullable(), kind: z.string(), expires_at: z.string().nullable(), legacy: z.boolean() })
    .optional()
    .describe('The API key behind the credential (an access token names the key it was made from).'),
  named_scopes: z.array(z.string()).optional().describe('The scopes the key was created with by name (team:admin and other name-only scopes are granted only so).'),
  agent: z.object({ id: z.string(), name: z.string().nullable() }).optional().describe('The agent the key or token is bound to.'),
  person: z.object({ id: z.string(), role: z.string().nullable(), email: z.string().nullable() }).optional().describe('The person signed in, and their role in the workspace.'),
  token: z
    .object({
      expires_at: z.iso.datetime().describe('When the access token expires (ISO 8601); get a new one at POST /api/oauth/token before then.'),
      key_id: z.string().describe('The API key (key_…) the token was made from, the same as key.id.'),
    })
    .optional()
    .describe('An access token: when it expires and the key it was made from.'),
  // Named schemas, undescribed here: a description would inline a copy instead of referring to the component.
  plan: agentStarterPlanSchema.optional(),
  limits: sandboxLimitsSchema.optional(),
  origin: z.string().optional(),
  created_by_agent: z.boolean().optional(),
  former_sandbox: z.boolean().optional(),
  claimed_at: z.string().optional(),
  not_allowed: notAllowedSchema.optional(),
  notices: noticesField,
});
