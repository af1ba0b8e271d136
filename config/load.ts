import { closest, zodIssues } from '../core/validation';
import { isSetting } from './settings';
import type { SettingDef, SettingsTree } from './settings';
import { crossSettingProblems, settingsTree } from './schema';
import type { Config, ConfigInput } from './schema';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export interface SettingEntry {
  path: string;
  def: SettingDef<unknown>;
}

/** Every setting with its dotted path, in declaration order. */
export function listSettings(tree: SettingsTree = settingsTree, prefix = ''): SettingEntry[] {
  const out: SettingEntry[] = [];
  for (const [key, node] of Object.entries(tree)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (isSetting(node)) out.push({ path, def: node });
    else out.push(...listSettings(node, path));
  }
  return out;
}

function readOverride(overrides: unknown, path: string): { found: boolean; value: unknown } {
  let node: unknown = overrides;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object' || !(part in node)) return { found: false, value: undefined };
    node = (node as Record<string, unknown>)[part];
  }
  return { found: node !== undefined, value: node };
}

function assign(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1] as string] = value;
}

/**
 * Builds the configuration: defaults, then environment variables, then programmatic overrides.
 * Every problem is collected and reported with the setting's path and environment variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigInput = {}): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const { path, def } of listSettings()) {
    const override = readOverride(overrides, path);
    const raw = env[def.env];
    let value: unknown = def.default;
    let source = 'default';
    if (override.found) {
      value = override.value;
      source = 'override';
    } else if (raw !== undefined && raw.trim() !== '') {
      // An empty variable, or one of spaces only, means the default for every kind of setting.
      value = def.fromEnv(raw);
      source = `environment variable ${def.env}`;
    }
    const parsed = def.schema.safeParse(value);
    if (!parsed.success) {
      // The kernel's wording: bounds as sentences ("must be at most 65535"), not zod's defaults.
      const reason = zodIssues(parsed.error, value)
        .map((i) => i.reason)
        .join('; ');
      const shown = def.secret ? '(hidden)' : JSON.stringify(value);
      problems.push(`${def.env} (${path}) = ${shown} from ${source}: ${reason}`);
      continue;
    }
    assign(out, path, parsed.data);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const config = out as unknown as Config;
  // Settings valid alone but not together: refused the same way, naming both.
  problems.push(...crossSettingProblems(config));
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/**
 * Environment variables one or two letters from a setting's name (or the same but for case and
 * separators) that are not settings themselves: most likely misspelt settings, which would
 * otherwise be ignored without a word while the default applies.
 */
export function misspelledSettings(env: NodeJS.ProcessEnv): Array<{ name: string; meant: string }> {
  const names = listSettings().map(({ def }) => def.env);
  const known = new Set(names);
  const lower = names.map((n) => n.toLowerCase());
  const out: Array<{ name: string; meant: string }> = [];
  for (const name of Object.keys(env)) {
    if (known.has(name) || name.length < 6) continue;
    // A setting's name cut short or spelt out (IDEMPOTENCY_KEY_TTL_HOURS for IDEMPOTENCY_KEY_TTL_H) is past an edit or two.
    const meant = closest(name, lower) ?? names.find((n) => n.length >= 10 && (name.startsWith(n) || n.startsWith(name)) && Math.abs(n.length - name.length) <= 4)?.toLowerCase();
    if (meant) out.push({ name, meant: meant.toUpperCase() });
  }
  return out;
}
