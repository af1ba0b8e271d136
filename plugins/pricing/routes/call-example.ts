import type { z } from 'zod';
import { exampleFromSent } from '../../../core/http/sent-example';
import { unstorablePath } from '../../../core/storable-text';
import { BUILTINS } from '../../../engine';

const BUILTIN_ID_BY_NAME = new Map(BUILTINS.map((b) => [b.name, b.id]));
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The example's context made one the call can price, when what the refusal left of the caller's cannot (a
 * refused current_price taken out may leave nothing to price from): the route's example context (or
 * the pinned built-in's own example) under the caller's fields, which stay as sent. A call pinned
 * to a workspace's function is left as it is: only the function knows what it needs.
 */
function priceable(body: Record<string, unknown>, exampleContext: unknown): Record<string, unknown> {
  const ctx = isObject(body.context) ? body.context : {};
  const named = typeof body.function_name === 'string' ? (BUILTIN_ID_BY_NAME.get(body.function_name.trim().toLowerCase()) ?? body.function_name) : undefined;
  const pinnedId = typeof body.function_id === 'string' ? body.function_id : named;
  const pinned = pinnedId !== undefined ? BUILTINS.find((b) => b.id === pinnedId) : undefined;
  if (pinnedId !== undefined && !pinned) return body;
  const prices = (c: Record<string, unknown>) => (pinned ? pinned.mayPrice(c) : BUILTINS.some((b) => b.mayPrice(c)));
  if (prices(ctx)) return body;
  const base = pinned ? pinned.example : isObject(exampleContext) ? exampleContext : {};
  return { ...body, context: { ...base, ...ctx } };
}

/**
 * A priced call's refused body made into its example, as close to what was sent as passes: a
 * refused field left out (and with a refused pin, the `explicit` preference that needed it; with a
 * pin, a routing preference it contradicts), a refused context key left out (a context that is no
 * object replaced by the example's), a built-in's name sent where only an id is taken turned into
 * its id, and a context that lost a refused part and cannot price completed from the example's. undefined (the route's
 * own example) when the caller's pin cannot be kept: an example priced by another function than
 * the one named would charge for what was not asked. The pipeline uses it only when it passes the
 * route's body schema.
 */
export function callExampleFor(schema: z.ZodType, example: { context: unknown }): (sent: unknown) => unknown {
  return (sent) => {
    const mended = exampleFromSent(schema, sent, example.context, {
      unknown(out, name) {
        const id = name === 'function_name' && typeof out[name] === 'string' ? BUILTIN_ID_BY_NAME.get(out[name].trim().toLowerCase()) : undefined;
        if (name === 'function_name' && !id) return false;
        if (id && out.function_id === undefined) out.function_id = id;
        return delete out[name];
      },
      field(out, name) {
        // function_name refused beside a function_id (both sent): the function_id the caller sent is its pin, kept.
        if (name === 'function_name' && typeof out.function_id === 'string') return delete out[name];
        return name !== 'function_id' && name !== 'function_name' && delete out[name];
      },
    });
    if (!isObject(mended)) return mended;
    // Completed only where the refusal took part of the context away: a context kept whole is the caller's, and inputs
    // added to it would price what the caller never said (the 422 of a call sent as it is names what it lacks instead).
    const sentContext = isObject(sent) && isObject(sent.context) ? sent.context : null;
    const keptWhole = sentContext !== null && isObject(mended.context) && Object.keys(sentContext).every((k) => k in (mended.context as Record<string, unknown>));
    return keptWhole ? mended : priceable(mended, example.context);
  };
}

/**
 * The example of a call refused for text that cannot be stored in its pin (`function_id`, or `function_name` with no
 * `function_id` beside it to stay the pin): the route's own `example`, never the caller's context unpinned, which would
 * look like the call mended while another function than the one meant priced it (as for any refused pin). undefined
 * otherwise: what was sent without that text.
 */
export function unstorablePinExample(sent: unknown, example: unknown): unknown {
  if (!isObject(sent)) return undefined;
  const unstorable = (field: string): boolean => typeof sent[field] === 'string' && unstorablePath(sent[field]) !== null;
  return unstorable('function_id') || (unstorable('function_name') && typeof sent.function_id !== 'string') ? example : undefined;
}
