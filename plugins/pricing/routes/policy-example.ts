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

/** A create's samples for a refused or missing field a policy cannot do without (a PATCH leaves such a field out). */
const CREATE_SAMPLES: Body = { name: 'my routing policy', strategy: 'default' };

/**
 * One pass: what `issues` refuse in `value` replaced by a sample (a field a policy needs, a config
 * key its strategy needs) or left out. A refused rule is left out alone, the caller's other rules
 * kept; the sample rule stands in only when none is left.
 */
function mend(value: Body, issues: readonly z.core.$ZodIssue[], topSamples: Body): Body {
  const out: Body = { ...value };
  let config: Body | undefined = isObject(out.config) ? { ...out.config } : undefined;
  const refusedRules = new Set<number>();
  for (const issue of issues) {
    const [top, key, index] = issue.path;
    if (issue.code === 'unrecognized_keys' && issue.path.length <= 1) {
      const from = top === undefined ? out : top === 'config' ? config : undefined;
      for (const k of issue.keys) if (from) delete from[k];
    } else if (top === 'config' && key === 'rules' && typeof index === 'number' && config && Array.isArray(config.rules)) {
      refusedRules.add(index);
    } else if (top === 'config' && typeof key === 'string' && config) {
      // A sample replaces a refused needed key once; refused again, or a key nothing needs, it is left out.
      if (key in SAMPLES && config[key] !== SAMPLES[key]) config[key] = SAMPLES[key];
      else delete config[key];
    } else if (top === 'config' && key === undefined && config) {
      // The config as a whole misses what its strategy needs.
      const needs = typeof out.strategy === 'string' ? STRATEGY_NEEDS[out.strategy as PolicyShape['strategy']] : undefined;
      config = { ...needs, ...config };
    } else if (typeof top === 'string' && top in topSamples && out[top] !== topSamples[top]) {
      out[top] = topSamples[top];
    } else if (typeof top === 'string') {
      delete out[top];
      if (top === 'config') config = undefined;
    }
  }
  if (config && refusedRules.size > 0) {
    const kept = (config.rules as unknown[]).filter((_, i) => !refusedRules.has(i));
    config.rules = kept.length > 0 ? kept : SAMPLES.rules;
  }
  if (config) out.config = config;
  return out;
}

/**
 * `value` with what `schema` refuses in it replaced by samples or left out, so an example stays as
 * close as possible to what the caller sent; undefined when that does not pass or leaves nothing.
 */
export function mended<T>(schema: z.ZodType<T>, value: unknown, topSamples: Body = {}): Body | undefined {
  if (!isObject(value)) return undefined;
  let v: Body = value;
  for (let pass = 0; pass < 4; pass++) {
    const r = schema.safeParse(v);
    if (r.success) return Object.keys(v).length > 0 ? v : undefined;
    v = mend(v, r.error.issues, topSamples);
  }
  return undefined;
}

/**
 * A refused create's example: what was sent, mended first against the create body (`body`), then
 * against the policy that body makes (`policy`: what its strategy needs), keeping only the fields
 * the caller sent and the config its strategy needs; undefined when nothing that passes both is left.
 */
export function createExampleFor<B, P>(body: z.ZodType<B>, policy: z.ZodType<P>, sent: unknown): Body | undefined {
  const first = mended(body, sent, CREATE_SAMPLES);
  const made = first && body.safeParse(first);
  if (!first || !made?.success) return undefined;
  const full = mended(policy, made.data);
  if (!full) return undefined;
  const example = Object.fromEntries(Object.entries(full).filter(([k, v]) => k in first || (k === 'config' && isObject(v) && Object.keys(v).length > 0)));
  const again = body.safeParse(example);
  return again.success && policy.safeParse(again.data).success ? example : undefined;
}
