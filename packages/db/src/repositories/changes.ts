import { and, asc, eq, gt, inArray, isNotNull } from 'drizzle-orm';
import type { Database } from '../client.js';
import {
  changeFeedClock,
  postingChanges,
  type PostingChangeType,
  type PostingFieldChange,
} from '../schema.js';

/** One event of the change feed (decision 0020). */
export interface PostingChange {
  /** Commit order: every position up to the feed's end is taken, none twice. */
  position: number;
  type: PostingChangeType;
  postingId: string;
  siteId: string;
  /** By API field name; for `created`, the posting's non-null fields. */
  changes: Record<string, PostingFieldChange>;
  occurredAt: Date;
}

export interface PostingChangesQuery {
  /** Events after this position (0: from the start). */
  after: number;
  limit: number;
  /** Only these sites' postings; an empty list matches nothing. */
  siteIds?: readonly string[] | undefined;
  types?: readonly PostingChangeType[] | undefined;
}

/**
 * The change feed from `after`, in commit order. Only committed events have a position, and a
 * transaction takes its positions at commit, after every earlier committer's: what this returns
 * is a gap-free run of positions, and nothing can later appear before its last one.
 */
export async function readPostingChanges(
  db: Database,
  { after, limit, siteIds, types }: PostingChangesQuery,
): Promise<PostingChange[]> {
  if (siteIds?.length === 0 || types?.length === 0) return [];
  const rows = await db
    .select({
      position: postingChanges.position,
      type: postingChanges.type,
      postingId: postingChanges.postingId,
      siteId: postingChanges.siteId,
      changes: postingChanges.changes,
      occurredAt: postingChanges.occurredAt,
    })
    .from(postingChanges)
    .where(
      and(
        isNotNull(postingChanges.position),
        gt(postingChanges.position, after),
        siteIds ? inArray(postingChanges.siteId, [...siteIds]) : undefined,
        types ? inArray(postingChanges.type, [...types]) : undefined,
      ),
    )
    .orderBy(asc(postingChanges.position))
    .limit(limit);
  return rows.map((row) => ({ ...row, position: row.position! }));
}

/** The feed's last committed position: where a reader starting now begins. */
export async function lastPostingChangePosition(db: Database): Promise<number> {
  const [clock] = await db
    .select({ position: changeFeedClock.position })
    .from(changeFeedClock)
    .where(eq(changeFeedClock.id, true));
  return clock?.position ?? 0;
}

/**
 * Deletes the oldest events of the feed, up to `limit`, that occurred before `before`: in
 * position order, stopping at the first newer one, so that what is kept is always every position
 * from some point on (a reader's cursor is either still in the feed or wholly behind it). Returns
 * how many it deleted; fewer than `limit` means none older is left.
 */
export async function trimPostingChanges(
  db: Database,
  { before, limit }: { before: Date; limit: number },
): Promise<number> {
  const { rows } = await db.$client.query<{ trimmed: number }>({
    name: 'gleaner-trim-posting-changes',
    text: `
      WITH head AS (
        SELECT id, position, occurred_at FROM posting_changes
        WHERE position IS NOT NULL ORDER BY position LIMIT $2
      ), kept AS (
        SELECT min(position) AS position FROM head WHERE occurred_at >= $1
      ), trimmed AS (
        DELETE FROM posting_changes c USING head h
        WHERE c.id = h.id
          AND h.position < coalesce((SELECT position FROM kept), 9223372036854775807)
        RETURNING 1
      )
      SELECT count(*)::int AS trimmed FROM trimmed`,
    values: [before.toISOString(), limit],
  });
  return rows[0]?.trimmed ?? 0;
}

/** The oldest position still in the feed; null when it holds no event. */
export async function firstPostingChangePosition(db: Database): Promise<number | null> {
  const [first] = await db
    .select({ position: postingChanges.position })
    .from(postingChanges)
    .where(isNotNull(postingChanges.position))
    .orderBy(asc(postingChanges.position))
    .limit(1);
  return first?.position ?? null;
}
