import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import type { EventBus } from '../../../core/events';
import type { KvStore, Unsubscribe } from '../../../core/kv';
import { Serial } from '../../../core/serial';
import seed from '../changelog.json';

declare module '../../../core/events' {
  interface DomainEvents {
    'changelog.published': { entries: Array<{ id: string; title: string; link: string; audience: string[] }> };
  }
}

export interface ChangelogEntry {
  id: string;
  date: string;
  title: string;
  summary: string;
  /** Absolute link (relative links in the seed are resolved against the public URL). */
  link: string;
  audience: string[];
}

/** An entry as held in process: its link as stored, its publication time parsed once. */
interface Held extends ChangelogEntry {
  publishedMs: number;
}

interface Row {
  id: string;
  published_at: Date;
  title: string;
  summary: string;
  link: string;
  audience: string[];
}

const CHANNEL = 'discovery:changelog-changed';

/**
 * Changelog entries, kept in the database and seeded from plugins/discovery/changelog.json at
 * start (new ids are inserted, existing ones updated). Read from an in-process copy refreshed on
 * change, so feeds and notices never query per request.
 */
export class Changelog {
  private entries: Held[] = [];
  private unsubscribe: Unsubscribe | null = null;
  /** The reloads, one after another in the order asked. */
  private readonly reloads = new Serial();
  /** The last agent signature made: reused while the entries held and the span of them it covers stay the same. */
  private agentSignature: { entries: Held[]; first: number; last: number; signature: string } | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly kv: KvStore,
    private readonly events: EventBus,
    private readonly clock: Clock,
    private readonly publicUrl: () => string,
  ) {}

  async start(): Promise<void> {
    const inserted: ChangelogEntry[] = [];
    for (const e of seed as Array<Omit<ChangelogEntry, 'date'> & { date: string }>) {
      const row = await this.sql.one<{ inserted: boolean }>(
        `INSERT INTO changelog_entries (id, published_at, title, summary, link, audience) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (id) DO UPDATE SET published_at = EXCLUDED.published_at, title = EXCLUDED.title, summary = EXCLUDED.summary, link = EXCLUDED.link, audience = EXCLUDED.audience
         RETURNING (xmax = 0) AS inserted`,
        [e.id, e.date, e.title, e.summary, e.link, e.audience],
      );
      if (row?.inserted) inserted.push(e);
    }
    await this.reload();
    this.unsubscribe = await this.kv.subscribe(CHANNEL, () => this.reload(), () => this.reload());
    if (inserted.length > 0) await this.events.emit('changelog.published', { entries: inserted.map((e) => ({ id: e.id, title: e.title, link: this.absolute(e.link), audience: e.audience })) });
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  private absolute(link: string): string {
    return link.startsWith('/') ? `${this.publicUrl()}${link}` : link;
  }

  reload(): Promise<void> {
    return this.reloads.run(() => this.readAll());
  }

  private async readAll(): Promise<void> {
    const rows = await this.sql.many<Row>('SELECT * FROM changelog_entries ORDER BY published_at DESC, id DESC');
    this.entries = rows.map((r) => {
      const publishedMs = new Date(r.published_at).getTime();
      return { id: r.id, date: new Date(publishedMs).toISOString(), publishedMs, title: r.title, summary: r.summary, link: r.link, audience: r.audience };
    });
  }

  /** Publishes a new entry (operators and tests); every instance reloads. */
  async publish(e: ChangelogEntry): Promise<void> {
    await this.sql.exec('INSERT INTO changelog_entries (id, published_at, title, summary, link, audience) VALUES ($1, $2, $3, $4, $5, $6)', [e.id, e.date, e.title, e.summary, e.link, e.audience]);
    await this.reload();
    await this.kv.publish(CHANNEL, e.id);
    await this.events.emit('changelog.published', { entries: [{ id: e.id, title: e.title, link: this.absolute(e.link), audience: e.audience }] });
  }

  private view(e: Held): ChangelogEntry {
    return { id: e.id, date: e.date, title: e.title, summary: e.summary, link: this.absolute(e.link), audience: e.audience };
  }

  /**
   * Where the published entries (not future-dated) from `sinceMs` on lie in `entries`: indexes of the first and last,
   * -1 for none. Entries are newest first, so they are one run; found without allocating (notices ask per response).
   */
  private span(sinceMs: number): { first: number; last: number } {
    const now = this.clock.now();
    let first = -1;
    let last = -1;
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i] as Held;
      if (e.publishedMs > now) continue;
      if (e.publishedMs < sinceMs) break; // newest first: the rest are older
      if (first < 0) first = i;
      last = i;
    }
    return { first, last };
  }

  /** Published entries from `sinceMs` on, newest first, optionally for one audience. */
  private published(sinceMs: number, audience?: string): ChangelogEntry[] {
    const { first, last } = this.span(sinceMs);
    if (first < 0) return [];
    return this.entries
      .slice(first, last + 1)
      .filter((e) => !audience || e.audience.includes(audience))
      .map((e) => this.view(e));
  }

  /** Newest first; links made absolute. */
  all(): ChangelogEntry[] {
    return this.published(-Infinity);
  }

  forAgents(): ChangelogEntry[] {
    return this.published(-Infinity, 'agents');
  }

  /**
   * The ids of the agent entries `agentEntriesSince` would return, as one string: the same string object while they stay
   * the same. Notices compare it on every keyed response, so it is found without building the entries' views.
   */
  agentSignatureSince(sinceMs: number): string {
    const { first, last } = this.span(sinceMs);
    const memo = this.agentSignature;
    if (memo && memo.entries === this.entries && memo.first === first && memo.last === last) return memo.signature;
    const span = first < 0 ? [] : this.entries.slice(first, last + 1);
    const signature = span.filter((e) => e.audience.includes('agents')).map((e) => e.id).join('\n');
    this.agentSignature = { entries: this.entries, first, last, signature };
    return signature;
  }

  /** Agent entries published since `sinceMs` (response notices, on the hot path: only those are built). */
  agentEntriesSince(sinceMs: number): ChangelogEntry[] {
    return this.published(sinceMs, 'agents');
  }

  newestAgentEntryDate(): string | null {
    return this.forAgents()[0]?.date ?? null;
  }
}
