import { z } from 'zod';
import { ApiError } from './errors';

/** Query parameters every list endpoint accepts. */
export const listQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
};

export interface CursorPosition {
  /** Sort value of the last row seen (a timestamp in ms, or any string/number sort key). */
  sort: string | number;
  id: string;
}

/**
 * The order of lists paged by creation time with a millisecond cursor. PostgreSQL keeps
 * microseconds; a cursor holding the last row's time cut to milliseconds, compared with the exact
 * column, skipped the rows created later in that same millisecond. Ordering and comparing on the
 * time cut the same way keeps every row on exactly one page.
 */
export const CREATED_MS = "date_trunc('milliseconds', created_at)";

export function encodeCursor(pos: CursorPosition): string {
  return Buffer.from(JSON.stringify([pos.sort, pos.id]), 'utf8').toString('base64url');
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
  throw new ApiError('validation_error', 'The cursor is not one this service issued.', {
    issues: [{ path: 'cursor', reason: 'not a valid cursor' }],
    hint: 'Pass the next_cursor value of the previous page unchanged, or omit cursor for the first page.',
  });
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
 * page boundary skips or repeats rows). Keys must be unique.
 */
export function pageByKey<R, T>(rows: R[], keyOf: (row: R) => string, idOf: (row: R) => string, q: { limit: number; cursor?: string | undefined }, toItem: (row: R) => T): ListEnvelope<T> {
  const after = q.cursor === undefined ? null : String(decodeCursor(q.cursor).sort);
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
