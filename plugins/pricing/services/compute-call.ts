import type { Request } from 'express';
import { ApiError } from '../../../core/errors';
import type { Reservation } from '../../../core/admission';
import type { Channel, Principal } from '../../../core/auth';
import type { Preference } from '../../../engine';
import { IDEMPOTENCY_HEADER, requestFingerprint } from '../../identity';
import type { RequestRate } from '../../identity';

export interface ComputeCall {
  principal: Principal | null;
  channel: Channel;
  operation: 'compute' | 'router' | 'demo' | 'batch_item';
  context: Record<string, unknown>;
  functionId?: string | undefined;
  functionName?: string | undefined;
  preference?: Preference | undefined;
  req: Request;
  requestId: string;
  /** performance.now() when the request arrived, for the trace's own overhead. */
  startedAt?: number;
  rateLimit?: RequestRate | undefined;
  /** A batch admits all its items at once. */
  reservation?: Reservation;
  /** What is left of a keyless caller's demo budget after this call; at 0 no priced call is offered next. */
  demoBudgetLeft?: number | undefined;
  /** A keyless call that came with a credential it did not use (the demo): its caller holds a key, so none is offered. */
  credentialIgnored?: boolean;
  /**
   * The call's Idempotency-Key and its request's fingerprint. A batch item's key is the batch's with
   * the item's index, its fingerprint the whole batch's, and `batchKey` the batch's key.
   */
  idempotency?: { key: string; fingerprint: string; batchKey?: string } | undefined;
  /**
   * The caller gives the key's turn back itself (ComputeResult.releaseTurn) once the reply is
   * written or marked not delivered, so a retry never replays an answer about to be marked.
   */
  holdTurn?: boolean;
}

export interface ComputeResult {
  body: Record<string, unknown>;
  headers: Record<string, string>;
  usageEventId: string;
  /** What this call committed (null when the caller brought the reservation): given back by notDelivered. */
  reservation: Reservation | null;
  /** With ComputeCall.holdTurn: gives the key's turn back (after the reply). */
  releaseTurn?: () => void;
}

/**
 * A priced call's Idempotency-Key, with what tells its retry from another call under the key: the
 * route and the validated body. REST and MCP share it, so a call retried over either is the same.
 */
export function callIdempotency(key: string, route: string, body: unknown): NonNullable<ComputeCall['idempotency']> {
  return { key, fingerprint: requestFingerprint({ route, body }) };
}

/**
 * Another request under a key that holds a charged call (a priced call's or a verification's): 422, naming that call's
 * usage event.
 */
export function idempotencyKeyReused(usageEventId: string, ttlHours: number): ApiError {
  return new ApiError('idempotency_key_reused', `This ${IDEMPOTENCY_HEADER} was already used in this workspace for a different call (another body, or another route: a priced call or a verification).`, {
    hint: `A key stands for one intended call: retry that one with its own body and route, or send a new key (a fresh UUID) for this one. Keys are kept ${ttlHours} hours.`,
    fields: { usage_event_id: usageEventId },
  });
}
