import { dec, formatMoney } from '../../core/money';
import { mayPrice } from '../builtins/catalogue';
import type { MarketEvidence } from '../builtins/types';
import type { AttemptReport, CandidateReport } from '../errors';
import { effectiveCost } from '../functions';
import type { FunctionDescriptor } from '../functions';
import type { FunctionRegistry } from '../registry';
import type { RouteDecision } from './router';

export interface Savings {
  amount: string;
  currency: 'USDC';
  compared_with: { function: string; cost_per_unit: string };
  chosen_cost_per_unit: string;
}

type MarketFor = (fn: FunctionDescriptor) => MarketEvidence | undefined;

/** Why a candidate was left out that is the routing policy's own choice, which its owner can change. */
const POLICY_EXCLUSIONS: ReadonlySet<string> = new Set(['cost ceiling', 'latency ceiling', 'rule miss', 'no weight']);
const CEILINGS: ReadonlySet<string> = new Set(['cost ceiling', 'latency ceiling']);

/**
 * Savings against the most expensive eligible function that could have priced this context, only when
 * the router chose among several such: one that answered not applicable in this call, or a built-in
 * without the inputs it cannot price without, would never have cost the caller anything.
 */
export function savingsOf(decision: RouteDecision | null, fn: FunctionDescriptor, attempts: AttemptReport[], context: Record<string, unknown>, marketFor: MarketFor): Savings | null {
  if (!decision || decision.eligible.length < 2) return null;
  const couldNot = new Set(attempts.filter((a) => a.outcome === 'not_applicable').map((a) => a.id));
  const comparable = decision.eligible.filter((f) => f.id === fn.id || (!couldNot.has(f.id) && mayPrice(f, context, marketFor(f))));
  if (comparable.length < 2) return null;
  const priciest = [...comparable].sort((a, b) => dec(effectiveCost(b)).comparedTo(dec(effectiveCost(a))))[0] as FunctionDescriptor;
  return {
    amount: formatMoney(dec(effectiveCost(priciest)).minus(dec(effectiveCost(fn))), 8, 2),
    currency: 'USDC',
    compared_with: { function: priciest.name, cost_per_unit: effectiveCost(priciest) },
    chosen_cost_per_unit: effectiveCost(fn),
  };
}

/**
 * Candidates the routing policy itself left out (a ceiling, a rule, no weight), and fallbacks its cost
 * ceiling held back (`overCeiling`), that could have priced the context as far as is known without
 * running them: when nothing else could, the caller is told the policy stood in the way, not only
 * which inputs are missing. `ran`: functions that ran in the call, which are reported as attempts.
 */
export function excludedByPolicy(registry: FunctionRegistry, decision: RouteDecision | null, overCeiling: CandidateReport[], ran: ReadonlySet<string>, context: Record<string, unknown>, marketFor: MarketFor): CandidateReport[] {
  const seen = new Set<string>();
  return [...(decision?.candidates ?? []), ...overCeiling].filter((c) => {
    if (c.kept || !c.id || seen.has(c.id) || ran.has(c.id) || !POLICY_EXCLUSIONS.has(c.reason ?? '')) return false;
    // Under `policy` the rules send the context to one function: raising a ceiling another candidate is over would not
    // send it there (a held-back fallback, from `overCeiling`, is another matter: the ceiling alone keeps it from running).
    if (decision?.strategy === 'policy' && CEILINGS.has(c.reason ?? '') && c.id !== decision.chosen.id && !overCeiling.includes(c)) return false;
    const fn = registry.get(c.id);
    if (!fn || !mayPrice(fn, context, marketFor(fn))) return false;
    seen.add(c.id);
    return true;
  });
}
