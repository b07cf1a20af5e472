import { and, asc, desc, eq, getTableColumns, gt, inArray, sql } from 'drizzle-orm';
import type { Database } from '../client.js';
import { jsonForPg } from '../pg-text.js';
import { extractedFieldKeys, type ExtractedFields } from '../posting-fields.js';
import {
  extractionBackfills,
  postings,
  siteSchedules,
  type ExtractionBackfillRow,
  type PostingRow,
} from '../schema.js';
import { KEEP_PREVIOUS_VERSION } from './settle-statement.js';

/**
 * Re-extraction of stored postings after an extractor upgrade (decision 0013): which postings a
 * backfill covers, its progress row, and the one statement that saves a batch.
 */

/**
 * Orders extractor versions ("2026-11-22.2": a date and a counter) with numbers compared as
 * numbers, so that "2026-11-22.10" comes after "2026-11-22.9".
 */
export function compareExtractorVersions(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/**
 * Postings a backfill of `version` re-extracts: extracted before, under another version, and not
 * in the middle of a run (a pending posting is its run's to extract; a failed one has no fields
 * worth keeping). Expired postings are kept up to date too: their history is still served.
 */
const candidate = (version: string) =>
  sql`${postings.extractedAt} IS NOT NULL AND ${postings.status} IN ('ready', 'skipped', 'expired') AND ${postings.extractionVersion} IS DISTINCT FROM ${version}`;

export type BackfillStart =
  | { started: true; backfill: ExtractionBackfillRow }
  | { started: false; reason: 'newer-version'; newerVersion: string };

/**
 * Starts the backfill of `version` unless one exists already (then returns it as it is), and
 * marks any older one still running `superseded`. A version older than one already recorded is
 * never started: a replica left on the previous release during a rolling deploy must not
 * re-extract postings back to its older rules.
 */
export async function startExtractionBackfill(
  db: Database,
  version: string,
): Promise<BackfillStart> {
  return db.transaction(async (tx) => {
    // One start at a time, whatever the replicas and releases: each sees the others' rows.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext('extraction_backfills'))`);
    const known = await tx
      .select({ version: extractionBackfills.version, status: extractionBackfills.status })
      .from(extractionBackfills);
    const newer = known
      .map((row) => row.version)
      .filter((other) => compareExtractorVersions(other, version) > 0)
      .sort(compareExtractorVersions)
      .at(-1);
    if (newer !== undefined)
      return { started: false as const, reason: 'newer-version' as const, newerVersion: newer };
    const [{ total } = { total: 0 }] = await tx
      .select({ total: sql<number>`count(*)::int` })
      .from(postings)
      .where(candidate(version));
    await tx
      .insert(extractionBackfills)
      .values({
        version,
        total,
        status: total === 0 ? 'completed' : 'running',
        finishedAt: total === 0 ? new Date() : null,
      })
      .onConflictDoNothing();
    const older = known
      .filter((row) => row.status === 'running' && row.version !== version)
      .map((row) => row.version);
    if (older.length > 0)
      await tx
        .update(extractionBackfills)
        .set({ status: 'superseded', finishedAt: sql`now()`, updatedAt: sql`now()` })
        .where(
          and(
            eq(extractionBackfills.status, 'running'),
            inArray(extractionBackfills.version, older),
          ),
        );
    const [backfill] = await tx
      .select()
      .from(extractionBackfills)
      .where(eq(extractionBackfills.version, version));
    return { started: true as const, backfill: backfill! };
  });
}

export async function getExtractionBackfill(
  db: Database,
  version: string,
): Promise<ExtractionBackfillRow | undefined> {
  const [row] = await db
    .select()
    .from(extractionBackfills)
    .where(eq(extractionBackfills.version, version));
  return row;
}

/** Backfills, most recently started first. */
export async function listExtractionBackfills(
  db: Database,
  limit = 20,
): Promise<ExtractionBackfillRow[]> {
  return db
    .select()
    .from(extractionBackfills)
    .orderBy(desc(extractionBackfills.startedAt))
    .limit(limit);
}

/** Backfills still running: what the scheduler makes sure has a batch job queued. */
export async function listRunningExtractionBackfills(
  db: Database,
): Promise<ExtractionBackfillRow[]> {
  return db.select().from(extractionBackfills).where(eq(extractionBackfills.status, 'running'));
}

/** A posting to re-extract, with its site's kind (which adapter maps its listing payload). */
export interface BackfillPosting {
  posting: PostingRow;
  siteKind: string;
}

/** The next `limit` postings of the backfill of `version` after `cursor`, in id order. */
export async function readBackfillBatch(
  db: Database,
  version: string,
  cursor: string | null,
  limit: number,
): Promise<BackfillPosting[]> {
  return db
    .select({ posting: postings, siteKind: siteSchedules.kind })
    .from(postings)
    .innerJoin(siteSchedules, eq(siteSchedules.id, postings.siteId))
    .where(and(candidate(version), cursor === null ? undefined : gt(postings.id, cursor)))
    .orderBy(asc(postings.id))
    .limit(limit);
}

export interface BackfillBatch {
  version: string;
  /** The row's cursor this batch was read after: a batch read from another cursor is refused. */
  cursor: string | null;
  /** The last posting id the batch covered. */
  nextCursor: string | null;
  reextracted: { postingId: string; fields: ExtractedFields }[];
  /** Postings whose stored body is gone. */
  skipped: number;
  failed: number;
  /** The batch came up short: nothing is left after it. */
  finished: boolean;
  lastError?: string | null;
}

const columns = getTableColumns(postings);
const fieldColumns = extractedFieldKeys.map((key) => columns[key].name);
const inputColumns = [
  'id uuid',
  ...extractedFieldKeys.map((key) => `${columns[key].name} ${columns[key].getSQLType()}`),
].join(', ');

/** A posting's id and extracted fields as one row of `inputColumns`. */
function fieldsRow({ postingId, fields }: { postingId: string; fields: ExtractedFields }) {
  const row: Record<string, unknown> = { id: postingId };
  for (const key of extractedFieldKeys) row[columns[key].name] = fields[key] ?? null;
  return row;
}

/**
 * Saves re-extracted fields over postings still under another version, each one's current
 * fields kept first as its next `posting_versions` row (the path a changed page takes). The
 * version guard makes a posting re-extracted once per version, whatever replica or retry
 * delivers the batch again.
 */
const SAVE_REEXTRACTED = `
  WITH input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(${inputColumns})
  ), previous AS (
    SELECT p.* FROM postings p JOIN input i ON i.id = p.id
    WHERE p.extraction_version IS DISTINCT FROM $2 AND p.extracted_at IS NOT NULL
  ), kept AS (${KEEP_PREVIOUS_VERSION})
  UPDATE postings p
  SET ${fieldColumns.map((name) => `${name} = i.${name}`).join(', ')},
      extracted_at = now(), updated_at = now()
  FROM input i
  WHERE p.id = i.id AND p.extraction_version IS DISTINCT FROM $2 AND p.extracted_at IS NOT NULL
  RETURNING p.id`;

/**
 * Saves the fields of a run's pages read again with their site's newer template (decision 0028),
 * before the run closes: over a posting still `ready` in `runId` and extracted before
 * `readBefore` (a later read is never overwritten), or still in `error` with `noPostingError`,
 * which becomes `ready`. The body is the same, so the earlier read is not kept as a version.
 * Returns how many it saved.
 */
export async function saveTemplateRereads(
  db: Database,
  runId: string,
  { readBefore, noPostingError }: { readBefore: Date; noPostingError: string },
  reread: readonly { postingId: string; fields: ExtractedFields }[],
): Promise<number> {
  if (reread.length === 0) return 0;
  const { rowCount } = await db.$client.query(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(${inputColumns})
     )
     UPDATE postings p
     SET ${fieldColumns.map((name) => `${name} = i.${name}`).join(', ')},
         status = 'ready', error = NULL, extracted_at = now(), updated_at = now()
     FROM input i
     WHERE p.id = i.id AND p.run_id = $2
       AND ((p.status = 'ready' AND p.extracted_at < $3) OR (p.status = 'error' AND p.error = $4))`,
    [jsonForPg(reread.map(fieldsRow)), runId, readBefore, noPostingError],
  );
  return rowCount ?? 0;
}

/**
 * Commits one batch: the postings and the backfill's cursor and counters in one transaction,
 * only while the backfill is running at `batch.cursor` (the row is locked, so of two deliveries
 * of the same batch one applies and the other finds the cursor moved on). Returns whether it
 * applied and how many postings it saved.
 */
export async function applyBackfillBatch(
  db: Database,
  batch: BackfillBatch,
): Promise<{ applied: boolean; saved: number }> {
  const client = await db.$client.connect();
  try {
    await client.query('BEGIN');
    const { rows: locked } = await client.query(
      `SELECT 1 FROM extraction_backfills
       WHERE version = $1 AND status = 'running' AND cursor IS NOT DISTINCT FROM $2::uuid
       FOR UPDATE`,
      [batch.version, batch.cursor],
    );
    if (locked.length === 0) {
      await client.query('ROLLBACK');
      return { applied: false, saved: 0 };
    }
    let saved = 0;
    if (batch.reextracted.length > 0) {
      const input = batch.reextracted.map((posting) => ({
        ...fieldsRow(posting),
        extraction_version: batch.version,
      }));
      const { rowCount } = await client.query(SAVE_REEXTRACTED, [jsonForPg(input), batch.version]);
      saved = rowCount ?? 0;
    }
    await client.query(
      `UPDATE extraction_backfills
       SET cursor = coalesce($2::uuid, cursor), done = done + $3, skipped = skipped + $4,
           failed = failed + $5, batches = batches + 1,
           last_error = coalesce($6, last_error),
           status = CASE WHEN $7 THEN 'completed' ELSE status END,
           finished_at = CASE WHEN $7 THEN now() ELSE finished_at END,
           updated_at = now()
       WHERE version = $1`,
      [
        batch.version,
        batch.nextCursor,
        saved,
        batch.skipped,
        batch.failed,
        batch.lastError?.slice(0, 2000) ?? null,
        batch.finished,
      ],
    );
    await client.query('COMMIT');
    return { applied: true, saved };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
