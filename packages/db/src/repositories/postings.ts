import { desc, eq } from 'drizzle-orm';
import type { Database } from '../client.js';
import { jsonForPg, withoutNul } from '../pg-text.js';
import {
  postings,
  postingVersions,
  type PostingRow,
  type PostingStatus,
  type PostingVersionRow,
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
    missed_listings = 0,
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
        batch.map((item) => withoutNul(item.externalId)),
        batch.map((item) => withoutNul(item.url)),
        batch.map((item) => (item.payload === undefined ? null : jsonForPg(item.payload))),
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
