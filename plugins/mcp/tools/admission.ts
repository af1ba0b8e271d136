import { ApiError } from '../../../core/errors';
import type { RouteTable } from '../../../core/http/pipeline';
import { readOnlyRefusal } from '../../identity';
import { mayCall } from '../../pricing';
import type { DemoBudgetGuard } from '../../pricing';
import type { ToolContext } from './types';

/**
 * Who may run a priced tool: without a key the call spends the demo budget of the caller's address
 * (as the keyless REST routes do); with one, the credential needs the scopes of the REST route the
 * tool mirrors (`routeId`), and an account that may write (the MCP route is a read to the authorizer, since listing and
 * browsing are). `refused` completes "This credential may not …".
 */
export async function admitToolCall(ctx: ToolContext, demo: DemoBudgetGuard, routes: RouteTable, routeId: string, refused: string): Promise<void> {
  const p = ctx.principal;
  if (!p) {
    const budget = await demo.consume(ctx.clientIp);
    ctx.demoBudget = { limit_per_hour: budget.limit, remaining: budget.remaining, resets_at: budget.resetsAt };
    if (budget.error) throw budget.error;
  } else {
    // What REST's authorizer refuses for the mirrored route, in its order: a read-only account first, then the scope.
    const readOnly = readOnlyRefusal(p);
    if (readOnly) throw readOnly;
    if (mayCall(p, routes.find(routeId))) return;
    throw new ApiError('insufficient_scope', `This credential may not ${refused}.`, { fields: { required_scopes: ['price:compute'] }, hint: SCOPE_HINTS[p.kind] ?? SCOPE_HINTS.api_key });
  }
}

/** Where the credential's holder gets price:compute, by the kind of credential it sent (as REST's authorizer says). */
const SCOPE_HINTS: Record<string, string> = {
  api_key: 'Use a key with price:compute (or created with no scopes).',
  access_token: 'An access token carries the scopes it was minted with: mint one with scope price:compute, or with no scope parameter, from a key that has it (POST /api/oauth/token).',
  person: 'A person token narrowed with POST /api/user/tokens does only the work its scopes name: mint one with price:compute, or use your session.',
};

/** What a keyless tool call adds to its result, as the REST demo routes do: `demo` and its `budget` after the call. */
export function demoFields(ctx: ToolContext): { demo?: true; budget?: NonNullable<ToolContext['demoBudget']> } {
  return ctx.demoBudget ? { demo: true, budget: ctx.demoBudget } : {};
}
