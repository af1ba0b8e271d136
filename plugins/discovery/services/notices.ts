import type { Config } from '../../../config';
import { BoundedMap } from '../../../core/bounded-map';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import type { ResponseDecorator } from '../../../core/hooks';
import type { Reply, RequestContext, RouteSpec } from '../../../core/http/route';
import type { Changelog, ChangelogEntry } from './changelog';

/** Routes whose responses carry notices (SPEC: Response-level notices). */
export const NOTICE_ROUTES = new Set(['compute.price', 'compute.batch', 'router.price', 'me.read', 'functions.list']);

const DAY_MS = 86_400_000;

export interface Notice {
  id: string;
  date: string;
  title: string;
  summary: string;
  link: string;
}

/**
 * Agent changelog entries shown on responses to API keys: up to `perResponse` from the last
 * `windowDays` not yet shown to that key, newest first, each once; a key never shown any gets only
 * the newest, and only when younger than `firstContactMaxAgeDays`. "Shown" is stored in the
 * database (one row per key and entry, claimed atomically), so it holds across instances; entries
 * a key has seen are remembered in process, so a key costs a query only when there is news for it.
 */
export class Notices implements ResponseDecorator {
  readonly name = 'notices';
  /**
   * Keys that have seen every recent entry, with the signature of those entries (one shared string, so an entry costs
   * the key alone: a set of entry ids per key cost about 820 bytes). Bounded: a key dropped from it costs one query when
   * next seen, and keys are made without limit over time.
   */
  private readonly seen: BoundedMap<string, string>;

  constructor(
    private readonly sql: Sql,
    private readonly changelog: Changelog,
    private readonly clock: Clock,
    private readonly config: Config,
  ) {
    this.seen = new BoundedMap(config.identity.credentialCacheMaxEntries);
  }

  appliesTo(route: RouteSpec): boolean {
    return NOTICE_ROUTES.has(route.id);
  }

  async decorate(ctx: RequestContext, reply: Reply): Promise<void> {
    // Express serves HEAD with the GET handler but sends no body: notices claimed there would be
    // spent unseen, so a HEAD neither claims nor counts any.
    if (ctx.req.method === 'HEAD') return;
    const p = ctx.principal;
    if (!p || p.kind !== 'api_key' || !p.keyId || !reply.body || typeof reply.body !== 'object') return;
    const notices = await this.forKey(p.keyId);
    (reply.body as Record<string, unknown>).notices = notices;
    reply.headers = { ...reply.headers, 'X-Service-Notices': String(notices.length) };
  }

  /** Claims and returns the notices due to a key now. */
  async forKey(keyId: string): Promise<Notice[]> {
    const { perResponse, windowDays, firstContactMaxAgeDays } = this.config.limits.notices;
    const now = this.clock.now();
    const since = now - windowDays * DAY_MS;
    const signature = this.changelog.agentSignatureSince(since);
    if (signature === '' || perResponse === 0) return [];
    if (this.seen.get(keyId) === signature) return [];
    const recent = this.changelog.agentEntriesSince(since);
    if (recent.length === 0) return [];

    const shown = await this.sql.many<{ entry_id: string }>('SELECT entry_id FROM notice_deliveries WHERE key_id = $1', [keyId]);
    const shownIds = new Set(shown.map((r) => r.entry_id));
    let due: ChangelogEntry[];
    if (shownIds.size === 0) {
      const newest = recent[0] as ChangelogEntry;
      due = now - Date.parse(newest.date) < firstContactMaxAgeDays * DAY_MS ? [newest] : [];
      // Older entries stay unseen by a new key: they are marked so a later request does not show them.
      for (const e of recent) if (e !== newest || due.length === 0) shownIds.add(e.id);
      await this.claim(keyId, recent.filter((e) => e !== due[0]).map((e) => e.id));
    } else {
      due = recent.filter((e) => !shownIds.has(e.id)).slice(0, perResponse);
    }
    const claimed = due.length ? await this.claim(keyId, due.map((e) => e.id)) : new Set<string>();
    const mine = due.filter((e) => claimed.has(e.id));
    // Remembered only when every recent entry is accounted for: one past perResponse, or claimed by another instance
    // just now, is read again next time.
    if (recent.every((e) => shownIds.has(e.id) || claimed.has(e.id))) this.seen.set(keyId, signature);
    else this.seen.delete(keyId);
    return mine.map((e) => ({ id: e.id, date: e.date, title: e.title, summary: e.summary, link: e.link }));
  }

  /** Inserts deliveries; returns the entry ids this call claimed (another instance may have won some). */
  private async claim(keyId: string, entryIds: string[]): Promise<Set<string>> {
    if (entryIds.length === 0) return new Set();
    const rows = await this.sql.many<{ entry_id: string }>(
      `INSERT INTO notice_deliveries (key_id, entry_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING entry_id`,
      [keyId, entryIds],
    );
    return new Set(rows.map((r) => r.entry_id));
  }
}
