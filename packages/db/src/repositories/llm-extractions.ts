import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Database } from '../client.js';
import {
  activeLlmExtractionStatuses,
  documents,
  llmExtractions,
  type LlmExtractionRow,
  type LlmExtractionStatus,
  type LlmSubjectType,
} from '../schema.js';

/**
 * LLM extractions (seed 002), one row per document or posting. Every status change is one guarded
 * UPDATE on the subject, its version and the statuses it may leave, so a job delivered twice, a
 * job of an older version and a repair racing a worker each change a row at most once:
 *
 *   queued ──claim──► processing ──► ready | skipped
 *     ▲                  │  └──────► failed (the last attempt)
 *     └──── release ─────┘
 *   any status ──queue under another version, or requeue──► queued
 */

export interface LlmSubject {
  subjectType: LlmSubjectType;
  subjectId: string;
}

export interface LlmExtractionRequest extends LlmSubject {
  tenantId: string;
  version: string;
  correlationId?: string | null;
}

/** What a queued extraction's job is added with. */
export interface LlmExtractionWork extends LlmSubject {
  version: string;
  correlationId: string | null;
}

const workColumns = {
  subjectType: llmExtractions.subjectType,
  subjectId: llmExtractions.subjectId,
  version: llmExtractions.version,
  correlationId: llmExtractions.correlationId,
};

const subjectIs = (subject: LlmSubject) =>
  and(
    eq(llmExtractions.subjectType, subject.subjectType),
    eq(llmExtractions.subjectId, subject.subjectId),
  );

/**
 * Marks subjects `queued` under `version` and returns those that now wait for a job. A subject
 * already extracted (or skipped, or failed) under this version is left alone unless `requeue`
 * names its status; one queued or processing under this version is returned as it is (its job id
 * is the dedupe); one under another version is queued afresh whatever its status.
 */
export async function queueLlmExtractions(
  db: Database,
  requests: readonly LlmExtractionRequest[],
  options: { requeue?: readonly LlmExtractionStatus[] } = {},
): Promise<LlmExtractionWork[]> {
  if (requests.length === 0) return [];
  const requeue = [...(options.requeue ?? [])];
  const requeueCondition =
    requeue.length > 0
      ? sql` OR ${llmExtractions.status} IN (${sql.join(
          requeue.map((status) => sql`${status}`),
          sql`, `,
        )})`
      : sql``;
  const rows = await db
    .insert(llmExtractions)
    .values(
      requests.map((request) => ({
        subjectType: request.subjectType,
        subjectId: request.subjectId,
        tenantId: request.tenantId,
        version: request.version,
        status: 'queued' as const,
        correlationId: request.correlationId ?? null,
      })),
    )
    .onConflictDoUpdate({
      target: [llmExtractions.subjectType, llmExtractions.subjectId],
      set: {
        status: 'queued',
        version: sql`excluded.version`,
        tenantId: sql`excluded.tenant_id`,
        correlationId: sql`excluded.correlation_id`,
        attempts: 0,
        modelCalls: 0,
        error: null,
        queuedAt: sql`now()`,
        startedAt: null,
        updatedAt: sql`now()`,
      },
      setWhere: sql`${llmExtractions.version} <> excluded.version${requeueCondition}`,
    })
    .returning(workColumns);
  // Rows the conflict left alone: those already waiting under this version still need their job.
  const returned = new Set(rows.map((row) => `${row.subjectType}/${row.subjectId}`));
  const untouched = requests.filter(
    (request) => !returned.has(`${request.subjectType}/${request.subjectId}`),
  );
  if (untouched.length === 0) return rows;
  const waiting = await db
    .select(workColumns)
    .from(llmExtractions)
    .where(
      and(
        inArray(
          llmExtractions.subjectId,
          untouched.map((request) => request.subjectId),
        ),
        inArray(llmExtractions.status, [...activeLlmExtractionStatuses]),
      ),
    );
  const wanted = new Map(untouched.map((request) => [request.subjectId, request]));
  return [
    ...rows,
    ...waiting.filter((row) => {
      const request = wanted.get(row.subjectId);
      return request?.subjectType === row.subjectType && request.version === row.version;
    }),
  ];
}

/**
 * queued | processing → processing for a job of this version (a job running again after its
 * worker died claims its own row again). Undefined when the row is of another version, done, or
 * gone: the job has nothing to do.
 */
export async function claimLlmExtraction(
  db: Database,
  subject: LlmSubject,
  version: string,
): Promise<LlmExtractionRow | undefined> {
  const [row] = await db
    .update(llmExtractions)
    .set({
      status: 'processing',
      attempts: sql`${llmExtractions.attempts} + 1`,
      startedAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        subjectIs(subject),
        eq(llmExtractions.version, version),
        inArray(llmExtractions.status, ['queued', 'processing']),
      ),
    )
    .returning();
  return row;
}

/** One guarded change of a row of this version that is `processing`; false when it was not. */
async function finish(
  db: Database,
  subject: LlmSubject,
  version: string,
  changes: PgUpdateSetSource<typeof llmExtractions>,
  from: readonly LlmExtractionStatus[] = ['processing'],
): Promise<boolean> {
  const rows = await db
    .update(llmExtractions)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(
      and(
        subjectIs(subject),
        eq(llmExtractions.version, version),
        inArray(llmExtractions.status, [...from]),
      ),
    )
    .returning({ id: llmExtractions.id });
  return rows.length > 0;
}

export interface LlmExtractionResult {
  model: string;
  confidence: number;
  fields: Record<string, unknown>;
  dropped: string[];
  fallbackUsed: boolean;
  fallbackReason: string | null;
  promptTokens: number;
  completionTokens: number;
}

/**
 * processing → ready with the grounded fields. Returns whether the row changed, and whether its
 * fields came from another version before (seed 002's re-embed trigger).
 */
export async function completeLlmExtraction(
  db: Database,
  subject: LlmSubject,
  version: string,
  result: LlmExtractionResult,
): Promise<{ completed: boolean; versionChanged: boolean }> {
  const { rows } = await db.$client.query<{ previous: string | null }>(
    `UPDATE llm_extractions AS e
     SET status = 'ready', model = $4, confidence = $5, fields = $6, dropped = $7,
         fallback_used = $8, fallback_reason = $9,
         prompt_tokens = e.prompt_tokens + $10, completion_tokens = e.completion_tokens + $11,
         extracted_version = $3, error = NULL, extracted_at = now(), updated_at = now()
     FROM (SELECT extracted_version FROM llm_extractions
           WHERE subject_type = $1 AND subject_id = $2) AS before
     WHERE e.subject_type = $1 AND e.subject_id = $2 AND e.version = $3
       AND e.status = 'processing'
     RETURNING before.extracted_version AS previous`,
    [
      subject.subjectType,
      subject.subjectId,
      version,
      result.model,
      result.confidence,
      JSON.stringify(result.fields),
      JSON.stringify(result.dropped),
      result.fallbackUsed,
      result.fallbackReason,
      result.promptTokens,
      result.completionTokens,
    ],
  );
  const row = rows[0];
  return {
    completed: row !== undefined,
    versionChanged: row !== undefined && row.previous !== version,
  };
}

/** processing → skipped: the text is too short to extract from (seed 002: under 100 characters). */
export function skipLlmExtraction(
  db: Database,
  subject: LlmSubject,
  version: string,
  reason: string,
): Promise<boolean> {
  return finish(db, subject, version, {
    status: 'skipped',
    error: reason,
    extractedAt: sql`now()`,
  });
}

/** queued | processing → failed: the job gave up (its last attempt, a permanent error, stalls). */
export function failLlmExtraction(
  db: Database,
  subject: LlmSubject,
  version: string,
  message: string,
): Promise<boolean> {
  return finish(db, subject, version, { status: 'failed', error: message.slice(0, 2000) }, [
    'queued',
    'processing',
  ]);
}

/**
 * One model answer paid for by the extraction in flight (`model_calls`), and, when it is about to
 * ask the fallback, why: a later attempt goes on from there instead of asking the primary again.
 */
export async function recordLlmAnswer(
  db: Database,
  subject: LlmSubject,
  version: string,
  change: { answered: boolean; fallbackReason?: string },
): Promise<void> {
  await finish(db, subject, version, {
    ...(change.answered ? { modelCalls: sql`${llmExtractions.modelCalls} + 1` } : {}),
    ...(change.fallbackReason === undefined ? {} : { fallbackReason: change.fallbackReason }),
  });
}

/** processing → queued: a worker shutting down hands the extraction back, its attempt uncounted. */
export function releaseLlmExtraction(
  db: Database,
  subject: LlmSubject,
  version: string,
): Promise<boolean> {
  return finish(db, subject, version, {
    status: 'queued',
    attempts: sql`greatest(${llmExtractions.attempts} - 1, 0)`,
    startedAt: null,
  });
}

export async function getLlmExtraction(
  db: Database,
  subject: LlmSubject,
): Promise<LlmExtractionRow | undefined> {
  const [row] = await db.select().from(llmExtractions).where(subjectIs(subject));
  return row;
}

/**
 * Extractions a tenant has queued or running, counted up to `cap` (so the API's check costs at
 * most `cap` index entries), plus the resumes of the tenant still waiting for their text, which
 * become extractions next.
 */
export async function pendingLlmWork(db: Database, tenantId: string, cap: number): Promise<number> {
  const { rows } = await db.$client.query<{ pending: number }>(
    `SELECT (SELECT count(*) FROM (SELECT 1 FROM llm_extractions
              WHERE tenant_id = $1 AND status IN ('queued','processing') LIMIT $2) AS e)
          + (SELECT count(*) FROM (SELECT 1 FROM documents
              WHERE tenant_id = $1 AND status IN ('pending','processing','retry_pending')
                AND kind = 'resume' LIMIT $2) AS d) AS pending`,
    [tenantId, cap],
  );
  return Number(rows[0]?.pending ?? 0);
}

export interface LlmExtractionTenantStatus {
  /** Rows by status, and `none`: the tenant's complete resumes never queued for extraction. */
  statusCounts: Record<string, number>;
  /** Share of the tenant's ready extractions that the fallback model answered; null with none. */
  fallbackRate: number | null;
}

/** Seed 002's `status_counts` of one tenant, and its fallback rate. */
export async function llmExtractionTenantStatus(
  db: Database,
  tenantId: string,
): Promise<LlmExtractionTenantStatus> {
  const [counts, none] = await Promise.all([
    db.$client.query<{ status: string; count: number; fallback: number }>(
      `SELECT status, count(*)::int AS count,
              count(*) FILTER (WHERE fallback_used)::int AS fallback
       FROM llm_extractions WHERE tenant_id = $1 GROUP BY status`,
      [tenantId],
    ),
    db.$client.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM documents d
       WHERE d.tenant_id = $1 AND d.kind = 'resume' AND d.status = 'complete'
         AND NOT EXISTS (SELECT 1 FROM llm_extractions e
                         WHERE e.subject_type = 'document' AND e.subject_id = d.id)`,
      [tenantId],
    ),
  ]);
  const statusCounts: Record<string, number> = {};
  let ready = 0;
  let fallback = 0;
  for (const row of counts.rows) {
    statusCounts[row.status] = row.count;
    if (row.status === 'ready') {
      ready = row.count;
      fallback = row.fallback;
    }
  }
  statusCounts.none = none.rows[0]?.count ?? 0;
  return { statusCounts, fallbackRate: ready === 0 ? null : fallback / ready };
}

export interface RequeueSelection {
  tenantId: string;
  /** Extractions in this status (of any version). */
  status?: LlmExtractionStatus;
  /** The tenant's complete resumes that were never extracted (seed 002's null status). */
  onlyNullStatus?: boolean;
  limit: number;
}

/** What `POST /admin/extraction/requeue` would queue: subjects with their tenant, oldest first. */
export async function selectLlmRequeue(
  db: Database,
  selection: RequeueSelection,
): Promise<(LlmSubject & { tenantId: string })[]> {
  if (selection.onlyNullStatus) {
    const rows = await db
      .select({ subjectId: documents.id, tenantId: documents.tenantId })
      .from(documents)
      .where(
        and(
          eq(documents.tenantId, selection.tenantId),
          eq(documents.kind, 'resume'),
          eq(documents.status, 'complete'),
          sql`NOT EXISTS (SELECT 1 FROM ${llmExtractions} e
                          WHERE e.subject_type = 'document' AND e.subject_id = ${documents.id})`,
        ),
      )
      .orderBy(documents.createdAt)
      .limit(selection.limit);
    return rows.map((row) => ({ ...row, subjectType: 'document' as const }));
  }
  return db
    .select({
      subjectType: llmExtractions.subjectType,
      subjectId: llmExtractions.subjectId,
      tenantId: llmExtractions.tenantId,
    })
    .from(llmExtractions)
    .where(
      and(
        eq(llmExtractions.tenantId, selection.tenantId),
        selection.status ? eq(llmExtractions.status, selection.status) : undefined,
      ),
    )
    .orderBy(llmExtractions.createdAt)
    .limit(selection.limit);
}

/**
 * Extractions `queued` whose row has not changed for `quietMs`, oldest first: a job is added right
 * after its row is queued, so one this quiet whose job Redis lacks lost it. Also those
 * `processing` for longer than `staleMs`, whose worker is gone.
 */
export async function listQuietLlmExtractions(
  db: Database,
  { quietMs, staleMs, limit }: { quietMs: number; staleMs: number; limit: number },
): Promise<(LlmExtractionWork & { status: LlmExtractionStatus })[]> {
  const olderThan = (ms: number) =>
    lt(llmExtractions.updatedAt, sql`now() - make_interval(secs => ${ms}::float8 / 1000)`);
  return db
    .select({ ...workColumns, status: llmExtractions.status })
    .from(llmExtractions)
    .where(
      sql`(${and(eq(llmExtractions.status, 'queued'), olderThan(quietMs))})
          OR (${and(eq(llmExtractions.status, 'processing'), olderThan(staleMs))})`,
    )
    .orderBy(llmExtractions.updatedAt)
    .limit(limit);
}
