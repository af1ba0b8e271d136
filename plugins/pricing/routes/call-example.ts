import type { z } from 'zod';
import { BUILTINS } from '../../../engine';

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);

const BUILTIN_ID_BY_NAME = new Map(BUILTINS.map((b) => [b.name, b.id]));

/**
 * A priced call's refused body made into its example, as close to what was sent as passes: a
 * refused field left out (and with a refused pin, the `explicit` preference that needed it; with a
 * pin, a routing preference it contradicts), a refused context key left out (a context that is no
 * object replaced by the example's), a built-in's name sent where only an id is taken turned into
 * its id. undefined (the route's own example) when the caller's pin cannot be kept: an example
 * priced by another function than the one named would charge for what was not asked. The pipeline
 * uses it only when it passes the route's body schema.
 */
export function callExampleFor(schema: z.ZodType, example: { context: unknown }): (sent: unknown) => unknown {
  return (sent) => {
    if (!isObject(sent)) return undefined;
    const r = schema.safeParse(sent);
    if (r.success) return undefined;
    const out: Body = { ...sent };
    let context: Body | undefined = isObject(out.context) ? { ...out.context } : undefined;
    for (const issue of r.error.issues) {
      const [top, key] = issue.path;
      if (top === undefined && issue.code === 'unrecognized_keys') {
        for (const k of issue.keys) {
          const id = k === 'function_name' && typeof out[k] === 'string' ? BUILTIN_ID_BY_NAME.get(out[k].trim().toLowerCase()) : undefined;
          if (k === 'function_name' && !id) return undefined;
          if (id && out.function_id === undefined) out.function_id = id;
          delete out[k];
        }
      } else if (top === 'context' && typeof key === 'string' && context) {
        delete context[key];
      } else if (top === 'context') {
        context = undefined;
      } else if (top === 'function_id' || top === 'function_name') {
        return undefined;
      } else if (typeof top === 'string') {
        delete out[top];
      }
    }
    out.context = context ?? example.context;
    return out;
  };
}
