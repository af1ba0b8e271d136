import { z } from 'zod';

/**
 * One place declares every setting: its environment variable, its schema, its default and a line
 * of documentation. The loader, the config type and the README table are all derived from it, so
 * they cannot disagree.
 */
export interface SettingDef<T> {
  readonly kind: 'setting';
  readonly env: string;
  readonly schema: z.ZodType<T>;
  readonly default: T;
  readonly doc: string;
  /** Turns the raw environment string into the value the schema checks. */
  readonly fromEnv: (raw: string) => unknown;
  readonly secret: boolean;
}

interface Options {
  secret?: boolean;
}

function def<T>(env: string, schema: z.ZodType<T>, dflt: T, doc: string, fromEnv: (raw: string) => unknown, opts: Options = {}): SettingDef<T> {
  return { kind: 'setting', env, schema, default: dflt, doc, fromEnv, secret: opts.secret ?? false };
}

const trimmed = (raw: string): string => raw.trim();

export function int(env: string, dflt: number, doc: string, range: { min?: number; max?: number } = {}): SettingDef<number> {
  let schema = z.number().int();
  if (range.min !== undefined) schema = schema.min(range.min);
  if (range.max !== undefined) schema = schema.max(range.max);
  return def(env, schema, dflt, doc, (raw) => (/^-?\d+$/.test(raw.trim()) ? Number(raw) : raw));
}

export function num(env: string, dflt: number, doc: string, range: { min?: number; max?: number } = {}): SettingDef<number> {
  let schema = z.number();
  if (range.min !== undefined) schema = schema.min(range.min);
  if (range.max !== undefined) schema = schema.max(range.max);
  return def(env, schema, dflt, doc, (raw) => (raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw));
}

export function bool(env: string, dflt: boolean, doc: string): SettingDef<boolean> {
  return def(env, z.boolean(), dflt, doc, (raw) => {
    const v = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    return raw;
  });
}

export function str(env: string, dflt: string, doc: string, opts: Options & { pattern?: RegExp } = {}): SettingDef<string> {
  let schema = z.string().min(1);
  if (opts.pattern) schema = schema.regex(opts.pattern);
  return def(env, schema, dflt, doc, trimmed, opts);
}

export function optStr(env: string, doc: string, opts: Options & { url?: boolean } = {}): SettingDef<string | undefined> {
  const base = opts.url ? z.string().url() : z.string().min(1);
  return def<string | undefined>(env, base.optional(), undefined, doc, (raw) => (raw.trim() === '' ? undefined : raw.trim()), opts);
}

export function optInt(env: string, doc: string): SettingDef<number | undefined> {
  return def<number | undefined>(env, z.number().int().optional(), undefined, doc, (raw) => (raw.trim() === '' ? undefined : /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw));
}

export function oneOf<const T extends readonly [string, ...string[]]>(env: string, values: T, dflt: T[number], doc: string): SettingDef<T[number]> {
  return def(env, z.enum(values) as unknown as z.ZodType<T[number]>, dflt, doc, trimmed);
}

export function list(env: string, dflt: string[], doc: string): SettingDef<string[]> {
  return def(env, z.array(z.string().min(1)), dflt, doc, (raw) =>
    raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
}

/** A decimal amount kept as a string (money is never a float). */
export function decimal(env: string, dflt: string, doc: string): SettingDef<string> {
  return def(env, z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative decimal such as 10 or 0.25'), dflt, doc, trimmed);
}

export type SettingsTree = { readonly [key: string]: SettingDef<unknown> | SettingsTree };

export function isSetting(node: SettingDef<unknown> | SettingsTree): node is SettingDef<unknown> {
  return (node as SettingDef<unknown>).kind === 'setting';
}

export type ConfigOf<T> = {
  readonly [K in keyof T]: T[K] extends SettingDef<infer V> ? V : ConfigOf<T[K]>;
};

/** Deep partial of a config, for programmatic overrides (tests, embedding). */
export type ConfigOverrides<T> = {
  [K in keyof T]?: T[K] extends readonly unknown[] ? T[K] : T[K] extends object ? ConfigOverrides<T[K]> : T[K];
};
