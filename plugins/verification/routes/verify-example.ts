import type { z } from 'zod';
import { exampleFromSent } from '../../../core/http/sent-example';
import { amountMeant } from '../schemas';

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);
const isSent = (v: unknown): boolean => v !== undefined && v !== null;

/**
 * The price the caller meant: proposed_price, else its alias (null reads as absent), kept as sent when the body takes
 * it, else in the form it plainly means ("0020.10" → "20.10", amountMeant); undefined when neither can be read.
 */
function priceMeant(schema: z.ZodType, body: Body): unknown {
  for (const v of [body.proposed_price, body.price].filter(isSent)) {
    if (!schema.safeParse({ ...body, proposed_price: v, price: undefined }).error?.issues.some((i) => i.path[0] === 'proposed_price')) return v;
    const plain = amountMeant(v);
    if (plain !== undefined) return plain;
  }
  return undefined;
}

/**
 * A context refused as a whole for its size, made to fit: its refused keys left out, then its largest values until the
 * rest passes (the caller's product_type, currency and bounds are small and stay). The smallest keys that fit are found
 * by halving, so a context of thousands of keys costs a few parses. undefined when the context is refused for another
 * reason or is no object.
 */
function fittedContext(schema: z.ZodType, sent: Body): Body | undefined {
  if (!isObject(sent.context)) return undefined;
  const issues = schema.safeParse(sent).error?.issues ?? [];
  if (!issues.some((i) => i.path[0] === 'context' && i.path.length === 1)) return undefined;
  const refused = new Set(issues.flatMap((i) => (i.path[0] === 'context' && i.path.length > 1 ? [i.path[1]] : [])));
  const entries = Object.entries(sent.context).filter(([k]) => !refused.has(k));
  const size = ([k, v]: [string, unknown]): number => JSON.stringify([k, v ?? null]).length;
  const bySize = [...entries].sort((a, b) => size(a) - size(b));
  const smallest = (n: number): Body => {
    const kept = new Set(bySize.slice(0, n).map(([k]) => k));
    return Object.fromEntries(entries.filter(([k]) => kept.has(k)));
  };
  const fits = (n: number): boolean => !(schema.safeParse({ ...sent, context: smallest(n) }).error?.issues ?? []).some((i) => i.path[0] === 'context');
  let [lo, hi] = [0, entries.length];
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 && fits(lo) ? smallest(lo) : undefined;
}

/**
 * A refused verify body made into its example (exampleFromSent): the price the caller meant (priceMeant) as
 * proposed_price, the alias `price` dropped; the route's example price only when none can be read. A context too large
 * keeps what fits of it (fittedContext), a context that is no object is replaced by the example's, any other refused
 * field is left out. A caller who sent 4.5 and a bad context sees its own 4.5 back, not the route's "4.50".
 */
export function verifyExampleFor(schema: z.ZodType, example: { context: unknown; proposed_price: unknown }): (sent: unknown) => unknown {
  return (sent) => {
    if (!isObject(sent)) return undefined;
    const fitted = fittedContext(schema, sent);
    const body = fitted ? { ...sent, context: fitted } : sent;
    const made = exampleFromSent(schema, body, example.context, {
      field(out, name) {
        if (name === 'proposed_price' || name === 'price') {
          // Refused, or neither was sent (the issue names proposed_price), or both were (it names price).
          out.proposed_price = priceMeant(schema, out) ?? example.proposed_price;
          return delete out.price;
        }
        return delete out[name];
      },
    });
    // The context made to fit may have been all that was refused.
    return made ?? (fitted ? body : undefined);
  };
}
