import type { Reservation } from '../../../core/admission';
import type { Principal } from '../../../core/auth';
import type { RateLimitResult } from '../../../core/kv';
import { identityOf } from '../../identity';

/** The `receipt` of a priced or verified call: its usage event and the link to it. */
export function receipt(baseUrl: string, usageEventId: string): { usage_event_id: string; url: string; recorded_at: string } {
  return { usage_event_id: usageEventId, url: `${baseUrl}/api/usage/events/${usageEventId}`, recorded_at: new Date().toISOString() };
}

/**
 * The `remaining` object of a reply: what the payment path reports (the sandbox daily calls, a day
 * pass, a balance) and, for sandboxes, the request-rate allowance with its reset time.
 */
export function remaining(p: Principal | null, reservation: Reservation, workspaceRate: RateLimitResult | undefined): Record<string, unknown> | undefined {
  if (!p || !identityOf(p).sandbox) return reservation.remaining;
  return {
    ...(reservation.remaining ?? {}),
    ...(workspaceRate
      ? { request_rate: { limit_per_minute: workspaceRate.limit, remaining: workspaceRate.remaining, resets_at: new Date(Date.now() + workspaceRate.resetMs).toISOString() } }
      : {}),
  };
}
