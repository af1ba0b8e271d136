import type { z } from 'zod';
import { stableStringify } from '../../../core/stable-json';
import { policySchema } from '../../../engine';
import type { PolicyShape } from '../../../engine';

/** The config keys a strategy cannot do without, with sample values for an example. */
const STRATEGY_NEEDS: Partial<Record<PolicyShape['strategy'], Record<string, unknown>>> = {
  weighted: { weights: { 'cost-plus': 3, 'anchored-adjustment': 1 } },
  policy: { rules: [{ when: { 'customer.tier': 'gold' }, use: 'charm-pricing' }] },
  priority: { order: ['anchored-adjustment', 'cost-plus'] },
};

/** A sample for a config key some strategy needs. */
const SAMPLES: Record<string, unknown> = Object.values(STRATEGY_NEEDS).reduce<Record<string, unknown>>((all, needs) => ({ ...all, ...needs }), {});

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The one PATCH safe on any policy without reading it: it changes nothing (a body that is not JSON gets it). */
export const PATCH_CHANGING_NOTHING: Readonly<Record<string, never>> = Object.freeze({});

/** A create's samples for a refused or missing field a policy cannot do without (a PATCH leaves such a field out). */
const CREATE_SAMPLES: Body = { name: 'my routing policy', strategy: 'default' };

/**
 * One pass: what `issues` refuse in `value` replaced by a stand-in (a field a policy needs from `topSamples`, a
 * config key its strategy needs from `configStandIns`) or left out. A refused rule or weight is left out alone, the
 * caller's other rules or weights kept; the stand-in takes their place only when none is left. A create's stand-ins
 * are samples; a PATCH's are the stored values (sent back, a sample would replace them), samples only for a key the
 * stored policy does not hold either.
 */
function mend(value: Body, issues: readonly z.core.$ZodIssue[], topSamples: Body, configStandIns: Body): Body {
  const out: Body = { ...value };
  let config: Body | undefined = isObject(out.config) ? { ...out.config } : undefined;
  const refusedRules = new Set<number>();
  const refusedWeights = new Set<string>();
  const refusedItems = new Map<string, Set<number>>();
  for (const issue of issues) {
    const [top, key, index] = issue.path;
    if (issue.code === 'unrecognized_keys' && issue.path.length <= 1) {
      const from = top === undefined ? out : top === 'config' ? config : undefined;
      for (const k of issue.keys) if (from) delete from[k];
    } else if (top === 'config' && key === 'rules' && typeof index === 'number' && config && Array.isArray(config.rules)) {
      refusedRules.add(index);
    } else if (top === 'config' && key === 'weights' && typeof index === 'string' && config && isObject(config.weights)) {
      // One refused weight (negative, not a number) is left out alone; the caller's other weights stay.
      refusedWeights.add(index);
    } else if (top === 'config' && typeof key === 'string' && config) {
      // A stand-in replaces a refused needed key once; refused again, or a key nothing stands in for, it is left out.
      if (key in configStandIns && config[key] !== configStandIns[key]) config[key] = configStandIns[key];
      else delete config[key];
    } else if (top === 'config' && key === undefined && config) {
      // The config as a whole misses what its strategy needs.
      const needs = typeof out.strategy === 'string' ? STRATEGY_NEEDS[out.strategy as PolicyShape['strategy']] : undefined;
      config = { ...Object.fromEntries(Object.keys(needs ?? {}).filter((k) => k in configStandIns).map((k) => [k, configStandIns[k]])), ...config };
    } else if (typeof top === 'string' && top !== 'config' && typeof key === 'number' && Array.isArray(out[top])) {
      // One refused item of a list (a tag, a fallback) is left out alone; the caller's other items stay.
      refusedItems.set(top, (refusedItems.get(top) ?? new Set<number>()).add(key));
    } else if (typeof top === 'string' && top in topSamples && out[top] !== topSamples[top]) {
      out[top] = topSamples[top];
    } else if (typeof top === 'string') {
      delete out[top];
      if (top === 'config') config = undefined;
    }
  }
  for (const [top, refused] of refusedItems) {
    const kept = (out[top] as unknown[]).filter((_, i) => !refused.has(i));
    if (kept.length > 0) out[top] = kept;
    else if (top in topSamples) out[top] = topSamples[top];
    else delete out[top];
  }
  if (config && refusedRules.size > 0) {
    const kept = (config.rules as unknown[]).filter((_, i) => !refusedRules.has(i));
    if (kept.length > 0) config.rules = kept;
    else if ('rules' in configStandIns) config.rules = configStandIns.rules;
    else delete config.rules;
  }
  if (config && refusedWeights.size > 0 && isObject(config.weights)) {
    const kept = Object.fromEntries(Object.entries(config.weights).filter(([ref]) => !refusedWeights.has(ref)));
    if (Object.keys(kept).length > 0) config.weights = kept;
    else if ('weights' in configStandIns) config.weights = configStandIns.weights;
    else delete config.weights;
  }
  if (config) out.config = config;
  return out;
}

/** `value` mended until `schema` passes it (possibly emptied); undefined when it is no object or does not pass. */
function mendedOrEmpty<T>(schema: z.ZodType<T>, value: unknown, topSamples: Body = {}, configStandIns: Body = SAMPLES): Body | undefined {
  if (!isObject(value)) return undefined;
  let v: Body = value;
  for (let pass = 0; pass < 4; pass++) {
    const r = schema.safeParse(v);
    if (r.success) return v;
    v = mend(v, r.error.issues, topSamples, configStandIns);
  }
  return undefined;
}

/**
 * `value` with what `schema` refuses in it replaced by samples or left out, so an example stays as
 * close as possible to what the caller sent; undefined when that does not pass or leaves nothing.
 */
function mended<T>(schema: z.ZodType<T>, value: unknown, topSamples: Body = {}): Body | undefined {
  const v = mendedOrEmpty(schema, value, topSamples);
  return v && Object.keys(v).length > 0 ? v : undefined;
}

/**
 * A policy body (a create, a PATCH, a policy) without the function references `isBad` refuses: the rule that
 * uses one, its weight, its place in a list, the field it fills; a list or weights left empty are left out
 * too (a strategy that needs them gets samples when the result is mended). Anything not of the expected
 * shape is kept for the schema to judge.
 */
export function withoutNames(value: unknown, isBad: (ref: string) => boolean): unknown {
  if (!isObject(value)) return value;
  const bad = (ref: unknown): boolean => typeof ref === 'string' && isBad(ref);
  const out: Body = { ...value };
  const config: Body | undefined = isObject(out.config) ? { ...out.config } : undefined;
  const lists: Array<[Body | undefined, string, (item: unknown) => unknown]> = [
    [out, 'fallback_chain', (ref) => ref],
    [config, 'rules', (rule) => (isObject(rule) ? rule.use : undefined)],
    [config, 'order', (ref) => ref],
    [config, 'candidates', (ref) => ref],
  ];
  for (const [holder, key, refOf] of lists) {
    const list = holder?.[key];
    if (!holder || !Array.isArray(list)) continue;
    const kept = list.filter((item) => !bad(refOf(item)));
    if (kept.length === list.length) continue;
    if (kept.length > 0) holder[key] = kept;
    else delete holder[key];
  }
  if (bad(out.fallback_function)) delete out.fallback_function;
  if (config && bad(config.default_function)) delete config.default_function;
  if (config && isObject(config.weights)) {
    const weights = Object.fromEntries(Object.entries(config.weights).filter(([ref]) => !bad(ref)));
    if (Object.keys(weights).length > 0) config.weights = weights;
    else delete config.weights;
  }
  if (config) out.config = config;
  return out;
}

/**
 * The example of a create the body schema refuses, made from what was sent: each refused or missing field the body
 * needs replaced by its sample (`samples`, the route's own example), others left out, the rest kept as sent.
 */
export function createExampleFromSent<T>(body: z.ZodType<T>, sent: unknown, samples: Body): Body | undefined {
  return mended(body, sent, samples);
}

/**
 * What stands in, in a PATCH's example, for a config key the strategy needs that was refused, left empty or left out:
 * the stored value (`stored`, its refused references already left out), weights sent and kept laid over the stored
 * ones when that leaves a positive weight (so a valid weight sent is kept, the stored others beside it); a sample only
 * for a key the stored policy does not hold (`held`: its keys as stored), where it replaces nothing. A key held whose
 * every entry was refused gets no stand-in: the example leaves it out rather than send samples in its place.
 */
function patchStandIns(strategy: PolicyShape['strategy'], held: Body, stored: Body, sent: Body): Body {
  const out: Body = {};
  for (const [key, sample] of Object.entries(STRATEGY_NEEDS[strategy] ?? {})) {
    const kept = stored[key];
    if (!(key in held)) out[key] = sample;
    else if (kept === undefined) continue;
    else if (key === 'weights' && isObject(kept) && isObject(sent.weights) && hasPositiveWeight({ ...kept, ...sent.weights })) out[key] = { ...kept, ...sent.weights };
    else out[key] = kept;
  }
  return out;
}

const hasPositiveWeight = (weights: Body): boolean => Object.values(weights).some((w) => typeof w === 'number' && w > 0);

/**
 * The example of a PATCH the body schema refuses, made from what was sent alone: each refused value left out, never a
 * sample in the place of a stored value (refused rules or weights replaced by samples would, sent back, replace the
 * stored ones; the caller keeps the stored keys when what is left needs them). A config left empty is left out, as
 * sending it would clear the stored one; when nothing is left the example is {}, which changes nothing, never a field
 * the caller did not send (a stock rename would pass for a fix). `storedConfig`: the policy's config as stored, when read.
 */
export function patchExampleFromSent<T>(body: z.ZodType<T>, sent: unknown, storedConfig?: Body): Body | undefined {
  const sentConfig = isObject(sent) ? sent.config : undefined;
  const v = mendedOrEmpty(body, sent, {}, {});
  if (!v) return undefined;
  // A sent config replaces the stored one whole: with a strategy sent beside it, it must hold what that strategy needs,
  // or the example would be refused for it once applied: the stored value, a sample where the policy holds none.
  if (typeof v.strategy === 'string' && STRATEGY_NEEDS[v.strategy as PolicyShape['strategy']] && isObject(sentConfig)) {
    const config = isObject(v.config) ? v.config : {};
    const standIns = patchStandIns(v.strategy as PolicyShape['strategy'], storedConfig ?? {}, storedConfig ?? {}, config);
    const withNeeds = { ...standIns, ...config };
    if (body.safeParse({ ...v, config: withNeeds }).success) v.config = withNeeds;
  }
  if (isObject(v.config) && Object.keys(v.config).length === 0 && !(isObject(sentConfig) && Object.keys(sentConfig).length === 0)) {
    const { config: _emptied, ...rest } = v;
    return rest;
  }
  return v;
}

export interface PatchExample {
  example: Body;
  /** Config keys the strategy needs that neither the stored policy nor the PATCH held: sample values. */
  added: string[];
  /** Whether values were left out, or replaced by the stored ones, to make the example pass. */
  mended: boolean;
}

/**
 * The example of a PATCH refused once applied to `current` (what its strategy needs, a function name): what
 * was sent, the function references `isBad` refuses left out, with `config` (replaced as a whole) holding the
 * stored keys beside the sent ones. A needed key whose sent value is refused (no positive weight, no rule left)
 * falls back on the stored value, never on a sample that would replace it; samples stand only for what the
 * strategy needs and neither holds. A field not sent is in it only when it must change for the example to pass
 * (a stored reference left out).
 */
export function patchExample(current: PolicyShape, body: Body, isBad: (ref: string) => boolean): PatchExample | undefined {
  const strategy = (body.strategy ?? current.strategy) as PolicyShape['strategy'];
  const sentConfig = isObject(body.config) ? body.config : {};
  // What a PATCH leaves out keeps the stored value; a stored value that must lose a reference is sent without it.
  const sent = withoutNames(body, isBad) as Body;
  const carried = withoutNames({ fallback_chain: current.fallback_chain, fallback_function: current.fallback_function }, isBad) as Body;
  // Each side without the refused references on its own, so sent weights or rules all refused leave the stored ones.
  const stored = ((withoutNames({ config: current.config }, isBad) as Body).config ?? {}) as Body;
  const sentKept = ((withoutNames({ config: sentConfig }, isBad) as Body).config ?? {}) as Body;
  const standIns = patchStandIns(strategy, current.config, stored, sentKept);
  const samples = Object.keys(STRATEGY_NEEDS[strategy] ?? {}).filter((k) => !(k in current.config) && !(k in sentKept));
  const config = { ...Object.fromEntries(samples.map((k) => [k, standIns[k]])), ...stored, ...sentKept };
  const candidate: Body = { name: current.name, is_default: current.is_default, fallback_chain: [], fallback_function: null, ...carried, ...sent, strategy, config };
  const full = mendedOrEmpty(policySchema, candidate, {}, standIns);
  if (!full) return undefined;
  const example: Body = {};
  for (const [key, value] of Object.entries(full)) {
    const storedValue = (current as unknown as Body)[key];
    if (key in sent || (key === 'config' && 'config' in body) || stableStringify(value) !== stableStringify(storedValue)) example[key] = value;
  }
  const exampleConfig = isObject(full.config) ? full.config : {};
  return {
    example,
    added: Object.keys(STRATEGY_NEEDS[strategy] ?? {}).filter((k) => !(k in current.config) && k in exampleConfig && exampleConfig[k] === standIns[k]),
    mended: !policySchema.safeParse(candidate).success,
  };
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
