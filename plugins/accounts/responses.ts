import { z } from 'zod';
import { listEnvelopeSchema, nextRequestSchema } from '../../core/http/reply-fields';
import { apiKeySchema, issuedApiKeySchema, workspaceSchema } from '../identity';

/**
 * Response schemas of the accounts routes (people, sign-in, sessions, API keys, agents), for the
 * OpenAPI document. Shapes several routes answer are named (meta `id`) so the document holds each once.
 */

const isoTime = (what: string) => z.string().describe(`${what} (ISO 8601, UTC).`);

// ---- People and sign-in -------------------------------------------------------------------------

/** services/people.ts `personView`. */
export const personSchema = z
  .object({
    id: z.string().describe("The person's id (per_…)."),
    email: z.string().nullable().describe('Their email address, lower-cased; null for an account made by a wallet sign-in.'),
    email_verified: z.boolean().describe('Whether the email address was verified (no verification step exists yet, so false).'),
    display_name: z.string().describe('The name shown for them: as given at sign-up, else the part of the email before @; a wallet account gets its shortened address (0x1234…abcd).'),
    status: z.enum(['active', 'suspended', 'rejected', 'restricted']).describe('The account status; anything but active limits what the person may do.'),
    default_workspace_id: z.string().nullable().describe('The workspace a session or person token acts in without an x-workspace-id header (the one made at sign-up).'),
    created_at: isoTime('When the account was created'),
  })
  .meta({ id: 'Person', description: 'A person (an account), without their password or date of birth.' });

/** routes/auth.ts `signedInReply`: the session and token every sign-in answers. */
const signedInFields = {
  person: personSchema,
  session: z
    .object({
      id: z.string().describe("The session's id (a UUID), as listed by GET /api/user/sessions and ended by DELETE /api/user/sessions/{sessionId}."),
      expires_at: isoTime('When the session ends unless it is ended before (SESSION_TTL_HOURS after sign-in)'),
    })
    .describe('The session this sign-in opened; its cookie (pcs_session, HttpOnly) is in Set-Cookie.'),
  token: z
    .object({
      access_token: z.string().describe('A person token (a JWT) bound to the session: signing out or ending the session stops it.'),
      token_type: z.literal('Bearer').describe('Send it as Authorization: Bearer <access_token>.'),
      expires_in: z.number().int().describe('Seconds the token is valid for (PERSON_TOKEN_TTL_S); sign in again for another.'),
      use: z.string().describe('How to send it, in a sentence.'),
    })
    .describe('A person token for programs; browsers use the cookie instead.'),
};

export const signinResponse = z.object(signedInFields);

export const signupResponse = z.object({
  ...signedInFields,
  workspace: workspaceSchema,
});

export const walletSigninResponse = z.object({
  ...signedInFields,
  wallet: z.string().describe('The address that signed, checksummed (EIP-55 mixed case).'),
});

export const signoutResponse = z.object({ signed_out: z.literal(true).describe('The session is ended and its cookie cleared; its person tokens stop too.') });

export const walletNonceResponse = z.object({
  nonce: z.string().describe('The one-time nonce inside the message.'),
  message: z.string().describe('The Sign-In with Ethereum (EIP-4361) message to sign unchanged with the wallet (personal_sign), then send to POST /api/auth/wallet/signin or POST /api/user/wallets.'),
  expires_at: isoTime('When the message and its nonce expire (10 minutes after they were issued)'),
});

/** services/people.ts `wallets`: one row of wallet_links. */
export const linkedWalletSchema = z
  .object({
    address: z.string().describe('The wallet address, lower-cased.'),
    created_at: isoTime('When it was linked (for a wallet account, when the account was made)'),
  })
  .meta({ id: 'LinkedWallet', description: 'A wallet linked to the account: signing in with it signs in to this account.' });

export const walletLinkResponse = z.object({
  address: z.string().describe('The wallet address now linked, lower-cased.'),
  linked: z.literal(true).describe('The wallet is linked to your account (also when it already was).'),
});

export const walletListResponse = listEnvelopeSchema(linkedWalletSchema, 'The wallets linked to your account, oldest first; empty when none is (all of them: has_more is false, next_cursor null and limit their number).');

export const userResponse = z.object({
  person: personSchema,
  workspaces: z
    .array(
      z.object({
        workspace_id: z.string().describe("The workspace's id; send it as x-workspace-id to act there."),
        name: z.string().describe('Its name.'),
        role: z.enum(['owner', 'admin', 'member']).describe("Your role there (in a test workspace, your role in its parent)."),
        plan: z.string().describe('Its plan.'),
        is_test: z.boolean().describe('Whether it is a test workspace.'),
      }),
    )
    .describe('The workspaces you may act in, in the order you joined them, each followed by its test workspace.'),
  wallets: z.array(linkedWalletSchema).describe('The wallets linked to your account, oldest first.'),
  current_workspace_id: z.string().describe('The workspace this request acted in (x-workspace-id, else your default workspace).'),
});

const sessionItem = z.object({
  id: z.string().describe("The session's id (a UUID)."),
  method: z.enum(['password', 'wallet']).describe('How it was signed in: email and password, or a wallet signature.'),
  user_agent: z.string().nullable().describe('The User-Agent of the sign-in request (up to 300 characters); null when none was sent.'),
  created_at: isoTime('When it was signed in'),
  expires_at: isoTime('When it ends unless ended before'),
  current: z.boolean().describe('Whether it is the session this request came with (its cookie, or the session its person token is bound to).'),
});

export const sessionListResponse = listEnvelopeSchema(sessionItem, 'Your open sessions, newest first, a page of at most limit (20 unless sent; next_cursor for the next).');

export const revokeAllSessionsResponse = z.object({
  revoked: z.number().int().describe('How many sessions were ended (the current one too, unless it is the one kept).'),
  kept: z.string().nullable().describe('The currentSessionId sent, as sent (whether or not it names an open session of yours); null when none was.'),
});

export const revokeSessionResponse = z.object({ revoked: z.string().describe('The id of the session ended.') });

// ---- API keys and agents ------------------------------------------------------------------------

// ApiKey, IssuedApiKey and Workspace are identity's (plugins/identity/responses.ts): registration answers them too.
export const apiKeyListResponse = listEnvelopeSchema(apiKeySchema, "The workspace's API keys, newest first, revoked and expired ones included.");

export const createApiKeyResponse = z.object({
  api_key: issuedApiKeySchema
    .extend({ key: z.string().nullable().describe('The secret (pcs_…), to send in x-api-key, shown only in this answer; null in the replay of an Idempotency-Key (only its hash is kept).') })
    .describe('The key created: by this request, or, in a replay, by the first request with this Idempotency-Key.'),
  hint: z.string().optional().describe('A replay only (Idempotent-Replayed: true): its secret was shown only in the first answer; what to do if that answer never arrived.'),
  next: z
    .array(
      nextRequestSchema('revoke', 'DELETE', "Its path: the replayed key's DELETE /api/api-keys/{keyId}.", {}),
    )
    .optional()
    .describe('A replay only: the request that revokes the key, should its secret be lost.'),
});

export const deleteApiKeyResponse = z.object({
  id: z.string().describe('The id of the key revoked.'),
  revoked: z.literal(true).describe('The key is revoked (also when it already was): it stops at once.'),
});

/** routes/agents.ts `agentView`. */
export const agentSchema = z
  .object({
    id: z.string().describe("The agent's id (agt_…)."),
    name: z.string().describe('Its name.'),
    status: z.enum(['active', 'disabled']).describe('active, or disabled (its keys revoked, no new ones until it is enabled again).'),
    created_by: z.string().nullable().describe('The person who created it; null for an agent that registered itself.'),
    created_at: isoTime('When it was created'),
  })
  .meta({ id: 'Agent', description: 'An agent of the workspace.' });

export const agentListResponse = listEnvelopeSchema(agentSchema, "The workspace's agents, newest first, disabled ones included.");

export const agentResponse = z.object({ agent: agentSchema });

export const deleteAgentResponse = z.object({
  id: z.string().describe('The id of the agent disabled.'),
  status: z.literal('disabled').describe('Its status now; its usage history stays.'),
  revoked_keys: z.number().int().describe('How many of its keys this request revoked (0 when none was left).'),
});

export const agentKeyResponse = z.object({
  api_key: issuedApiKeySchema,
  agent: agentSchema,
});

export const personTokenResponse = z.object({
  token: z
    .object({
      access_token: z.string().describe('A person token (a JWT) bound to the session that asked: ending the session stops it.'),
      token_type: z.literal('Bearer'),
      expires_in: z.number().int().describe('Seconds the token is valid for (PERSON_TOKEN_TTL_S).'),
      scope: z.string().describe('The scopes it carries, space-separated.'),
    })
    .describe('A narrower person token, for a script that should do less than its person may.'),
});
