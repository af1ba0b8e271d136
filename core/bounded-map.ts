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

/** Weights for an ExpiringMap whose entries differ in size: the sum of its entries' weights stays at most `max`. */
export interface EntryWeights<V> {
  max: number;
  /** An entry's weight (a whole number, at least 1 counts it): an entry heavier than `max` alone is not kept. */
  of: (value: V) => number;
}

/**
 * A bounded map of entries that expire: an expired entry is never returned, and each set drops expired entries from the
 * oldest end (a set moves its key to the newest end). So the cache holds about what was used within its TTL rather than
 * the last `max` keys ever used, each stale until its slot is needed (a verified key's entry is over 1 KB). With
 * `weights`, the oldest entries are also dropped while the entries' weights add up to more than their `max`: for values
 * whose size varies a thousandfold (the observations read for one product type).
 */
export class ExpiringMap<K, V> {
  private readonly entries = new Map<K, { value: V; until: number; weight: number }>();
  private weight = 0;

  constructor(
    private readonly max: number,
    private readonly now: () => number,
    private readonly weights?: EntryWeights<V>,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The sum of the entries' weights (0 without weights). */
  get totalWeight(): number {
    return this.weight;
  }

  /** The value, or undefined when there is none or it expired (then dropped). */
  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: K, value: V, ttlMs: number): void {
    const now = this.now();
    this.delete(key);
    const weight = this.weights ? this.weights.of(value) : 0;
    if (this.max <= 0 || (this.weights && weight > this.weights.max)) return;
    this.entries.set(key, { value, until: now + ttlMs, weight });
    this.weight += weight;
    let swept = 0;
    for (const [k, e] of this.entries) {
      const over = this.entries.size > this.max || (this.weights !== undefined && this.weight > this.weights.max);
      if (!over && (swept++ === SWEEP_PER_SET || e.until > now)) break;
      this.delete(k);
    }
  }

  delete(key: K): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    this.entries.delete(key);
    this.weight -= e.weight;
  }

  clear(): void {
    this.entries.clear();
    this.weight = 0;
  }

  /** Drops every entry (expired or not) for which `drop` holds. */
  deleteWhere(drop: (key: K, value: V) => boolean): void {
    for (const [k, e] of this.entries) if (drop(k, e.value)) this.delete(k);
  }
}
