import { z } from 'zod';

/**
 * Response schemas of agent onboarding, claims and OAuth (routes/onboarding.ts, routes/oauth.ts),
 * for the OpenAPI document; docs/identity.md describes the answers. Shapes other plugins answer too
 * (an API key, a workspace) are named so the document holds each once.
 */

/** An API key as `keyView` (services/key-service.ts) shows it: never its secret or hash. */
export const apiKeySchema = z
  .object({
    id: z.string().describe('The key\'s id (key_…).'),
    name: z.string().describe('Its name.'),
    workspace_id: z.string().describe('The workspace it acts in (where it was made).'),
    kind: z.enum(['sandbox', 'agent', 'person', 'oauth_client']).describe('How it was issued: sandbox (agent registration), agent (minted for an agent), person, or oauth_client (OAuth registration); a claim does not change it.'),
    prefix: z.string().describe('The first 12 characters of the secret (pcs_sbx_…, pcs_usr_…), to recognise it.'),
    last4: z.string().describe('The secret\'s last four characters.'),
    scopes: z.array(z.string()).describe('The scopes it was created with by name; empty when created with none (then full_access).'),
    full_access: z.boolean().describe('Whether it was created without scopes: every ordinary scope, but no name-only permission (workspace:claim, team:admin).'),
    legacy: z.boolean().describe('Whether its scopes are an old read/write/admin choice.'),
    agent_id: z.string().nullable().describe('The agent it is bound to; null for a person\'s key.'),
    created_by: z.string().nullable().describe('The person who created it; null when no person did (registration, OAuth).'),
    expires_at: z.string().nullable().describe('When it stops working (ISO 8601); null when it does not expire.'),
    revoked_at: z.string().nullable().describe('When it was revoked (ISO 8601); null while it works.'),
    last_used_at: z.string().nullable().describe('When it was last used (ISO 8601; recorded every 15 seconds, so a use shows up to 15 seconds later); null when never.'),
    created_at: z.string().describe('When it was created (ISO 8601).'),
  })
  .meta({ id: 'ApiKey', description: 'An API key, without its secret.' });

/** An API key just issued, with its secret (the reply is sent with Cache-Control: no-store). */
export const issuedApiKeySchema = apiKeySchema
  .extend({
    key: z.string().describe('The secret: send it in x-api-key. Shown this once; only its HMAC is stored.'),
    shown_once: z.literal(true).describe('The secret is not shown again.'),
  })
  .meta({ id: 'IssuedApiKey', description: 'An API key just issued, with its secret, shown once.' });

/** A workspace as `workspaceView` (services/workspaces.ts) shows it. */
export const workspaceSchema = z
  .object({
    id: z.string().describe('The workspace\'s id (ws_…).'),
    name: z.string().describe('Its name.'),
    plan: z.enum(['agent_starter', 'free']).describe('agent_starter for an unclaimed agent sandbox; free otherwise.'),
    status: z.enum(['active', 'restricted', 'suspended', 'rejected']).describe('Its account status; anything but active restricts what it may do.'),
    origin: z.enum(['agent_self_registration', 'oauth_registration', 'person_signup', 'test_workspace', 'created']).describe('How it was created.'),
    sandbox: z.boolean().describe('Whether it is an unclaimed agent sandbox.'),
    is_test: z.boolean().describe('Whether it is a test workspace (its parent\'s team acts in it).'),
    created_by_agent: z.boolean().describe('Whether an agent created it (kept after a claim).'),
    former_sandbox: z.boolean().describe('Whether it was an agent sandbox, since claimed.'),
    parent_id: z.string().nullable().describe('The workspace a test workspace belongs to, or a claimed sandbox moved under; null otherwise.'),
    test_workspace_id: z.string().nullable().describe('Its own test workspace (send it as x-workspace-id to act there); null for a sandbox (until claimed) and a test workspace.'),
    claimed_at: z.string().nullable().describe('When it was claimed (ISO 8601); null unless it is a claimed sandbox.'),
    created_at: z.string().describe('When it was created (ISO 8601).'),
  })
  .meta({ id: 'Workspace', description: 'A workspace.' });

/** `AGENT_STARTER_PLAN` (limits.ts). */
export const agentStarterPlanSchema = z
  .object({
    id: z.literal('agent_starter').describe('The plan\'s id.'),
    name: z.string().describe('Its name.'),
    capabilities: z.array(z.string()).describe('What a sandbox may do, in words (the list is exhaustive).'),
    not_included: z.array(z.string()).describe('What it may not do until a person claims it.'),
  })
  .meta({ id: 'AgentStarterPlan', description: 'The plan of an unclaimed agent sandbox.' });

/** `sandboxLimits` (limits.ts): the limits in force as configured. */
const sandboxLimitFields = {
  compute_calls_per_day: z.number().int().describe('Priced calls allowed per UTC day.'),
  key_lifetime_days: z.number().int().describe('Days a sandbox key works, unless the sandbox is claimed.'),
  key_rotations_per_day: z.number().int().describe("Key rotations allowed per agent (a sandbox is its agent's) per UTC day."),
  requests_per_minute: z.number().int().describe('Requests allowed per minute for the workspace.'),
  requests_per_minute_per_address: z.number().int().describe('Requests allowed per minute from one network address, whichever workspace they are for; also binding.'),
  batch_pricing: z.literal(false).describe('Batch pricing is not included.'),
  functions: z.literal('built-in only').describe('Which pricing functions it may call.'),
  test_workspace: z.literal(false).describe('No test workspace until claimed.'),
};
export const sandboxLimitsSchema = z.object(sandboxLimitFields).meta({ id: 'SandboxLimits', description: 'The limits of an unclaimed agent sandbox.' });

/** A sandbox's limits as registration answers them: with the registration limits and what is left for the caller's address. */
const registrationLimitsSchema = z
  .object({
    ...sandboxLimitFields,
    registrations: z
      .object({
        per_address_per_day: z.number().int().describe('Registrations allowed per network address per UTC day.'),
        overall_per_day: z.number().int().describe('Registrations allowed overall per UTC day.'),
        remaining_for_this_address_today: z.number().int().describe('Registrations this address may still make today.'),
      })
      .describe('The limits on registering sandboxes (agent and OAuth registration count together).'),
  })
  .describe('The sandbox\'s limits in force, and the registration limits.');

const claimLinkFields = {
  url: z.string().describe('The claim link: a signed-in person opens it (GET shows what would be claimed) and confirms with POST to it.'),
  token: z.string().describe('The one-time claim token (pcs_clm_…) in the link; a trusted agent sends it to POST /api/agents/claim.'),
  expires_at: z.string().describe('When the link stops working (ISO 8601).'),
  one_time: z.literal(true).describe('The link works once.'),
};

const changelogField = z.string().describe('The address of the changelog\'s JSON feed, to learn of changes.');

/** POST /api/agents/register (201). */
export const registerResponse = z.object({
  workspace: workspaceSchema,
  agent: z.object({ id: z.string().describe('The agent\'s id (agt_…).'), name: z.string().describe('The name sent.') }).describe('The agent created with the sandbox, which its key is bound to.'),
  api_key: issuedApiKeySchema,
  claim: z.object({ ...claimLinkFields, how: z.string().describe('How a person, or a trusted agent, claims it.') }).describe('The one-time claim link: a claim makes the sandbox an ordinary workspace and lifts its limits.'),
  plan: agentStarterPlanSchema,
  limits: registrationLimitsSchema,
  changelog: changelogField,
  next: z
    .array(
      z.object({
        action: z.string().describe('What the request does: compute_price, check_identity or rotate_key.'),
        method: z.string().describe('Its HTTP method.'),
        path: z.string().describe('Its path.'),
        headers: z.record(z.string(), z.string()).describe('Headers to send, <API_KEY> standing for the key.'),
        body: z.looseObject({}).optional().describe('An example body (compute_price).'),
        description: z.string().optional().describe('When to make it (rotate_key).'),
      }),
    )
    .describe('Requests the agent may make next.'),
});

/** POST /api/agents/claim and POST /api/agents/claim/{token}. */
/** POST /api/agents/claim-link. */
export const claimLinkReissueResponse = z.object({
  claim: z.object({ ...claimLinkFields, how: z.string().describe('How a person, or a trusted agent, claims it.') }).describe('The new one-time claim link.'),
  ended_links: z.number().int().describe('Earlier links not used yet, ended by this one (the one registration gave among them).'),
});

export const claimResponse = z.object({
  claimed: z.literal(true).describe('The sandbox is claimed.'),
  workspace: workspaceSchema,
  test_workspace: workspaceSchema,
  agent_key: z.enum(['kept', 'revoked']).describe('What became of the agent\'s key: kept (full access until revoked) when keep_key was true and the key had not expired; revoked otherwise (an expired key is never revived).'),
  hint: z.string().describe('How a person acts in the claimed workspace (x-workspace-id), and what the agent needs now.'),
  next: z
    .array(
      z.object({
        action: z.string().describe('create_agent_key, create_api_key (agent key revoked), list_api_keys (kept), check_workspace.'),
        method: z.string().describe('Its HTTP method.'),
        path: z.string().describe('Its path.'),
        headers: z.record(z.string(), z.string()).describe('x-workspace-id naming the claimed workspace, beside the person\'s credential.'),
        body: z.looseObject({}).optional().describe('An example body.'),
        description: z.string().describe('Who sends it and what it gives.'),
      }),
    )
    .describe('Requests a person of the claimed workspace may make next, in it.'),
})
  // Both claim routes answer it: written once in the document.
  .meta({ id: 'ClaimResult', description: 'What a claim did, and how a person acts in the claimed workspace.' });

/** GET /api/agents/claim/{token}. */
export const claimLinkResponse = z.object({
  sandbox: z
    .object({
      id: z.string().describe('The sandbox workspace\'s id.'),
      name: z.string().describe('Its name.'),
      plan: z.string().describe('Its plan (agent_starter).'),
      created_at: z.string().describe('When it was registered (ISO 8601).'),
    })
    .describe('The sandbox the link would claim.'),
  expires_at: z.string().describe('When the link stops working (ISO 8601).'),
  agent_key: z
    .object({
      state: z.enum(['live', 'expired', 'none']).describe('live: keep_key would keep it; expired: it stopped working and a claim revokes it, keep_key or not; none: the agent holds no key (it was revoked).'),
      expires_at: z.string().nullable().describe('When it expires or expired unless the claim keeps it (ISO 8601); null: no expiry.'),
    })
    .describe("The agent's key, as keep_key would find it."),
  confirm: z
    .object({
      method: z.literal('POST').describe('The method that confirms.'),
      url: z.string().describe('Where to send it: this link.'),
      body: z.object({ keep_key: z.boolean().describe('Whether to keep the agent\'s key.') }).describe('A body that works as given.'),
      fields: z.object({ workspace_id: z.string().describe('What workspace_id does.'), keep_key: z.string().describe('What keep_key does.') }).describe('What each body field does, in words.'),
      who: z.string().describe('Who may confirm.'),
    })
    .describe('How a signed-in person confirms the claim.'),
});

/** POST /api/api-keys/rotate (201). */
export const rotateResponse = z.object({
  api_key: issuedApiKeySchema,
  previous_key: z.object({ id: z.string().describe('The key sent, which stopped working.'), status: z.literal('revoked').describe('It stopped working at once, with the tokens made from it.') }).describe('The key rotated away.'),
  rotations_left_today: z.number().int().describe('Rotations this workspace may still make today (UTC).'),
  plan: z.string().describe('The workspace\'s plan (agent_starter for a sandbox).'),
});

/** GET /api/me and capabilities: the workspace configuration the credential is refused (auth/managers.ts, refusedConfiguration). */
export const notAllowedSchema = z
  .array(
    z.object({
      operation: z.string().describe('The operation, as "METHOD /path" in the OpenAPI document.'),
      status: z.union([z.literal(401), z.literal(403)]).describe('What it answers this credential: 403 forbidden, or 401 where the route does not take its kind.'),
      reason: z.enum(['agent-bound key', 'role too low', 'credential kind not accepted']).describe('The reason of that refusal.'),
    }),
  )
  .meta({
    id: 'NotAllowed',
    description:
      "Workspace configuration (functions, routing policies, tester tags) this credential is refused though its scopes may name it: only owners and admins, the keys they made while they are, and the key an agent kept at its workspace's claim change it; another agent's key or its token, a member or a member's key does not. Absent when none is refused (a sandbox's plan says what it may do).",
  });

/** GET /api/agents/{id}/capabilities. */
export const capabilitiesResponse = z.object({
  agent: z
    .object({ id: z.string().describe('The agent\'s id.'), name: z.string().describe('Its name.'), status: z.enum(['active', 'disabled']).describe('Whether it may act.') })
    .describe('The agent.'),
  workspace_id: z.string().describe('Its workspace.'),
  plan: z.string().describe('The workspace\'s plan.'),
  scopes: z.array(z.string()).describe('The scopes of the credential asking (a full-access credential lists every scope).'),
  limits: sandboxLimitsSchema.optional(),
  capabilities: z.array(z.string()).optional().describe('A sandbox only: what the Agent Starter plan allows, in words.'),
  not_allowed: notAllowedSchema.optional(),
});

/** POST /api/oauth/register (201): RFC 7591 client information, with the sandbox's claim link, plan and limits. */
export const oauthRegisterResponse = z.object({
  client_id: z.string().describe('The client identifier (RFC 7591).'),
  client_secret: z.string().describe('The client secret, shown once; it is also an API key (send it in x-api-key).'),
  client_id_issued_at: z.number().int().describe('When the client was registered (seconds since the epoch).'),
  client_secret_expires_at: z.number().int().describe('When the secret expires (seconds since the epoch); 0 when it does not.'),
  client_name: z.string().describe('The client_name sent, else oauth-client.'),
  grant_types: z.array(z.literal('client_credentials')).describe('The grants the client may use: client_credentials only.'),
  token_endpoint_auth_method: z.enum(['client_secret_basic', 'client_secret_post']).describe('How the client authenticates at the token endpoint (as sent; default client_secret_basic).'),
  token_endpoint: z.string().describe('Where to exchange the credentials for an access token.'),
  workspace_id: z.string().describe('The sandbox workspace created for the client.'),
  api_key_note: z.string().describe('That the secret is also an API key.'),
  claim: z.object({ ...claimLinkFields, how: z.string().describe('How a person, or a trusted agent, claims it.') }).describe('The one-time claim link of the sandbox.'),
  plan: agentStarterPlanSchema,
  limits: registrationLimitsSchema,
  changelog: changelogField,
});

/** POST /api/oauth/token: RFC 6749 §5.1. */
export const oauthTokenResponse = z.object({
  access_token: z.string().describe('The access token (a JWT): send it as Authorization: Bearer.'),
  token_type: z.literal('Bearer').describe('The token type.'),
  expires_in: z.number().int().describe('Seconds until it expires (never past its key\'s expiry).'),
  scope: z.string().describe('The scopes granted, space-separated: the key\'s, or fewer when scope was sent; never a name-only permission.'),
});

/** GET /.well-known/oauth-protected-resource[/api/mcp/rpc]: RFC 9728, where MCP clients find the authorization server. */
export const protectedResourceResponse = z.object({
  resource: z.string().describe('The protected resource: the service (its base address), or its MCP endpoint at the path-specific address.'),
  resource_name: z.string().describe('Its name.'),
  authorization_servers: z.array(z.string()).describe("The authorization server's issuer (this service; its metadata at /.well-known/oauth-authorization-server)."),
  bearer_methods_supported: z.array(z.string()).describe('header: Authorization: Bearer.'),
  scopes_supported: z.array(z.string()).describe('The scopes a token may carry.'),
  resource_documentation: z.string().describe('Where the service is described for agents (llms.txt).'),
});

/** GET /.well-known/oauth-authorization-server: RFC 8414. */
export const oauthMetadataResponse = z.object({
  issuer: z.string().describe('The service\'s base address.'),
  token_endpoint: z.string().describe('The token endpoint.'),
  registration_endpoint: z.string().describe('The dynamic client registration endpoint.'),
  grant_types_supported: z.array(z.string()).describe('client_credentials only.'),
  token_endpoint_auth_methods_supported: z.array(z.string()).describe('client_secret_basic and client_secret_post.'),
  authorization_endpoint: z.string().describe('Listed because OAuth clients (the MCP SDK among them) require the field; it answers every request 400 unsupported_response_type: tokens are issued by client_credentials only.'),
  response_types_supported: z.array(z.string()).describe('Empty: the authorization endpoint grants nothing.'),
  scopes_supported: z.array(z.string()).describe('The scopes a token may carry (name-only permissions excluded).'),
  service_documentation: z.string().describe('Where the service is described for agents (llms.txt).'),
  op_policy_uri: z.string().describe('The agents\' policy document (agents.json).'),
});

/** The Idempotency-Key request header of the create routes (services/idempotency.ts; docs/identity.md "Idempotency keys"). */
export const createIdempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .optional()
    .describe(
      '1 to 255 printable ASCII characters without spaces (a UUID): a retry with the same key and body answers 201 with Idempotent-Replayed: true and what the first request created, as it is now; another body under it: 422 idempotency_key_reused; another shape: 400. Kept IDEMPOTENCY_KEY_TTL_H hours.',
    ),
});
