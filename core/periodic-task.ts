import type { Clock } from './clock';

/**
 * Work that runs off the caller's path at most once per `everyMs` on this instance, started by the
 * requests that need it done now and then (pruning rows past a TTL); a failure is only reported.
 */
export class PeriodicTask {
  private last = 0;

  constructor(
    private readonly clock: Clock,
    private readonly everyMs: number,
    private readonly task: () => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Starts the task when it has not run for `everyMs`; never waits for it. */
  poke(): void {
    const now = this.clock.now();
    if (now - this.last < this.everyMs) return;
    this.last = now;
    this.task().catch(this.onError);
  }
}
