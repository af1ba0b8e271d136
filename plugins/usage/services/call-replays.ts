import type { Pool } from 'pg';
import type { Clock } from '../../../core/clock';
import { PeriodicTask } from '../../../core/periodic-task';
import type { Logger } from '../../../core/logger';
import { EVENT_COLUMNS } from './event-view';
import type { EventRow } from './event-view';

const PRUNE_EVERY_MS = 3_600_000;

const MARK_REPLAYED = {
  name: 'compute_idempotency_replayed',
  text: 'UPDATE compute_idempotency_keys SET replayed_at = COALESCE(replayed_at, now()) WHERE workspace_id = $1 AND key = $2 AND usage_event_id = $3',
};

/**
 * The claim under a key: the call's own, or an item's of the batch sent with that key. A claim whose
 * event is still charged comes first, then the key's own.
 */
const FIND = {
  name: 'compute_idempotency_find',
  text: `SELECT k.key AS claim_key, k.fingerprint AS claim_fingerprint, k.response AS claim_response, ${EVENT_COLUMNS}, 'mine'::text AS viewer_class, NULL::text AS tester_label
           FROM compute_idempotency_keys k JOIN usage_events e ON e.id = k.usage_event_id
          WHERE k.workspace_id = $1 AND (k.key = $2 OR k.batch_key = $2) AND k.created_at >= now() - make_interval(hours => $3::int)
          ORDER BY e.error_code IS NOT DISTINCT FROM 'not_delivered', k.key = $2 DESC
          LIMIT 1`,
};

/** The oldest charged call under a key, its own or a batch's item, made with another request (fingerprint) than $3. */
const HELD_BY_ANOTHER = {
  name: 'compute_idempotency_held_by_another',
  text: `SELECT k.usage_event_id FROM compute_idempotency_keys k JOIN usage_events e ON e.id = k.usage_event_id
          WHERE k.workspace_id = $1 AND (k.key = $2 OR k.batch_key = $2) AND k.fingerprint <> $3 AND k.created_at >= now() - make_interval(hours => $4::int)
            AND e.error_code IS DISTINCT FROM 'not_delivered'
          ORDER BY k.created_at, k.key LIMIT 1`,
};

/** A priced call recorded under an Idempotency-Key: what its retry answers. */
export interface RecordedCall {
  fingerprint: string;
  /** The call's answer, without what a replay rebuilds (receipt, remaining allowance, next actions). */
  response: Record<string, unknown>;
  /** Its usage event as it is now, as the workspace sees it. */
  event: EventRow;
}

/**
 * The Idempotency-Keys of priced calls (table compute_idempotency_keys, claimed by the usage
 * writer in the statement that records the call's event). A key names a call for
 * IDEMPOTENCY_KEY_TTL_H hours; only a charged call holds it.
 */
export class CallReplays {
  /** Drops keys past the TTL, at most once an hour per instance, off the request's path. */
  private readonly prune: PeriodicTask;

  constructor(
    /** Straight to node-postgres with prepared statements: a keyed call pays these on its path. */
    private readonly pool: Pool,
    clock: Clock,
    log: Logger,
    readonly ttlHours: number,
  ) {
    this.prune = new PeriodicTask(
      clock,
      PRUNE_EVERY_MS,
      () => pool.query('DELETE FROM compute_idempotency_keys WHERE created_at < now() - make_interval(hours => $1::int)', [ttlHours]),
      (err) => log.warn({ err }, 'pruning the idempotency keys of priced calls failed'),
    );
  }

  /**
   * The call recorded in the workspace under `key` within the TTL, or null: the call's own, or an
   * item of the batch sent with `key` (whose fingerprint is the batch's, so another request under
   * the key is told apart). A call since recorded not delivered (its answer reached nobody) was not
   * charged: its key is let go, so the retry is priced afresh, once.
   */
  async find(workspaceId: string, key: string): Promise<RecordedCall | null> {
    this.prune.poke();
    const res = await this.pool.query<EventRow & { claim_key: string; claim_fingerprint: string; claim_response: Record<string, unknown> }>({ ...FIND, values: [workspaceId, key, this.ttlHours] });
    const row = res.rows[0];
    if (!row) return null;
    const { claim_key: claimKey, claim_fingerprint: fingerprint, claim_response: response, ...event } = row;
    if (event.error_code === 'not_delivered') {
      await this.pool.query('DELETE FROM compute_idempotency_keys WHERE workspace_id = $1 AND key = $2 AND usage_event_id = $3', [workspaceId, claimKey, event.id]);
      return null;
    }
    return { fingerprint, response, event };
  }

  /**
   * The usage event of a charged call under `key` (its own, or an item's of a batch sent with it)
   * made with another request than `fingerprint`, or null: a batch under a key a single call holds,
   * or under its own key with another body, is refused whole before any item runs.
   */
  async heldByAnother(workspaceId: string, key: string, fingerprint: string): Promise<string | null> {
    this.prune.poke();
    const res = await this.pool.query<{ usage_event_id: string }>({ ...HELD_BY_ANOTHER, values: [workspaceId, key, fingerprint, this.ttlHours] });
    return res.rows[0]?.usage_event_id ?? null;
  }

  /**
   * Takes the call recorded under `key` as replayed, so a not-delivered mark of it that comes later
   * leaves it charged (its answer reached a caller after all). False when its key was let go
   * meanwhile (the call was marked not delivered first): the retry is then priced afresh. The key
   * row's lock orders this against the mark, across instances.
   */
  async markReplayed(workspaceId: string, key: string, usageEventId: string): Promise<boolean> {
    const res = await this.pool.query({ ...MARK_REPLAYED, values: [workspaceId, key, usageEventId] });
    return (res.rowCount ?? 0) > 0;
  }
}
