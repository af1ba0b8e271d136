import type { z } from 'zod';
import { exampleFromSent } from '../../../core/http/sent-example';
import { BUILTINS } from '../../../engine';

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
  return (sent) =>
    exampleFromSent(schema, sent, example.context, {
      unknown(out, name) {
        const id = name === 'function_name' && typeof out[name] === 'string' ? BUILTIN_ID_BY_NAME.get(out[name].trim().toLowerCase()) : undefined;
        if (name === 'function_name' && !id) return false;
        if (id && out.function_id === undefined) out.function_id = id;
        return delete out[name];
      },
      field(out, name) {
        return name !== 'function_id' && name !== 'function_name' && delete out[name];
      },
    });
}
