import { and, asc, desc, eq, gte, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../client.js';
import {
  postings,
  postingVersions,
  scrapeRuns,
  siteSchedules,
  type PostingRow,
  type PostingStatus,
  type PostingVersionRow,
  type SiteRow,
} from '../schema.js';

export interface ListedPosting {
  externalId: string;
  url: string;
  /** The full posting when the listing carries it (ATS APIs). */
  payload?: unknown;
}

const UPSERT_BATCH = 500;

const UPSERT_LISTED = `
  INSERT INTO postings (site_id, run_id, external_id, url, listing_payload, status)
  SELECT $1::uuid, $2::uuid, l.external_id, l.url, l.payload::jsonb, 'pending'
  FROM unnest($3::text[], $4::text[], $5::text[]) AS l(external_id, url, payload)
  ON CONFLICT (site_id, external_id) DO UPDATE SET
    url = excluded.url,
    listing_payload = excluded.listing_payload,
    status = CASE WHEN postings.run_id = excluded.run_id THEN postings.status ELSE 'pending' END,
    error = CASE WHEN postings.run_id = excluded.run_id THEN postings.error ELSE NULL END,
    run_id = excluded.run_id,
    last_seen_at = now(),
    updated_at = now()
  RETURNING id, external_id, status`;

/**
 * Upserts what a run listed, keyed by `(site_id, external_id)`, and points each row at the run.
 * A row newly claimed by this run goes back to `pending`; a row the same run already claimed
 * keeps its status, so a retried scrape job never reopens postings this run already settled.
 *
 * One prepared statement over three arrays per batch: the same upsert through the query builder
 * spelled out every column of every row as a parameter (17,500 per 500 rows), which cost the
 * worker about 0.25 ms per posting to build and Postgres to parse, a tenth of a crawl's cost.
 */
export async function upsertListedPostings(
  db: Database,
  siteId: string,
  runId: string,
  listed: readonly ListedPosting[],
): Promise<{ id: string; externalId: string; status: PostingStatus }[]> {
  const out: { id: string; externalId: string; status: PostingStatus }[] = [];
  for (let start = 0; start < listed.length; start += UPSERT_BATCH) {
    const batch = listed.slice(start, start + UPSERT_BATCH);
    const { rows } = await db.$client.query<{
      id: string;
      external_id: string;
      status: PostingStatus;
    }>({
      name: 'gleaner-upsert-listed',
      text: UPSERT_LISTED,
      values: [
        siteId,
        runId,
        batch.map((item) => item.externalId),
        batch.map((item) => item.url),
        batch.map((item) => (item.payload === undefined ? null : JSON.stringify(item.payload))),
      ],
    });
    for (const row of rows)
      out.push({ id: row.id, externalId: row.external_id, status: row.status });
  }
  return out;
}

export async function getPosting(db: Database, id: string): Promise<PostingRow | undefined> {
  return db.query.postings.findFirst({ where: eq(postings.id, id) });
}

/** Postings of one run, oldest first. */
export async function listRunPostings(
  db: Database,
  runId: string,
  limit = 100,
): Promise<PostingRow[]> {
  return db
    .select()
    .from(postings)
    .where(eq(postings.runId, runId))
    .orderBy(asc(postings.externalId))
    .limit(limit);
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
 * Inside a statement whose CTE `previous` holds postings about to be re-extracted (still
 * pending in their run, extracted before, fetched with a different body): keeps each one's
 * current fields, body and SimHash as its next `posting_versions` row.
 */
export const KEEP_PREVIOUS_VERSION = `
      INSERT INTO posting_versions (posting_id, version, fields, body_sha256, content_simhash, extracted_at)
      SELECT p.id,
             coalesce((SELECT max(v.version) FROM posting_versions v WHERE v.posting_id = p.id), 0) + 1,
             jsonb_build_object(
               'title', p.title, 'company', p.company, 'location', p.location,
               'location_city', p.location_city, 'location_region', p.location_region,
               'location_country', p.location_country, 'is_remote', p.is_remote,
               'employment_type', p.employment_type, 'salary_min', p.salary_min, 'salary_max', p.salary_max,
               'salary_currency', p.salary_currency, 'salary_period', p.salary_period,
               'date_posted', p.date_posted, 'description', p.description,
               'description_text', p.description_text, 'requirements', p.requirements,
               'provenance', p.provenance, 'extraction_version', p.extraction_version),
             p.body_sha256, p.content_simhash, p.extracted_at
      FROM previous p
      -- A duplicate delivery racing this one keeps the same version once.
      ON CONFLICT (posting_id, version) DO NOTHING`;

/**
 * Records a newly fetched (changed) body on a posting still pending in `runId`, for the
 * extract job to read. When the posting had been extracted before, the same statement first
 * keeps what it was — fields, body and SimHash — as its next `posting_versions` row, so a page
 * edited on the site leaves its history behind. (No FOR UPDATE in the CTE: the main UPDATE writes the same row in the
 * same command, and a locking read of a row the command itself updated silently skips it.)
 */
export async function recordFetchedBody(
  db: Database,
  id: string,
  runId: string,
  body: { sha256: string; textSha256: string | null },
): Promise<boolean> {
  const result = await db.execute<{ id: string }>(sql`
    WITH previous AS (
      SELECT * FROM postings
      WHERE id = ${id} AND run_id = ${runId} AND status = 'pending' AND extracted_at IS NOT NULL
        AND body_sha256 IS DISTINCT FROM ${body.sha256}
    ), kept AS (${sql.raw(KEEP_PREVIOUS_VERSION)})
    UPDATE postings SET body_sha256 = ${body.sha256}, text_sha256 = ${body.textSha256},
                        fetched_at = now(), updated_at = now()
    WHERE id = ${id} AND run_id = ${runId} AND status = 'pending'
    RETURNING id
  `);
  return result.rows.length > 0;
}

/** A posting's earlier versions, newest first. */
export async function listPostingVersions(
  db: Database,
  postingId: string,
): Promise<PostingVersionRow[]> {
  return db
    .select()
    .from(postingVersions)
    .where(eq(postingVersions.postingId, postingId))
    .orderBy(desc(postingVersions.version));
}

export type ExtractedFields = Partial<
  Pick<
    PostingRow,
    | 'title'
    | 'company'
    | 'location'
    | 'locationCity'
    | 'locationRegion'
    | 'locationCountry'
    | 'isRemote'
    | 'employmentType'
    | 'salaryMin'
    | 'salaryMax'
    | 'salaryCurrency'
    | 'salaryPeriod'
    | 'datePosted'
    | 'description'
    | 'descriptionText'
    | 'requirements'
    | 'provenance'
    | 'extractionVersion'
    | 'contentSimhash'
  >
>;

/** Every column extraction writes: a re-extracted posting drops what its page no longer says. */
export const extractedFieldKeys = [
  'title',
  'company',
  'location',
  'locationCity',
  'locationRegion',
  'locationCountry',
  'isRemote',
  'employmentType',
  'salaryMin',
  'salaryMax',
  'salaryCurrency',
  'salaryPeriod',
  'datePosted',
  'description',
  'descriptionText',
  'requirements',
  'provenance',
  'extractionVersion',
  'contentSimhash',
] as const satisfies readonly (keyof ExtractedFields)[];

/**
 * The one guarded status transition out of `pending`: it applies only while the posting is
 * pending in `runId`, so a duplicate delivery of the same job changes nothing. Returns whether
 * this call settled the posting.
 */
export async function settlePosting(
  db: Database,
  id: string,
  runId: string,
  outcome:
    | { status: 'ready'; fields: ExtractedFields }
    | { status: 'skipped' }
    | { status: 'error'; error: string },
): Promise<boolean> {
  const now = new Date();
  const changes =
    outcome.status === 'ready'
      ? { ...outcome.fields, status: 'ready' as const, error: null, extractedAt: now }
      : outcome.status === 'error'
        ? { status: 'error' as const, error: outcome.error.slice(0, 2000) }
        : { status: 'skipped' as const, error: null };
  const rows = await db
    .update(postings)
    .set({ ...changes, updatedAt: now })
    .where(and(eq(postings.id, id), eq(postings.runId, runId), eq(postings.status, 'pending')))
    .returning({ id: postings.id });
  return rows.length > 0;
}

/** What a worker needs of a posting's site: its kind and its politeness settings. */
export type PostingSite = Pick<
  SiteRow,
  'kind' | 'rateLimitRps' | 'minPauseSeconds' | 'maxPauseSeconds' | 'maxConcurrency'
>;

/** A posting with its run's status and its site's settings, in one round trip (the workers' read). */
export async function getPostingForWork(
  db: Database,
  id: string,
): Promise<{ posting: PostingRow; runStatus: string | null; site: PostingSite } | undefined> {
  const [row] = await db
    .select({
      posting: postings,
      runStatus: scrapeRuns.status,
      site: {
        kind: siteSchedules.kind,
        rateLimitRps: siteSchedules.rateLimitRps,
        minPauseSeconds: siteSchedules.minPauseSeconds,
        maxPauseSeconds: siteSchedules.maxPauseSeconds,
        maxConcurrency: siteSchedules.maxConcurrency,
      },
    })
    .from(postings)
    .innerJoin(siteSchedules, eq(siteSchedules.id, postings.siteId))
    .leftJoin(scrapeRuns, eq(scrapeRuns.id, postings.runId))
    .where(eq(postings.id, id))
    .limit(1);
  return row;
}

export interface PostingSearch {
  siteId?: string;
  status?: PostingStatus;
  /** Words matched against title, company and description (Postgres full-text search). */
  query?: string;
  isRemote?: boolean;
  updatedSince?: Date;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
}

export class CursorInvalidError extends Error {
  readonly code = 'DB_CURSOR_INVALID';
  constructor() {
    super('cursor is not one this API issued');
    this.name = 'CursorInvalidError';
  }
}

/** Cursor = the last row's (updated_at in microseconds, id): stable under concurrent inserts. */
function decodeCursor(cursor: string): { micros: string; id: string } {
  const raw = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(\d{1,20})_([0-9a-f-]{36})$/.exec(raw);
  if (!match) throw new CursorInvalidError();
  return { micros: match[1]!, id: match[2]! };
}

const updatedMicros = sql<string>`floor(extract(epoch from ${postings.updatedAt}) * 1000000)::bigint`;

/** Postings newest-updated first, filtered, one page at a time. */
export async function searchPostings(
  db: Database,
  search: PostingSearch,
): Promise<{ postings: PostingRow[]; nextCursor: string | null }> {
  const conditions: SQL[] = [];
  if (search.siteId) conditions.push(eq(postings.siteId, search.siteId));
  if (search.status) conditions.push(eq(postings.status, search.status));
  if (search.isRemote !== undefined) conditions.push(eq(postings.isRemote, search.isRemote));
  if (search.updatedSince) conditions.push(gte(postings.updatedAt, search.updatedSince));
  if (search.query) {
    conditions.push(
      sql`to_tsvector('simple', coalesce(${postings.title}, '') || ' ' || coalesce(${postings.company}, '') || ' ' || coalesce(${postings.descriptionText}, ${postings.description}, '')) @@ websearch_to_tsquery('simple', ${search.query})`,
    );
  }
  if (search.cursor) {
    const { micros, id } = decodeCursor(search.cursor);
    conditions.push(sql`(${updatedMicros}, ${postings.id}) < (${micros}::bigint, ${id}::uuid)`);
  }
  const rows = await db
    .select({ posting: postings, micros: updatedMicros })
    .from(postings)
    .where(conditions.length > 0 ? and(...conditions) : undefined)
    .orderBy(desc(updatedMicros), desc(postings.id))
    .limit(search.limit + 1);
  const page = rows.slice(0, search.limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > search.limit && last
      ? Buffer.from(`${last.micros}_${last.posting.id}`).toString('base64url')
      : null;
  return { postings: page.map((row) => row.posting), nextCursor };
}
