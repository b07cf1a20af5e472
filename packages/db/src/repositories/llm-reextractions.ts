import { desc, eq } from 'drizzle-orm';
import type { PoolClient } from 'pg';
import type { Database } from '../client.js';
import { llmReextractions, type LlmReextractionRow } from '../schema.js';
import type { LlmExtractionWork } from './llm-extractions.js';
import { compareExtractorVersions } from './postings-backfill.js';

/**
 * Prompt upgrades reaching stored LLM results (decision 0009, "Prompt upgrades"): which
 * extractions a re-extraction covers, its progress row, and the one transaction that queues a
 * batch of them under the new version.
 */

/**
 * Extractions a re-extraction of `$1` queues again: a resume's, whose fields came from some
 * version (`extracted_version` set) and which is not queued or running, under another version
 * than `$1`, and whose document is still complete (a deleted or re-processing one has no text
 * to read). A posting's extraction is not covered: the LLM stage reads a posting only while its
 * run waits for it.
 */
const CANDIDATE = `e.subject_type = 'document' AND e.version <> $1
  AND e.extracted_version IS NOT NULL AND e.status IN ('ready', 'failed', 'skipped')
  AND EXISTS (SELECT 1 FROM documents d WHERE d.id = e.subject_id AND d.status = 'complete')`;

/** Resumes' extractions under another version still queued or running: candidates to come. */
const OLDER_IN_FLIGHT = `e.subject_type = 'document' AND e.version <> $1
  AND e.status IN ('queued', 'processing')`;

export type ReextractionStart =
  | { started: true; reextraction: LlmReextractionRow }
  | { started: false; reason: 'newer-version'; newerVersion: string };

/**
 * Starts the re-extraction of `version` unless one exists already (then returns it as it is),
 * and marks any older one still running `superseded`. A version older than one recorded is
 * never started: a replica left on the previous release during a rolling deploy must not queue
 * everything back to its older prompt.
 */
export async function startLlmReextraction(
  db: Database,
  version: string,
): Promise<ReextractionStart> {
  const newerVersion = await inTransaction(db, async (client) => {
    // One start at a time, whatever the replicas and releases: each sees the others' rows.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('llm_reextractions'))`);
    const { rows: known } = await client.query<{ version: string }>(
      'SELECT version FROM llm_reextractions',
    );
    const newer = known
      .map((row) => row.version)
      .filter((other) => compareExtractorVersions(other, version) > 0)
      .sort(compareExtractorVersions)
      .at(-1);
    if (newer !== undefined || known.some((row) => row.version === version)) return newer;
    await client.query(
      // Running even with nothing to do: its first batch finds out, older work in flight included.
      `INSERT INTO llm_reextractions (version, total)
       SELECT $1, count(*)::int FROM llm_extractions e WHERE ${CANDIDATE}`,
      [version],
    );
    await client.query(
      `UPDATE llm_reextractions SET status = 'superseded', finished_at = now(), updated_at = now()
       WHERE status = 'running' AND version <> $1`,
      [version],
    );
    return undefined;
  });
  if (newerVersion !== undefined) return { started: false, reason: 'newer-version', newerVersion };
  return { started: true, reextraction: (await getLlmReextraction(db, version))! };
}

/** Runs `work` in a transaction on one pooled client; rolls back when it throws. */
async function inTransaction<T>(
  db: Database,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await db.$client.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export async function getLlmReextraction(
  db: Database,
  version: string,
): Promise<LlmReextractionRow | undefined> {
  const [row] = await db
    .select()
    .from(llmReextractions)
    .where(eq(llmReextractions.version, version));
  return row;
}

/** Re-extractions, most recently started first. */
export async function listLlmReextractions(
  db: Database,
  limit = 20,
): Promise<LlmReextractionRow[]> {
  return db.select().from(llmReextractions).orderBy(desc(llmReextractions.startedAt)).limit(limit);
}

/**
 * A tenant's resume extractions whose stored fields an older version produced and that wait for
 * the re-extraction of `version` (on the tenant and status index).
 */
export async function countOutdatedLlmExtractions(
  db: Database,
  tenantId: string,
  version: string,
): Promise<number> {
  const { rows } = await db.$client.query<{ outdated: number }>(
    `SELECT count(*)::int AS outdated FROM llm_extractions e
     WHERE e.tenant_id = $2 AND ${CANDIDATE}`,
    [version, tenantId],
  );
  return rows[0]?.outdated ?? 0;
}

export interface ReextractionBatchRequest {
  version: string;
  /** Extractions to queue at most. */
  limit: number;
  /** No other batch of this version before this much time has passed (the pace). */
  intervalMs: number;
  /**
   * No batch while this many extractions (any subject, any version) are queued already: the
   * provider, not the pace, is the slower one then, and fresh work is not held up behind a pile
   * of re-extractions (nor a tenant's pending cap filled by them).
   */
  maxQueued: number;
  correlationId: string;
}

export type ReextractionBatch =
  /** Not running (completed, superseded, never started). */
  | { outcome: 'idle' }
  /** Too early for the next batch (`waitMs`), or too much queued already. */
  | { outcome: 'paced'; waitMs: number }
  | { outcome: 'backlogged'; queuedNow: number }
  /** Extractions now queued under the version, whose jobs the caller adds. */
  | { outcome: 'queued'; work: LlmExtractionWork[]; completed: boolean };

/**
 * Queues the next batch of a running re-extraction, in one transaction with its progress row
 * (locked, so replicas take turns): the next `limit` candidates after the cursor, in id order,
 * become `queued` under the version — their fields, model and confidence left as they are, so a
 * reader keeps the old result until the new one lands — and the cursor, counters and the next
 * batch's time move with them. A lap that comes up short starts over from the first id while
 * candidates remain behind the cursor (an extraction an older version was still running when the
 * lap passed it); with none left and none of an older version in flight, the re-extraction is
 * `completed`. The version guard on each row makes a second delivery change nothing.
 */
export async function queueLlmReextractionBatch(
  db: Database,
  request: ReextractionBatchRequest,
): Promise<ReextractionBatch> {
  return inTransaction(db, async (client): Promise<ReextractionBatch> => {
    const { rows: locked } = await client.query<{ cursor: string | null; wait_ms: number }>(
      `SELECT cursor,
              greatest(0, ceil(extract(epoch FROM next_batch_at - now()) * 1000))::int AS wait_ms
       FROM llm_reextractions WHERE version = $1 AND status = 'running' FOR UPDATE`,
      [request.version],
    );
    const progress = locked[0];
    if (!progress) return { outcome: 'idle' };
    if (progress.wait_ms > 0) return { outcome: 'paced', waitMs: progress.wait_ms };
    const { rows: backlog } = await client.query<{ queued: number }>(
      `SELECT count(*)::int AS queued
       FROM (SELECT 1 FROM llm_extractions WHERE status = 'queued' LIMIT $1) AS q`,
      [request.maxQueued],
    );
    const queuedNow = backlog[0]?.queued ?? 0;
    if (queuedNow >= request.maxQueued) return { outcome: 'backlogged', queuedNow };
    // As `queueLlmExtractions` queues a row under a new version: status, attempts and timings
    // start again; fields, extracted_version, model and confidence stay until replaced.
    const { rows: work } = await client.query<{
      id: string;
      subject_type: 'document' | 'posting';
      subject_id: string;
    }>(
      `WITH picked AS (
         SELECT e.id FROM llm_extractions e
         WHERE ${CANDIDATE} AND ($2::uuid IS NULL OR e.id > $2::uuid)
         ORDER BY e.id LIMIT $3 FOR UPDATE OF e SKIP LOCKED
       )
       UPDATE llm_extractions e
       SET status = 'queued', version = $1, correlation_id = $4, attempts = 0, model_calls = 0,
           error = NULL,
           queued_at = now(), started_at = NULL, updated_at = now()
       FROM picked WHERE e.id = picked.id AND e.version <> $1
       RETURNING e.id, e.subject_type, e.subject_id`,
      [request.version, progress.cursor, request.limit, request.correlationId],
    );
    // Lower-case hexadecimal in the same places: text order is the uuid's byte order.
    let cursor =
      work
        .map((row) => row.id)
        .sort()
        .at(-1) ?? progress.cursor;
    let completed = false;
    if (work.length < request.limit) {
      // The lap is over: another starts while anything of an older version remains.
      const { rows: left } = await client.query<{ candidates: boolean; in_flight: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM llm_extractions e WHERE ${CANDIDATE}) AS candidates,
                EXISTS (SELECT 1 FROM llm_extractions e WHERE ${OLDER_IN_FLIGHT}) AS in_flight`,
        [request.version],
      );
      cursor = null;
      completed = left[0]?.candidates === false && left[0]?.in_flight === false;
    }
    await client.query(
      `UPDATE llm_reextractions
       SET cursor = $2, queued = queued + $3,
           batches = batches + CASE WHEN $3 > 0 THEN 1 ELSE 0 END,
           next_batch_at = now() + make_interval(secs => $4::float8 / 1000),
           status = CASE WHEN $5 THEN 'completed' ELSE status END,
           finished_at = CASE WHEN $5 THEN now() ELSE finished_at END,
           updated_at = now()
       WHERE version = $1`,
      [request.version, cursor, work.length, request.intervalMs, completed],
    );
    return {
      outcome: 'queued',
      completed,
      work: work.map((row) => ({
        subjectType: row.subject_type,
        subjectId: row.subject_id,
        version: request.version,
        correlationId: request.correlationId,
      })),
    };
  });
}
