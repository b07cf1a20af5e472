import { getTableColumns } from 'drizzle-orm';
import type { Database } from '../client.js';
import { withoutNul } from '../pg-text.js';
import { extractedFieldKeys, snakeCase } from '../posting-fields.js';
import { postings, type PostingStatus, type SiteRow } from '../schema.js';
import {
  KEEP_PREVIOUS_VERSION,
  settleReadyStatement,
  STILL_PENDING,
  type ExtractedPage,
} from './settle-statement.js';

export type { ExtractedPage } from './settle-statement.js';

/**
 * What the pipeline's stages read and write of postings: one read shape for work and one
 * batched settle path. A worker runs many jobs at once; gathering what they read and write into
 * one statement each (the worker's settlement module) costs Postgres one parse, one round trip
 * and one commit per batch instead of per posting. Plain SQL through the pool: on this path
 * drizzle's query building cost more CPU than Postgres spent running the statements.
 */

/**
 * What a worker needs of a posting's site: its id, kind, politeness settings and whether pages it
 * cannot read go to the LLM.
 */
export type PostingSite = Pick<
  SiteRow,
  | 'id'
  | 'kind'
  | 'rateLimitRps'
  | 'minPauseSeconds'
  | 'maxPauseSeconds'
  | 'maxConcurrency'
  | 'llmExtraction'
>;

/** What the crawl and extract stages need of a posting, its run and its site. */
export interface PostingForWork {
  id: string;
  runId: string | null;
  status: PostingStatus;
  url: string;
  listingPayload: unknown;
  bodySha256: string | null;
  textSha256: string | null;
  extractedAt: Date | null;
  /** When its page was last fetched (null: never). */
  fetchedAt: Date | null;
  /**
   * Its title was last read from structured data (JSON-LD, microdata, RDFa): such a posting gains
   * nothing from its site's template (decision 0028).
   */
  readFromStructuredData: boolean;
  runStatus: string | null;
  site: PostingSite;
}

interface PostingForWorkRow {
  id: string;
  run_id: string | null;
  status: PostingStatus;
  url: string;
  listing_payload: unknown;
  body_sha256: string | null;
  text_sha256: string | null;
  extracted_at: Date | null;
  fetched_at: Date | null;
  read_from_structured_data: boolean;
  run_status: string | null;
  site_id: string;
  kind: string;
  rate_limit_rps: number | null;
  min_pause_seconds: number;
  max_pause_seconds: number;
  max_concurrency: number;
  llm_extraction: boolean;
}

/** Whether posting `p`'s title was last read from structured data, as SQL. */
export const READ_FROM_STRUCTURED_DATA = `coalesce(p.provenance->>'title' IN ('json-ld', 'microdata', 'rdfa'), false)`;

const POSTINGS_FOR_WORK = `
  SELECT p.id, p.run_id, p.status, p.url, p.listing_payload, p.body_sha256, p.text_sha256,
         p.extracted_at, p.fetched_at,
         ${READ_FROM_STRUCTURED_DATA} AS read_from_structured_data,
         r.status AS run_status, p.site_id, s.kind, s.rate_limit_rps,
         s.min_pause_seconds, s.max_pause_seconds, s.max_concurrency, s.llm_extraction
  FROM postings p
  JOIN site_schedules s ON s.id = p.site_id
  LEFT JOIN scrape_runs r ON r.id = p.run_id
  WHERE p.id = ANY($1::uuid[])`;

/** Postings with their run's status and their site's settings; missing ids are absent. */
export async function readPostingsForWork(
  db: Database,
  ids: readonly string[],
): Promise<Map<string, PostingForWork>> {
  const { rows } = await db.$client.query<PostingForWorkRow>({
    name: 'gleaner-postings-for-work',
    text: POSTINGS_FOR_WORK,
    values: [ids],
  });
  return new Map(
    rows.map((row) => [
      row.id,
      {
        id: row.id,
        runId: row.run_id,
        status: row.status,
        url: row.url,
        listingPayload: row.listing_payload,
        bodySha256: row.body_sha256,
        textSha256: row.text_sha256,
        extractedAt: row.extracted_at,
        fetchedAt: row.fetched_at,
        readFromStructuredData: row.read_from_structured_data,
        runStatus: row.run_status,
        site: {
          id: row.site_id,
          kind: row.kind,
          rateLimitRps: row.rate_limit_rps,
          minPauseSeconds: row.min_pause_seconds,
          maxPauseSeconds: row.max_pause_seconds,
          maxConcurrency: row.max_concurrency,
          llmExtraction: row.llm_extraction,
        },
      },
    ]),
  );
}

/** How a posting leaves `pending`. */
export type PostingSettle =
  | ({ status: 'ready' } & ExtractedPage)
  | { status: 'skipped'; postingId: string; runId: string }
  | { status: 'error'; postingId: string; runId: string; error: string };

const columns = getTableColumns(postings);
// The list and the schema agree: every listed field is a column of `postings`.
for (const key of extractedFieldKeys) {
  if (columns[key].name !== snakeCase(key))
    throw new Error(`posting field ${key} has column ${columns[key].name}`);
}

/**
 * The one guarded transition out of `pending`, for many postings at once: each settle applies
 * only while its posting is pending in its run, so a duplicate delivery changes nothing. A
 * `ready` page's body is stored content-addressed and, when the posting had been extracted from
 * another body before, its previous fields are kept as a `posting_versions` row. Returns the ids
 * this call settled. One statement per outcome present in the batch, each its own commit.
 */
export async function settlePostings(
  db: Database,
  settles: readonly PostingSettle[],
): Promise<Set<string>> {
  const ready: ExtractedPage[] = [];
  const skipped: { postingId: string; runId: string }[] = [];
  const failed: { postingId: string; runId: string; error: string }[] = [];
  for (const settle of settles) {
    if (settle.status === 'ready') ready.push(settle);
    else if (settle.status === 'skipped') skipped.push(settle);
    else failed.push(settle);
  }
  const settled = new Set<string>();
  const statements: Promise<{ rows: { id: string }[] }>[] = [];
  if (ready.length > 0) statements.push(db.$client.query(settleReadyStatement(ready)));
  if (skipped.length > 0) {
    statements.push(
      db.$client.query({
        name: 'gleaner-settle-skipped',
        text: `
          UPDATE postings p SET status = 'skipped', error = NULL, updated_at = now()
          FROM unnest($1::uuid[], $2::uuid[]) AS i(id, run_id)
          WHERE p.id = i.id AND p.run_id = i.run_id AND ${STILL_PENDING}
          RETURNING p.id`,
        values: [skipped.map((s) => s.postingId), skipped.map((s) => s.runId)],
      }),
    );
  }
  if (failed.length > 0) {
    statements.push(
      db.$client.query({
        name: 'gleaner-settle-error',
        text: `
          UPDATE postings p SET status = 'error', error = i.error, updated_at = now()
          FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS i(id, run_id, error)
          WHERE p.id = i.id AND p.run_id = i.run_id AND ${STILL_PENDING}
          RETURNING p.id`,
        values: [
          failed.map((s) => s.postingId),
          failed.map((s) => s.runId),
          failed.map((s) => withoutNul(s.error).slice(0, 2000)),
        ],
      }),
    );
  }
  for (const { rows } of await Promise.all(statements)) {
    for (const row of rows) settled.add(row.id);
  }
  return settled;
}

/**
 * Records a newly fetched (changed) body on a posting still pending in `runId`, for the
 * extract stage to read, keeping what the posting was as its next `posting_versions` row when
 * it had been extracted before. (No FOR UPDATE in the CTE: the main UPDATE writes the same row
 * in the same command, and a locking read of a row the command itself updated silently skips
 * it.)
 */
export async function recordFetchedBody(
  db: Database,
  id: string,
  runId: string,
  body: { sha256: string; textSha256: string | null },
): Promise<boolean> {
  const { rows } = await db.$client.query<{ id: string }>({
    name: 'gleaner-record-fetched-body',
    text: `
      WITH previous AS (
        SELECT * FROM postings
        WHERE id = $1 AND run_id = $2 AND status = 'pending' AND extracted_at IS NOT NULL
          AND body_sha256 IS DISTINCT FROM $3
      ), kept AS (${KEEP_PREVIOUS_VERSION})
      UPDATE postings SET body_sha256 = $3, text_sha256 = $4, fetched_at = now(), updated_at = now()
      WHERE id = $1 AND run_id = $2 AND status = 'pending'
      RETURNING id`,
    values: [id, runId, body.sha256, body.textSha256],
  });
  return rows.length > 0;
}

/**
 * The run a posting is pending in, or undefined when it is not pending: for those that know the
 * posting but not its run (an LLM extraction that failed for good settles its posting).
 */
export async function pendingPostingRun(
  db: Database,
  postingId: string,
): Promise<string | undefined> {
  const { rows } = await db.$client.query<{ run_id: string | null }>(
    "SELECT run_id FROM postings WHERE id = $1 AND status = 'pending'",
    [postingId],
  );
  return rows[0]?.run_id ?? undefined;
}
