import type { Clock } from '../../../core/clock';
import { secondsUntilUtcMidnight, utcDay, utcDayStart } from '../../../core/daily-quota';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { incrFromRecord, uncount } from '../../../core/kv';
import type { KvStore } from '../../../core/kv';
import type { Logger } from '../../../core/logger';
import { PeriodicTask } from '../../../core/periodic-task';

const DAY_MS = 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Rows one DELETE removes, and DELETEs one run makes: each statement stays short, and a run ends (the next goes on). */
export const PRUNE_BATCH = 1000;
export const PRUNE_MAX_BATCHES = 100;

/**
 * What bounds the stored price observations: a daily quota of contributions per workspace
 * (OBSERVATIONS_PER_WORKSPACE_PER_DAY) and a retention (OBSERVATIONS_RETENTION_DAYS, never shorter
 * than VERIFY_MAX_AGE_DAYS) applied by a periodic prune in bounded batches.
 */
export class ObservationLimits {
  private readonly prune: PeriodicTask;

  constructor(
    private readonly sql: Sql,
    private readonly kv: KvStore,
    private readonly clock: Clock,
    log: Logger,
    private readonly perDay: number,
    private readonly retentionDays: number,
  ) {
    this.prune = new PeriodicTask(
      clock,
      PRUNE_EVERY_MS,
      () => this.pruneNow(),
      (err) => log.warn({ err }, 'pruning price observations failed'),
    );
  }

  /**
   * Counts `n` contributions of the workspace against today's quota, or refuses them all (429). Returns what takes the
   * count back when they are not stored after all.
   */
  async admit(workspaceId: string, n: number): Promise<() => Promise<void>> {
    const now = this.clock.now();
    const dayStart = utcDayStart(now);
    const key = `obs:day:${workspaceId}:${utcDay(now)}`;
    const used = await incrFromRecord(this.kv, key, n, 2 * DAY_MS, async () => {
      const row = await this.sql.one<{ n: number }>(`SELECT count(*)::int AS n FROM price_observations WHERE workspace_id = $1 AND origin = 'contribution' AND created_at >= $2`, [
        workspaceId,
        dayStart,
      ]);
      return row?.n ?? 0;
    });
    const undo = () => uncount(this.kv, key, n);
    if (used > this.perDay) {
      await undo();
      // Read after the undo: other requests refused at the same moment have taken theirs back too, or soon will.
      const counted = Number((await this.kv.get(key)) ?? used - n);
      const left = Math.max(0, this.perDay - counted);
      const retryAfter = secondsUntilUtcMidnight(now);
      throw new ApiError('daily_quota_exceeded', `Daily quota reached: this workspace may contribute ${this.perDay} price observations per day, and this request's ${n} would pass it (${left} left today).`, {
        retry_after: retryAfter,
        limit: { observations_per_day: this.perDay, remaining: left, scope: 'workspace', resets_at: new Date(dayStart.getTime() + DAY_MS).toISOString() },
        hint: left > 0 ? `Send at most ${left} observation${left === 1 ? '' : 's'} now, or the rest after 00:00 UTC (in ${retryAfter} s); nothing of this request was stored.` : `The quota resets at 00:00 UTC (in ${retryAfter} s); nothing of this request was stored.`,
      });
    }
    return undo;
  }

  /** Starts a prune when this instance has not run one for an hour; never waits for it. */
  poke(): void {
    this.prune.poke();
  }

  /** Deletes observations observed more than the retention ago, PRUNE_BATCH at a time; returns how many. */
  async pruneNow(): Promise<number> {
    let total = 0;
    for (let i = 0; i < PRUNE_MAX_BATCHES; i++) {
      const n = await this.sql.exec(
        `DELETE FROM price_observations WHERE id IN (
           SELECT id FROM price_observations WHERE observed_at < now() - make_interval(days => $1::int) LIMIT $2::int)`,
        [this.retentionDays, PRUNE_BATCH],
      );
      total += n;
      if (n < PRUNE_BATCH) break;
    }
    return total;
  }
}
