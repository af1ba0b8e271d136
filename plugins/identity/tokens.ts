/** DI tokens other plugins use to reach identity services (import them from the plugin's index). */
export const IDENTITY = {
  Keys: Symbol('identity.KeyService'),
  Workspaces: Symbol('identity.Workspaces'),
  Onboarding: Symbol('identity.Onboarding'),
  Audit: Symbol('identity.AuditLog'),
  /** IdempotencyKeys: Idempotency-Key handling of create routes. */
  Idempotency: Symbol('identity.IdempotencyKeys'),
  /** Uint8Array: secret signing access tokens and person tokens. */
  TokenSecret: Symbol('identity.TokenSecret'),
} as const;
