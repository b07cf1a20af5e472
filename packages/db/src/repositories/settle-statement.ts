import { getTableColumns } from 'drizzle-orm';
import { jsonForPg, withoutNul } from '../pg-text.js';
import {
  extractedFieldKeys,
  longTextFieldKeys,
  postingFieldKeys,
  snakeCase,
  type ExtractedFields,
} from '../posting-fields.js';
import { postings } from '../schema.js';

/**
 * The statement that settles a batch of extracted pages `ready`, built for `settlePostings`.
 *
 * The short fields travel as one JSON array; each page's body and long texts travel as
 * parameters of their own, in binary: JSON-escaping a ~10 KB description and having Postgres
 * parse it back cost both sides about 0.1 ms per posting. Slots are rounded up to a power of two
 * (the unused ones are NULL and skipped), so each connection prepares a handful of texts once
 * instead of parsing and planning a new one for every batch size.
 */

/** A fetched page (or ATS payload) and what extraction made of it. */
export interface ExtractedPage {
  postingId: string;
  runId: string;
  /** The raw body; absent when it is stored already (the extract stage read it from there). */
  body?: Uint8Array;
  contentType: string | null;
  sha256: string;
  /** sha256 of the page's visible words; null for ATS payloads. */
  textSha256: string | null;
  fields: ExtractedFields;
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
             jsonb_build_object(${[...postingFieldKeys, 'provenance', 'extractionVersion']
               .map((key) => `'${snakeCase(key)}', p.${snakeCase(key)}`)
               .join(', ')}),
             p.body_sha256, p.content_simhash, p.extracted_at
      FROM previous p
      -- A duplicate delivery racing this one keeps the same version once.
      ON CONFLICT (posting_id, version) DO NOTHING`;

/**
 * The guard of a batched transition out of `pending`, on postings `p` joined to their input by
 * id and run: `p` is still pending. Written `IS TRUE` so that the planner cannot make it an index
 * condition. As one, the statement read every posting pending in any run through
 * `postings_status_updated_idx` for each batch whenever the statistics counted few pending rows:
 * they are gathered while runs are idle, and a run's thousands of new postings are pending until
 * the next ANALYZE. With 30,000 postings pending elsewhere, a settle cost Postgres 2.9 ms a
 * posting instead of 0.5. Now the batch's rows are found by key (`test/batched-settle.test.ts`).
 */
export const STILL_PENDING = `(p.status = 'pending') IS TRUE`;

const columns = getTableColumns(postings);
const column = (key: (typeof extractedFieldKeys)[number]) => columns[key].name;
const longTextColumns = longTextFieldKeys.map(column);
const shortFieldKeys = extractedFieldKeys.filter(
  (key) => !(longTextFieldKeys as readonly string[]).includes(key),
);
const setExtractedFields = extractedFieldKeys
  .map((key) => `${column(key)} = i.${column(key)}`)
  .join(', ');
/** `jsonb_to_recordset`'s column list: the input's own columns and the short fields. */
const inputColumns = [
  'id uuid',
  'run_id uuid',
  'n int',
  'body_sha256 text',
  'text_sha256 text',
  ...shortFieldKeys.map((key) => `${column(key)} ${columns[key].getSQLType()}`),
].join(', ');

/** Parameters per page slot: its body (NULL when stored already) and its long texts. */
const SLOT_PARAMS = 1 + longTextColumns.length;
/** Parameters before the first slot: the JSON input, body hashes and body content types. */
const FIXED_PARAMS = 3;

function statementText(slots: number): string {
  const slotParam = (slot: number, offset: number) =>
    `$${FIXED_PARAMS + 1 + slot * SLOT_PARAMS + offset}`;
  const slotArray = (offset: number, type: string) =>
    `ARRAY[${Array.from({ length: slots }, (_, slot) => `${slotParam(slot, offset)}::${type}`).join(', ')}]`;
  const longTextArrays = longTextColumns.map((_, index) => slotArray(index + 1, 'text'));
  return `
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
      WHERE ${STILL_PENDING} AND p.extracted_at IS NOT NULL
        AND p.body_sha256 IS DISTINCT FROM i.body_sha256
    ), kept AS (${KEEP_PREVIOUS_VERSION})
    UPDATE postings p
    SET status = 'ready', error = NULL, body_sha256 = i.body_sha256, text_sha256 = i.text_sha256,
        ${setExtractedFields},
        fetched_at = CASE WHEN p.body_sha256 IS DISTINCT FROM i.body_sha256 OR p.fetched_at IS NULL
                          THEN now() ELSE p.fetched_at END,
        extracted_at = now(), updated_at = now()
    FROM input i
    WHERE p.id = i.id AND p.run_id = i.run_id AND ${STILL_PENDING}
    RETURNING p.id`;
}

const texts = new Map<number, string>();

export function settleReadyStatement(pages: readonly ExtractedPage[]): {
  name: string;
  text: string;
  values: unknown[];
} {
  const slots = 2 ** Math.ceil(Math.log2(Math.max(1, pages.length)));
  let text = texts.get(slots);
  if (text === undefined) texts.set(slots, (text = statementText(slots)));
  // `n` ties each input row to its slot (1-based).
  const input = pages.map((page, index) => {
    const row: Record<string, unknown> = {
      id: page.postingId,
      run_id: page.runId,
      n: index + 1,
      body_sha256: page.sha256,
      text_sha256: page.textSha256,
    };
    for (const key of shortFieldKeys) row[column(key)] = page.fields[key] ?? null;
    return row;
  });
  const values: unknown[] = [
    jsonForPg(input),
    pages.map((page) => page.sha256),
    pages.map((page) => page.contentType),
  ];
  // A body two pages of the batch share is sent once.
  const seen = new Set<string>();
  for (let slot = 0; slot < slots; slot += 1) {
    const page = pages[slot];
    if (page === undefined) {
      for (let offset = 0; offset < SLOT_PARAMS; offset += 1) values.push(null);
      continue;
    }
    const body = page.body && !seen.has(page.sha256) ? page.body : undefined;
    seen.add(page.sha256);
    values.push(body ? Buffer.from(body.buffer, body.byteOffset, body.byteLength) : null);
    for (const key of longTextFieldKeys) {
      const text = page.fields[key];
      values.push(text == null ? null : withoutNul(text));
    }
  }
  return { name: `gleaner-settle-ready-${slots}`, text, values };
}
