import type { Principal } from '../../../core/auth';
import type { CallerScope } from '../../../engine';
import { identityOf } from '../../identity';

/**
 * Whom a principal's calls count as in a function's breakers and latency statistics (engine CallerScope.healthCaller):
 * its workspace, or the workspace its test workspace or claimed agent workspace belongs to, so one owner's workspaces
 * count as one caller and cannot make up the several failing callers a function's breaker needs.
 */
export function healthCallerOfPrincipal(p: Principal): string {
  return identityOf(p).parentWorkspaceId ?? p.workspaceId;
}

/** What a principal reaches and whom its calls count as: unclaimed sandboxes reach built-ins only. */
export function callerScopeOf(p: Principal): CallerScope {
  return { workspaceId: p.workspaceId, builtInsOnly: identityOf(p).sandbox, healthCaller: healthCallerOfPrincipal(p) };
}
