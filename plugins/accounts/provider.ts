/**
 * Social and agent-identity sign-in plug in through an OIDC-shaped provider. None ships yet; see
 * docs/identity.md for the flow a provider implements.
 *
 * Agent-identity providers authorise with an inbox the agent controls: the service never receives
 * the inbox key, and the inbox key must hold the `provider_connect` permission at the provider.
 */
export interface ProviderIdentity {
  /** Stable subject at the provider (`sub`). */
  subject: string;
  email?: string;
  emailVerified?: boolean;
  displayName?: string;
  /** For agent-identity providers: the inbox address the agent controls. */
  inbox?: string;
  /** Permissions the provider reports for the authorising credential (must include `provider_connect` for agent identities). */
  permissions?: string[];
}

export interface IdentityProvider {
  /** Short id used in paths: /api/auth/providers/{id}/start and /callback. */
  id: string;
  kind: 'social' | 'agent_identity';
  /** Where to send the browser (authorization request with state and PKCE challenge). */
  authorizationUrl(input: { state: string; codeChallenge: string; redirectUri: string }): string;
  /** Exchanges the authorization code at the provider's token endpoint and reads the identity (ID token or userinfo). */
  exchange(input: { code: string; codeVerifier: string; redirectUri: string }): Promise<ProviderIdentity>;
}
