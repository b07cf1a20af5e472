import { getTableColumns } from 'drizzle-orm';
import type { Database } from '../client.js';
import { postings, type PostingStatus } from '../schema.js';
import {
  extractedFieldKeys,
  KEEP_PREVIOUS_VERSION,
  type ExtractedFields,
  type PostingSite,
} from './postings.js';

/**
 * The crawl stage's reads and writes, for many postings per statement. A worker runs many
 * crawl jobs at once; gathering what they read and write into one statement each (see the
 * worker's posting store) costs Postgres one parse, one round trip and one commit per batch
 * instead of per posting. Plain SQL through the pool: on this path drizzle's query building
 * cost more CPU than Postgres spent running the statements.
 */

/** What the crawl stage needs of a posting, its run and its site. */
export interface PostingForWork {
  id: string;
  runId: string | null;
  status: PostingStatus;
  url: string;
  listingPayload: unknown;
  bodySha256: string | null;
  textSha256: string | null;
  extractedAt: Date | null;
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
  run_status: string | null;
  kind: string;
  rate_limit_rps: number | null;
  min_pause_seconds: number;
  max_pause_seconds: number;
  max_concurrency: number;
}

const POSTINGS_FOR_WORK = `
  SELECT p.id, p.run_id, p.status, p.url, p.listing_payload, p.body_sha256, p.text_sha256,
         p.extracted_at, r.status AS run_status, s.kind, s.rate_limit_rps, s.min_pause_seconds,
         s.max_pause_seconds, s.max_concurrency
  FROM postings p
  JOIN site_schedules s ON s.id = p.site_id
  LEFT JOIN scrape_runs r ON r.id = p.run_id
  WHERE p.id = ANY($1::uuid[])`;

/** Postings with their run's status and their site's settings; missing ids are absent. */
export async function getPostingsForWork(
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
        runStatus: row.run_status,
        site: {
          kind: row.kind,
          rateLimitRps: row.rate_limit_rps,
          minPauseSeconds: row.min_pause_seconds,
          maxPauseSeconds: row.max_pause_seconds,
          maxConcurrency: row.max_concurrency,
        },
      },
    ]),
  );
}

/**
 * The fields that are long texts (a posting's description is ~10 KB, its text as much again).
 * They travel as parameters of their own, one per page, instead of inside the JSON of the other
 * fields: JSON-escaping them and having Postgres parse them back cost both sides about 0.1 ms
 * per posting.
 */
export const longTextKeys = [
  'description',
  'descriptionText',
  'requirements',
] as const satisfies readonly (typeof extractedFieldKeys)[number][];
export type LongTextKey = (typeof longTextKeys)[number];

/**
 * Extracted fields as the batched settle takes them: the long texts may come already encoded
 * as UTF-8 (the page analyser's threads encode them), and are then sent as they are, with no
 * string on the worker's event loop.
 */
export type SettleFields = Omit<ExtractedFields, LongTextKey> &
  Partial<Record<LongTextKey, string | Uint8Array | null>>;

/** A fetched page (or ATS payload) and what extraction made of it. */
export interface ExtractedPage {
  postingId: string;
  runId: string;
  body: Uint8Array;
  contentType: string | null;
  sha256: string;
  /** sha256 of the page's visible words; null for ATS payloads. */
  textSha256: string | null;
  fields: SettleFields;
}

const columns = getTableColumns(postings);
const fieldColumns = extractedFieldKeys.map((key) => columns[key].name);
const setExtractedFields = fieldColumns.map((name) => `${name} = i.${name}`).join(', ');

const longTextColumns = longTextKeys.map((key) => columns[key].name);
const shortFieldKeys = extractedFieldKeys.filter(
  (key) => !(longTextKeys as readonly string[]).includes(key),
);
/** `jsonb_to_recordset`'s column list: the input's own columns and the short fields. */
const inputColumns = [
  'id uuid',
  'run_id uuid',
  'n int',
  'body_sha256 text',
  'text_sha256 text',
  ...shortFieldKeys.map((key) => `${columns[key].name} ${columns[key].getSQLType()}`),
].join(', ');

/** Parameters per page slot: its body (NULL when another page of the batch has it) and long texts. */
const SLOT_PARAMS = 1 + longTextKeys.length;
/** Parameters before the first slot: the JSON input, body hashes and body content types. */
const FIXED_PARAMS = 3;

/**
 * The settle statement for up to `pages` pages, with its slots rounded up to a power of two
 * (the unused ones are NULL and skipped): a handful of fixed texts, each prepared once per
 * connection, instead of parsing and planning a new text for every batch size.
 */
const settleExtractedStatement = (() => {
  const statements = new Map<number, { name: string; text: string; slots: number }>();
  return (pages: number): { name: string; text: string; slots: number } => {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(1, pages)));
    let statement = statements.get(slots);
    if (statement === undefined) {
      const slotParam = (slot: number, offset: number) =>
        `$${FIXED_PARAMS + 1 + slot * SLOT_PARAMS + offset}`;
      const slotArray = (offset: number, type: string) =>
        `ARRAY[${Array.from({ length: slots }, (_, slot) => `${slotParam(slot, offset)}::${type}`).join(', ')}]`;
      const longTextArrays = longTextColumns.map((_, index) => slotArray(index + 1, 'text'));
      statement = {
        slots,
        name: `gleaner-settle-extracted-${slots}`,
        text: `
    WITH input AS (
      SELECT i.*, ${longTextColumns.map((name) => `t.${name}`).join(', ')}
      FROM jsonb_to_recordset($1::jsonb) AS i(${inputColumns})
      JOIN unnest(${longTextArrays.join(', ')}) WITH ORDINALITY
        AS t(${longTextColumns.join(', ')}, n) ON t.n = i.n
    ), bodies AS (
      INSERT INTO page_bodies (sha256, content, content_encoding, content_type, byte_length)
      SELECT b.sha256, b.content, 'identity', b.content_type, octet_length(b.content)
      FROM unnest($2::text[], $3::text[], ${slotArray(0, 'bytea')}) AS b(sha256, content_type, content)
      WHERE b.content IS NOT NULL
      ON CONFLICT (sha256) DO NOTHING
    ), previous AS (
      SELECT p.* FROM postings p JOIN input i ON i.id = p.id AND i.run_id = p.run_id
      WHERE p.status = 'pending' AND p.extracted_at IS NOT NULL
        AND p.body_sha256 IS DISTINCT FROM i.body_sha256
    ), kept AS (${KEEP_PREVIOUS_VERSION})
    UPDATE postings p
    SET status = 'ready', error = NULL, body_sha256 = i.body_sha256, text_sha256 = i.text_sha256,
        ${setExtractedFields},
        fetched_at = now(), extracted_at = now(), updated_at = now()
    FROM input i
    WHERE p.id = i.id AND p.run_id = i.run_id AND p.status = 'pending'
    RETURNING p.id`,
      };
      statements.set(slots, statement);
    }
    return statement;
  };
})();

/**
 * Stores each page's body and settles its posting `ready` with the extracted fields, keeping
 * the fields it had before as a `posting_versions` row when it had been extracted. Guarded like
 * `settlePosting`: a posting no longer pending in the given run is left alone. Returns the ids
 * this call settled. One statement, one commit.
 */
export async function settleExtractedPages(
  db: Database,
  pages: readonly ExtractedPage[],
): Promise<Set<string>> {
  if (pages.length === 0) return new Set();
  const { name, text, slots } = settleExtractedStatement(pages.length);
  // The short fields travel as one JSON array; `n` ties each row to its slot (1-based).
  const input = pages.map((page, index) => {
    const row: Record<string, unknown> = {
      id: page.postingId,
      run_id: page.runId,
      n: index + 1,
      body_sha256: page.sha256,
      text_sha256: page.textSha256,
    };
    for (const key of shortFieldKeys) row[columns[key].name] = page.fields[key] ?? null;
    return row;
  });
  // Bodies and long texts travel as parameters of their own, bodies in binary: no hex, escape
  // or JSON encoding on either side. A body two pages share is sent once.
  const seen = new Set<string>();
  const values: unknown[] = [
    JSON.stringify(input),
    pages.map((page) => page.sha256),
    pages.map((page) => page.contentType),
  ];
  for (let slot = 0; slot < slots; slot += 1) {
    const page = pages[slot];
    if (page === undefined) {
      for (let offset = 0; offset < SLOT_PARAMS; offset += 1) values.push(null);
      continue;
    }
    const isFirst = !seen.has(page.sha256);
    seen.add(page.sha256);
    values.push(
      isFirst ? Buffer.from(page.body.buffer, page.body.byteOffset, page.body.byteLength) : null,
    );
    for (const key of longTextKeys) {
      const text = page.fields[key];
      // UTF-8 bytes go as a binary parameter: for text, Postgres takes them as they are.
      values.push(
        text === null || text === undefined || typeof text === 'string'
          ? (text ?? null)
          : Buffer.from(text.buffer, text.byteOffset, text.byteLength),
      );
    }
  }
  const { rows } = await db.$client.query<{ id: string }>({ name, text, values });
  return new Set(rows.map((row) => row.id));
}

/** Settles postings whose page did not change `skipped`, guarded like `settlePosting`. */
export async function settleUnchangedPostings(
  db: Database,
  targets: readonly { postingId: string; runId: string }[],
): Promise<Set<string>> {
  if (targets.length === 0) return new Set();
  const { rows } = await db.$client.query<{ id: string }>({
    name: 'gleaner-settle-unchanged',
    text: `
      UPDATE postings p SET status = 'skipped', error = NULL, updated_at = now()
      FROM unnest($1::uuid[], $2::uuid[]) AS i(id, run_id)
      WHERE p.id = i.id AND p.run_id = i.run_id AND p.status = 'pending'
      RETURNING p.id`,
    values: [targets.map((target) => target.postingId), targets.map((target) => target.runId)],
  });
  return new Set(rows.map((row) => row.id));
}
