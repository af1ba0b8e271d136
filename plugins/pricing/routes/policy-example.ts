import type { z } from 'zod';
import type { PolicyShape } from '../../../engine';

/** The config keys a strategy cannot do without, with sample values for an example. */
export const STRATEGY_NEEDS: Partial<Record<PolicyShape['strategy'], Record<string, unknown>>> = {
  weighted: { weights: { 'cost-plus': 3, 'anchored-adjustment': 1 } },
  policy: { rules: [{ when: { 'customer.tier': 'gold' }, use: 'charm-pricing' }] },
  priority: { order: ['anchored-adjustment', 'cost-plus'] },
};

/** A sample for a config key some strategy needs. */
const SAMPLES: Record<string, unknown> = Object.values(STRATEGY_NEEDS).reduce<Record<string, unknown>>((all, needs) => ({ ...all, ...needs }), {});

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);

/** One pass: what `issues` refuse in `value` replaced by a sample (a config key a strategy needs) or left out. */
function mend(value: Body, issues: readonly z.core.$ZodIssue[]): Body {
  const out: Body = { ...value };
  let config: Body | undefined = isObject(out.config) ? { ...out.config } : undefined;
  for (const issue of issues) {
    const [top, key] = issue.path;
    if (issue.code === 'unrecognized_keys' && issue.path.length <= 1) {
      const from = top === undefined ? out : top === 'config' ? config : undefined;
      for (const k of issue.keys) if (from) delete from[k];
    } else if (top === 'config' && typeof key === 'string' && config) {
      // A sample replaces a refused needed key once; refused again, or a key nothing needs, it is left out.
      if (key in SAMPLES && config[key] !== SAMPLES[key]) config[key] = SAMPLES[key];
      else delete config[key];
    } else if (top === 'config' && key === undefined && config) {
      // The config as a whole misses what its strategy needs.
      const needs = typeof out.strategy === 'string' ? STRATEGY_NEEDS[out.strategy as PolicyShape['strategy']] : undefined;
      config = { ...needs, ...config };
    } else if (typeof top === 'string') {
      delete out[top];
      if (top === 'config') config = undefined;
    }
  }
  if (config) out.config = config;
  return out;
}

/**
 * `value` with what `schema` refuses in it replaced by samples or left out, so an example stays as
 * close as possible to what the caller sent; undefined when that does not pass or leaves nothing.
 */
export function mended<T>(schema: z.ZodType<T>, value: unknown): Body | undefined {
  if (!isObject(value)) return undefined;
  let v: Body = value;
  for (let pass = 0; pass < 4; pass++) {
    const r = schema.safeParse(v);
    if (r.success) return Object.keys(v).length > 0 ? v : undefined;
    v = mend(v, r.error.issues);
  }
  return undefined;
}

/**
 * A create's example: the policy it would make (`made`: the body with its defaults) mended by
 * `policy`, keeping only the fields the caller sent, and the config its strategy needs.
 */
export function mendedCreate<T>(policy: z.ZodType<T>, made: unknown, sent: unknown): Body | undefined {
  const full = mended(policy, made);
  if (!full || !isObject(sent)) return undefined;
  return Object.fromEntries(Object.entries(full).filter(([k]) => k in sent || k === 'config'));
}
