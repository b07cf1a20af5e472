import { ClassifiedError } from '@gleaner/errors';
import { sql, type AnyColumn, type SQL } from 'drizzle-orm';

/**
 * Keyset paging, newest first: a page's cursor is its last row's (timestamp in microseconds,
 * id), opaque to clients (base64url). Stable under concurrent inserts, and each page is an
 * index range scan rather than an OFFSET.
 */

export class CursorInvalidError extends ClassifiedError {
  constructor() {
    super('cursor is not one this API issued', 'DB_CURSOR_INVALID', 'permanent');
  }
}

export interface CursorPosition {
  micros: string;
  id: string;
}

/** A timestamp column as whole microseconds since the epoch (what a cursor holds). */
export const microsOf = (column: AnyColumn): SQL<string> =>
  sql<string>`floor(extract(epoch from ${column}) * 1000000)::bigint`;

export function encodeCursor({ micros, id }: CursorPosition): string {
  return Buffer.from(`${micros}_${id}`).toString('base64url');
}

export function decodeCursor(cursor: string): CursorPosition {
  const raw = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(\d{1,19})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(
    raw,
  );
  // Both halves are cast in SQL (`::bigint`, `::uuid`): a value either cast refuses would fail
  // the statement with a 500 instead of answering 400. 20 digits overflow bigint, and so do some
  // of 19 (up to 9999999999999999999), hence the bound.
  if (!match || BigInt(match[1]!) > 9_223_372_036_854_775_807n) throw new CursorInvalidError();
  return { micros: match[1]!, id: match[2]! };
}

/**
 * `(timestamp, id) < cursor`: the rows after the cursor's, newest first. Compared on the column
 * itself (Postgres keeps microseconds, so the conversion back is exact), so that an index on it
 * serves both the filter and the order.
 */
export function afterCursor(timestamp: AnyColumn, id: AnyColumn, cursor: string): SQL {
  const position = decodeCursor(cursor);
  return sql`(${timestamp}, ${id}) < (timestamptz 'epoch' + ${position.micros}::bigint * interval '1 microsecond', ${position.id}::uuid)`;
}

/** The page of `rows` (fetched with `limit + 1`) and the cursor of the next one, if any. */
export function pageOf<T>(
  rows: readonly T[],
  limit: number,
  positionOf: (row: T) => CursorPosition,
): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    page,
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(positionOf(last)) : null,
  };
}
