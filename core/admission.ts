import type { Channel, Principal } from './auth';
import type { Request } from 'express';

export type PaidVia = 'x402' | 'day_pass' | 'balance' | null;

export interface AdmissionRequest {
  operation: 'compute' | 'batch' | 'router' | 'verify' | 'demo';
  principal: Principal | null;
  /** Number of calls this request stands for (batch items). */
  units: number;
  req: Request;
  /** Where the call came in (api, mcp, demo): an MCP tool call carries no payment header, so it is offered no per-call payment. */
  channel?: Channel;
}

/**
 * How a compute is paid for, held until the call ends: `commit` after success charges it,
 * `release` after failure returns it, so a failed call is never charged.
 */
export interface Reservation {
  admitter: string;
  paidVia: PaidVia;
  /** Fields for the response's `remaining` object, when this payment path reports any. */
  remaining?: Record<string, unknown>;
  headers?: Record<string, string>;
  commit(): Promise<void>;
  release(): Promise<void>;
  /**
   * After commit: gives back what was committed, for a call recorded and settled whose answer then
   * did not reach its caller (marked not delivered just before the reply). Absent: nothing to give back.
   */
  refund?(): Promise<void>;
}

/** Decides whether it pays for a request; null when the request is not its business. */
export interface Admitter {
  name: string;
  admit(request: AdmissionRequest): Promise<Reservation | null>;
  /**
   * What this payment path would report in `remaining` now, reserving nothing (a replayed call,
   * which spends none of it); null when the request is not its business.
   */
  standing?(request: Omit<AdmissionRequest, 'units'>): Promise<Record<string, unknown> | null>;
}

export function freeReservation(): Reservation {
  return { admitter: 'free', paidVia: null, commit: async () => undefined, release: async () => undefined };
}
