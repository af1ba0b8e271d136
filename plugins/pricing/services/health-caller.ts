import type { Principal } from '../../../core/auth';
import { identityOf } from '../../identity';

/**
 * Whom a principal's calls count as in a function's breakers and latency statistics (engine CallerScope.healthCaller):
 * its workspace, or the workspace its test workspace or claimed agent workspace belongs to, so one owner's workspaces
 * count as one caller and cannot make up the several failing callers a function's breaker needs.
 */
export function healthCallerOfPrincipal(p: Principal): string {
  return identityOf(p).parentWorkspaceId ?? p.workspaceId;
}
