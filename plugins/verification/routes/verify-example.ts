import type { z } from 'zod';

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A refused verify body made into its example, as close to what was sent as passes: a refused context key left out
 * (a context that is no object replaced by the example's), a refused or missing proposed_price replaced by the
 * example's, the alias `price` dropped when sent beside proposed_price, an unknown field left out. A caller who sent
 * 4.5 and a bad context sees its own 4.5 back, not the route's "4.50". The pipeline uses it only when it passes.
 */
export function verifyExampleFor(schema: z.ZodType, example: { context: unknown; proposed_price: unknown }): (sent: unknown) => unknown {
  return (sent) => {
    if (!isObject(sent)) return undefined;
    const r = schema.safeParse(sent);
    if (r.success) return undefined;
    const out: Body = { ...sent };
    let context: Body | undefined = isObject(out.context) ? { ...out.context } : undefined;
    for (const issue of r.error.issues) {
      const [top, key] = issue.path;
      if (top === undefined && issue.code === 'unrecognized_keys') {
        for (const k of issue.keys) delete out[k];
      } else if (top === 'context' && typeof key === 'string' && context) {
        delete context[key];
      } else if (top === 'context') {
        context = undefined;
      } else if (top === 'proposed_price') {
        // Refused, or neither it nor its alias was sent; a refused alias is replaced the same way.
        delete out.price;
        out.proposed_price = example.proposed_price;
      } else if (top === 'price') {
        if (out.proposed_price === undefined) out.proposed_price = example.proposed_price;
        delete out.price;
      } else if (typeof top === 'string') {
        delete out[top];
      }
    }
    out.context = context ?? example.context;
    return out;
  };
}
