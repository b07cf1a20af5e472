import { and, desc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Database } from '../client.js';
import { withoutNul } from '../pg-text.js';
import { afterCursor, microsOf, pageOf } from './cursor.js';
import { sha256Hex } from './bodies.js';
import { preparedFor } from './prepared.js';
import {
  DOCUMENT_SEARCH_CHARS,
  documentExtractionMetrics,
  documents,
  documentStatuses,
  type DocumentErrorType,
  type DocumentKind,
  type DocumentRow,
  type DocumentStatus,
  type ExtractionOutcome,
} from '../schema.js';

/**
 * Documents and their extraction status (seed 001). Every status change is one guarded UPDATE
 * (`… WHERE status IN (…)`), so a job retried, released or repaired twice changes a document
 * once, and a change that lost its race returns nothing:
 *
 *   pending ──claim──► processing ──► complete
 *      ▲                  │ └──────► retry_pending ──claim──► processing …
 *      │ release / retry  └──────► failed (permanent error, or the last attempt)
 *      └───────────────────────────────┘
 */

/** A document without its bytes and text: what lists, answers to uploads and the worker's claim carry. */
export type DocumentSummary = Omit<DocumentRow, 'content' | 'text' | 'search'>;

/** The summary's columns, for selects that must not read the bytes or the text. */
const summaryColumns = {
  id: documents.id,
  tenantId: documents.tenantId,
  kind: documents.kind,
  externalId: documents.externalId,
  filename: documents.filename,
  mediaType: documents.mediaType,
  byteSize: documents.byteSize,
  contentSha256: documents.contentSha256,
  priority: documents.priority,
  status: documents.status,
  generation: documents.generation,
  attempts: documents.attempts,
  errorType: documents.errorType,
  errorMessage: documents.errorMessage,
  workerId: documents.workerId,
  correlationId: documents.correlationId,
  queuedAt: documents.queuedAt,
  startedAt: documents.startedAt,
  completedAt: documents.completedAt,
  nextRetryAt: documents.nextRetryAt,
  extractionMs: documents.extractionMs,
  format: documents.format,
  pageCount: documents.pageCount,
  title: documents.title,
  textChars: documents.textChars,
  truncated: documents.truncated,
  createdAt: documents.createdAt,
  updatedAt: documents.updatedAt,
};

/** What a document's job is queued with (`DocumentWork`). */
const workColumns = {
  id: documents.id,
  generation: documents.generation,
  priority: documents.priority,
  correlationId: documents.correlationId,
};

export interface NewDocument {
  tenantId: string;
  kind: DocumentKind;
  externalId?: string | null;
  filename?: string | null;
  mediaType?: string | null;
  content: Uint8Array;
  /** Seed 001's priority: higher first. */
  priority?: number;
  correlationId?: string | null;
}

/** What a document's extraction job needs to be queued. */
export interface DocumentWork {
  id: string;
  generation: number;
  priority: number;
  correlationId: string | null;
  /** When a `retry_pending` document's next attempt is due; null runs it at once. */
  nextRetryAt?: Date | null;
}

/** One upload's insert, prepared once per pool: each `POST /documents` runs it. */
const insertOneStatement = preparedFor((db) =>
  db
    .insert(documents)
    .values({
      tenantId: sql.placeholder('tenantId'),
      kind: sql.placeholder('kind'),
      externalId: sql.placeholder('externalId'),
      filename: sql.placeholder('filename'),
      mediaType: sql.placeholder('mediaType'),
      byteSize: sql.placeholder('byteSize'),
      contentSha256: sql.placeholder('contentSha256'),
      content: sql.placeholder('content'),
      priority: sql.placeholder('priority'),
      correlationId: sql.placeholder('correlationId'),
    })
    .onConflictDoNothing({ target: [documents.tenantId, documents.contentSha256] })
    .returning(summaryColumns)
    .prepare('gleaner-insert-document'),
);

/**
 * Stores documents, each once per tenant and content: the same bytes for the same tenant are one
 * document, whatever its name. Returns one entry per input, in order, with `duplicate` set when
 * the document existed already (or appeared twice in `inputs`); only new ones need a job.
 */
export async function insertDocuments(
  db: Database,
  inputs: readonly NewDocument[],
): Promise<{ document: DocumentSummary; duplicate: boolean }[]> {
  if (inputs.length === 0) return [];
  const values = inputs.map((input) => ({
    tenantId: input.tenantId,
    kind: input.kind,
    externalId: input.externalId ?? null,
    filename: input.filename ?? null,
    mediaType: input.mediaType ?? null,
    byteSize: input.content.byteLength,
    contentSha256: sha256Hex(input.content),
    content: Buffer.from(input.content.buffer, input.content.byteOffset, input.content.byteLength),
    priority: input.priority ?? 0,
    correlationId: input.correlationId ?? null,
  }));
  // One document (an upload) through the prepared statement, a batch built for its size.
  const inserted =
    values.length === 1
      ? await insertOneStatement(db).execute(values[0])
      : await db
          .insert(documents)
          .values(values)
          .onConflictDoNothing({ target: [documents.tenantId, documents.contentSha256] })
          .returning(summaryColumns);
  const key = (tenantId: string, sha256: string) => `${tenantId}\u0000${sha256}`;
  const fresh = new Map(inserted.map((row) => [key(row.tenantId, row.contentSha256), row]));
  const missing = values.filter((value) => !fresh.has(key(value.tenantId, value.contentSha256)));
  const existing = new Map<string, DocumentSummary>();
  if (missing.length > 0) {
    const rows = await db
      .select(summaryColumns)
      .from(documents)
      .where(
        sql`(${documents.tenantId}, ${documents.contentSha256}) IN (${sql.join(
          missing.map((value) => sql`(${value.tenantId}, ${value.contentSha256})`),
          sql`, `,
        )})`,
      );
    for (const row of rows) existing.set(key(row.tenantId, row.contentSha256), row);
  }
  const claimed = new Set<string>();
  return values.map((value) => {
    const k = key(value.tenantId, value.contentSha256);
    const row = fresh.get(k);
    if (row && !claimed.has(k)) {
      claimed.add(k);
      return { document: row, duplicate: false };
    }
    const found = row ?? existing.get(k);
    // Inserted by nobody and found by nobody: deleted between the two statements.
    if (!found) throw new Error(`document ${value.contentSha256} vanished while it was stored`);
    return { document: found, duplicate: true };
  });
}

/** A document with the first `previewChars` of its text (null before it is extracted). */
export type DocumentView = DocumentSummary & { textPreview: string | null };

export async function getDocument(
  db: Database,
  id: string,
  previewChars = 500,
): Promise<DocumentView | undefined> {
  const [row] = await db
    .select({
      ...summaryColumns,
      textPreview: sql<string | null>`left(${documents.text}, ${previewChars})`,
    })
    .from(documents)
    .where(eq(documents.id, id));
  return row;
}

/** A document's whole extracted text; null while it has none. Undefined when there is no such document. */
export async function getDocumentText(
  db: Database,
  id: string,
): Promise<{ tenantId: string; status: DocumentStatus; text: string | null } | undefined> {
  const [row] = await db
    .select({ tenantId: documents.tenantId, status: documents.status, text: documents.text })
    .from(documents)
    .where(eq(documents.id, id));
  return row;
}

export interface DocumentListQuery {
  tenantId: string;
  status?: DocumentStatus;
  kind?: DocumentKind;
  limit: number;
  cursor?: string;
}

/**
 * A tenant's documents, newest first, one page at a time; each filter has an index in this
 * order (`documents_tenant_*_created_idx`).
 */
export async function listDocuments(
  db: Database,
  query: DocumentListQuery,
): Promise<{ documents: DocumentSummary[]; nextCursor: string | null }> {
  const conditions: SQL[] = [eq(documents.tenantId, query.tenantId)];
  if (query.status) conditions.push(eq(documents.status, query.status));
  if (query.kind) conditions.push(eq(documents.kind, query.kind));
  if (query.cursor) conditions.push(afterCursor(documents.createdAt, documents.id, query.cursor));
  const rows = await db
    .select({ document: summaryColumns, micros: microsOf(documents.createdAt) })
    .from(documents)
    .where(and(...conditions))
    .orderBy(desc(documents.createdAt), desc(documents.id))
    .limit(query.limit + 1);
  const { page, nextCursor } = pageOf(rows, query.limit, (row) => ({
    micros: row.micros,
    id: row.document.id,
  }));
  return { documents: page.map((row) => row.document), nextCursor };
}

/**
 * Seed 001's `get_recent_jobs`: the documents whose job moved last, across tenants, most recent
 * first. One `documents_status_updated_idx` walk per status, merged: no scan of the table.
 */
export async function listRecentDocuments(db: Database, limit: number): Promise<DocumentSummary[]> {
  const walks = documentStatuses
    .map(
      (_, i) =>
        `(SELECT id FROM documents WHERE status = $${i + 2} ORDER BY updated_at DESC, id DESC LIMIT $1)`,
    )
    .join(' UNION ALL ');
  const { rows } = await db.$client.query<{ id: string }>(walks, [limit, ...documentStatuses]);
  if (rows.length === 0) return [];
  return db
    .select(summaryColumns)
    .from(documents)
    .where(
      inArray(
        documents.id,
        rows.map((row) => row.id),
      ),
    )
    .orderBy(desc(documents.updatedAt), desc(documents.id))
    .limit(limit);
}

export interface DocumentSearchHit {
  id: string;
  kind: DocumentKind;
  externalId: string | null;
  filename: string | null;
  title: string | null;
  rank: number;
  /** Matching passages with the words found between `<b>` and `</b>`. */
  snippet: string;
}

/**
 * Full-text search of a tenant's complete documents (`websearch_to_tsquery`: quoted phrases,
 * `or`, `-word`), best first by `ts_rank_cd` over the stored vector, where the title weighs more
 * than the text. Snippets are cut from the ranked page only: `ts_headline` re-parses the text.
 */
export async function searchDocuments(
  db: Database,
  search: { tenantId: string; query: string; limit: number },
): Promise<DocumentSearchHit[]> {
  const { rows } = await db.$client.query<{
    id: string;
    kind: DocumentKind;
    external_id: string | null;
    filename: string | null;
    title: string | null;
    rank: number;
    snippet: string;
  }>({
    name: 'gleaner-search-documents',
    text: `
      WITH q AS (SELECT websearch_to_tsquery('english', $2) AS query),
      ranked AS (
        SELECT d.id, ts_rank_cd(d.search, q.query) AS rank
        FROM documents d, q
        WHERE d.tenant_id = $1 AND d.status = 'complete' AND d.search @@ q.query
        ORDER BY rank DESC, d.id
        LIMIT $3
      )
      SELECT d.id, d.kind, d.external_id, d.filename, d.title, r.rank::float8 AS rank,
             ts_headline('english', left(coalesce(d.text, ''), $4), q.query,
                         'MaxFragments=2, MaxWords=24, MinWords=8, FragmentDelimiter=" … "') AS snippet
      FROM ranked r JOIN documents d ON d.id = r.id, q
      ORDER BY r.rank DESC, d.id`,
    // Snippets come from the part of the text the vector indexes.
    values: [search.tenantId, search.query, search.limit, DOCUMENT_SEARCH_CHARS],
  });
  return rows.map((row) => ({
    id: row.id,
    kind: row.kind,
    externalId: row.external_id,
    filename: row.filename,
    title: row.title,
    rank: row.rank,
    snippet: row.snippet,
  }));
}

/** A document claimed for extraction: its bytes, and what its attempt is. */
export type ClaimedDocument = DocumentSummary & { content: Buffer };

/** The claim, prepared once per pool: every document's job runs it, and building it cost more than running it. */
const claimStatement = preparedFor((db) =>
  db
    .update(documents)
    .set({
      status: 'processing',
      attempts: sql`${documents.attempts} + 1`,
      workerId: sql`${sql.placeholder('workerId')}`,
      startedAt: sql`now()`,
      nextRetryAt: null,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(documents.id, sql.placeholder('id')),
        eq(documents.generation, sql.placeholder('generation')),
        inArray(documents.status, ['pending', 'retry_pending', 'processing']),
      ),
    )
    .returning({ ...summaryColumns, content: documents.content })
    .prepare('gleaner-claim-document'),
);

/**
 * pending | retry_pending → processing, for the job of this generation. A document already
 * `processing` for this generation is claimed again: its job is running again after its worker
 * died or let it go. Undefined when the document is complete, failed, of another generation, or
 * gone: the job has nothing to do.
 */
export async function claimDocument(
  db: Database,
  id: string,
  generation: number,
  workerId: string,
): Promise<ClaimedDocument | undefined> {
  const [row] = await claimStatement(db).execute({ id, generation, workerId });
  return row;
}

export interface ExtractedText {
  format: DocumentRow['format'];
  text: string;
  title: string | null;
  pageCount: number | null;
  textChars: number;
  truncated: boolean;
  extractionMs: number;
}

/**
 * One guarded status change of one job generation: applied only while the document is in one of
 * `from`, so a change made twice, late, or for an older generation changes nothing (false).
 */
async function transition(
  db: Database,
  id: string,
  generation: number,
  from: readonly DocumentStatus[],
  changes: PgUpdateSetSource<typeof documents>,
): Promise<boolean> {
  const rows = await db
    .update(documents)
    .set(changes)
    .where(
      and(
        eq(documents.id, id),
        eq(documents.generation, generation),
        inArray(documents.status, [...from]),
      ),
    )
    .returning({ id: documents.id });
  return rows.length > 0;
}

/** Who completed an attempt, for its metrics row (seed 001's per-job metrics). */
export interface CompletionMetric {
  workerId: string;
  attempt: number;
  bytes: number;
}

/**
 * processing → complete with the extracted text, and, given `metric`, the attempt's metrics row
 * (outcome `complete`, its duration and pages from `result`) in the same statement: a document
 * seen complete has its row. The row is written even when the change is refused, since the
 * attempt ran. False when the document was no longer this job's.
 */
export async function completeDocument(
  db: Database,
  id: string,
  generation: number,
  result: ExtractedText,
  metric?: CompletionMetric,
): Promise<boolean> {
  const { rows } = await db.$client.query<{ id: string }>({
    name: 'gleaner-complete-document',
    text: `
      WITH metric AS (
        INSERT INTO document_extraction_metrics
          (document_id, worker_id, attempt, duration_ms, bytes, pages, outcome)
        SELECT $1, $10, $11, $8, $12, $5, 'complete' WHERE $10::text IS NOT NULL
      )
      UPDATE documents SET status = 'complete', format = $3, text = $4, title = $9,
        page_count = $5, text_chars = $6, truncated = $7, extraction_ms = $8,
        error_type = NULL, error_message = NULL, completed_at = now(), updated_at = now()
      WHERE id = $1 AND generation = $2 AND status = 'processing'
      RETURNING id`,
    values: [
      id,
      generation,
      result.format,
      withoutNul(result.text),
      result.pageCount,
      result.textChars,
      result.truncated,
      result.extractionMs,
      result.title === null ? null : withoutNul(result.title),
      metric?.workerId ?? null,
      metric?.attempt ?? null,
      metric?.bytes ?? null,
    ],
  });
  return rows.length > 0;
}

export interface DocumentFailure {
  errorType: DocumentErrorType;
  message: string;
}

/** processing → retry_pending, its next attempt due at `nextRetryAt`. */
export async function scheduleDocumentRetry(
  db: Database,
  id: string,
  generation: number,
  failure: DocumentFailure & { nextRetryAt: Date },
): Promise<boolean> {
  return transition(db, id, generation, ['processing'], {
    status: 'retry_pending',
    errorType: failure.errorType,
    errorMessage: withoutNul(failure.message).slice(0, 2000),
    nextRetryAt: failure.nextRetryAt,
    updatedAt: sql`now()`,
  });
}

/**
 * Any state but complete → failed: a permanent error, the last attempt, or a job that failed
 * for good without its handler (stalled too often).
 */
export async function failDocument(
  db: Database,
  id: string,
  generation: number,
  failure: DocumentFailure,
): Promise<boolean> {
  return transition(db, id, generation, ['pending', 'processing', 'retry_pending'], {
    status: 'failed',
    errorType: failure.errorType,
    errorMessage: withoutNul(failure.message).slice(0, 2000),
    nextRetryAt: null,
    completedAt: sql`now()`,
    updatedAt: sql`now()`,
  });
}

/**
 * processing → pending (seed 001's `release`): its worker let it go unfinished (a shutdown), or
 * it went stale. With `workerId`, only while that worker still holds it. The attempt it was in
 * never ended, and does not count (BullMQ does not count it either).
 */
export async function releaseDocument(
  db: Database,
  id: string,
  workerId?: string,
): Promise<DocumentWork | undefined> {
  const [row] = await db
    .update(documents)
    .set({
      status: 'pending',
      attempts: sql`greatest(${documents.attempts} - 1, 0)`,
      workerId: null,
      startedAt: null,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(documents.id, id),
        eq(documents.status, 'processing'),
        workerId === undefined ? undefined : eq(documents.workerId, workerId),
      ),
    )
    .returning(workColumns);
  return row;
}

/**
 * failed → pending in a new generation with its attempts reset (seed 001's `retry_failed`): every
 * failed document, or those of `ids` that are failed or cancelled (an operator who names a
 * cancelled document wants it after all; retrying every failed one leaves the cancelled alone).
 * Returns what to queue.
 */
export async function retryFailedDocuments(
  db: Database,
  ids?: readonly string[],
): Promise<DocumentWork[]> {
  return db
    .update(documents)
    .set({
      status: 'pending',
      generation: sql`${documents.generation} + 1`,
      attempts: 0,
      errorType: null,
      errorMessage: null,
      workerId: null,
      startedAt: null,
      completedAt: null,
      nextRetryAt: null,
      queuedAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        ids === undefined
          ? eq(documents.status, 'failed')
          : and(
              inArray(documents.status, ['failed', 'cancelled']),
              inArray(documents.id, [...ids]),
            ),
      ),
    )
    .returning(workColumns);
}

export interface ExtractionMetric {
  documentId: string;
  workerId: string;
  attempt: number;
  durationMs: number;
  bytes: number;
  pages: number | null;
  outcome: ExtractionOutcome;
  errorType: DocumentErrorType | null;
}

export async function recordExtractionMetric(
  db: Database,
  metric: ExtractionMetric,
): Promise<void> {
  await db.insert(documentExtractionMetrics).values(metric);
}

export interface DocumentQueueStats {
  pending: number;
  processing: number;
  retryPending: number;
  failed: number;
  complete: number;
  /** Extractions completed in the last 24 hours. */
  completed24h: number;
  /** Extractions completed per second over the last 5 minutes. */
  throughputPerSecond: number;
  /** Mean duration of the last 24 hours' completed extractions; null when there were none. */
  avgExtractionTimeMs: number | null;
}

/** Seconds over which `throughputPerSecond` is measured. */
const THROUGHPUT_WINDOW_S = 300;

/** Seed 001's `get_queue_stats`: counts by status (an index-only count), and the last day's metrics. */
export async function documentQueueStats(db: Database): Promise<DocumentQueueStats> {
  const [counts, metrics] = await Promise.all([
    db.$client.query<{ status: DocumentStatus; count: number }>(
      'SELECT status, count(*)::int AS count FROM documents GROUP BY status',
    ),
    db.$client.query<{ completed_24h: number; recent: number; avg_ms: number | null }>(
      `SELECT count(*)::int AS completed_24h,
              count(*) FILTER (WHERE created_at >= now() - make_interval(secs => $1))::int AS recent,
              avg(duration_ms)::float8 AS avg_ms
       FROM document_extraction_metrics
       WHERE created_at >= now() - interval '24 hours' AND outcome = 'complete'`,
      [THROUGHPUT_WINDOW_S],
    ),
  ]);
  const by = new Map(counts.rows.map((row) => [row.status, row.count]));
  const row = metrics.rows[0];
  return {
    pending: by.get('pending') ?? 0,
    processing: by.get('processing') ?? 0,
    retryPending: by.get('retry_pending') ?? 0,
    failed: by.get('failed') ?? 0,
    complete: by.get('complete') ?? 0,
    completed24h: row?.completed_24h ?? 0,
    throughputPerSecond: (row?.recent ?? 0) / THROUGHPUT_WINDOW_S,
    avgExtractionTimeMs:
      row?.avg_ms === null || row?.avg_ms === undefined ? null : Math.round(row.avg_ms),
  };
}

/** A document waiting for its job, as the reconciler sees it. */
export type QuietDocument = DocumentWork & { status: 'pending' | 'retry_pending' };

/** Documents in one of `statuses` whose row has not changed for `ms`, oldest first. */
function untouchedFor(statuses: DocumentStatus[], ms: number) {
  return and(
    inArray(documents.status, statuses),
    lt(documents.updatedAt, sql`now() - make_interval(secs => ${ms}::float8 / 1000)`),
  );
}

/**
 * Documents waiting (`pending`, `retry_pending`) whose row has not changed for `quietMs`, oldest
 * first: a job is added right after its row is written, so one this quiet whose job Redis lacks
 * lost it.
 */
export async function listQuietWaitingDocuments(
  db: Database,
  quietMs: number,
  limit: number,
): Promise<QuietDocument[]> {
  const rows = await db
    .select({ ...workColumns, nextRetryAt: documents.nextRetryAt, status: documents.status })
    .from(documents)
    .where(untouchedFor(['pending', 'retry_pending'], quietMs))
    .orderBy(documents.updatedAt)
    .limit(limit);
  return rows as QuietDocument[];
}

/** Documents `processing` for longer than `staleMs` (seed 001's `cleanup_stale_jobs`), oldest first. */
export async function listStaleProcessingDocuments(
  db: Database,
  staleMs: number,
  limit: number,
): Promise<(DocumentWork & { workerId: string | null })[]> {
  return db
    .select({ ...workColumns, workerId: documents.workerId })
    .from(documents)
    .where(untouchedFor(['processing'], staleMs))
    .orderBy(documents.updatedAt)
    .limit(limit);
}

/** A document cancelled: what it was doing, and the job generation that no longer counts. */
export interface CancelledDocument {
  id: string;
  tenantId: string;
  previousStatus: DocumentStatus;
  /** The generation its queued or running job carries: that job's results are refused now. */
  generation: number;
}

/**
 * Cancels a document's extraction (seed 001's `cancel`): one waiting (`pending`,
 * `retry_pending`) or being extracted (`processing`) becomes `cancelled`, and its generation moves
 * on, so that its job, queued or running, can neither claim it nor store a result. Undefined when
 * it is not one of those (unknown, complete, failed, cancelled already).
 */
export async function cancelDocument(
  db: Database,
  id: string,
): Promise<CancelledDocument | undefined> {
  const { rows } = await db.$client.query<{
    id: string;
    tenant_id: string;
    previous_status: DocumentStatus;
    generation: number;
  }>({
    name: 'gleaner-cancel-document',
    text: `
      WITH target AS (
        SELECT id, status, generation FROM documents WHERE id = $1 FOR UPDATE
      )
      UPDATE documents d
      SET status = 'cancelled', generation = d.generation + 1, worker_id = NULL,
          next_retry_at = NULL, error_message = 'cancelled', updated_at = now()
      FROM target t
      WHERE d.id = t.id AND t.status IN ('pending', 'retry_pending', 'processing')
      RETURNING d.id, d.tenant_id, t.status AS previous_status, t.generation`,
    values: [id],
  });
  const row = rows[0];
  return row
    ? {
        id: row.id,
        tenantId: row.tenant_id,
        previousStatus: row.previous_status,
        generation: row.generation,
      }
    : undefined;
}
