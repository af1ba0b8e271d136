import type { RouteTable } from '../../../core/http/pipeline';
import { insufficientScope, missingScopeHint, readOnlyRefusal } from '../../identity';
import { mayCall } from '../../pricing';
import type { DemoBudgetGuard } from '../../pricing';
import type { ToolContext } from './types';

/**
 * Who may run a priced tool: without a key the call spends the demo budget of the caller's address
 * (as the keyless REST routes do); with one, the credential needs the scopes of the REST route the
 * tool mirrors (`routeId`), and an account that may write (the MCP route is a read to the authorizer, since listing and
 * browsing are); a refusal is the one REST answers for that route.
 */
export async function admitToolCall(ctx: ToolContext, demo: DemoBudgetGuard, routes: RouteTable, routeId: string): Promise<void> {
  const p = ctx.principal;
  if (!p) {
    const budget = await demo.consume(ctx.clientIp);
    ctx.demoBudget = { limit_per_hour: budget.limit, remaining: budget.remaining, resets_at: budget.resetsAt };
    if (budget.error) throw budget.error;
  } else {
    // What REST's authorizer refuses for the mirrored route, in its order: a read-only account first, then the scope.
    const readOnly = readOnlyRefusal(p);
    if (readOnly) throw readOnly;
    const route = routes.find(routeId);
    if (mayCall(p, route)) return;
    // REST's refusal of the mirrored route, word for word: the scopes it needs that the credential lacks.
    const missing = (route?.scopes ?? ['price:compute']).filter((scope) => !(p.scopes ?? []).includes(scope));
    throw insufficientScope(missing.length ? missing : ['price:compute'], missingScopeHint(p));
  }
}

/** What a keyless tool call adds to its result, as the REST demo routes do: `demo` and its `budget` after the call. */
export function demoFields(ctx: ToolContext): { demo?: true; budget?: NonNullable<ToolContext['demoBudget']> } {
  return ctx.demoBudget ? { demo: true, budget: ctx.demoBudget } : {};
}
