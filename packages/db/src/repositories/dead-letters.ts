import { and, eq, inArray, sql, TransactionRollbackError } from 'drizzle-orm';
import type { Database } from '../client.js';
import { ActiveRunExistsError, isUniqueViolation } from '../errors.js';
import {
  postings,
  scrapeRuns,
  type DocumentStatus,
  type LlmExtractionStatus,
  type PostingStatus,
  type RunRow,
  type RunStatus,
} from '../schema.js';
import { newPublicRunId } from './runs.js';

/**
 * What operators' dead-letter endpoints read and write of Postgres: the rows a dead-lettered job
 * concerns (to show its site, run and tenant, and to tell whether it can still be requeued), and
 * the replay run that gives postings back to the workers.
 */

/** The ids a batch of dead letters names in its payloads. */
export interface DeadLetterRefs {
  runIds: readonly string[];
  postingIds: readonly string[];
  documentIds: readonly string[];
  siteIds: readonly string[];
}

export interface DeadLetterSite {
  id: string;
  name: string;
  tenantId: string | null;
  enabled: boolean;
  minPauseSeconds: number;
  rateLimitRps: number | null;
  /** Retries of its crawl jobs after their first attempt (`max_retries`). */
  maxRetries: number;
  /** Whether the site has a queued or running run (a replay must wait for it to end). */
  hasActiveRun: boolean;
}

export interface DeadLetterRun {
  id: string;
  /** The public id (`manual_…`, `sched_…`). */
  runId: string;
  siteId: string;
  status: RunStatus;
}

export interface DeadLetterPosting {
  id: string;
  siteId: string;
  runId: string | null;
  status: PostingStatus;
  /** Its page is stored: the extract and LLM stages can work from it without fetching. */
  hasBody: boolean;
  llmStatus: LlmExtractionStatus | null;
  llmTenantId: string | null;
}

export interface DeadLetterDocument {
  id: string;
  tenantId: string;
  status: DocumentStatus;
  generation: number;
  llmStatus: LlmExtractionStatus | null;
}

/** The rows dead letters concern, by id; an id absent from its map names a row that is gone. */
export interface DeadLetterSubjects {
  sites: Map<string, DeadLetterSite>;
  runs: Map<string, DeadLetterRun>;
  postings: Map<string, DeadLetterPosting>;
  documents: Map<string, DeadLetterDocument>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Payloads are validated on park, but a uuid cast that fails would fail the whole batch. */
const uuids = (ids: Iterable<string>) => [...new Set([...ids].filter((id) => UUID.test(id)))];

/**
 * Reads the rows a batch of dead letters names: postings and documents (with their LLM
 * extraction's status), then the runs named directly or through a posting, then the sites named
 * by any of them. Three round trips per batch, whatever its size.
 */
export async function readDeadLetterSubjects(
  db: Database,
  refs: DeadLetterRefs,
): Promise<DeadLetterSubjects> {
  const [postingRows, documentRows] = await Promise.all([
    db.$client.query<{
      id: string;
      site_id: string;
      run_id: string | null;
      status: PostingStatus;
      has_body: boolean;
      llm_status: LlmExtractionStatus | null;
      llm_tenant_id: string | null;
    }>(
      `SELECT p.id, p.site_id, p.run_id, p.status, p.body_sha256 IS NOT NULL AS has_body,
              e.status AS llm_status, e.tenant_id AS llm_tenant_id
       FROM postings p
       LEFT JOIN llm_extractions e ON e.subject_type = 'posting' AND e.subject_id = p.id
       WHERE p.id = ANY($1::uuid[])`,
      [uuids(refs.postingIds)],
    ),
    db.$client.query<{
      id: string;
      tenant_id: string;
      status: DocumentStatus;
      generation: number;
      llm_status: LlmExtractionStatus | null;
    }>(
      `SELECT d.id, d.tenant_id, d.status, d.generation, e.status AS llm_status
       FROM documents d
       LEFT JOIN llm_extractions e ON e.subject_type = 'document' AND e.subject_id = d.id
       WHERE d.id = ANY($1::uuid[])`,
      [uuids(refs.documentIds)],
    ),
  ]);
  const postingMap = new Map<string, DeadLetterPosting>(
    postingRows.rows.map((row) => [
      row.id,
      {
        id: row.id,
        siteId: row.site_id,
        runId: row.run_id,
        status: row.status,
        hasBody: row.has_body,
        llmStatus: row.llm_status,
        llmTenantId: row.llm_tenant_id,
      },
    ]),
  );
  const documentMap = new Map<string, DeadLetterDocument>(
    documentRows.rows.map((row) => [
      row.id,
      {
        id: row.id,
        tenantId: row.tenant_id,
        status: row.status,
        generation: row.generation,
        llmStatus: row.llm_status,
      },
    ]),
  );

  const runIds = [...refs.runIds, ...[...postingMap.values()].flatMap((p) => p.runId ?? [])];
  const { rows: runRows } = await db.$client.query<{
    id: string;
    run_id: string;
    site_schedule_id: string;
    status: RunStatus;
  }>('SELECT id, run_id, site_schedule_id, status FROM scrape_runs WHERE id = ANY($1::uuid[])', [
    uuids(runIds),
  ]);
  const runMap = new Map<string, DeadLetterRun>(
    runRows.map((row) => [
      row.id,
      { id: row.id, runId: row.run_id, siteId: row.site_schedule_id, status: row.status },
    ]),
  );

  const siteIds = [
    ...refs.siteIds,
    ...[...postingMap.values()].map((posting) => posting.siteId),
    ...[...runMap.values()].map((run) => run.siteId),
  ];
  const { rows: siteRows } = await db.$client.query<{
    id: string;
    site_name: string;
    tenant_id: string | null;
    enabled: boolean;
    min_pause_seconds: number;
    rate_limit_rps: number | null;
    max_retries: number;
    has_active_run: boolean;
  }>(
    `SELECT s.id, s.site_name, s.tenant_id, s.enabled, s.min_pause_seconds, s.rate_limit_rps,
            s.max_retries,
            EXISTS (SELECT 1 FROM scrape_runs r
                    WHERE r.site_schedule_id = s.id AND r.status IN ('queued', 'running'))
              AS has_active_run
     FROM site_schedules s WHERE s.id = ANY($1::uuid[])`,
    [uuids(siteIds)],
  );
  const siteMap = new Map<string, DeadLetterSite>(
    siteRows.map((row) => [
      row.id,
      {
        id: row.id,
        name: row.site_name,
        tenantId: row.tenant_id,
        enabled: row.enabled,
        minPauseSeconds: row.min_pause_seconds,
        rateLimitRps: row.rate_limit_rps,
        maxRetries: row.max_retries,
        hasActiveRun: row.has_active_run,
      },
    ]),
  );
  return { sites: siteMap, runs: runMap, postings: postingMap, documents: documentMap };
}

/**
 * Starts a run that replays postings of one site whose work failed for good, rather than listing
 * the site: in one transaction it is created `running` with its listing done (and not complete,
 * so it expires nothing), and those of `postingIds` still `error` move to it as `pending`. The
 * workers then take them like any posting pending in a running run, and the run finalizes like
 * any other when the last one settles.
 *
 * Returns the run and the postings moved, or undefined when none was still `error` (no run is
 * left behind). Throws `ActiveRunExistsError` when the site has a queued or running run.
 */
export async function startReplayRun(
  db: Database,
  input: { siteId: string; postingIds: readonly string[]; correlationId?: string | null },
): Promise<{ run: RunRow; postingIds: string[] } | undefined> {
  const ids = uuids(input.postingIds);
  if (ids.length === 0) return undefined;
  try {
    return await db.transaction(async (tx) => {
      const [run] = await tx
        .insert(scrapeRuns)
        .values({
          runId: newPublicRunId('manual'),
          siteScheduleId: input.siteId,
          trigger: 'manual',
          status: 'running',
          startedAt: sql`now()`,
          listingDone: true,
          listingComplete: false,
          correlationId: input.correlationId ?? null,
        })
        .returning();
      const moved = await tx
        .update(postings)
        .set({ runId: run!.id, status: 'pending', error: null, updatedAt: sql`now()` })
        .where(
          and(
            inArray(postings.id, ids),
            eq(postings.siteId, input.siteId),
            eq(postings.status, 'error'),
          ),
        )
        .returning({ id: postings.id });
      if (moved.length === 0) return tx.rollback();
      const [counted] = await tx
        .update(scrapeRuns)
        .set({
          requestedPages: moved.length,
          message: `replays ${moved.length} ${moved.length === 1 ? 'posting' : 'postings'} whose work had failed for good`,
        })
        .where(eq(scrapeRuns.id, run!.id))
        .returning();
      return { run: counted!, postingIds: moved.map((row) => row.id) };
    });
  } catch (error) {
    if (isUniqueViolation(error, 'scrape_runs_one_active_per_site'))
      throw new ActiveRunExistsError(input.siteId);
    if (error instanceof TransactionRollbackError) return undefined;
    throw error;
  }
}
