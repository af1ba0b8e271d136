import { dec, formatMoney } from '../core/money';

export type ExecutionType = 'builtin' | 'external_api' | 'pipeline';
export type FunctionStatus = 'draft' | 'active' | 'inactive';

/** What the engine knows of a pricing function, built-in or owned by a workspace. */
export interface FunctionDescriptor {
  id: string;
  name: string;
  /** Owning workspace; null for built-ins. */
  workspaceId: string | null;
  builtIn: boolean;
  executionType: ExecutionType;
  status: FunctionStatus;
  isPublic: boolean;
  /** USDC per call, decimal string. */
  costPerUnit: string;
  costMultiplier: string;
  description: string;
  tags: string[];
  endpointUrl?: string | null;
  timeoutMs?: number | null;
  /** The marketplace commission (percent) the function's listing keeps for good; null if never listed; absent for built-ins. */
  commissionPct?: string | null;
  /** When it was registered (ISO 8601); absent for built-ins. */
  createdAt?: string;
  /** Which signing secret its requests are signed with (an external function's; each rotation adds 1). */
  signingGeneration?: number;
}

/** Who is asking, for reachability. */
export interface CallerScope {
  workspaceId: string;
  /** Unclaimed agent sandboxes reach built-in functions only. */
  builtInsOnly: boolean;
  /**
   * Whom the caller counts as in a function's breakers and latency statistics: its workspace, or the workspace its test
   * workspace or claimed agent workspace belongs to, so one owner's workspaces count as one caller. Absent: the workspace.
   */
  healthCaller?: string;
}

/** Whom `scope`'s calls count as in breakers and latency statistics (CallerScope.healthCaller). */
export const healthCallerOf = (scope: CallerScope): string => scope.healthCaller ?? scope.workspaceId;

const costs = new Map<string, string>();

/** Cost of one call: cost per unit × cost multiplier (remembered per pair of decimal strings). */
export function effectiveCost(fn: FunctionDescriptor): string {
  const key = `${fn.costPerUnit}*${fn.costMultiplier}`;
  let cost = costs.get(key);
  if (cost === undefined) {
    cost = formatMoney(dec(fn.costPerUnit).times(dec(fn.costMultiplier)), 8, 2);
    if (costs.size >= 10_000) costs.clear();
    costs.set(key, cost);
  }
  return cost;
}

/**
 * SPEC's reachability: built-in, owned by the caller's workspace, or listed publicly (and active)
 * on the marketplace. Sandboxes reach built-ins only.
 */
export function isReachable(fn: FunctionDescriptor, scope: CallerScope): boolean {
  if (fn.builtIn) return true;
  if (scope.builtInsOnly) return false;
  if (fn.workspaceId === scope.workspaceId) return true;
  return fn.isPublic && fn.status === 'active';
}
