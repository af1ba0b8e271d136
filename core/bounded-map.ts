/**
 * A Map that holds at most `max` entries: setting a new key past that drops the oldest one set.
 * For in-process caches keyed by what callers send (credentials, key ids), whose size would
 * otherwise grow with every distinct value a caller makes up.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly max: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.max <= 0) return this;
    if (!this.has(key) && this.size >= this.max) {
      const oldest = this.keys().next();
      if (!oldest.done) this.delete(oldest.value);
    }
    return super.set(key, value);
  }
}

/** Expired entries dropped from the oldest end on each set: enough to keep up with the sets, without a timer. */
const SWEEP_PER_SET = 4;

/**
 * A BoundedMap of entries that expire: an expired entry is never returned, and each set drops expired entries from the
 * oldest end (a set moves its key to the newest end). So the cache holds about what was used within its TTL rather than
 * the last `max` keys ever used, each stale until its slot is needed (a verified key's entry is over 1 KB).
 */
export class ExpiringMap<K, V> {
  private readonly entries: BoundedMap<K, { value: V; until: number }>;

  constructor(
    max: number,
    private readonly now: () => number,
  ) {
    this.entries = new BoundedMap(max);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value, or undefined when there is none or it expired (then dropped). */
  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: K, value: V, ttlMs: number): void {
    const now = this.now();
    this.entries.delete(key);
    this.entries.set(key, { value, until: now + ttlMs });
    let swept = 0;
    for (const [k, e] of this.entries) {
      if (swept++ === SWEEP_PER_SET || e.until > now) break;
      this.entries.delete(k);
    }
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Drops every entry (expired or not) for which `drop` holds. */
  deleteWhere(drop: (key: K, value: V) => boolean): void {
    for (const [k, e] of this.entries) if (drop(k, e.value)) this.entries.delete(k);
  }
}
