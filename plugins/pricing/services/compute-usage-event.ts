import type { AttemptReport, EngineError } from '../../../engine';
import { callerFields, contextKeys } from '../../usage';
import type { UsageEventInput } from '../../usage';
import { DEMO_WORKSPACE_ID } from '../migrations/0001-pricing-schema';
import type { ComputeCall } from './compute-call';

/** What differs between the usage events of one call's outcomes. */
export type UsageOutcome = Pick<UsageEventInput, 'status' | 'cost' | 'billable' | 'paidVia'> &
  Partial<Pick<UsageEventInput, 'errorCode' | 'functionId' | 'functionName' | 'strategy' | 'price' | 'currency' | 'confidence' | 'cached' | 'fallbackUsed' | 'networkEvidence' | 'failedFunctionIds'>> & { latencyMs: number };

/**
 * A failure that counts against its function (leaderboard reliability), as its breaker counts it: not one whose address
 * the outbound guard refused (never called, retryable: false), nor one the call's time budget stopped before its own
 * timeout (docs/leaderboard.md). The same holds for the chosen function, which a failed call's event names only then.
 */
export const failedForReal = (a: AttemptReport): boolean => a.outcome === 'failed' && a.retryable !== false && !a.cut_by_budget;

/** The functions a call tried that failed, but the one its event names: their failures count against them too. */
export function failedOthers(attempts: readonly AttemptReport[], named: string | undefined): string[] | undefined {
  let ids: string[] | undefined;
  for (const a of attempts) if (a.id !== null && failedForReal(a) && a.id !== named && !ids?.includes(a.id)) (ids ??= []).push(a.id);
  return ids;
}

/**
 * The function a failed call's event names, with the strategy that reached it ("explicit" for a pinned call, as a priced
 * one records): the chosen function the call failed with, when its failure counts against it (failedForReal); the one
 * whose attempt could not price the context (its endpoint refused it or answered in another currency, a built-in lacked
 * inputs), the chosen one first; or the function a pinned call named that cannot run (a draft, inactive, a pipeline).
 * Only functions within the caller's reach are named: attempts that ran, and `reached`, which the engine sets only on a
 * function it resolved for the caller; a missing or unreachable one (404) names nothing, so its event tells nothing apart.
 * Only the first counts against the function (leaderboard reliability): the others are the context's or the caller's doing.
 */
export function failedCallFunction(err: EngineError, pinned: boolean): Pick<UsageOutcome, 'functionId' | 'functionName' | 'strategy'> {
  const attempts = err.details.attempts ?? [];
  const attempt =
    err.code === 'functions_failed'
      ? attempts.find((a) => a.role === 'chosen' && failedForReal(a))
      : err.code === 'insufficient_context'
        ? (attempts.find((a) => a.role === 'chosen' && a.outcome === 'not_applicable') ?? attempts.find((a) => a.outcome === 'not_applicable'))
        : undefined;
  const fn = attempt?.id ? { id: attempt.id, name: attempt.function } : err.details.reached;
  if (!fn) return {};
  const strategy = pinned ? 'explicit' : err.details.strategy;
  return { functionId: fn.id, functionName: fn.name, ...(strategy ? { strategy } : {}) };
}

/** The usage event of a call: its outcome and who made it. */
export function usageEventOf(call: ComputeCall, r: UsageOutcome): UsageEventInput {
  const p = call.principal;
  return {
    workspaceId: p?.workspaceId ?? DEMO_WORKSPACE_ID,
    requestId: call.requestId,
    operation: call.operation,
    channel: call.channel,
    status: r.status,
    errorCode: r.errorCode ?? null,
    functionId: r.functionId ?? null,
    functionName: r.functionName ?? null,
    strategy: r.strategy ?? null,
    price: r.price ?? null,
    currency: r.currency ?? null,
    confidence: r.confidence ?? null,
    cost: r.cost,
    billable: r.billable,
    paidVia: r.paidVia,
    ...callerFields(p, call.req),
    cached: r.cached ?? false,
    fallbackUsed: r.fallbackUsed ?? false,
    networkEvidence: r.networkEvidence ?? false,
    latencyMs: r.latencyMs,
    contextKeys: contextKeys(call.context),
    failedFunctionIds: r.failedFunctionIds,
  };
}
