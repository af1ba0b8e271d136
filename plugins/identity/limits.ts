import type { Config } from '../../config';

/** The Agent Starter limits in force, as stated in registration responses and discovery documents. */
export function sandboxLimits(config: Config): Record<string, unknown> {
  const l = config.limits;
  return {
    compute_calls_per_day: l.sandbox.computeCallsPerDay,
    key_lifetime_days: l.sandbox.keyLifetimeDays,
    key_rotations_per_day: l.sandbox.keyRotationsPerDay,
    requests_per_minute: l.rateLimit.perWorkspacePerMinute,
    // Also binding: every request counts against its network address too, whichever workspace it is for.
    requests_per_minute_per_address: l.rateLimit.perAddressPerMinute,
    batch_pricing: false,
    functions: 'built-in only',
    test_workspace: false,
  };
}

export function registrationLimits(config: Config): { per_address_per_day: number; overall_per_day: number } {
  return { per_address_per_day: config.limits.registrations.perAddressPerDay, overall_per_day: config.limits.registrations.overallPerDay };
}

export const AGENT_STARTER_PLAN = {
  id: 'agent_starter',
  name: 'Agent Starter',
  capabilities: ['compute prices with built-in functions', 'read functions and routing policies', 'rotate its own key', 'use its key as OAuth client credentials'],
  not_included: ['batch pricing', 'workspace or marketplace functions', 'a test workspace (until claimed)', 'key, team and billing management'],
};

/** Where the changelog feeds live (served by the discovery plugin). */
export function changelogFeedUrl(base: string): string {
  return `${base}/api/changelog/feed.json`;
}

/**
 * Whether a sandbox can be claimed on this instance. A claim needs a person: a signed-in one confirms the link, and
 * only an owner or admin (a person) creates the workspace:claim key a trusted agent claims with. Without the accounts
 * plugin nobody signs in, so the claim link is still issued (SPEC) but nothing offers a claim as a way on.
 */
export function claimOffered(config: Config): boolean {
  return config.plugins.enabled.includes('accounts');
}

/** How a sandbox's one-time claim link is used, said with the link wherever a sandbox is registered (agent or OAuth). */
export function claimHow(offered: boolean): string {
  return offered
    ? 'Give the url to a person: signed in, they open it and confirm (POST to the same url; no account yet? POST /api/auth/signup first, or POST /api/auth/signin, and send the session cookie or the person token). A trusted agent with a workspace:claim key can instead POST /api/agents/claim with {"token": …}.'
    : 'Nobody can confirm it on this service for now: it runs without sign-in (no accounts), so the sandbox keeps its Agent Starter limits. Keep the link: if the operator enables accounts, a signed-in person opens it and confirms (POST to the same url) until it expires.';
}
