/**
 * One call at a time per Idempotency-Key on this instance: a retry sent while the first call with
 * its key is still in flight (its insert slow, its caller gone) waits for it to end, marks
 * included, and then answers what it recorded or, if it recorded nothing charged, prices afresh.
 * Across instances the key's claim in the usage insert still admits one charge.
 */
export class KeyedTurns {
  private readonly held = new Map<string, Promise<void>>();

  /** Waits (at most `waitMs`) for the key's turn and takes it; call the result to give it back. */
  async take(id: string, waitMs: number): Promise<() => void> {
    const deadline = Date.now() + waitMs;
    while (this.held.has(id)) {
      const left = deadline - Date.now();
      // Waited long enough: go on beside it, the claim keeps the charge single.
      if (left <= 0) return () => undefined;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.held.get(id), new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))]);
      clearTimeout(timer);
    }
    let release!: () => void;
    const turn = new Promise<void>((resolve) => (release = resolve));
    this.held.set(id, turn);
    return () => {
      if (this.held.get(id) === turn) this.held.delete(id);
      release();
    };
  }
}
