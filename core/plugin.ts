import type { DependencyContainer } from 'tsyringe';
import type { Sequelize } from 'sequelize';
import type { Config } from '../config';
import type { Clock } from './clock';
import type { Migration } from './db/migrations';
import type { Sql } from './db/sql';
import type { EventBus } from './events';
import type { Hooks } from './hooks';
import type { RouteSpec } from './http/route';
import type { KvStore } from './kv';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { closest } from './validation';

export type ReadinessCheck = () => Promise<void>;

/** What a plugin receives in `register`. */
export interface PluginContext {
  readonly name: string;
  readonly config: Config;
  /** The instance's DI container; services are registered and resolved by token. */
  readonly container: DependencyContainer;
  readonly log: Logger;
  readonly sequelize: Sequelize;
  readonly sql: Sql;
  readonly kv: KvStore;
  readonly metrics: Metrics;
  readonly clock: Clock;
  readonly events: EventBus;
  readonly hooks: Hooks;
  /** Declares a route; it needs credentials unless its spec says `auth: 'public'` or `'optional'`. */
  readonly route: (spec: RouteSpec<never, never, never> | RouteSpec) => void;
  /** Adds a readiness check reported by GET /readyz. */
  readonly readiness: (name: string, check: ReadinessCheck) => void;
  /** Base URL of this instance as callers should use it (PUBLIC_URL, else the listen address). */
  readonly publicUrl: () => string;
  /** Runs once the server listens (background jobs start here). */
  readonly onStart: (fn: () => Promise<void> | void) => void;
  /** Runs at shutdown, in reverse plugin order, after in-flight requests finished. */
  readonly onClose: (fn: () => Promise<void> | void) => void;
}

/** A plugin: one folder under plugins/, one definition exported from its index.ts. */
export interface PluginDefinition {
  name: string;
  description: string;
  dependsOn?: readonly string[];
  migrations?: readonly Migration[];
  register(ctx: PluginContext): Promise<void> | void;
}

/** A start that cannot go on for a reason the operator can fix, said in a sentence that names the setting (no stack). */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

export class PluginLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PluginLoadError';
  }
}

/**
 * Orders the enabled plugins so each comes after its dependencies. Refuses an unknown plugin, a
 * dependency that is not enabled, and a cycle, each with a message naming the plugins involved.
 */
export function resolvePluginOrder(available: readonly PluginDefinition[], enabled: readonly string[]): PluginDefinition[] {
  const byName = new Map(available.map((p) => [p.name, p]));
  const wanted = [...new Set(enabled)];
  const unknown = wanted.filter((n) => !byName.has(n));
  if (unknown.length > 0) {
    const names = [...byName.keys()];
    const named = unknown.map((n) => {
      const meant = closest(n, names);
      return `"${n}"${meant ? ` (did you mean "${meant}"?)` : ''}`;
    });
    throw new PluginLoadError(`Unknown plugin${unknown.length > 1 ? 's' : ''} ${named.join(', ')} in PLUGINS. Available: ${names.join(', ')}.`);
  }
  const enabledSet = new Set(wanted);
  // Every missing dependency at once, transitively (a dependency not enabled brings its own), so
  // one start names them all rather than one per restart.
  const absent: string[] = [];
  const neededBy = new Map<string, string[]>();
  const seen = new Set<string>();
  const queue = [...wanted];
  while (queue.length > 0) {
    const name = queue.shift() as string;
    if (seen.has(name)) continue;
    seen.add(name);
    for (const dep of byName.get(name)?.dependsOn ?? []) {
      if (!byName.has(dep)) absent.push(`Plugin "${name}" depends on "${dep}", which does not exist.`);
      else if (!enabledSet.has(dep)) {
        neededBy.set(dep, [...(neededBy.get(dep) ?? []), name]);
        queue.push(dep);
      }
    }
  }
  if (absent.length > 0 || neededBy.size > 0) {
    const missing = [...neededBy.keys()];
    const notEnabled =
      missing.length === 0
        ? ''
        : `${missing.length === 1 ? 'A dependency is' : `${missing.length} dependencies are`} not enabled: ${missing.map((d) => `"${d}" (needed by ${(neededBy.get(d) ?? []).join(', ')})`).join(', ')}. ` +
          `Add ${missing.length === 1 ? 'it' : 'them'} to PLUGINS (PLUGINS=${[...wanted, ...missing].join(',')}) or remove the plugins that need ${missing.length === 1 ? 'it' : 'them'}.`;
    throw new PluginLoadError([...absent, notEnabled].filter((m) => m !== '').join(' '));
  }
  const ordered: PluginDefinition[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, trail: string[]): void => {
    const s = state.get(name);
    if (s === 'done') return;
    if (s === 'visiting') {
      const cycle = [...trail.slice(trail.indexOf(name)), name];
      throw new PluginLoadError(`Plugin dependency cycle: ${cycle.join(' -> ')}.`);
    }
    state.set(name, 'visiting');
    const plugin = byName.get(name) as PluginDefinition;
    for (const dep of plugin.dependsOn ?? []) visit(dep, [...trail, name]);
    state.set(name, 'done');
    ordered.push(plugin);
  };
  for (const name of wanted) visit(name, []);
  return ordered;
}
