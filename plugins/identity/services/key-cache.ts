import { ExpiringMap } from '../../../core/bounded-map';
import type { KvStore, Unsubscribe } from '../../../core/kv';
import type { Clock } from '../../../core/clock';
import type { ApiKeyRow, Role, WorkspaceRow, WorkspaceStatus } from '../domain';

export interface CachedKey {
  key: ApiKeyRow;
  workspace: WorkspaceRow;
  agentName: string | null;
  /** The account status of the person who created the key ('active' for agent keys). */
  creatorStatus: WorkspaceStatus;
  /**
   * The creator's role in the key's workspace when the key was read (null: not a member, or no creator). Only for what a
   * response offers (next actions); what the key may do is decided on a fresh read.
   */
  creatorRole?: Role | null;
}

const CHANNEL = 'identity:key-invalidation';
const NEGATIVE_TTL_MS = 5_000;

type Invalidation = { hash: string } | { workspaceId: string } | { keyId: string };

/**
 * In-process cache of verified keys, keyed by key hash, so the hot path does not touch the
 * database. Revocation, rotation, claims and status changes publish an invalidation on the store;
 * with Redis every instance drops the entry at once.
 */
export class KeyCache {
  private readonly entries: ExpiringMap<string, CachedKey | null>;
  private unsubscribe: Unsubscribe | null = null;
  /**
   * Bumped by every invalidation and clear: a lookup that read the database before one (a revocation
   * committed while it read) must not store what it read after it.
   */
  private changes = 0;

  constructor(
    private readonly kv: KvStore,
    clock: Clock,
    private readonly ttlMs: number,
    maxEntries: number,
  ) {
    this.entries = new ExpiringMap(maxEntries, () => clock.now());
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
    return this.entries.get(hash);
  }

  /** Where the invalidations stand: pass it to set() to store a read only if none came since. */
  get generation(): number {
    return this.changes;
  }

  set(hash: string, value: CachedKey | null, readAt?: number): void {
    if (this.ttlMs <= 0) return;
    if (readAt !== undefined && readAt !== this.changes) return;
    this.entries.set(hash, value, value ? this.ttlMs : Math.min(this.ttlMs, NEGATIVE_TTL_MS));
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
    this.entries.deleteWhere((_hash, value) => value !== null && ('workspaceId' in what ? value.workspace.id === what.workspaceId : value.key.id === what.keyId));
  }
}
