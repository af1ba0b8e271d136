import { BoundedMap } from './bounded-map';

/** LOG_REPEAT_INTERVAL_MS's default, for users built without the setting at hand (tests, a store made alone). */
export const DEFAULT_REPEAT_INTERVAL_MS = 30_000;

/**
 * Which log lines of a repeating kind are due. A failure that lasts (Redis down, the database gone) fails every
 * request and every reconnection the same way: one line per kind every `intervalMs`, carrying how many were held back
 * since the last, says as much as thousands. An interval of 0 lets every line through.
 */
export class RepeatedLines {
  private readonly kinds: BoundedMap<string, { loggedAt: number; heldBack: number; heldBackUnits: number }>;

  constructor(
    private readonly intervalMs: number,
    /** Kinds remembered at most (past it the oldest logged is forgotten, and due again): size it to the kinds there can be. */
    maxKinds = 50,
  ) {
    this.kinds = new BoundedMap(maxKinds);
  }

  /**
   * Null when a line of this kind was logged within the interval (it is counted as held back, with its `units`: the
   * events a failed write held, say); else how many lines, and units, were held back since the last one logged (0 the
   * first time), to go into the line, and whether this is the kind's first.
   */
  due(kind: string, now = Date.now(), units = 1): { heldBack: number; heldBackUnits: number; first: boolean } | null {
    const seen = this.kinds.get(kind);
    if (seen && now - seen.loggedAt < this.intervalMs) {
      seen.heldBack += 1;
      seen.heldBackUnits += units;
      return null;
    }
    // Deleted first so the kind is the newest: the bound forgets the one logged longest ago.
    this.kinds.delete(kind);
    this.kinds.set(kind, { loggedAt: now, heldBack: 0, heldBackUnits: 0 });
    return { heldBack: seen?.heldBack ?? 0, heldBackUnits: seen?.heldBackUnits ?? 0, first: seen === undefined };
  }

  /** Whether any kind was seen since the last clear (a failure is going on). */
  get any(): boolean {
    return this.kinds.size > 0;
  }

  /** The failures are over: the next line of any kind is due at once. */
  clear(): void {
    this.kinds.clear();
  }
}
