import { ApiError } from '../../core/errors';
import type { NextStep } from '../../core/errors';

export const ACCEPTED_CREDENTIALS_HINT =
  'Send an API key in the x-api-key header (or as Authorization: Bearer <key>), or an OAuth access token as Authorization: Bearer <token>; people use their session or person token.';

/** Where a caller without a credential can get one. */
export const WHERE_TO_GET_A_CREDENTIAL: NextStep[] = [
  { action: 'register_agent', method: 'POST', path: '/api/agents/register', body: { name: 'my-pricing-agent' }, description: 'Free sandbox workspace and key, no human needed.' },
  { action: 'register_oauth_client', method: 'POST', path: '/api/oauth/register', body: { client_name: 'my-agent-framework' }, description: 'Client credentials for OAuth frameworks; exchange them at POST /api/oauth/token.' },
  { action: 'sign_in', method: 'POST', path: '/api/auth/signin', body: { email: '<EMAIL>', password: '<PASSWORD>' }, description: 'People sign in (or sign up at POST /api/auth/signup) and create keys at POST /api/api-keys.' },
  { action: 'try_demo', method: 'POST', path: '/api/public/compute/demo', body: { context: { current_price: 10, currency: 'USD' } }, description: 'Keyless demo pricing, rate limited per address.' },
];

/**
 * What a caller refused a registration for the day can do instead: none of it registers again. The keyless demo prices
 * now, and a person's sign-up makes a workspace that no registration quota limits (SIGN_IN_STEPS' sign_up).
 */
export const INSTEAD_OF_REGISTERING: NextStep[] = [
  ...WHERE_TO_GET_A_CREDENTIAL.filter((n) => n.action === 'try_demo'),
  {
    action: 'sign_up',
    method: 'POST',
    path: '/api/auth/signup',
    body: { email: '<EMAIL>', password: '<PASSWORD>', date_of_birth: '<YYYY-MM-DD>' },
    description: 'A person (18 or older) signs up for a workspace of their own and creates keys there (POST /api/api-keys).',
  },
];

/** A claim token that matches no open claim link: most often one pasted with its prefix doubled or cut, else used or expired. */
export function unknownClaimLink(): ApiError {
  return new ApiError('not_found', 'This claim link is unknown, already used, replaced or expired.', {
    hint: 'Send the token exactly as registration returned it (claim.token, which already begins pcs_clm_). Claim links are one-time, expire, and a new one replaces the last: while the sandbox is unclaimed, its agent gets a fresh link with POST /api/agents/claim-link (with its own key); a link that was used means the sandbox is claimed.',
  });
}

function challenge(error: 'invalid_token' | 'invalid_request' | null, description: string): string {
  const parts = ['Bearer realm="pricing-compute"'];
  if (error) parts.push(`error="${error}"`, `error_description="${description.replace(/"/g, "'")}"`);
  return parts.join(', ');
}

/**
 * 401 for a credential that was sent and rejected. SPEC: the hint names the accepted credentials,
 * so `advice` specific to the failure is put in front of that list, never in its place.
 */
export function invalidCredentials(message: string, advice?: string): ApiError {
  return new ApiError('invalid_credentials', message, {
    hint: advice ? `${advice} ${ACCEPTED_CREDENTIALS_HINT}` : ACCEPTED_CREDENTIALS_HINT,
    next: WHERE_TO_GET_A_CREDENTIAL,
    fields: { retryable: false },
    headers: { 'WWW-Authenticate': challenge('invalid_token', message) },
  });
}

/**
 * 404 for a workspace the credential may not act in (a person's x-workspace-id naming one they are not a
 * member of, or any other than a key's own): the same answer whether it exists or not.
 */
export function notAMember(hint = 'Send x-workspace-id with one of the workspaces listed at GET /api/user, or omit it for your default workspace.'): ApiError {
  return new ApiError('not_found', 'You are not a member of that workspace.', { hint });
}

/**
 * 400 for an x-workspace-id header sent with nothing in it (an empty variable): it meant to name a workspace, and acting
 * in the credential's own or default one instead could change the wrong workspace, so it is refused, as an empty
 * x-api-key is. The same for people and keys; `hint` says what the credential may name.
 */
export function emptyWorkspaceHeader(hint: string): ApiError {
  return new ApiError('bad_request', 'The x-workspace-id header is empty (an empty variable?).', { hint });
}

/** Where a person whose sign-in was refused can go: sign in another way, or sign up. */
const SIGN_IN_STEPS: NextStep[] = [
  { action: 'sign_in', method: 'POST', path: '/api/auth/signin', body: { email: '<EMAIL>', password: '<PASSWORD>' }, description: 'Sign in with email and password.' },
  { action: 'wallet_sign_in', method: 'POST', path: '/api/auth/wallet/nonce', body: { address: '<0xWALLET>' }, description: 'Ask for a message naming this service, sign it with the wallet, send it to POST /api/auth/wallet/signin.' },
  { action: 'sign_up', method: 'POST', path: '/api/auth/signup', body: { email: '<EMAIL>', password: '<PASSWORD>', date_of_birth: '<YYYY-MM-DD>' }, description: 'No account yet: sign up (18 or older).' },
];

/**
 * 401 for a sign-in (password or signed wallet message) that was refused: SPEC's invalid_credentials
 * with its challenge, but a hint and next steps about signing in, not about API keys.
 */
export function signInRefused(message: string, advice: string): ApiError {
  return new ApiError('invalid_credentials', message, {
    hint: `${advice} People sign in with email and password (POST /api/auth/signin) or a signed wallet message (POST /api/auth/wallet/signin); programs use API keys.`,
    next: SIGN_IN_STEPS,
    fields: { retryable: false },
    headers: { 'WWW-Authenticate': challenge(null, message) },
  });
}

/** The revoked key a 401 explains: why (revoked_reason), and where it lived, for advice that names its workspace and agent. */
export interface RevokedKeyFacts {
  revoked_reason: string | null;
  workspace_id: string;
  agent_id: string | null;
}

/**
 * Why a key was revoked and what its holder can do now, by the reason stored with the revocation: "use a current key"
 * helps only after a rotation, and a holder cut off by a claim or a departure needs to know whom to ask.
 */
const REVOKED_BECAUSE: Record<string, { why: string; advice: string | ((key: RevokedKeyFacts) => string) }> = {
  rotated: { why: 'it was rotated', advice: 'Use the new key that POST /api/api-keys/rotate returned; a rotated key stops working at once.' },
  claimed: {
    why: 'its sandbox workspace was claimed (by a person, or a key with workspace:claim), and the claim revokes the agent key unless the claimer keeps it',
    // A person acts in their default workspace unless x-workspace-id names another: a key asked for without it lands
    // there, not in the claimed workspace the agent keeps working for.
    advice: (key) =>
      `The claimed workspace is now managed by its new owner: ask its owner or an admin for a key made in it (${key.workspace_id}): signed in, they send the header x-workspace-id: ${key.workspace_id} with POST /api/agents/${key.agent_id ?? '{id}'}/keys (a key bound to this agent) or POST /api/api-keys; without that header the key is made in their own default workspace.`,
  },
  'creator left the workspace': {
    why: 'the person who created it left the workspace or was removed from it',
    advice: 'Ask an owner or admin of the workspace for a new key.',
  },
  'revoked by a person': { why: 'a person of its workspace revoked it', advice: 'Ask an owner or admin of the workspace for a new key.' },
  'agent disabled': {
    why: 'its agent was disabled',
    advice: 'A person of the workspace can enable the agent again (PATCH /api/agents/{id}) and mint it a key (POST /api/agents/{id}/keys).',
  },
};

/** What an access token's holder does once its key is gone: the token dies with it. */
const NEW_TOKEN = 'then get a new access token at POST /api/oauth/token with it (a rotated client secret is the new key; the client_id stays).';

/**
 * 401 for a revoked key, saying why (from revoked_reason) and what to do next; `viaToken` when the
 * key is the one behind an access token, whose holder also needs a new token.
 */
export function revokedKey(key: RevokedKeyFacts, viaToken = false): ApiError {
  const { message, advice } = revokedKeyExplained(key, viaToken ? 'The key behind this access token' : 'This API key');
  return invalidCredentials(message, viaToken ? `${advice.replace(/\.$/, '')}; ${NEW_TOKEN}` : advice);
}

/**
 * The sentence saying that `subject` ("This API key", "This client secret") was revoked and why, from revoked_reason, and
 * the advice that fits: revokedKey's, and the token endpoint's for a client secret that matched a revoked key.
 */
export function revokedKeyExplained(key: RevokedKeyFacts, subject: string): { message: string; advice: string } {
  const known = key.revoked_reason === null ? undefined : REVOKED_BECAUSE[key.revoked_reason];
  const advice = typeof known?.advice === 'function' ? known.advice(key) : known?.advice;
  return {
    message: `${subject} has been revoked${known ? `: ${known.why}` : ''}.`,
    advice: advice ?? 'Use a current key. People can create keys at POST /api/api-keys.',
  };
}

/**
 * Where to get a credential a route that refuses unclaimed agent workspaces takes: registering (an agent or an OAuth
 * client) makes one, and the demo is keyless, so only people's keys and sessions are left.
 */
export const WHERE_TO_GET_A_WORKSPACE_CREDENTIAL: NextStep[] = WHERE_TO_GET_A_CREDENTIAL.filter((n) => n.action === 'sign_in');

/** 401 when no credential was sent; `next`, where to get one the route takes. */
export function missingCredentials(message = 'This route needs a credential and none was sent.', next: NextStep[] = WHERE_TO_GET_A_CREDENTIAL): ApiError {
  return new ApiError('unauthorized', message, {
    hint: ACCEPTED_CREDENTIALS_HINT,
    next,
    fields: { retryable: false },
    headers: { 'WWW-Authenticate': challenge(null, message) },
  });
}

/** 401 when no credential was sent to a route only people may call: the credentials it takes, and how to get one. */
export function missingPersonCredentials(): ApiError {
  const message = "This route needs a person's session or person token and none was sent.";
  return new ApiError('unauthorized', message, {
    hint: 'Sign in (POST /api/auth/signin, or sign up at POST /api/auth/signup) and send the session cookie or Authorization: Bearer <person token>; API keys and OAuth access tokens are not accepted here.',
    next: WHERE_TO_GET_A_CREDENTIAL.filter((n) => n.action === 'sign_in'),
    fields: { retryable: false },
    headers: { 'WWW-Authenticate': challenge(null, message) },
  });
}

/**
 * 401 for a valid credential of a kind the route does not take. SPEC: person-only routes answer an
 * empty `next` (a person signs in, nothing to fetch); elsewhere `next` lists where to get a credential.
 */
export function wrongKindOfCredential(message: string, hint: string, next: NextStep[] = []): ApiError {
  return new ApiError('unauthorized', message, {
    hint,
    next,
    fields: { retryable: false },
    headers: { 'WWW-Authenticate': challenge('invalid_request', message) },
  });
}

/** 403 naming the scopes a request needs; `message` replaces the generic sentence where the credential names them but they do not hold. */
export function insufficientScope(required: readonly string[], hint: string, message?: string): ApiError {
  return new ApiError('insufficient_scope', message ?? `This request needs the scope${required.length > 1 ? 's' : ''} ${required.join(', ')}.`, {
    hint,
    fields: { required_scopes: required },
  });
}

/** 403 for a scoped credential on a route that needs full access (RouteSpec.fullAccess). */
export function fullAccessRequired(required: readonly string[], missing: readonly string[], what: string, credential: 'key' | 'access_token' | 'person_token' = 'key'): ApiError {
  return new ApiError('insufficient_scope', `${what} needs full access; this credential lacks ${missing.join(', ')}.`, {
    hint: FULL_ACCESS_HINTS[credential],
    fields: { required_scopes: required },
  });
}

const FULL_ACCESS_HINTS = {
  key: 'Use a key created with no scopes (POST /api/api-keys without a scopes field) or a person\'s session; scoped keys do the work their scopes name.',
  access_token:
    'An access token carries the scopes it was minted with: mint one without a scope parameter (POST /api/oauth/token) from a key with full access, or use such a key or a person\'s session. Routes that change the workspace\'s configuration (functions, routing policies) take a workspace key or a person\'s session only, never an agent\'s token.',
  person_token:
    'A person token narrowed with POST /api/user/tokens does only the work its scopes name: use your session, or the person token answered at sign-in, for account, key and team management.',
} as const;

/**
 * The `claim` step SPEC lists always (a sandbox at its daily limit, a sandbox refused by its plan). Where nobody can
 * claim (claimOffered false: no accounts) it stays listed, marked `available: false`, so an agent spends no request on it.
 */
export function claimStep(offered: boolean): NextStep {
  return {
    action: 'claim',
    description: offered
      ? // A token cannot ask for a claim link (403: a new link ends the one given out): an OAuth client sends its secret.
        'Have this workspace claimed and the limits lift: give a person the claim link from your registration (they open it and confirm; lost it? POST /api/agents/claim-link answers a new one, sent with the sandbox key itself in x-api-key, for an OAuth client its client secret, never an access token), or give its token to a trusted agent whose key holds workspace:claim for POST /api/agents/claim. This sandbox key cannot claim its own workspace.'
      : 'Not offered by this service: it runs without sign-in (no accounts), so no person can claim this sandbox here and its limits stay.',
    method: 'POST',
    path: '/api/agents/claim',
    body: { token: '<CLAIM_TOKEN>' },
    available: offered,
    // The sandbox's key is refused this request: an agent that sends it itself only loops.
    by: 'claimer',
  };
}

/**
 * 403 plan_restricted: what an unclaimed sandbox may not do. `route`, for a route the sandbox may not use at all: the
 * message names it and says the request was refused, and what the route does (its summary) goes in the hint, labelled,
 * so it does not read as an account of what the call did.
 */
export function sandboxRefusal(what: string, claimOffered: boolean, route?: { operation: string; summary: string }): ApiError {
  const does = route ? `What ${route.operation} does, for a claimed workspace: ${route.summary.replace(/[.\s]+$/, '')}. ` : '';
  return new ApiError('plan_restricted', route ? `The Agent Starter sandbox is refused ${route.operation} (open to claimed workspaces only); nothing was done.` : `The Agent Starter sandbox cannot ${what}.`, {
    hint: `${does}Sandbox keys compute with built-in functions, read functions and routing policies, rotate themselves and work as OAuth client credentials. ${
      claimOffered ? 'Have a person claim the workspace (the claim link from registration) to lift the limits.' : 'This service runs without sign-in (no accounts), so the limits cannot be lifted here.'
    }`,
    // The reason says what lifts it (SPEC: batch "needs a claimed workspace"), not only what was refused.
    fields: { plan: 'agent_starter', reason: `Agent Starter sandboxes cannot ${what}.${claimOffered ? ' A claimed workspace can.' : ''}` },
    next: [claimStep(claimOffered)],
  });
}
