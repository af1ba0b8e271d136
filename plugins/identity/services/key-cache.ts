import { BoundedMap } from '../../../core/bounded-map';
import type { KvStore, Unsubscribe } from '../../../core/kv';
import type { Clock } from '../../../core/clock';
import type { ApiKeyRow, WorkspaceRow } from '../domain';

export interface CachedKey {
  key: ApiKeyRow;
  workspace: WorkspaceRow;
  agentName: string | null;
}

type Entry = { value: CachedKey | null; expiresAt: number };

const CHANNEL = 'identity:key-invalidation';
const NEGATIVE_TTL_MS = 5_000;

type Invalidation = { hash: string } | { workspaceId: string } | { keyId: string };

/**
 * In-process cache of verified keys, keyed by key hash, so the hot path does not touch the
 * database. Revocation, rotation, claims and status changes publish an invalidation on the store;
 * with Redis every instance drops the entry at once.
 */
export class KeyCache {
  private readonly entries: BoundedMap<string, Entry>;
  private unsubscribe: Unsubscribe | null = null;
  /**
   * Bumped by every invalidation and clear: a lookup that read the database before one (a revocation
   * committed while it read) must not store what it read after it.
   */
  private changes = 0;

  constructor(
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly ttlMs: number,
    maxEntries: number,
  ) {
    this.entries = new BoundedMap(maxEntries);
  }

  async start(): Promise<void> {
    // A revocation announced while the subscription was down was missed: nothing cached before it is trusted.
    this.unsubscribe = await this.kv.subscribe(
      CHANNEL,
      (msg) => this.apply(JSON.parse(msg) as Invalidation),
      () => {
        this.changes++;
        this.entries.clear();
      },
    );
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
    this.entries.clear();
  }

  /** undefined: not cached; null: known not to exist (short negative cache). */
  get(hash: string): CachedKey | null | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    if (e.expiresAt <= this.clock.now()) {
      this.entries.delete(hash);
      return undefined;
    }
    return e.value;
  }

  /** Where the invalidations stand: pass it to set() to store a read only if none came since. */
  get generation(): number {
    return this.changes;
  }

  set(hash: string, value: CachedKey | null, readAt?: number): void {
    if (this.ttlMs <= 0) return;
    if (readAt !== undefined && readAt !== this.changes) return;
    this.entries.set(hash, { value, expiresAt: this.clock.now() + (value ? this.ttlMs : Math.min(this.ttlMs, NEGATIVE_TTL_MS)) });
  }

  /** Drops matching entries here and, through the store, on every other instance. */
  async invalidate(what: Invalidation): Promise<void> {
    this.apply(what);
    await this.kv.publish(CHANNEL, JSON.stringify(what));
  }

  private apply(what: Invalidation): void {
    this.changes++;
    if ('hash' in what) {
      this.entries.delete(what.hash);
      return;
    }
    for (const [hash, e] of this.entries) {
      if (!e.value) continue;
      if ('workspaceId' in what && e.value.workspace.id === what.workspaceId) this.entries.delete(hash);
      if ('keyId' in what && e.value.key.id === what.keyId) this.entries.delete(hash);
    }
  }
}
