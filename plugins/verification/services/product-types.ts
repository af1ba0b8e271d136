import type { Pool } from 'pg';
import type { Logger } from '../../../core/logger';
import { evidenceKey as key, foldsAlike } from './observations';

/**
 * Which product types (case-insensitive, per currency) have stored observations, kept in memory so
 * a compute naming a product type the network has never observed costs no database round trip
 * (agents send SKU-like product types by the thousand). Reloaded every `refreshMs`, so other
 * instances' first observations of a product type show within that; this instance's own writes
 * show at once. Above `max` distinct entries the index gives up and every lookup asks the database.
 *
 * The database matches with its own lower(), whose folding depends on its locale and can differ
 * from JavaScript's (Greek final sigma, dotted İ). So each stored name is listed both as
 * JavaScript folds it and as PostgreSQL does, and a name outside printable ASCII is always looked up.
 */
export class ObservedProductTypes {
  private known = new Set<string>();
  /** Until the first load (or past `max`), every product type may have observations. */
  private complete = false;
  private timer: NodeJS.Timeout | null = null;
  /** Local writes made while a load is reading, added again to what it read. */
  private writtenDuringLoad: string[] | null = null;
  /** The load under way: one at a time, so an older read never replaces a newer one. */
  private loading: Promise<void> | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly opts: { refreshMs: number; max: number; maxAgeDays: number },
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  mayHave(productType: string, currency: string): boolean {
    return !this.complete || !foldsAlike(productType) || this.known.has(key(productType, currency));
  }

  /** A local write: known at once. */
  add(productType: string, currency: string): void {
    const k = key(productType, currency);
    this.writtenDuringLoad?.push(k);
    if (this.complete) this.known.add(k);
  }

  load(): Promise<void> {
    this.loading ??= this.read().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async read(): Promise<void> {
    const since = new Date(this.now() - this.opts.maxAgeDays * 86_400_000);
    const written: string[] = [];
    this.writtenDuringLoad = written;
    try {
      const res = await this.pool.query<{ p: string; folded: string; currency: string }>({
        name: 'observed_product_types',
        text: 'SELECT DISTINCT product_type AS p, lower(product_type) AS folded, currency FROM price_observations WHERE observed_at >= $1 LIMIT $2',
        values: [since, this.opts.max + 1],
      });
      if (res.rows.length > this.opts.max) {
        this.complete = false;
        this.known = new Set();
        return;
      }
      this.known = new Set([...res.rows.flatMap((r) => [key(r.p, r.currency), key(r.folded, r.currency)]), ...written]);
      this.complete = true;
    } finally {
      this.writtenDuringLoad = null;
    }
  }

  start(): Promise<void> {
    this.timer = setInterval(() => {
      this.load().catch((err: unknown) => this.log.warn({ err }, 'observed product types could not be reloaded'));
    }, this.opts.refreshMs);
    this.timer.unref();
    return this.load().catch((err: unknown) => this.log.warn({ err }, 'observed product types could not be loaded; every lookup asks the database'));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
