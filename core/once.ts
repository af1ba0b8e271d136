/**
 * Something that happens at most once: each listener is called once with its value, also a
 * listener added after it happened.
 */
export class OnceEvent<T> {
  private fired: { value: T } | null = null;
  private readonly listeners: Array<(value: T) => void> = [];

  fire(value: T): void {
    if (this.fired) return;
    this.fired = { value };
    for (const l of this.listeners.splice(0)) l(value);
  }

  on(listener: (value: T) => void): void {
    if (this.fired) listener(this.fired.value);
    else this.listeners.push(listener);
  }
}
