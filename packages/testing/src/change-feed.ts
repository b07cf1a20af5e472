import {
  postingFieldKeys,
  readPostingChanges,
  snakeCase,
  type Database,
  type PostingChange,
} from '@gleaner/db';

export interface ChangeFeedVerdict {
  /** Events read, from the start of the feed. */
  events: number;
  byType: Record<string, number>;
  /** Postings the feed was checked against. */
  postings: number;
  failures: string[];
}

/** At most this many failures are listed; the rest are counted. */
const MAX_LISTED = 20;

/**
 * Reads the whole change feed (decision 0020) a page at a time, as a consumer would, and checks
 * it against the postings table: positions 1, 2, 3 … with no gap or repeat; exactly one `created`
 * per posting, before any other event of it; every `updated` value's `previous` is the value the
 * feed last gave that field; and, folded, the feed gives each posting's current fields and
 * whether it is closed. Checks every posting in the database; call it when writers have stopped.
 */
export async function verifyChangeFeed(
  db: Database,
  { pageSize = 1_000 }: { pageSize?: number } = {},
): Promise<ChangeFeedVerdict> {
  const failures: string[] = [];
  const fail = (message: string) => failures.push(message);
  const folded = new Map<string, { fields: Record<string, unknown>; closed: boolean }>();
  const byType: Record<string, number> = {};
  let expected = 1;
  let events = 0;
  for (;;) {
    const page: PostingChange[] = await readPostingChanges(db, {
      after: expected - 1,
      limit: pageSize,
    });
    if (page.length === 0) break;
    for (const event of page) {
      events += 1;
      byType[event.type] = (byType[event.type] ?? 0) + 1;
      if (event.position !== expected) {
        fail(`position ${event.position} where ${expected} was next`);
      }
      expected = event.position + 1;
      const state = folded.get(event.postingId);
      if (event.type === 'created') {
        if (state) fail(`posting ${event.postingId} created twice (again at ${event.position})`);
        const fields: Record<string, unknown> = {};
        for (const [field, change] of Object.entries(event.changes)) fields[field] = change.current;
        folded.set(event.postingId, { fields, closed: false });
        continue;
      }
      if (!state) {
        fail(`${event.type} of posting ${event.postingId} at ${event.position} before its created`);
        continue;
      }
      for (const [field, change] of Object.entries(event.changes)) {
        const before = state.fields[field] ?? null;
        if (JSON.stringify(change.previous) !== JSON.stringify(before)) {
          fail(
            `${field} of posting ${event.postingId} at ${event.position}: previous ${JSON.stringify(change.previous)}, but the feed last said ${JSON.stringify(before)}`,
          );
        }
        state.fields[field] = change.current;
      }
      if (event.type === 'closed') {
        if (state.closed)
          fail(`posting ${event.postingId} closed twice (again at ${event.position})`);
        state.closed = true;
      } else if (event.type === 'reopened') {
        if (!state.closed)
          fail(`posting ${event.postingId} reopened at ${event.position} while open`);
        state.closed = false;
      }
    }
  }

  const columns = postingFieldKeys.map((key) => snakeCase(key));
  const { rows } = await db.$client.query<
    { id: string; closed: boolean } & Record<string, unknown>
  >(`SELECT id, status = 'expired' AS closed, ${columns.join(', ')} FROM postings`);
  for (const row of rows) {
    const state = folded.get(row.id);
    if (!state) {
      fail(`posting ${row.id} has no created event`);
      continue;
    }
    folded.delete(row.id);
    if (state.closed !== row.closed) {
      fail(`posting ${row.id} is ${row.closed ? 'closed' : 'open'}, the feed says otherwise`);
    }
    for (const field of columns) {
      const value = row[field];
      const told = state.fields[field] ?? null;
      if (JSON.stringify(told) !== JSON.stringify(value)) {
        fail(
          `${field} of posting ${row.id} is ${JSON.stringify(value).slice(0, 80)}, the feed says ${JSON.stringify(told).slice(0, 80)}`,
        );
      }
    }
  }
  // Postings of deleted sites go with their site; their events stay. Any other event is of a
  // posting that never existed.
  const { rows: gone } = await db.$client.query<{ id: string }>(
    `SELECT DISTINCT c.posting_id AS id FROM posting_changes c
      WHERE NOT EXISTS (SELECT 1 FROM site_schedules s WHERE s.id = c.site_id)`,
  );
  for (const { id } of gone) folded.delete(id);
  for (const id of folded.keys()) fail(`the feed tells of posting ${id}, which is not in postings`);

  const listed = failures.slice(0, MAX_LISTED);
  if (failures.length > MAX_LISTED) listed.push(`… and ${failures.length - MAX_LISTED} more`);
  return { events, byType, postings: rows.length, failures: listed };
}
