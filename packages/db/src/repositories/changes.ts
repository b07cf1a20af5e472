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
