import type { z } from 'zod';

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `candidate` when it is an example `schema` passes, else undefined: a made example is offered only then (else the stock one). */
export function passingExample(schema: z.ZodType, candidate: unknown): unknown {
  return candidate !== undefined && schema.safeParse(candidate).success ? candidate : undefined;
}

/** Where a refused body with a `context` is mended into its example, field by field. */
export interface BodyMender {
  /** A refused top-level field other than `context`, mended in `out`; false when no honest example can be made. */
  field(out: Body, name: string): boolean;
  /** An unknown top-level field (default: left out); false when no honest example can be made. */
  unknown?(out: Body, name: string): boolean;
}

/**
 * A refused body that carries a `context` made into its example, as close to what was sent as passes: a refused
 * context key left out, a context that is no object replaced by `exampleContext`, the other refusals as `mend` says.
 * undefined when the body passes, is no object, or `mend` gives up. The pipeline uses it only when it passes.
 */
export function exampleFromSent(schema: z.ZodType, sent: unknown, exampleContext: unknown, mend: BodyMender): unknown {
  if (!isObject(sent)) return undefined;
  const r = schema.safeParse(sent);
  if (r.success) return undefined;
  const out: Body = { ...sent };
  let context: Body | undefined = isObject(out.context) ? { ...out.context } : undefined;
  for (const issue of r.error.issues) {
    const [top, key] = issue.path;
    if (top === undefined && issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) if (!(mend.unknown ? mend.unknown(out, k) : delete out[k])) return undefined;
    } else if (top === 'context' && typeof key === 'string' && context) {
      delete context[key];
    } else if (top === 'context') {
      context = undefined;
    } else if (typeof top === 'string' && !mend.field(out, top)) {
      return undefined;
    }
  }
  out.context = context ?? exampleContext;
  return out;
}
