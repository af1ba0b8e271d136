import type { KvStore, Unsubscribe } from '../core/kv';
import { formatMultiplier } from '../core/money';
import { Serial } from '../core/serial';
import { BUILTINS } from './builtins/catalogue';
import type { CallerScope, FunctionDescriptor } from './functions';
import { isReachable } from './functions';

/** Where workspace functions come from (the pricing plugin's table). */
export interface FunctionSource {
  loadAll(): Promise<FunctionDescriptor[]>;
  loadOne(id: string): Promise<FunctionDescriptor | null>;
}

const CHANNEL = 'engine:function-changed';

export const BUILTIN_DESCRIPTORS: readonly FunctionDescriptor[] = BUILTINS.map((b) => ({
  id: b.id,
  name: b.name,
  workspaceId: null,
  builtIn: true,
  executionType: 'builtin',
  status: 'active',
  isPublic: true,
  costPerUnit: b.costPerUnit,
  costMultiplier: formatMultiplier(b.costMultiplier),
  description: b.description,
  tags: b.tags,
}));

/**
 * Every function the engine can route to, in memory, so routing never waits on the database.
 * Changes are applied here and announced on the store; other instances reload the function.
 */
export class FunctionRegistry {
  private readonly byIdMap = new Map<string, FunctionDescriptor>();
  private readonly byNameMap = new Map<string, string>();
  /**
   * What `reachable` reads instead of every function on the network: each workspace's own functions,
   * and the public active ones. `order` numbers functions as byIdMap holds them (a change keeps its
   * place), so the answers list them in the same order as a walk of every function would.
   */
  private readonly byWorkspace = new Map<string, Map<string, FunctionDescriptor>>();
  private readonly publicActive = new Map<string, FunctionDescriptor>();
  private readonly order = new Map<string, number>();
  private nextOrder = 0;
  private unsubscribe: Unsubscribe | null = null;
  /** The reloads, one after another in the order asked. */
  private readonly reloads = new Serial();

  constructor(
    private readonly source: FunctionSource,
    private readonly kv: KvStore,
  ) {
    for (const b of BUILTIN_DESCRIPTORS) this.put(b);
  }

  async start(): Promise<void> {
    for (const fn of await this.source.loadAll()) this.put(fn);
    // Changes announced while the subscription was down were missed: all functions are read again.
    this.unsubscribe = await this.kv.subscribe(CHANNEL, (id) => this.reload(id), () => this.reloadAll());
  }

  /** Every workspace function as the database has it now (built-ins stay); applied at once, between two reads. */
  private reloadAll(): Promise<void> {
    return this.reloads.run(() => this.readAll());
  }

  private async readAll(): Promise<void> {
    const fns = await this.source.loadAll();
    for (const fn of [...this.byIdMap.values()]) if (!fn.builtIn) this.remove(fn);
    for (const fn of fns) this.put(fn);
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  private put(fn: FunctionDescriptor): void {
    const old = this.byIdMap.get(fn.id);
    if (old) {
      this.byNameMap.delete(old.name.toLowerCase());
      if (old.workspaceId !== fn.workspaceId) this.unindex(old);
    } else this.order.set(fn.id, this.nextOrder++);
    this.byIdMap.set(fn.id, fn);
    this.index(fn);
    // A name shaped like a function id (saved before such names were refused) is reachable by its id only: by name it
    // could stand in for a built-in's id wherever callers name functions.
    if (!fn.name.toLowerCase().startsWith('fn_')) this.byNameMap.set(fn.name.toLowerCase(), fn.id);
  }

  private reload(id: string): Promise<void> {
    return this.reloads.run(() => this.readOne(id));
  }

  private async readOne(id: string): Promise<void> {
    const fn = await this.source.loadOne(id);
    if (fn) this.put(fn);
    else {
      const old = this.byIdMap.get(id);
      if (old && !old.builtIn) this.remove(old);
    }
  }

  private remove(fn: FunctionDescriptor): void {
    this.byIdMap.delete(fn.id);
    this.byNameMap.delete(fn.name.toLowerCase());
    this.order.delete(fn.id);
    this.unindex(fn);
  }

  /** A changed function keeps its place in its workspace's map (set on a key already there), as in byIdMap. */
  private index(fn: FunctionDescriptor): void {
    if (fn.builtIn) return;
    if (fn.workspaceId !== null) {
      let own = this.byWorkspace.get(fn.workspaceId);
      if (!own) this.byWorkspace.set(fn.workspaceId, (own = new Map<string, FunctionDescriptor>()));
      own.set(fn.id, fn);
    }
    if (fn.isPublic && fn.status === 'active') this.publicActive.set(fn.id, fn);
    else this.publicActive.delete(fn.id);
  }

  private unindex(fn: FunctionDescriptor): void {
    this.publicActive.delete(fn.id);
    if (fn.workspaceId === null) return;
    const own = this.byWorkspace.get(fn.workspaceId);
    own?.delete(fn.id);
    if (own?.size === 0) this.byWorkspace.delete(fn.workspaceId);
  }

  /** Applies a change made on this instance and tells the others. */
  async changed(id: string): Promise<void> {
    await this.reload(id);
    await this.kv.publish(CHANNEL, id);
  }

  get(id: string): FunctionDescriptor | undefined {
    return this.byIdMap.get(id);
  }

  /** By id or by name (names are unique across the network, case-insensitively). */
  find(ref: string): FunctionDescriptor | undefined {
    return this.byIdMap.get(ref) ?? this.getByName(ref);
  }

  getByName(name: string): FunctionDescriptor | undefined {
    const id = this.byNameMap.get(name.toLowerCase());
    return id ? this.byIdMap.get(id) : undefined;
  }

  /** A function the caller may use, by id or name; undefined when missing or out of reach alike. */
  resolve(ref: string, scope: CallerScope, by: 'id' | 'name' | 'either' = 'either'): FunctionDescriptor | undefined {
    const fn = by === 'id' ? this.byIdMap.get(ref) : by === 'name' ? this.getByName(ref) : this.find(ref);
    return fn && isReachable(fn, scope) ? fn : undefined;
  }

  /**
   * A policy's reference, as `resolve`, except that a name binds only to a function registered by the
   * time the policy was saved (`savedAt`). Saving refuses names no function holds, and names are never
   * freed, so this changes nothing for a policy saved since; one saved earlier with a name held for
   * later never sends its calls (and charges) to whoever registered that name after it.
   */
  resolveForPolicy(ref: string, scope: CallerScope, savedAt: string | undefined): FunctionDescriptor | undefined {
    const fn = this.resolve(ref, scope);
    if (!fn || savedAt === undefined || fn.id === ref || fn.createdAt === undefined) return fn;
    return Date.parse(fn.createdAt) <= Date.parse(savedAt) ? fn : undefined;
  }

  all(): FunctionDescriptor[] {
    return [...this.byIdMap.values()];
  }

  /**
   * The functions a caller may use (isReachable), in the registry's order: built-ins, then the workspace's own and the
   * public active ones. Reads only those, not every function on the network.
   */
  reachable(scope: CallerScope): FunctionDescriptor[] {
    if (scope.builtInsOnly) return [...BUILTIN_DESCRIPTORS];
    const own = this.byWorkspace.get(scope.workspaceId);
    const others = own ? [...own.values()] : [];
    for (const fn of this.publicActive.values()) if (fn.workspaceId !== scope.workspaceId) others.push(fn);
    others.sort((a, b) => (this.order.get(a.id) ?? 0) - (this.order.get(b.id) ?? 0));
    return [...BUILTIN_DESCRIPTORS, ...others];
  }

  /** Built-ins and the workspace's own functions (those reachable), in the registry's order: the router's default candidates. */
  ownAndBuiltIn(scope: CallerScope): FunctionDescriptor[] {
    const own = scope.builtInsOnly ? undefined : this.byWorkspace.get(scope.workspaceId);
    if (!own) return [...BUILTIN_DESCRIPTORS];
    // In the registry's order, as reachable(): a function re-indexed into the workspace sits at its map's end.
    return [...BUILTIN_DESCRIPTORS, ...[...own.values()].sort((a, b) => (this.order.get(a.id) ?? 0) - (this.order.get(b.id) ?? 0))];
  }
}
