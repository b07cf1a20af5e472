import { and, desc, asc, eq, gt, gte, inArray, isNull, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../client.js';
import { afterCursor, CursorInvalidError, microsOf, pageOf } from './cursor.js';
import { postings, siteSchedules, type PostingRow, type PostingStatus } from '../schema.js';

/**
 * The read side of postings at scale: lists that select only the columns asked for, a run's
 * postings paged by id, and ranked full-text search over the stored `search` vector. Every query
 * here has an index behind it (test/posting-queries.test.ts runs them under EXPLAIN).
 */

/** A posting column, by its property name on `PostingRow`. */
export type PostingColumn = keyof PostingRow;

/** Some columns of a posting: those a list asked for, and always its id. */
export type PostingSlice = Partial<PostingRow> & { id: string };

const columns = postings as unknown as Record<PostingColumn, (typeof postings)['id']>;

function selection(wanted: readonly PostingColumn[]) {
  const out: { id: (typeof postings)['id'] } & Record<string, (typeof postings)['id']> = {
    id: postings.id,
  };
  for (const column of wanted) {
    if (column === 'search') continue;
    out[column] = columns[column];
  }
  return out;
}

export interface PostingFilters {
  /** Postings of these sites (none: no posting). */
  siteIds?: readonly string[];
  status?: PostingStatus;
  isRemote?: boolean;
  updatedSince?: Date;
  /** Also postings that are the same job as another (`duplicate_of`); left out by default. */
  includeDuplicates?: boolean;
}

function filterConditions(filters: PostingFilters): SQL[] {
  const conditions: SQL[] = [];
  // One site as `=`, so the planner reads the site's own index range in the list's order.
  if (filters.siteIds?.length === 1) conditions.push(eq(postings.siteId, filters.siteIds[0]!));
  else if (filters.siteIds) conditions.push(inArray(postings.siteId, [...filters.siteIds]));
  if (filters.status) conditions.push(eq(postings.status, filters.status));
  if (filters.isRemote !== undefined) conditions.push(eq(postings.isRemote, filters.isRemote));
  if (filters.updatedSince) conditions.push(gte(postings.updatedAt, filters.updatedSince));
  if (!filters.includeDuplicates) conditions.push(isNull(postings.duplicateOf));
  return conditions;
}

const updatedMicros = microsOf(postings.updatedAt);

/** Postings newest-updated first, filtered, one page at a time, with the columns asked for. */
export async function listPostings(
  db: Database,
  list: PostingFilters & { columns: readonly PostingColumn[]; limit: number; cursor?: string },
): Promise<{ postings: PostingSlice[]; nextCursor: string | null }> {
  const conditions = filterConditions(list);
  if (list.cursor) conditions.push(afterCursor(postings.updatedAt, postings.id, list.cursor));
  const rows = await db
    .select({ posting: selection(list.columns), micros: updatedMicros })
    .from(postings)
    .where(conditions.length > 0 ? and(...conditions) : undefined)
    .orderBy(desc(postings.updatedAt), desc(postings.id))
    .limit(list.limit + 1);
  const { page, nextCursor } = pageOf(rows, list.limit, (row) => ({
    micros: row.micros,
    id: row.posting.id,
  }));
  return { postings: page.map((row) => row.posting as PostingSlice), nextCursor };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A run's postings in id order: the cursor is the last id of the page, opaque (base64url). */
function decodeIdCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!UUID.test(id)) throw new CursorInvalidError();
  return id;
}

/** Postings of one run in id order, optionally of one status, one page at a time. */
export async function listRunPostings(
  db: Database,
  list: {
    runId: string;
    status?: PostingStatus;
    columns: readonly PostingColumn[];
    limit: number;
    cursor?: string;
  },
): Promise<{ postings: PostingSlice[]; nextCursor: string | null }> {
  const conditions = [eq(postings.runId, list.runId)];
  if (list.status) conditions.push(eq(postings.status, list.status));
  if (list.cursor) conditions.push(gt(postings.id, decodeIdCursor(list.cursor)));
  const rows = (await db
    .select(selection(list.columns))
    .from(postings)
    .where(and(...conditions))
    .orderBy(asc(postings.id))
    .limit(list.limit + 1)) as PostingSlice[];
  const page = rows.slice(0, list.limit);
  const last = page.at(-1);
  return {
    postings: page,
    nextCursor:
      rows.length > list.limit && last ? Buffer.from(last.id).toString('base64url') : null,
  };
}

/** A run's postings counted by status (an index-only scan of `postings_run_status_idx`). */
/** The ids of the sites a tenant owns (`site_schedules_tenant_idx`). */
export async function listTenantSiteIds(db: Database, tenantId: string): Promise<string[]> {
  const rows = await db
    .select({ id: siteSchedules.id })
    .from(siteSchedules)
    .where(eq(siteSchedules.tenantId, tenantId));
  return rows.map((row) => row.id);
}

export async function countRunPostingsByStatus(
  db: Database,
  runId: string,
): Promise<Record<PostingStatus, number>> {
  const rows = await db
    .select({ status: postings.status, count: sql<number>`count(*)::int` })
    .from(postings)
    .where(eq(postings.runId, runId))
    .groupBy(postings.status);
  const counts: Record<PostingStatus, number> = {
    pending: 0,
    ready: 0,
    skipped: 0,
    error: 0,
    expired: 0,
  };
  for (const row of rows) counts[row.status] = row.count;
  return counts;
}

/**
 * How many of the newest matching postings a search ranks. A word as common as "engineer"
 * matches a third of two million postings; ranking them all would read every one of their
 * vectors. Search ranks the newest matches instead (postings are refreshed by their runs, so the
 * newest are the live ones), which bounds the ranking's work whatever the words; finding them
 * still costs in proportion to how rare the words are (decision 0015).
 */
export const SEARCH_CANDIDATES = 500;
/** Snippets are cut from this much of the description: `ts_headline` re-parses what it is given. */
const SNIPPET_CHARS = 8_000;

/** A search page's cursor: the offset of the next page among the ranked candidates. */
function decodeSearchCursor(cursor: string): number {
  const match = /^s(\d{1,5})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const offset = match ? Number(match[1]) : Number.NaN;
  if (!(offset > 0 && offset < SEARCH_CANDIDATES)) throw new CursorInvalidError();
  return offset;
}

export type PostingHit = PostingSlice & {
  /** `ts_rank_cd` of the posting's vector for the query: higher is better. */
  rank: number;
  /** Passages of the description with the words found between `<b>` and `</b>`. */
  snippet: string;
};

/**
 * Ranked full-text search (`websearch_to_tsquery`: quoted phrases, `or`, `-word`): the newest
 * SEARCH_CANDIDATES matches, filtered, ranked by `ts_rank_cd` over the stored vector, where a
 * word in the title counts ten times one in the description. Snippets are cut from the page only.
 */
export async function searchPostings(
  db: Database,
  search: PostingFilters & {
    query: string;
    columns: readonly PostingColumn[];
    limit: number;
    cursor?: string;
  },
): Promise<{ postings: PostingHit[]; nextCursor: string | null }> {
  const offset = search.cursor ? decodeSearchCursor(search.cursor) : 0;
  const query = sql`websearch_to_tsquery('english', ${search.query})`;
  const conditions = [sql`${postings.search} @@ ${query}`, ...filterConditions(search)];
  const candidates = db
    .select({
      id: postings.id,
      rank: sql<number>`ts_rank_cd(${postings.search}, ${query})`.as('rank'),
    })
    .from(postings)
    .where(and(...conditions))
    .orderBy(desc(postings.updatedAt), desc(postings.id))
    .limit(SEARCH_CANDIDATES)
    .as('candidates');
  const ranked = db
    .select({ id: candidates.id, rank: candidates.rank })
    .from(candidates)
    .orderBy(desc(candidates.rank), asc(candidates.id))
    .limit(search.limit + 1)
    .offset(offset)
    .as('ranked');
  const rows = await db
    .select({
      posting: selection(search.columns),
      rank: sql<number>`${ranked.rank}::float8`,
      snippet: sql<string>`ts_headline('english', left(coalesce(${postings.descriptionText}, ''), ${SNIPPET_CHARS}), ${query}, 'MaxFragments=2, MaxWords=24, MinWords=8, FragmentDelimiter=" … "')`,
    })
    .from(ranked)
    .innerJoin(postings, eq(postings.id, ranked.id))
    .orderBy(desc(ranked.rank), asc(ranked.id));
  const page = rows.slice(0, search.limit);
  const next = offset + page.length;
  return {
    postings: page.map((row) => ({
      ...(row.posting as PostingSlice),
      rank: row.rank,
      snippet: row.snippet,
    })),
    nextCursor:
      rows.length > search.limit && next < SEARCH_CANDIDATES
        ? Buffer.from(`s${next}`).toString('base64url')
        : null,
  };
}

/**
 * Brings up to `limit` postings' search vectors up to date: those the triggers marked
 * `search_pending` because their title, company, location or description changed. Replicas may
 * index at once (`SKIP LOCKED`); a posting changed again while its vector was computed is marked
 * again by its own update, and computed from its newest text when the row is re-read under lock.
 * Returns how many were indexed.
 */
export async function indexPendingSearch(db: Database, limit: number): Promise<number> {
  const { rowCount } = await db.$client.query({
    name: 'gleaner-index-pending-search',
    text: `
      WITH batch AS (
        SELECT id FROM postings WHERE search_pending ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
      )
      UPDATE postings p
      SET search = postings_search_vector(p.title, p.company, p.location, p.description_text),
          search_pending = false
      FROM batch WHERE p.id = batch.id AND p.search_pending`,
    values: [limit],
  });
  return rowCount ?? 0;
}
