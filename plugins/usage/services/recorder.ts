import type { Pool } from 'pg';
import type { Reservation } from '../../../core/admission';
import { UNAVAILABLE_RETRY_AFTER_S, serviceUnavailable } from '../../../core/errors';
import type { ApiError } from '../../../core/errors';
import { newSortableId } from '../../../core/ids';
import { failureFields } from '../../../core/logger';
import type { Logger } from '../../../core/logger';
import { DEFAULT_REPEAT_INTERVAL_MS, RepeatedLines } from '../../../core/repeated-lines';
import { isDatabaseUnavailable, isValueRefusal, mayHaveCommitted } from '../../../core/db/failures';
import { MARK_NOT_DELIVERED, UndeliveredMarks } from './undelivered-marks';
import { CLAIMED_ONLY, CLAIM_KEYS, INSERT, INSERT_ASYNC_COMMIT, ASYNC_COMMIT, RETURNING, UPSERT_UNDELIVERED, batchJson, row } from './usage-event-statements';
import type { UsageEventInput } from './usage-event-statements';

export type { UsageEventInput } from './usage-event-statements';

const callerGoneErrors = new WeakSet<object>();

/** What a call whose caller left before its answer ends with: nobody reads it, the log and the metrics do. */
function callerGoneError(): ApiError {
  const err = serviceUnavailable('The caller left before the answer: the call was recorded as not delivered and not charged.', 'Nothing was charged. Send the request again.');
  callerGoneErrors.add(err);
  return err;
}

/** Whether a write ended because its caller had left (recorded as not delivered), not because the store failed. */
export function isCallerGoneError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && callerGoneErrors.has(err);
}

/**
 * What a call whose usage event could not be written answers: no answer without its record, and
 * the caller (who must release what it reserved) says nothing was charged.
 */
export function usageWriteFailed(): ApiError {
  return serviceUnavailable(
    'The call was not answered: its usage record could not be written.',
    `Nothing was charged. The usage store is not reachable; retry in ${UNAVAILABLE_RETRY_AFTER_S} s.`,
  );
}


/** A written event: its id and the time the database recorded it. */
export interface RecordedEvent {
  id: string;
  createdAt: Date;
}

/** A priced call's Idempotency-Key, claimed by the statement that writes its event. */
export interface CallClaim {
  key: string;
  /** Tells a retry from another request under the same key. */
  fingerprint: string;
  /** The call's answer, without what a replay rebuilds. */
  response: Record<string, unknown>;
  /** A batch item's: the batch's own key (`key` is it with the item's index). */
  batchKey?: string | undefined;
}

interface Pending {
  id: string;
  event: UsageEventInput;
  claim?: CallClaim;
  /** null: the event was not written, its key being held by another call. */
  resolve: (createdAt: Date | null) => void;
  reject: (err: unknown) => void;
}

/**
 * Writes usage events durably before the response, grouped across concurrent requests: while an
 * insert is in flight, new events wait and go together in the next one (group commit), so a
 * request alone pays one round trip and a crowd shares them. Up to `concurrentInserts` inserts may
 * be in flight at once (each on its own connection of the pool): under load a new event then waits
 * for a free writer rather than for the whole insert ahead of it, and PostgreSQL flushes the
 * overlapping commits together. Nothing is acknowledged before the database has committed it; by
 * default (USAGE_SYNCHRONOUS_COMMIT on) that commit is durable.
 */
export class UsageRecorder {
  private queue: Pending[] = [];
  /** Inserts in flight. */
  private active = 0;
  /** A writer is about to take the queue (after the current tick, so its events join). */
  private scheduled = false;
  private readonly idle: Array<() => void> = [];
  /** Events being marked not delivered (shutdown waits for them too). */
  private marking = 0;
  private readonly statement: { name: string; text: string };
  private readonly claimingStatement: { name: string; text: string };
  private readonly claimTtlHours: number;
  /** Events that must end not billable, waiting for the database to take them. */
  private readonly undelivered: UndeliveredMarks;
  private readonly maxBatch: number;
  private readonly concurrentInserts: number;
  /** Write failures logged, by reason (LOG_REPEAT_INTERVAL_MS). */
  private readonly failures: RepeatedLines;

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    opts: { maxBatch?: number; synchronousCommit?: boolean; concurrentInserts?: number; undeliveredRetryMs?: number; claimTtlHours?: number; undeliveredJournalDir?: string; failureLogIntervalMs?: number } = {},
  ) {
    this.failures = new RepeatedLines(opts.failureLogIntervalMs ?? DEFAULT_REPEAT_INTERVAL_MS);
    this.undelivered = new UndeliveredMarks(pool, log, { upsert: UPSERT_UNDELIVERED, toParam: batchJson, retryMs: opts.undeliveredRetryMs, ...(opts.undeliveredJournalDir ? { journalDir: opts.undeliveredJournalDir } : {}) });
    this.maxBatch = opts.maxBatch ?? 200;
    this.concurrentInserts = Math.max(1, opts.concurrentInserts ?? 1);
    const async = opts.synchronousCommit === false;
    this.statement = async ? { name: 'usage_insert_async', text: INSERT_ASYNC_COMMIT } : { name: 'usage_insert', text: INSERT + RETURNING };
    this.claimingStatement = { name: async ? 'usage_insert_claiming_async' : 'usage_insert_claiming', text: CLAIM_KEYS + INSERT + (async ? ASYNC_COMMIT : '') + CLAIMED_ONLY + RETURNING };
    this.claimTtlHours = opts.claimTtlHours ?? 24;
  }

  /** Resolves with the event id once the event is committed; rejects with usageWriteFailed() when it cannot be. */
  record(event: UsageEventInput): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const id = this.enqueue(event, undefined, () => resolve(id), reject);
    });
  }

  /** record(), with the time the database gave the event. */
  recordEvent(event: UsageEventInput): Promise<RecordedEvent> {
    return new Promise<RecordedEvent>((resolve, reject) => {
      const id = this.enqueue(event, undefined, (createdAt) => resolve({ id, createdAt: createdAt ?? new Date() }), reject);
    });
  }

  /**
   * recordEvent() of a call with an Idempotency-Key, claimed in the same statement: null when
   * another call holds the key (this event is then not written, and nothing is charged for it).
   */
  recordClaimed(event: UsageEventInput, claim: CallClaim): Promise<RecordedEvent | null> {
    return new Promise<RecordedEvent | null>((resolve, reject) => {
      const id = this.enqueue(event, claim, (createdAt) => resolve(createdAt ? { id, createdAt } : null), reject);
    });
  }

  private enqueue(event: UsageEventInput, claim: CallClaim | undefined, resolve: Pending['resolve'], reject: (err: unknown) => void): string {
    // Time-ordered: the primary-key index grows at its right edge (see newSortableId).
    const id = newSortableId('use');
    this.queue.push({ id, event, ...(claim ? { claim } : {}), resolve, reject });
    this.schedule();
    return id;
  }

  /**
   * Records a call's event, then settles what the call reserved: committed once the event is
   * written, released when it cannot be (no answer without its record, no charge without an answer).
   */
  async recordAndSettle(event: UsageEventInput, reservation: Reservation | null, callerGone?: () => boolean): Promise<RecordedEvent>;
  /** With a claim: null, and the reservation released, when another call holds its key. */
  async recordAndSettle(event: UsageEventInput, reservation: Reservation | null, callerGone: (() => boolean) | undefined, claim: CallClaim): Promise<RecordedEvent | null>;
  async recordAndSettle(event: UsageEventInput, reservation: Reservation | null, callerGone?: () => boolean, claim?: CallClaim): Promise<RecordedEvent | null> {
    let recorded: RecordedEvent | null;
    try {
      recorded = claim ? await this.recordClaimed(event, claim) : await this.recordEvent(event);
    } catch (err) {
      await reservation?.release();
      throw err;
    }
    if (!recorded) {
      await reservation?.release();
      return null;
    }
    // The connection closed while the event was written (the caller gave up, or a shutdown's deadline closed it): the
    // answer cannot reach the caller, so the call is recorded as not delivered and nothing is charged.
    if (callerGone?.()) {
      await this.markNotDelivered([recorded.id]);
      await reservation?.release();
      throw callerGoneError();
    }
    await reservation?.commit();
    return recorded;
  }

  /**
   * Marks committed events whose answer cannot reach the caller any more: an error `not_delivered`,
   * not billable, cost 0 (a call alone, or the items of a batch whose one reply was not sent).
   */
  async markNotDelivered(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    this.marking++;
    try {
      await this.pool.query(MARK_NOT_DELIVERED, [ids]);
    } catch (err) {
      this.log.warn({ err, usageEventIds: ids }, 'usage events whose answer was not delivered could not be marked so yet; kept to try again');
      this.undelivered.addIds(ids);
    } finally {
      this.marking--;
      this.settleIdle();
    }
  }

  /**
   * A late mark: events already recorded and settled whose reply then reached nobody (the pipeline's
   * last look before writing it). Marks them not delivered and gives back what their calls committed.
   */
  async undeliver(ids: string[], reservations: ReadonlyArray<Reservation | null | undefined> = []): Promise<void> {
    await this.markNotDelivered(ids);
    for (const reservation of reservations) {
      await reservation?.refund?.().catch((err: unknown) => this.log.error({ err, usageEventIds: ids }, 'what an undelivered call committed could not be given back'));
    }
  }

  recordMany(events: UsageEventInput[]): Promise<string[]> {
    return Promise.all(events.map((e) => this.record(e)));
  }

  private schedule(): void {
    if (this.scheduled || this.active >= this.concurrentInserts || this.queue.length === 0) return;
    this.scheduled = true;
    // Let the current tick's events join the batch.
    queueMicrotask(() => {
      this.scheduled = false;
      void this.write();
    });
  }

  private async write(): Promise<void> {
    if (this.queue.length === 0) return this.settleIdle();
    const batch = this.takeBatch();
    this.active++;
    // Events beyond one batch, or arriving now, may start another writer while this one waits.
    this.schedule();
    try {
      await this.insert(batch);
    } finally {
      this.active--;
      this.schedule();
      this.settleIdle();
    }
  }

  /**
   * The next group from the queue. A second call with a key already in the group waits for the next
   * one (where it finds the key taken): one statement may claim a key only once.
   */
  private takeBatch(): Pending[] {
    const batch = this.queue.splice(0, this.maxBatch);
    if (!batch.some((p) => p.claim)) return batch;
    const keys = new Set<string>();
    const now: Pending[] = [];
    const later: Pending[] = [];
    for (const p of batch) {
      const key = p.claim ? JSON.stringify([p.event.workspaceId, p.claim.key]) : null;
      if (key !== null && keys.has(key)) later.push(p);
      else {
        if (key !== null) keys.add(key);
        now.push(p);
      }
    }
    this.queue.unshift(...later);
    return now;
  }

  /** The statement and parameters writing a group (and claiming its keys, when it has any). */
  private queryOf(batch: Pending[]): { name: string; text: string; values: unknown[] } {
    const rows = batchJson(batch.map((p) => row(p.id, p.event)));
    const claimed = batch.filter((p): p is Pending & { claim: CallClaim } => p.claim !== undefined);
    if (claimed.length === 0) return { ...this.statement, values: [rows] };
    const claims = batchJson(claimed.map((p) => [p.event.workspaceId, p.claim.key, p.claim.fingerprint, p.id, p.claim.response, p.claim.batchKey ?? null]));
    return { ...this.claimingStatement, values: [rows, claims, this.claimTtlHours, claimed.map((p) => p.id)] };
  }

  /**
   * Inserts a group. A row the database refuses (a value out of range: SQLSTATE class 22 or 23)
   * must not take the other callers' events down with it: the group is split in halves until the
   * refused row stands alone, and only its call fails. Any other error (the database unreachable)
   * fails the group at once.
   */
  private async insert(batch: Pending[]): Promise<void> {
    try {
      // Straight to node-postgres, with the statement prepared once per connection.
      const res = await this.pool.query<{ id: string; created_at: Date }>(this.queryOf(batch));
      // One transaction: every row has its time (now()), read by id all the same. A claimed call missing from the
      // rows found its key held by another.
      // Writing again: the next failure is a new outage, logged at once.
      if (this.failures.any) this.failures.clear();
      const times = new Map(res.rows.map((r) => [r.id, r.created_at]));
      for (const p of batch) p.resolve(times.get(p.id) ?? (p.claim ? null : new Date()));
    } catch (err) {
      if (batch.length > 1 && isValueRefusal(err)) {
        const mid = Math.ceil(batch.length / 2);
        await this.insert(batch.slice(0, mid));
        await this.insert(batch.slice(mid));
        return;
      }
      // The database gone fails every batch alike: one line per reason and interval, a warning with the reason alone (an
      // outage's stack says nothing more); any other failure is the bug it is, with its stack. The request ids (the first
      // ten distinct) tie the line to the 503s of that write; the writes held back meanwhile are only counted.
      const due = this.failures.due(failureFields(err).reason, Date.now(), batch.length);
      if (due) {
        const fields = { events: batch.length, request_ids: [...new Set(batch.flatMap((p) => (p.event.requestId ? [p.event.requestId] : [])))].slice(0, 10), ...(due.heldBack > 0 ? { repeats_since_last_logged: due.heldBack, events_since_last_logged: due.heldBackUnits } : {}) };
        if (isDatabaseUnavailable(err)) this.log.warn({ ...failureFields(err), ...fields }, 'usage events could not be written');
        else this.log.error({ err, ...fields }, 'usage events could not be written');
      }
      // The caller hears that nothing was charged; an insert that may commit all the same must end not billable.
      if (mayHaveCommitted(err)) {
        const failedAt = new Date().toISOString();
        this.undelivered.addRows(batch.map((p) => [p.id, [...row(p.id, { ...p.event, status: 'error', errorCode: 'not_delivered', billable: false, cost: '0' }), failedAt]]));
      }
      for (const p of batch) p.reject(usageWriteFailed());
    }
  }

  /** Nothing queued, scheduled, in flight or being marked not delivered. */
  private get isIdle(): boolean {
    return this.active === 0 && !this.scheduled && this.queue.length === 0 && this.marking === 0;
  }

  /**
   * Wakes drainAll's waiters once idle. Checked again after the callers of the events just written
   * have run (their continuations are microtasks), so a caller found gone has begun its mark first.
   */
  private settleIdle(): void {
    if (!this.isIdle || this.idle.length === 0) return;
    setImmediate(() => {
      if (this.isIdle) for (const resolve of this.idle.splice(0)) resolve();
    });
  }

  /** Waits until every queued event is written (shutdown). */
  drainAll(): Promise<void> {
    return this.isIdle ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  /** Shutdown: every queued event written, then one last attempt at the marks still waiting. */
  async close(): Promise<void> {
    await this.drainAll();
    await this.undelivered.close();
  }
}
