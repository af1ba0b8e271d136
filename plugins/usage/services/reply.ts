import type { Reservation } from '../../../core/admission';
import type { Principal } from '../../../core/auth';
import { bindingRate, identityOf } from '../../identity';
import type { RequestRate } from '../../identity';
import { eventView, recordedEventRow } from './event-view';
import type { EventRow } from './event-view';
import type { RecordedEvent, UsageEventInput } from './recorder';

/** A keyless demo call's receipt; registration is offered only while it is open (SELF_REGISTRATION_OPEN). */
export function demoReceiptHint(registrationOpen: boolean): string {
  return registrationOpen
    ? 'Keyless demo calls are recorded on the shared demo tenant, whose records a caller without a key cannot open; register a sandbox (POST /api/agents/register) for usage records of your own: each receipt carries its record, and the records open at their links once a person claims the sandbox.'
    : 'Keyless demo calls are recorded on the shared demo tenant, whose records a caller without a key cannot open.';
}

/** An unclaimed sandbox may not read the usage API (SPEC's sandbox capabilities), so its receipt says where the record is. */
export const SANDBOX_RECEIPT_HINT =
  'The record of this call is usage_event above; an unclaimed sandbox cannot open the usage API (403 plan_restricted). Once a person claims this workspace (the claim link from registration), every record, this one included, opens at url.';

/**
 * The `receipt` of a priced or verified call: its usage event as the usage API shows it, and the link
 * to it. A keyless demo call has no workspace of its own to open the link with, and an unclaimed
 * sandbox may not open it yet, so their receipts say so in `hint`.
 */
export function receipt(baseUrl: string, recorded: RecordedEvent, event: UsageEventInput, principal: Principal | null, registrationOpen = true): Receipt {
  return receiptOfRow(baseUrl, recordedEventRow(recorded, event), principal, registrationOpen);
}

export interface Receipt {
  usage_event_id: string;
  url: string;
  recorded_at: string;
  usage_event: Record<string, unknown>;
  hint?: string;
}

/** receipt() of an event read back from the record (a replayed call's). */
export function receiptOfRow(baseUrl: string, row: EventRow, principal: Principal | null, registrationOpen = true): Receipt {
  return {
    usage_event_id: row.id,
    url: `${baseUrl}/api/usage/events/${row.id}`,
    recorded_at: row.created_at.toISOString(),
    usage_event: eventView(row),
    ...(principal ? (identityOf(principal).sandbox ? { hint: SANDBOX_RECEIPT_HINT } : {}) : { hint: demoReceiptHint(registrationOpen) }),
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
      ? { request_rate: { limit_per_minute: binding.limit, remaining: binding.remaining, resets_at: new Date(Date.now() + binding.restoredMs).toISOString(), scope: binding.scope } }
      : {}),
  };
}
