import type { Clock } from '../../../core/clock';
import { secondsUntilUtcMidnight, utcDay, utcDayStart } from '../../../core/daily-quota';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import type { Logger } from '../../../core/logger';
import { PeriodicTask } from '../../../core/periodic-task';

const DAY_MS = 86_400_000;

/** What a counted test run tells its caller: the day's allowance after it. */
export interface TestRunAllowance {
  test_runs_per_day: number;
  remaining: number;
  resets_at: string;
}

export interface CountedTestRun {
  allowance: TestRunAllowance;
  /** Gives the run back: the function never ran (every pricing worker was busy). */
  release: () => Promise<void>;
}

/**
 * The daily allowance of test runs of functions a workspace does not own (built-ins and marketplace
 * functions), FUNCTION_TEST_RUNS_PER_DAY. A test run is neither recorded nor charged, so without it
 * `POST /api/functions/{id}/test` would price for free, without end, with a marketplace function its
 * author is paid per call for. A workspace's own functions are not counted: their author tests them
 * while building them, and pays for their endpoint.
 */
export class TestRunQuota {
  private readonly prune: PeriodicTask;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    log: Logger,
    private readonly perDay: number,
  ) {
    this.prune = new PeriodicTask(
      clock,
      DAY_MS / 4,
      // Yesterday's rows are kept: an instance whose clock is a little behind may still be counting that day.
      () => this.sql.exec(`DELETE FROM function_test_runs WHERE day < $1::date - 1`, [utcDay(this.clock.now())]),
      (err) => log.warn({ err }, 'pruning function test-run counts failed'),
    );
  }

  /** Counts one test run of the workspace today, or refuses it (429 daily_quota_exceeded) when the day's are used up. */
  async count(workspaceId: string): Promise<CountedTestRun> {
    this.prune.poke();
    const now = this.clock.now();
    const day = utcDay(now);
    const resetsAt = new Date(utcDayStart(now).getTime() + DAY_MS).toISOString();
    // One statement counts and checks: concurrent runs on any instance can never pass the limit together.
    const row = await this.sql.one<{ runs: number }>(
      `INSERT INTO function_test_runs (workspace_id, day, runs) VALUES ($1, $2::date, 1)
       ON CONFLICT (workspace_id, day) DO UPDATE SET runs = function_test_runs.runs + 1 WHERE function_test_runs.runs < $3
       RETURNING runs`,
      [workspaceId, day, this.perDay],
    );
    if (!row) {
      const retryAfter = secondsUntilUtcMidnight(now);
      throw new ApiError('daily_quota_exceeded', `Daily test-run quota reached: this workspace may make ${this.perDay} test runs a day of functions it does not own (built-ins and marketplace functions; runs of its own are not counted).`, {
        retry_after: retryAfter,
        limit: { test_runs_per_day: this.perDay, remaining: 0, scope: 'workspace', resets_at: resetsAt },
        hint: `Price with POST /api/compute/price, pinning the function with function_id (recorded and charged as a call), or test again after 00:00 UTC (in ${retryAfter} s).`,
      });
    }
    return {
      allowance: { test_runs_per_day: this.perDay, remaining: Math.max(0, this.perDay - row.runs), resets_at: resetsAt },
      release: async () => {
        await this.sql.exec(`UPDATE function_test_runs SET runs = runs - 1 WHERE workspace_id = $1 AND day = $2::date AND runs > 0`, [workspaceId, day]);
      },
    };
  }
}
