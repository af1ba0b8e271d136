/**
 * Which log lines of a repeating kind are due. A failure that lasts (Redis down, the database gone) fails every
 * request and every reconnection the same way: one line per kind every `intervalMs`, carrying how many were held back
 * since the last, says as much as thousands. An interval of 0 lets every line through.
 */
export class RepeatedLines {
  private readonly kinds = new Map<string, { loggedAt: number; heldBack: number }>();

  constructor(
    private readonly intervalMs: number,
    /** Kinds remembered at most (reasons are few: refused, a timeout, a DNS failure…); the oldest is forgotten past it. */
    private readonly maxKinds = 50,
  ) {}

  /**
   * Null when a line of this kind was logged within the interval (it is counted as held back); else how many were held
   * back since the last one logged (0 the first time), to go into the line, and whether this is the kind's first.
   */
  due(kind: string, now = Date.now()): { heldBack: number; first: boolean } | null {
    const seen = this.kinds.get(kind);
    if (seen && now - seen.loggedAt < this.intervalMs) {
      seen.heldBack += 1;
      return null;
    }
    this.kinds.delete(kind);
    this.kinds.set(kind, { loggedAt: now, heldBack: 0 });
    if (this.kinds.size > this.maxKinds) this.kinds.delete(this.kinds.keys().next().value as string);
    return { heldBack: seen?.heldBack ?? 0, first: seen === undefined };
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
