import { readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import { makeFolder } from '../../../core/folders';
import { isValueRefusal } from '../../../core/db/failures';
import type { Logger } from '../../../core/logger';

export interface UndeliveredMarksOptions {
  /**
   * INSERT of whole rows (one JSON array parameter) that, on a row already there, turns it into
   * not delivered: written when an insert's outcome is unknown, it wins whichever of the two
   * reaches the table first.
   */
  upsert: string;
  /** The rows as that statement's parameter. */
  toParam: (rows: unknown[][]) => string;
  /** First wait before writing again after a failure, in ms; doubles up to 30 s. */
  retryMs?: number;
  /** Most events kept waiting; beyond it the oldest are given up (and logged by id). */
  maxPending?: number;
  /**
   * Folder where marks still waiting at shutdown are kept, one file per stop, for the next start to
   * write (every instance that starts on the folder takes them: writing a mark twice changes nothing).
   */
  journalDir?: string;
}

const JOURNAL_FILE = /^undelivered-usage-marks-[\w.-]+\.json$/;

interface Journal {
  rows: Array<[id: string, row: unknown[]]>;
  ids: string[];
}

const MAX_RETRY_MS = 30_000;

/**
 * The head of a statement marking events not delivered (`events` selects their key rows): their
 * idempotency keys are locked first, which orders the mark against a replay on any instance. A
 * call replayed meanwhile reached a caller and is left as it is (NOT_REPLAYED); the key of one not
 * replayed is let go, so its retry is priced afresh.
 */
export function lockingKeysOf(events: string): string {
  return `WITH keys AS (
  SELECT usage_event_id, replayed_at FROM compute_idempotency_keys WHERE ${events} FOR UPDATE
), freed AS (
  DELETE FROM compute_idempotency_keys WHERE usage_event_id IN (SELECT usage_event_id FROM keys WHERE replayed_at IS NULL)
)
`;
}

/** The events a mark may change: none whose call was replayed. */
export const NOT_REPLAYED = 'NOT IN (SELECT usage_event_id FROM keys WHERE replayed_at IS NOT NULL)';

/** Marks committed events not delivered: not billable, cost 0. */
export const MARK_NOT_DELIVERED = `${lockingKeysOf('usage_event_id = ANY($1)')}UPDATE usage_events SET status = 'error', error_code = 'not_delivered', billable = false, cost = 0
 WHERE id = ANY($1) AND id ${NOT_REPLAYED}`;

/**
 * Usage events whose answer never reached the caller and that must end not billable, kept until
 * the database takes them. Two kinds:
 *
 * - rows whose insert failed with its outcome unknown (the connection broke, or got no answer in
 *   time, after the statement was sent): the caller was told nothing was charged, but the insert
 *   may have committed, or may still commit when a frozen server wakes up. The whole row is
 *   written as not delivered, and a row already there is turned into one; the original insert of
 *   the same id arriving later fails on the primary key. Either order ends not billable.
 * - ids of committed events to mark not delivered, whose mark failed (the database went away
 *   between the insert and the mark).
 *
 * Retried with backoff while the database is unreachable; shutdown makes one last attempt and logs
 * what is left by id.
 */
export class UndeliveredMarks {
  private readonly rows = new Map<string, unknown[]>();
  private readonly ids = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  /** After shutdown's last attempt nothing is scheduled any more (the pool is ending). */
  private closed = false;
  /** Journal files of earlier stops, read back: they go once their marks are written (or kept in this run's file). */
  private journals: string[] = [];
  private readonly retryMs: number;
  private delayMs: number;
  private readonly maxPending: number;

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    private readonly opts: UndeliveredMarksOptions,
  ) {
    this.retryMs = opts.retryMs ?? 1000;
    this.delayMs = this.retryMs;
    this.maxPending = opts.maxPending ?? 20_000;
    this.takeJournals();
  }

  /** Marks an earlier stop could not write, taken up to be written now. */
  private takeJournals(): void {
    const dir = this.opts.journalDir;
    if (!dir) return;
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => JOURNAL_FILE.test(n));
    } catch {
      return; // no folder yet: nothing was left
    }
    for (const name of names) {
      const file = path.join(dir, name);
      try {
        const kept = JSON.parse(readFileSync(file, 'utf8')) as Journal;
        for (const [id, row] of kept.rows) this.rows.set(id, row);
        for (const id of kept.ids) this.ids.add(id);
        this.journals.push(file);
      } catch (err) {
        this.log.error({ err, file }, 'a file of usage events to be marked not delivered could not be read; left in place');
      }
    }
    if (this.pending > 0) {
      this.log.warn({ events: this.pending, files: this.journals }, 'usage events a previous run could not mark not delivered are marked now');
      this.schedule();
    }
  }

  /** Keeps what is still waiting in a file of this stop's own, for the next start; the files read at start are in it. */
  private keepForNextStart(): string | null {
    const dir = this.opts.journalDir;
    if (!dir || this.pending === 0) return null;
    const file = path.join(dir, `undelivered-usage-marks-${Date.now()}-${process.pid}.json`);
    try {
      makeFolder(dir);
      const journal: Journal = { rows: [...this.rows], ids: [...this.ids] };
      // Whole or not at all: a file cut short by a crash would not parse.
      writeFileSync(`${file}.tmp`, JSON.stringify(journal), { mode: 0o600 });
      renameSync(`${file}.tmp`, file);
      this.dropJournals(file);
      return file;
    } catch (err) {
      this.log.error({ err, file }, 'usage events to be marked not delivered could not be kept for the next start');
      return null;
    }
  }

  /** Removes the journal files read at start (their marks are written, or kept in `except`). */
  private dropJournals(except?: string): void {
    for (const file of this.journals) if (file !== except) rmSync(file, { force: true });
    this.journals = [];
  }

  get pending(): number {
    return this.rows.size + this.ids.size;
  }

  /** Rows (already rewritten as not delivered) whose insert may or may not have committed. */
  addRows(rows: Array<[id: string, row: unknown[]]>): void {
    if (this.refuseAfterClose(rows.map(([id]) => id))) return;
    for (const [id, row] of rows) this.rows.set(id, row);
    this.bound();
    this.schedule();
  }

  /** Committed events whose mark could not be written. */
  addIds(ids: string[]): void {
    if (this.refuseAfterClose(ids)) return;
    for (const id of ids) this.ids.add(id);
    this.bound();
    this.schedule();
  }

  /** Waits for a write in progress, makes one more attempt, and logs what is still waiting. */
  async close(): Promise<void> {
    this.closed = true;
    this.cancelTimer();
    await this.writing;
    if (this.pending > 0) await this.write();
    this.cancelTimer();
    if (this.pending > 0) {
      const kept = this.keepForNextStart();
      this.log.error(
        { usageEventIds: [...this.rows.keys(), ...this.ids], ...(kept ? { file: kept } : {}) },
        `usage events whose answer was not delivered could not be marked so before shutdown: ${kept ? 'kept in a file the next start marks them from' : 'check them, they may stand as charged'}`,
      );
    }
  }

  /** After shutdown's last attempt nothing more is written: said at once, by id. */
  private refuseAfterClose(ids: string[]): boolean {
    if (!this.closed) return false;
    this.log.error({ usageEventIds: ids }, 'usage events whose answer was not delivered arrived after shutdown began and are not marked so: check them, they may stand as charged');
    return true;
  }

  private bound(): void {
    const excess = this.pending - this.maxPending;
    if (excess <= 0) return;
    const dropped: string[] = [];
    for (const id of this.rows.keys()) {
      if (dropped.length >= excess) break;
      this.rows.delete(id);
      dropped.push(id);
    }
    for (const id of this.ids) {
      if (dropped.length >= excess) break;
      this.ids.delete(id);
      dropped.push(id);
    }
    this.log.error({ usageEventIds: dropped }, 'too many usage events waiting to be marked not delivered: these are given up and may stand as charged');
  }

  private cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.closed || this.timer || this.writing) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.write();
    }, this.delayMs);
    // Waiting marks never keep the process alive; shutdown makes its own attempt.
    this.timer.unref();
  }

  private write(): Promise<void> {
    this.writing ??= this.attempt().finally(() => {
      this.writing = null;
      if (this.pending > 0) this.schedule();
    });
    return this.writing;
  }

  private async attempt(): Promise<void> {
    const rows = [...this.rows];
    const ids = [...this.ids];
    try {
      if (rows.length > 0) await this.upsert(rows);
      if (ids.length > 0) await this.pool.query(MARK_NOT_DELIVERED, [ids]);
      for (const id of ids) this.ids.delete(id);
      if (this.pending === 0) this.dropJournals();
      this.delayMs = this.retryMs;
      this.log.info({ events: rows.length + ids.length }, 'usage events whose answer was not delivered are now marked so');
    } catch (err) {
      this.delayMs = Math.min(MAX_RETRY_MS, this.delayMs * 2);
      this.log.warn({ err, events: this.pending, retryInMs: this.delayMs }, 'usage events whose answer was not delivered could not be marked so yet; trying again');
    }
  }

  /**
   * Writes rows and forgets them. A row the database refuses (SQLSTATE class 22 or 23) is one the
   * original insert could not have stored either: the group is split in halves until it stands
   * alone, so it is given up and the rows beside it are written. Any other error keeps them all.
   */
  private async upsert(rows: Array<[id: string, row: unknown[]]>): Promise<void> {
    try {
      await this.pool.query(this.opts.upsert, [this.opts.toParam(rows.map(([, row]) => row))]);
    } catch (err) {
      if (!isValueRefusal(err)) throw err;
      if (rows.length > 1) {
        const mid = Math.ceil(rows.length / 2);
        await this.upsert(rows.slice(0, mid));
        await this.upsert(rows.slice(mid));
        return;
      }
      this.log.error({ err, usageEventIds: rows.map(([id]) => id) }, 'a usage event to be marked not delivered was refused by the database; given up');
    }
    for (const [id] of rows) this.rows.delete(id);
  }
}
