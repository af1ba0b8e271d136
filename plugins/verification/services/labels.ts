import { isReachable } from '../../../engine';
import type { FunctionDescriptor } from '../../../engine';

/** What an accepted outcome's source shows where its function's name may not be seen. */
export const WORKSPACE_FUNCTION_LABEL = 'accepted:workspace-function';
const ACCEPTED_PREFIX = 'accepted:';

export interface FunctionsByName {
  getByName(name: string): FunctionDescriptor | undefined;
}

/**
 * The label a verifier sees for an accepted outcome's source (stored as `accepted:<function name>`):
 * the name only where the caller could see the function itself — a built-in, a function listed
 * publicly and active, or one of the caller's own workspace — else the neutral label, as a private
 * function answers the same 404 as a missing one. Judged when shown, so a function made private
 * later stops showing its name; a deleted one never shows it.
 */
export function acceptedOutcomeLabel(source: string, callerWorkspaceId: string | null, functions: FunctionsByName): string {
  if (!source.startsWith(ACCEPTED_PREFIX)) return WORKSPACE_FUNCTION_LABEL;
  const fn = functions.getByName(source.slice(ACCEPTED_PREFIX.length));
  // Not the sandbox's built-ins-only reach: a public listing's name is public to everyone.
  return fn && isReachable(fn, { workspaceId: callerWorkspaceId ?? '', builtInsOnly: false }) ? source : WORKSPACE_FUNCTION_LABEL;
}
