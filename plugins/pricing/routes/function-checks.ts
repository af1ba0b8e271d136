import { ApiError } from '../../../core/errors';
import { dec } from '../../../core/money';
import type { SafeHttpClient } from '../../../core/outbound/safe-http-client';
import { OutboundBlockedError, OutboundError } from '../../../core/outbound/safe-http-client';
import type { FunctionDescriptor } from '../../../engine';
import * as s from '../schemas';

// The checks a function's body passes after its schema (address, time limit, cost, fields of its execution type), and
// the examples their refusals offer.

/** What the checks read of the service: its outbound guard and limits. */
export interface FunctionCheckLimits {
  outbound: SafeHttpClient;
  /** COMPUTE_CALL_MAX_MS. */
  callMaxMs: () => number;
  /** FUNCTION_MAX_CALL_COST. */
  maxCallCost: () => number;
}

/** The smallest amount a call is charged (usage costs hold 8 decimals). */
const SMALLEST_CHARGE = '0.00000001';

/**
 * Refuses a cost per call (cost_per_unit x cost_multiplier) that rounds to nothing, or above
 * FUNCTION_MAX_CALL_COST: such a call could not even be recorded. `exampleOf`: what the refusal offers instead (a
 * registration's body with sample costs; a PATCH's body without its costs), made only when it refuses, as for every check here.
 */
export function checkCallCost(costPerUnit: string, costMultiplier: string, max: number, exampleOf: () => unknown): void {
  const cost = dec(costPerUnit).times(dec(costMultiplier));
  // A call is charged in whole 0.00000001 USDC: a priced function whose product rounds to nothing would be free.
  if (cost.gt(0) && cost.lt(SMALLEST_CHARGE)) {
    throw new ApiError('validation_error', `cost_per_unit x cost_multiplier is ${cost.toFixed()} USDC a call, which rounds to 0: calls are charged in steps of ${SMALLEST_CHARGE} USDC.`, {
      issues: [{ path: 'cost_multiplier', reason: `cost_per_unit x cost_multiplier must be 0 or at least ${SMALLEST_CHARGE}` }],
      hint: 'Raise cost_per_unit or cost_multiplier, or set cost_per_unit to 0 for a free function.',
      example: exampleOf(),
    });
  }
  if (cost.lte(max)) return;
  throw new ApiError('validation_error', `A call would cost ${cost.toFixed()} USDC; at most ${max} USDC per call is accepted.`, {
    issues: [{ path: 'cost_per_unit', reason: `cost_per_unit x cost_multiplier must not exceed ${max}` }],
    hint: 'Lower cost_per_unit or cost_multiplier (FUNCTION_MAX_CALL_COST sets the limit).',
    example: exampleOf(),
  });
}

/** Why the outbound rules refuse `url` (scheme, port, literal private addresses, localhost names), or null while they allow it. */
function addressRefusal(outbound: SafeHttpClient, url: string): string | null {
  try {
    outbound.checkUrl(url);
    return null;
  } catch (err) {
    if (err instanceof OutboundBlockedError || err instanceof OutboundError) return err.message;
    throw err;
  }
}

/** Checks an owner-registered address at registration with the rule the call applies. */
export function checkEndpoint(outbound: SafeHttpClient, url: string, exampleOf: () => unknown): void {
  const refused = addressRefusal(outbound, url);
  if (refused === null) return;
  throw new ApiError('validation_error', `endpoint_url is refused: ${refused}`, {
    issues: [{ path: 'endpoint_url', reason: refused }],
    hint: outbound.describeRules(),
    example: exampleOf(),
  });
}

/**
 * An activation of a function whose stored address the outbound rules now refuse (the operator changed them since it was
 * registered): a PATCH of status alone cannot pass, one that sends a new endpoint_url with it can. `exampleOf`: that PATCH.
 */
export function checkStoredEndpoint(outbound: SafeHttpClient, url: string, exampleOf: () => unknown): void {
  const refused = addressRefusal(outbound, url);
  if (refused === null) return;
  throw new ApiError('validation_error', `The function's stored endpoint_url is refused under the current outbound rules: ${refused}`, {
    issues: [{ path: 'endpoint_url', reason: `the stored address is refused: ${refused}` }],
    hint: `Send endpoint_url with status in one PATCH: {"status": "active", "endpoint_url": "https://…"}, your own public address in its place (the example has a placeholder). ${outbound.describeRules()}`,
    example: exampleOf(),
  });
}

/** A timeout_ms longer than a priced call's whole budget could never be given: the call would cut every attempt short. */
export function checkTimeout(timeoutMs: number | undefined, callMaxMs: number, exampleOf: () => unknown): void {
  if (timeoutMs === undefined || timeoutMs <= callMaxMs) return;
  throw new ApiError('validation_error', `timeout_ms ${timeoutMs} is longer than a priced call may take (${callMaxMs} ms).`, {
    issues: [{ path: 'timeout_ms', reason: `must be at most ${callMaxMs} (COMPUTE_CALL_MAX_MS, the time budget of one priced call, fallbacks included)` }],
    hint: 'Lower timeout_ms; an endpoint that needs longer cannot answer within a compute call here.',
    example: exampleOf(),
  });
}

/** Whether a check throws its refusal (an ApiError) for what it is given. */
function refuses(check: () => void): boolean {
  try {
    check();
    return false;
  } catch (err) {
    if (err instanceof ApiError) return true;
    throw err;
  }
}

/**
 * The fields of a function's body the checks after its schema would refuse (address, time limit, cost), all at once: an
 * example keeping one of them would be refused by the next check, a round trip each.
 */
export function refusedAfterSchema(body: Record<string, unknown>, d: FunctionCheckLimits, stored?: { costPerUnit: string; costMultiplier: string }): Set<'endpoint_url' | 'timeout_ms' | 'cost'> {
  const out = new Set<'endpoint_url' | 'timeout_ms' | 'cost'>();
  if (typeof body.endpoint_url === 'string' && refuses(() => checkEndpoint(d.outbound, body.endpoint_url as string, () => ({})))) out.add('endpoint_url');
  if (typeof body.timeout_ms === 'number' && refuses(() => checkTimeout(body.timeout_ms as number, d.callMaxMs(), () => ({})))) out.add('timeout_ms');
  const cost = typeof body.cost_per_unit === 'string' ? body.cost_per_unit : stored?.costPerUnit;
  const multiplier = typeof body.cost_multiplier === 'string' ? body.cost_multiplier : (stored?.costMultiplier ?? '1');
  const sentCost = body.cost_per_unit !== undefined || body.cost_multiplier !== undefined;
  if (sentCost && cost !== undefined && DECIMAL.test(cost) && DECIMAL.test(multiplier) && refuses(() => checkCallCost(cost, multiplier, d.maxCallCost(), () => ({})))) out.add('cost');
  return out;
}

const DECIMAL = /^\d+(\.\d+)?$/;

/** A create's body with every field the checks after its schema refuse replaced by the stock example's placeholder. */
export function mendedCreate(body: Record<string, unknown>, d: FunctionCheckLimits): Record<string, unknown> {
  const refused = refusedAfterSchema(body, d);
  const ex = s.registerFunctionExample;
  return {
    ...body,
    ...(refused.has('endpoint_url') ? { endpoint_url: ex.endpoint_url } : {}),
    ...(refused.has('timeout_ms') ? { timeout_ms: Math.min(d.callMaxMs(), ex.timeout_ms) } : {}),
    ...(refused.has('cost') ? { cost_per_unit: ex.cost_per_unit, cost_multiplier: ex.cost_multiplier } : {}),
  };
}

/** endpoint_url and timeout_ms belong to external_api functions: on another kind they would be stored and never used. */
export function checkEndpointFields(executionType: FunctionDescriptor['executionType'], name: string, body: { endpoint_url?: string | undefined; timeout_ms?: number | null | undefined }): void {
  if (executionType === 'external_api') return;
  const sent = (['endpoint_url', 'timeout_ms'] as const).filter((k) => body[k] !== undefined);
  if (sent.length === 0) return;
  const { endpoint_url: _url, timeout_ms: _timeout, ...rest } = body as Record<string, unknown>;
  throw new ApiError('validation_error', `${sent.join(' and ')} only ${sent.length > 1 ? 'apply' : 'applies'} to external_api functions; ${name} is a ${executionType} function.`, {
    issues: sent.map((path) => ({ path, reason: `only for external_api functions (this one is ${executionType})` })),
    hint: 'Leave them out, or register an external_api function (POST /api/functions) to price at an endpoint of yours.',
    example: rest,
  });
}
