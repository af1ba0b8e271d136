import type { Principal } from '../../../core/auth';
import type { RouteTable } from '../../../core/http/pipeline';
import type { RouteSpec } from '../../../core/http/route';
import { dec } from '../../../core/money';
import { CONFIGURATION_ACCESS, identityOf, seemsToManageWorkspace } from '../../identity';

export interface NextAction {
  action: string;
  method: string;
  path: string;
  reason: string;
  example: unknown;
}

/**
 * The computed price as a verification example sends it: a JSON number where one holds it exactly, else the decimal string
 * (a price of 17 or more digits as a number would be verified as another price than the one computed).
 */
export function proposedPrice(price: string): number | string {
  const n = Number(price);
  return Number.isFinite(n) && dec(n).eq(dec(price)) ? n : price;
}

interface Candidate extends NextAction {
  route: string;
  when?: (p: Principal | null) => boolean;
  /** A priced call: counted against the sandbox's daily calls or the demo's hourly budget. */
  priced?: boolean;
}

/**
 * Whether a principal may make a request to a route, as the authorizer would judge it; `address`, the caller's
 * (clientIp), for a route closed to some addresses (registration, once an address's daily registrations are spent).
 */
export function mayCall(principal: Principal | null, route: RouteSpec | undefined, address?: string): boolean {
  if (!route || route.closed?.(address)) return false;
  if ((route.auth ?? 'required') === 'public') return true;
  if (!principal) return false;
  if (route.accepts && !route.accepts.includes(principal.kind)) return false;
  const id = identityOf(principal);
  if (id.sandbox && !route.sandbox) return false;
  // A configuration route needs full access (every configuration scope), as the authorizer requires.
  const held = principal.scopes;
  if (route.fullAccess && held !== null && CONFIGURATION_ACCESS.some((s) => !held.includes(s))) return false;
  return (route.scopes ?? []).every((s) => (principal.scopes ?? []).includes(s) && s !== 'workspace:claim' && s !== 'team:admin');
}

/**
 * At most `max` requests the caller may make next, each with a reason and an example body (so only
 * requests that take one); only routes the caller's credential is allowed to call are offered.
 */
export function nextActions(
  principal: Principal | null,
  routes: RouteTable,
  max: number,
  ctx: {
    usageEventId: string | null;
    price: string;
    context: Record<string, unknown>;
    sandboxCallsPerDay: number;
    strategy: string;
    inBatch?: boolean;
    hasDefaultPolicy?: boolean;
    /**
     * What is left of the caller's allowance of priced calls (a sandbox's day, the demo's hour); undefined: no such
     * allowance. No more priced actions are offered than it holds: the one past it would be refused 429.
     */
    pricedCallsLeft?: number | undefined;
    /** The call was pinned to a function (function_id or function_name). */
    pinned?: boolean;
    /** The function it was pinned to, by id (function_name resolved): the batch example prices with it too. */
    pinnedFunctionId?: string | undefined;
    /** The call's routing_preference (not explicit): the batch example routes its item the same way. */
    preference?: string | undefined;
    /** A keyless call that came with a credential it did not use: its caller is not offered a key of its own. */
    credentialIgnored?: boolean;
    /** The caller's address (clientIp): a registration it would be refused (its daily ones spent) is not offered. */
    address?: string | undefined;
  },
): NextAction[] {
  const candidates: Candidate[] = [
    {
      route: 'usage.outcome',
      action: 'report_outcome',
      method: 'PATCH',
      path: ctx.usageEventId ? `/api/usage/events/${ctx.usageEventId}/outcome` : '/api/usage/events/{id}/outcome',
      reason: 'Tell us whether you used this price; accepted prices improve verification evidence.',
      example: { outcome: 'accepted', quality_score: 0.9 },
    },
    {
      route: 'verify.price',
      priced: true,
      action: 'verify_price',
      method: 'POST',
      path: '/api/price-router/verify',
      reason: 'Check a proposed price against observed market evidence before publishing it.',
      example: { context: ctx.context, proposed_price: proposedPrice(ctx.price) },
    },
    {
      route: 'compute.batch',
      priced: true,
      action: 'price_in_batch',
      method: 'POST',
      path: '/api/compute/batch',
      reason: 'Price up to 100 items in one request.',
      // Each item routed as this call was: a call pinned to a function (or given a preference) priced unpinned in a
      // batch would quietly get another function's price.
      example: { items: [{ context: ctx.context, ...routedAsThisCall(ctx) }] },
      // Not to an item of a batch: its caller is doing just that; nor to a pinned call whose function's id is not known
      // here (items take no function_name).
      when: () => !ctx.inBatch && (!ctx.pinned || ctx.pinnedFunctionId !== undefined),
    },
    {
      route: 'policies.create',
      action: 'set_routing_policy',
      method: 'POST',
      path: '/api/routing-policies',
      reason: 'Choose how functions are picked for you: cheapest, fastest, rules on the context, with ceilings and fallbacks.',
      example: { name: 'cheapest under a ceiling', strategy: 'cheapest', is_default: true, config: { max_cost_per_unit: '0.0015' } },
      // Its example makes a new default: offered only to a workspace that has none, which it would not replace; and only
      // to a credential that manages the workspace (an agent's key or token, or a member's key, is refused 403).
      when: (p) => !ctx.hasDefaultPolicy && p !== null && seemsToManageWorkspace(p),
    },
    {
      route: 'compute.price',
      priced: true,
      action: 'price_cheapest',
      method: 'POST',
      path: '/api/compute/price',
      reason: 'Price the same context with the cheapest function that can (a priced call like this one); its trace lists every candidate with its cost.',
      example: { context: ctx.context, routing_preference: 'cheapest' },
      // Offered to a call the router did not already route by cost.
      when: () => ctx.strategy !== 'cheapest',
    },
    {
      route: 'demo.verify',
      priced: true,
      action: 'verify_price_demo',
      method: 'POST',
      path: '/api/public/price-router/verify',
      reason: 'Check a proposed price against market evidence (keyless demo).',
      example: { context: ctx.context, proposed_price: proposedPrice(ctx.price) },
    },
    {
      route: 'agents.register',
      action: 'get_a_free_key',
      method: 'POST',
      path: '/api/agents/register',
      reason: `A free sandbox key: ${ctx.sandboxCallsPerDay} priced calls a day, each with its own usage record in the receipt.`,
      example: { name: 'my-pricing-agent' },
      // credential_ignored tells a caller that sent one where it is taken instead.
      when: (p) => p === null && !ctx.credentialIgnored,
    },
  ];
  // Verification weighs the market's observations of the context's product type: without one it has no evidence to
  // judge by, so it is not offered. The keyless demo verification only to callers who cannot verify with a credential.
  const pt = ctx.context.product_type;
  const hasProductType = typeof pt === 'string' && pt.trim() !== '';
  const verify = candidates.find((c) => c.route === 'verify.price');
  if (verify) verify.when = () => hasProductType;
  const demo = candidates.find((c) => c.route === 'demo.verify');
  if (demo) demo.when = (p) => hasProductType && !mayCall(p, routes.find('verify.price'));
  const out: NextAction[] = [];
  let pricedOffered = 0;
  for (const c of candidates) {
    if (out.length >= max) break;
    if (c.when && !c.when(principal)) continue;
    if (c.priced && ctx.pricedCallsLeft !== undefined && pricedOffered >= ctx.pricedCallsLeft) continue;
    const route = routes.find(c.route);
    if (!mayCall(principal, route, ctx.address)) continue;
    if (principal === null && (route?.auth ?? 'required') !== 'public') continue;
    const { route: _route, when: _when, priced: _priced, ...action } = c;
    const example = fittedExample(route, action.example);
    if (example === undefined) continue;
    out.push({ ...action, example });
    if (c.priced) pricedOffered++;
  }
  return out;
}

function routedAsThisCall(ctx: { pinnedFunctionId?: string | undefined; preference?: string | undefined }): Record<string, string> {
  if (ctx.pinnedFunctionId) return { function_id: ctx.pinnedFunctionId };
  return ctx.preference && ctx.preference !== 'explicit' ? { routing_preference: ctx.preference } : {};
}

/**
 * The example as a body its route accepts: the context a call was priced with may hold keys another
 * route refuses (verification wants a positive min_price, compute lets 0 through); those keys are
 * left out. Undefined when it still does not pass, and the action is not offered.
 */
function fittedExample(route: RouteSpec | undefined, example: unknown): unknown {
  const body = route?.body;
  if (!body) return example;
  const checked = body.safeParse(example);
  if (checked.success) return example;
  const context = typeof example === 'object' && example !== null ? (example as { context?: unknown }).context : undefined;
  if (typeof context !== 'object' || context === null) return undefined;
  const refused = new Set(checked.error.issues.map((i) => (i.path[0] === 'context' && i.path.length > 1 ? String(i.path[1]) : null)));
  // A problem outside the context's own keys is not one leaving keys out can mend; nor is one with the product
  // type, which names what the request is about.
  if (refused.has(null) || refused.has('product_type')) return undefined;
  const fitted = { ...(example as object), context: Object.fromEntries(Object.entries(context).filter(([k]) => !refused.has(k))) };
  return body.safeParse(fitted).success ? fitted : undefined;
}
