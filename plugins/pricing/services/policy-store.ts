import { stableStringify } from '../../../core/stable-json';
import { ExpiringMap } from '../../../core/bounded-map';
import type { Clock } from '../../../core/clock';
import type { Transaction } from 'sequelize';
import type { Sql } from '../../../core/db/sql';
import { newId } from '../../../core/ids';
import type { KvStore, Unsubscribe } from '../../../core/kv';
import { roundRobinKey } from '../../../engine';
import type { PolicyShape, RoutingPolicy } from '../../../engine';
import { assertWorkspaceRoom } from '../../identity';
import type { TakeClaim } from '../../identity';

interface PolicyRow {
  id: string;
  workspace_id: string;
  name: string;
  strategy: RoutingPolicy['strategy'];
  is_default: boolean;
  fallback_chain: string[];
  fallback_function: string | null;
  config: RoutingPolicy['config'];
  created_at: Date;
  updated_at: Date;
}

export interface PolicyRecord extends RoutingPolicy {
  created_at: string;
  updated_at: string;
}

function toRecord(r: PolicyRow): PolicyRecord {
  return {
    id: r.id,
    workspace_id: r.workspace_id,
    name: r.name,
    strategy: r.strategy,
    is_default: r.is_default,
    fallback_chain: r.fallback_chain,
    fallback_function: r.fallback_function,
    config: r.config,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}

const CHANNEL = 'pricing:policy-changed';
const CACHE_TTL_MS = 60_000;

/**
 * Routing policies. The default policy of a workspace is read on every compute, so it is cached in
 * process; changes invalidate it on every instance through the store.
 */
export class PolicyStore {
  /** Kept for the workspaces that computed lately: every workspace that ever computes would otherwise stay. */
  private readonly defaults: ExpiringMap<string, RoutingPolicy | null>;
  /** Bumped by every change seen: a read that a change overtook is not cached (it may hold the policy before it). */
  private changes = 0;
  private unsubscribe: Unsubscribe | null = null;

  /** `perWorkspace`: ROUTING_POLICIES_PER_WORKSPACE; `cacheMaxEntries`: ROUTING_POLICY_CACHE_MAX_ENTRIES. */
  constructor(
    private readonly sql: Sql,
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly perWorkspace: number,
    cacheMaxEntries: number,
  ) {
    this.defaults = new ExpiringMap(cacheMaxEntries, () => clock.now());
  }

  async start(): Promise<void> {
    this.unsubscribe = await this.kv.subscribe(
      CHANNEL,
      (ws) => {
        this.changes++;
        this.defaults.delete(ws);
      },
      // Changes announced while the subscription was down were missed: no cached default is trusted.
      () => {
        this.changes++;
        this.defaults.clear();
      },
    );
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  private async changed(workspaceId: string): Promise<void> {
    this.changes++;
    this.defaults.delete(workspaceId);
    await this.kv.publish(CHANNEL, workspaceId);
  }

  async defaultFor(workspaceId: string): Promise<RoutingPolicy | null> {
    const hit = this.defaults.get(workspaceId);
    if (hit !== undefined) return hit;
    const changesBefore = this.changes;
    const row = await this.sql.one<PolicyRow>('SELECT * FROM routing_policies WHERE workspace_id = $1 AND is_default', [workspaceId]);
    const policy = row ? toRecord(row) : null;
    if (this.changes === changesBefore) this.defaults.set(workspaceId, policy, CACHE_TTL_MS);
    return policy;
  }

  async get(workspaceId: string, id: string): Promise<PolicyRecord | null> {
    const row = await this.sql.one<PolicyRow>('SELECT * FROM routing_policies WHERE id = $1 AND workspace_id = $2', [id, workspaceId]);
    return row ? toRecord(row) : null;
  }

  /** Newest first; `sortKey` is the exact creation time (microseconds) the next page's cursor holds. */
  async list(workspaceId: string, limit: number, after?: { at: string; id: string }): Promise<Array<PolicyRecord & { sortKey: string }>> {
    const rows = await this.sql.many<PolicyRow & { sort_key: string }>(
      `SELECT *, created_at::text AS sort_key FROM routing_policies
        WHERE workspace_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::text))
        ORDER BY created_at DESC, id DESC LIMIT $4`,
      [workspaceId, after?.at ?? null, after?.id ?? null, limit + 1],
    );
    return rows.map((r) => ({ ...toRecord(r), sortKey: r.sort_key }));
  }

  /** Policy changes of one workspace that touch its default take turns, for the rest of the transaction. */
  private async takeTurn(workspaceId: string, tx: Transaction): Promise<void> {
    await this.sql.many('SELECT pg_advisory_xact_lock(hashtext($1))', [`routing_policies.default:${workspaceId}`], tx);
  }

  /**
   * The workspace's default policy, other than `except`, is no longer the default. Its updated_at stays: it says
   * when the policy's function names were last checked, which binds them (FunctionRegistry.resolveForPolicy).
   */
  private async unsetDefault(workspaceId: string, except: string | null, tx: Transaction): Promise<void> {
    await this.sql.exec("UPDATE routing_policies SET is_default = false WHERE workspace_id = $1 AND is_default AND id <> COALESCE($2, '')", [workspaceId, except], tx);
  }

  /** Creates a validated policy; making it the default unsets the previous one. */
  /** `take`: an Idempotency-Key claim, taken first in the same transaction (IdempotencyKeys). */
  async create(workspaceId: string, p: PolicyShape, take?: TakeClaim): Promise<PolicyRecord> {
    const id = newId('rp');
    const saved = await this.sql.tx(async (tx) => {
      await take?.(tx, id);
      await assertWorkspaceRoom(this.sql, tx, workspaceId, {
        setting: 'ROUTING_POLICIES_PER_WORKSPACE',
        value: this.perWorkspace,
        what: 'routing policies',
        count: 'SELECT count(*)::int AS n FROM routing_policies WHERE workspace_id = $1',
        hint: 'Delete a policy you no longer use (DELETE /api/routing-policies/{id}; GET /api/routing-policies lists them), or change one with PATCH instead of creating another.',
      });
      // Concurrent saves of a default take turns per workspace: each unsets the one before it, rather
      // than both finding none and colliding on the one-default index.
      if (p.is_default) {
        await this.takeTurn(workspaceId, tx);
        await this.unsetDefault(workspaceId, null, tx);
      }
      return this.sql.one<PolicyRow>(
        `INSERT INTO routing_policies (id, workspace_id, name, strategy, is_default, fallback_chain, fallback_function, config) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
        [id, workspaceId, p.name, p.strategy, p.is_default, p.fallback_chain, p.fallback_function, JSON.stringify(p.config)],
        tx,
      );
    });
    await this.changed(workspaceId);
    if (!saved) throw new Error('policy not saved');
    return toRecord(saved);
  }

  /**
   * Changes a policy as `produce` says, given the stored one, all in one transaction: the row is
   * locked while the patch is applied (two patches cannot each overwrite the other's fields), and
   * a policy deleted meanwhile is not saved (null) — nor is the previous default unset for it.
   * Policy changes of a workspace take turns (the same lock as saving a default), so a change and a
   * new default cannot wait on each other's rows. `produce` may throw (validation): nothing is saved.
   */
  async update(workspaceId: string, id: string, produce: (current: PolicyRecord) => PolicyShape): Promise<PolicyRecord | null> {
    const saved = await this.sql.tx(async (tx) => {
      await this.takeTurn(workspaceId, tx);
      const current = await this.sql.one<PolicyRow>('SELECT * FROM routing_policies WHERE id = $1 AND workspace_id = $2 FOR UPDATE', [id, workspaceId], tx);
      if (!current) return null;
      const stored = toRecord(current);
      const p = produce(stored);
      // A patch that changes nothing ({}, or every field as stored) leaves the row as it is: updated_at says when the policy
      // last changed, and its names bind to the functions registered by then.
      if (samePolicy(p, stored)) return current;
      if (p.is_default) await this.unsetDefault(workspaceId, id, tx);
      return this.sql.one<PolicyRow>(
        `UPDATE routing_policies SET name = $3, strategy = $4, is_default = $5, fallback_chain = $6, fallback_function = $7, config = $8, updated_at = statement_timestamp()
         WHERE id = $1 AND workspace_id = $2 RETURNING *`,
        [id, workspaceId, p.name, p.strategy, p.is_default, p.fallback_chain, p.fallback_function, JSON.stringify(p.config)],
        tx,
      );
    });
    await this.changed(workspaceId);
    return saved ? toRecord(saved) : null;
  }

  async remove(workspaceId: string, id: string): Promise<boolean> {
    const n = await this.sql.exec('DELETE FROM routing_policies WHERE id = $1 AND workspace_id = $2', [id, workspaceId]);
    await this.changed(workspaceId);
    // Its round-robin turns would otherwise stay on the store until their 7-day expiry.
    if (n > 0) await this.kv.del(roundRobinKey(id, workspaceId));
    return n > 0;
  }
}

/** Whether two policies hold the same fields (config compared by value, key order aside). */
function samePolicy(a: PolicyShape, b: PolicyShape): boolean {
  const fields = (p: PolicyShape) => stableStringify({ name: p.name, strategy: p.strategy, is_default: p.is_default, fallback_chain: p.fallback_chain, fallback_function: p.fallback_function, config: p.config });
  return fields(a) === fields(b);
}

export function policyView(p: PolicyRecord): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    strategy: p.strategy,
    is_default: p.is_default,
    fallback_chain: p.fallback_chain,
    fallback_function: p.fallback_function,
    config: p.config,
    created_at: p.created_at,
    updated_at: p.updated_at,
  };
}
