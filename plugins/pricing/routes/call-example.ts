import type { z } from 'zod';

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A priced call's refused body made into its example: each refused field left out (a pinned
 * function with a routing preference loses the preference), a refused context replaced by the
 * example's, the rest as sent; so the example prices what the caller meant, not a stock coffee.
 * The pipeline uses it only when it passes the route's body schema.
 */
export function callExampleFor(schema: z.ZodType, example: { context: unknown }): (sent: unknown) => unknown {
  return (sent) => {
    if (!isObject(sent)) return undefined;
    const r = schema.safeParse(sent);
    if (r.success) return undefined;
    const out: Body = { ...sent };
    for (const issue of r.error.issues) {
      const [top] = issue.path;
      if (top === undefined && issue.code === 'unrecognized_keys') for (const k of issue.keys) delete out[k];
      else if (top === 'context') out.context = example.context;
      else if (typeof top === 'string') delete out[top];
    }
    if (!('context' in out)) out.context = example.context;
    return out;
  };
}
