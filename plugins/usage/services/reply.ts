import type { Reservation } from '../../../core/admission';
import type { Principal } from '../../../core/auth';
import { bindingRate, identityOf } from '../../identity';
import type { RequestRate } from '../../identity';
import { eventView, recordedEventRow } from './event-view';
import type { RecordedEvent, UsageEventInput } from './recorder';

export const DEMO_RECEIPT_HINT =
  'Keyless demo calls are recorded on the shared demo tenant, whose usage nobody can open; register a sandbox (POST /api/agents/register) for receipts you can read with your key.';

/**
 * The `receipt` of a priced or verified call: its usage event as the usage API shows it, and the link
 * to it. A keyless demo call has no workspace of its own to open the link with, so its receipt says so
 * in `hint`.
 */
export function receipt(
  baseUrl: string,
  recorded: RecordedEvent,
  event: UsageEventInput,
  principal: Principal | null,
): { usage_event_id: string; url: string; recorded_at: string; usage_event: Record<string, unknown>; hint?: string } {
  return {
    usage_event_id: recorded.id,
    url: `${baseUrl}/api/usage/events/${recorded.id}`,
    recorded_at: recorded.createdAt.toISOString(),
    usage_event: eventView(recordedEventRow(recorded, event)),
    ...(principal ? {} : { hint: DEMO_RECEIPT_HINT }),
  };
}

/**
 * The `remaining` object of a reply: what the payment path reports (the sandbox daily calls, a day
 * pass, a balance) and, for sandboxes, the request-rate allowance with its reset time: the binding
 * one of the workspace's and the address's, as the X-RateLimit-* headers report, with its `scope`.
 */
export function remaining(p: Principal | null, reservation: Reservation, rate: RequestRate | undefined): Record<string, unknown> | undefined {
  if (!p || !identityOf(p).sandbox) return reservation.remaining;
  const binding = rate ? bindingRate(rate) : undefined;
  return {
    ...(reservation.remaining ?? {}),
    ...(binding
      ? { request_rate: { limit_per_minute: binding.limit, remaining: binding.remaining, resets_at: new Date(Date.now() + binding.resetMs).toISOString(), scope: binding.scope } }
      : {}),
  };
}
