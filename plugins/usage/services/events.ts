import type { Sql } from '../../../core/db/sql';
import { decodeTimeCursor, listEnvelope } from '../../../core/pagination';
import type { ListEnvelope } from '../../../core/pagination';
import type { Classification, EventsQuery, Outcome } from '../schemas';
import { BUILTINS } from '../../../engine';
import { EVENT_COLUMNS, eventColumns, eventView } from './event-view';
import type { EventRow } from './event-view';

/** Collects bound parameters; `add` returns the placeholder ($n) of the value. */
class Binds {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * A call with no credential: the keyless demo, or MCP without a key (compute records these with no
 * key, agent or person and as unverified). Only these can be a workspace's Testers.
 */
const KEYLESS = `(NOT e.caller_verified AND e.caller_key_id IS NULL AND e.caller_person_id IS NULL AND e.channel IN ('demo', 'mcp'))`;

/** The viewer's tester tags that label event `e` (viewer bound as `ws`). */
const matchingTags = (ws: string) => `SELECT t.label FROM usage_tester_tags t
  WHERE t.workspace_id = ${ws}
    AND ((t.user_agent_contains IS NOT NULL AND strpos(lower(e.caller_user_agent), lower(t.user_agent_contains)) > 0)
      OR e.caller_address_hash = ANY (t.address_hashes))`;

export interface OutcomeChange {
  event: EventRow;
  previous: { outcome: Outcome; quality_score: number | null; recorded_at: string } | null;
}

/**
 * The filters of a list, as SQL appended to a branch's WHERE (each starting with AND). A branch that
 * hides the function its events name passes the condition under which it is shown, so a filter does
 * not match what the branch does not show.
 */
type Where = (functionShown: string) => string;

/**
 * Reads of usage events relative to a viewing workspace W, classified at read time:
 * - Mine: events of W (made with W's keys, agent keys, tokens or people);
 * - Testers: keyless calls whose User-Agent or address matches one of W's tester tags;
 * - Others: calls by anyone else to W's own functions: answered by one, or where one was tried and
 *   failed before another answered (or before the call failed on another function).
 * Anything else is invisible to W.
 */
export class UsageEvents {
  constructor(
    private readonly sql: Sql,
    /** Whether pricing_functions exists (the pricing plugin is enabled); without it nobody has Others. */
    private readonly functionsTable: boolean,
  ) {}

  async list(viewer: string, q: EventsQuery): Promise<ListEnvelope<Record<string, unknown>>> {
    const b = new Binds();
    const ws = b.add(viewer);
    const filters: string[] = [];
    if (q.from) filters.push(`e.created_at >= ${b.add(q.from)}`);
    if (q.to) filters.push(`e.created_at < ${b.add(q.to)}`);
    if (q.channel) filters.push(`e.channel = ${b.add(q.channel)}`);
    if (q.operation) filters.push(`e.operation = ${b.add(q.operation)}`);
    if (q.request_id) filters.push(`e.request_id = ${b.add(q.request_id)}`);
    if (q.agent_id) filters.push(`e.caller_agent_id = ${b.add(q.agent_id)}`);
    if (q.key_id) filters.push(`e.caller_key_id = ${b.add(q.key_id)}`);
    if (q.outcome) filters.push(q.outcome === 'none' ? 'e.outcome IS NULL' : `e.outcome = ${b.add(q.outcome)}`);
    if (q.paid_via) filters.push(q.paid_via === 'none' ? 'e.paid_via IS NULL' : `e.paid_via = ${b.add(q.paid_via)}`);
    if (q.cursor) {
      const pos = decodeTimeCursor(q.cursor);
      filters.push(`(e.created_at, e.id) < (${b.add(pos.at)}::timestamptz, ${b.add(pos.id)})`);
    }
    const fixed = filters.map((f) => ` AND ${f}`).join('');
    const named = q.function ? this.namesFunction(b, ws, q.function) : null;
    const where: Where = (shown) => fixed + (named ? ` AND ${named(shown)}` : '');
    const limit = b.add(q.limit + 1);

    // Only mine show request_id and the caller's ids: matching them on testers and others would disclose what they hide.
    const mineOnly = Boolean(q.request_id || q.agent_id || q.key_id);
    const classification = mineOnly ? (q.classification ?? 'mine') : q.classification;
    const text = mineOnly && classification !== 'mine' ? null : this.visibleTo(b, ws, where, limit, classification);
    const rows = text === null ? [] : await this.sql.many<EventRow>(text, b.values);
    return listEnvelope(rows, q.limit, eventView, (r) => ({ sort: r.created_key, id: r.id }));
  }

  /**
   * The `function` filter: the event names the function (id, or name as recorded) where it is shown,
   * or the call tried it and it failed (failed_function_ids). Failed functions are recorded by id
   * only, so a name is resolved against the functions the viewer may name: built-ins, its own, and
   * other workspaces' public active ones (naming another's private function matches nothing).
   */
  private namesFunction(b: Binds, ws: string, value: string): (shown: string) => string {
    const f = b.add(value);
    const builtin = BUILTINS.find((x) => x.id === value || x.name.toLowerCase() === value.toLowerCase());
    let failed = 'false';
    if (builtin) failed = `e.failed_function_ids @> jsonb_build_array(${b.add(builtin.id)}::text)`;
    else if (this.functionsTable) {
      failed = `e.failed_function_ids @> ANY (ARRAY(SELECT jsonb_build_array(p.id) FROM pricing_functions p
        WHERE (p.id = ${f} OR lower(p.name) = lower(${f})) AND (p.workspace_id = ${ws} OR (p.is_public AND p.status = 'active'))))`;
    }
    return (shown) => `((${shown} AND (e.function_id = ${f} OR lower(e.function_name) = lower(${f}))) OR ${failed})`;
  }

  /**
   * The events workspace `ws` (a bound parameter) sees, classified, filtered by `where`, newest first,
   * at most `limit` (a bound parameter or literal); null when no classification is wanted.
   */
  private visibleTo(b: Binds, ws: string, where: Where, limit: string, classification?: Classification): string | null {
    const tail = `ORDER BY e.created_at DESC, e.id DESC LIMIT ${limit}`;
    const wanted = (c: Classification) => classification === undefined || classification === c;
    const branches: string[] = [];
    if (wanted('mine')) {
      branches.push(`SELECT ${EVENT_COLUMNS}, 'mine'::text AS viewer_class, NULL::text AS tester_label
        FROM usage_events e WHERE e.workspace_id = ${ws}${where('true')} ${tail}`);
    }
    if (wanted('testers')) {
      branches.push(`SELECT ${EVENT_COLUMNS}, 'testers'::text AS viewer_class, tag.label AS tester_label
        FROM usage_events e CROSS JOIN LATERAL (${matchingTags(ws)} ORDER BY t.position LIMIT 1) tag
        WHERE e.workspace_id <> ${ws} AND ${KEYLESS}${where('true')} ${tail}`);
    }
    if (wanted('others') && this.functionsTable) {
      const notTesters = `NOT (${KEYLESS} AND EXISTS (${matchingTags(ws)}))`;
      // Newest first per function of ws (an index scan of usage_events_function_idx each, at most
      // `limit` rows), then merged: bounded by functions × limit however many events they have. As
      // `function_id IN (SELECT ...)` the planner read the whole table for workspaces with many functions.
      branches.push(`SELECT o.* FROM pricing_functions f CROSS JOIN LATERAL (
          SELECT ${EVENT_COLUMNS}, 'others'::text AS viewer_class, NULL::text AS tester_label
          FROM usage_events e
          WHERE e.function_id = f.id
            AND e.workspace_id <> ${ws}
            AND ${notTesters}${where('true')} ${tail}) o
        WHERE f.workspace_id = ${ws}
        ORDER BY o.created_at DESC, o.id DESC LIMIT ${limit}`);
      // Calls where one of ws's functions was tried and failed, and the event names another (the
      // branch above has the rest). The partial GIN index of failed_function_ids serves it.
      const shown = this.othersMayName(b, ws);
      branches.push(`SELECT ${eventColumns(shown)}, 'others'::text AS viewer_class, NULL::text AS tester_label
        FROM usage_events e
        WHERE e.failed_function_ids <> '[]'::jsonb
          AND e.failed_function_ids @> ANY (ARRAY(SELECT jsonb_build_array(f.id) FROM pricing_functions f WHERE f.workspace_id = ${ws}))
          AND NOT EXISTS (SELECT 1 FROM pricing_functions f WHERE f.id = e.function_id AND f.workspace_id = ${ws})
          AND e.workspace_id <> ${ws}
          AND ${notTesters}${where(shown)} ${tail}`);
    }
    if (branches.length === 0) return null;
    return `SELECT * FROM (${branches.map((s) => `(${s})`).join(' UNION ALL ')}) u ORDER BY u.created_at DESC, u.id DESC LIMIT ${limit}`;
  }

  /**
   * Whether `ws` may see the function an event of another workspace names: a built-in, or a public
   * active function (what any workspace may call). Another's private function — a caller's own
   * fallback after ws's function failed — is not disclosed to ws (its event shows no function).
   */
  private othersMayName(b: Binds, ws: string): string {
    const builtins = b.add(BUILTINS.map((x) => x.id));
    return `(e.function_id IS NULL OR e.function_id = ANY (${builtins}::text[])
      OR EXISTS (SELECT 1 FROM pricing_functions p WHERE p.id = e.function_id AND (p.workspace_id = ${ws} OR (p.is_public AND p.status = 'active'))))`;
  }

  /** One event the viewer sees in its list (Mine, Testers or Others, shown alike); null for anything else. */
  async visible(viewer: string, id: string): Promise<EventRow | null> {
    const b = new Binds();
    const ws = b.add(viewer);
    const byId = ` AND e.id = ${b.add(id)}`;
    const text = this.visibleTo(b, ws, () => byId, '1');
    return text === null ? null : this.sql.one<EventRow>(text, b.values);
  }

  /** The workspace that made event `id` (whose own it is), or null for an unknown id. */
  async workspaceOf(id: string): Promise<string | null> {
    return (await this.sql.one<{ workspace_id: string }>('SELECT workspace_id FROM usage_events WHERE id = $1', [id]))?.workspace_id ?? null;
  }

  /**
   * Records what became of a call; only the workspace that made it may. The last report wins:
   * outcome, quality score (absent → none) and the time are replaced, and the replaced report is
   * returned.
   */
  async recordOutcome(viewer: string, id: string, outcome: Outcome, qualityScore: number | null, at: Date): Promise<OutcomeChange | null> {
    return this.sql.tx(async (t) => {
      const before = await this.sql.one<{ outcome: Outcome | null; quality_score: number | null; outcome_at: Date | null }>(
        'SELECT outcome, quality_score, outcome_at FROM usage_events WHERE id = $1 AND workspace_id = $2 FOR UPDATE',
        [id, viewer],
        t,
      );
      if (!before) return null;
      await this.sql.exec('UPDATE usage_events SET outcome = $3, quality_score = $4, outcome_at = $5 WHERE id = $1 AND workspace_id = $2', [id, viewer, outcome, qualityScore, at], t);
      const event = await this.sql.one<EventRow>(`SELECT ${EVENT_COLUMNS}, 'mine'::text AS viewer_class, NULL::text AS tester_label FROM usage_events e WHERE e.id = $1`, [id], t);
      if (!event) return null;
      const previous = before.outcome && before.outcome_at ? { outcome: before.outcome, quality_score: before.quality_score, recorded_at: before.outcome_at.toISOString() } : null;
      return { event, previous };
    });
  }
}
