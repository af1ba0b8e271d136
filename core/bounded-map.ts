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
