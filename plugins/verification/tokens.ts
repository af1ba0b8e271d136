/** DI tokens other plugins use to reach verification services (import them from the plugin's index). */
export const VERIFICATION = {
  /** The VerificationService: one verification, the same for REST, the demo and MCP. */
  Service: Symbol('verification.VerificationService'),
  /** The ObservationStore: stored price observations. */
  Observations: Symbol('verification.ObservationStore'),
} as const;
