import { z } from 'zod';
import { ApiError } from './errors';

/**
 * 1 to 100 in up to three digits (leading zeros allowed), as one pattern rather than digits then a
 * range check: the OpenAPI document shows the pattern, so it has to say the bounds too.
 */
const PAGE_SIZE = /^(?:0{0,2}[1-9]|0?[1-9][0-9]|100)$/;

/**
 * A page size from 1 to 100, digits only (a number parser would take 0x10 or 1e1). The default is
 * the query string's own type, so the document does not show a number on a string parameter.
 */
export function limitParam(dflt: number) {
  return z.string().regex(PAGE_SIZE, 'a whole number from 1 to 100').default(String(dflt)).transform(Number);
}

/** `cursor`: the next_cursor of the previous page. An empty one is refused like any other value not issued here. */
export const cursorParam = z.string().min(1, 'must be the next_cursor of the previous page; leave cursor out for the first page').max(200).optional();

/** Query parameters every list endpoint accepts. */
export const listQuery = {
  limit: limitParam(20),
  cursor: cursorParam,
};

export interface CursorPosition {
  /** Sort value of the last row seen (a timestamp in ms, or any string/number sort key). */
  sort: string | number;
  id: string;
}

export function encodeCursor(pos: CursorPosition): string {
  return Buffer.from(JSON.stringify([pos.sort, pos.id]), 'utf8').toString('base64url');
}

const TIME_CURSOR = /^(\d{4})-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|([+-])(\d{2})(?::?(\d{2}))?)$/;

/**
 * A cursor whose sort value is a timestamp the database will compare exactly (text with up to
 * microseconds). A forged one that the database's timestamptz cast would fail on is refused here
 * as any bad cursor is: a date that does not exist (02-30, 25:00), year 0000 (PostgreSQL has no
 * year 0; 1 BC is written with BC), or a zone offset it does not take.
 */
export function decodeTimeCursor(cursor: string): { at: string; id: string } {
  const pos = decodeCursor(cursor);
  const m = typeof pos.sort === 'string' ? TIME_CURSOR.exec(pos.sort) : null;
  const offset = m ? offsetMinutes(m) : null;
  if (m && offset !== null && Number(m[1]) >= 1) {
    const at = m[0];
    const t = Date.parse(at.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00'));
    // A real calendar time: what was written survives a round trip to the second.
    if (!Number.isNaN(t) && new Date(t + offset * 60_000).toISOString().slice(0, 19) === at.replace(' ', 'T').slice(0, 19)) return { at, id: pos.id };
  }
  throw badCursor();
}

/**
 * A cursor whose sort value is a position in a list held in memory (the rows before it were
 * served). The service only issues non-negative integers; anything else (a string, a fraction, a
 * number past the safe range) is refused as any bad cursor is, instead of being coerced into some
 * page.
 */
export function decodePositionCursor(cursor: string): number {
  const { sort } = decodeCursor(cursor);
  if (typeof sort === 'number' && Number.isSafeInteger(sort) && sort >= 0) return sort;
  throw badCursor();
}

/**
 * The zone offset of a matched timestamp (+02, -05:30, Z) in minutes east of UTC, or null for one
 * PostgreSQL answers "time zone displacement out of range" to (beyond ±15:59).
 */
function offsetMinutes(m: RegExpExecArray): number | null {
  if (m[2] === undefined) return 0;
  const hours = Number(m[3]);
  const minutes = Number(m[4] ?? 0);
  if (hours > 15 || minutes > 59) return null;
  return (m[2] === '-' ? -1 : 1) * (hours * 60 + minutes);
}

/** 400 for a cursor this service did not issue (a list whose cursor carries more than a time checks the rest with it). */
export function badCursor(): ApiError {
  return new ApiError('validation_error', 'The cursor is not one this service issued.', {
    issues: [{ path: 'cursor', reason: 'not a valid cursor' }],
    hint: 'Pass the next_cursor value of the previous page unchanged, or omit cursor for the first page.',
  });
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 2 && (typeof parsed[0] === 'string' || typeof parsed[0] === 'number') && typeof parsed[1] === 'string') {
      return { sort: parsed[0], id: parsed[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw badCursor();
}

export interface ListEnvelope<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
  limit: number;
}

/**
 * Wraps one page of rows. Callers fetch `limit + 1` rows; the extra row only tells whether there
 * is more and is not returned.
 */
export function listEnvelope<R, T>(rows: R[], limit: number, toItem: (row: R) => T, positionOf: (row: R) => CursorPosition): ListEnvelope<T> {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = page[page.length - 1];
  return {
    object: 'list',
    data: page.map(toItem),
    has_more: hasMore,
    next_cursor: hasMore && last !== undefined ? encodeCursor(positionOf(last)) : null,
    limit,
  };
}

/**
 * One page of an in-memory list, ordered by a string key compared by code point (never
 * localeCompare: the cursor's "after this key" test must order exactly as the sort does, or a
 * page boundary skips or repeats rows). Keys must be unique. `keyShape`: what every key of this
 * list looks like; a cursor whose key does not is refused as not issued here (rather than paging
 * from some made-up place, an empty page as likely as not).
 */
export function pageByKey<R, T>(rows: R[], keyOf: (row: R) => string, idOf: (row: R) => string, q: { limit: number; cursor?: string | undefined }, toItem: (row: R) => T, keyShape?: RegExp): ListEnvelope<T> {
  const sort = q.cursor === undefined ? null : decodeCursor(q.cursor).sort;
  if (sort !== null && keyShape && (typeof sort !== 'string' || !keyShape.test(sort))) throw badCursor();
  const after = sort === null ? null : String(sort);
  const keyed = rows
    .map((row) => ({ row, key: keyOf(row) }))
    .filter((x) => after === null || x.key > after)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return listEnvelope(
    keyed,
    q.limit,
    (x) => toItem(x.row),
    (x) => ({ sort: x.key, id: idOf(x.row) }),
  );
}
