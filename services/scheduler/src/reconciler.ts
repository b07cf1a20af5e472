import {
  failDocument,
  failLlmExtraction,
  failRun,
  failRunPastDeadline,
  finalizeRun,
  listActiveRuns,
  listQuietLlmExtractions,
  listQuietPendingPostings,
  listQuietWaitingDocuments,
  listStaleProcessingDocuments,
  releaseDocument,
  releaseLlmExtraction,
  settlePendingPostingAsError,
  settlePostings,
  type ActiveRun,
  type Database,
  type DocumentWork,
  type QuietPendingPosting,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import {
  crawlJob,
  documentJob,
  enqueue,
  enqueueBulk,
  enqueueDocuments,
  enqueueLlmExtractions,
  extractJob,
  jobLiveness,
  llmExtractJob,
  noRepairs,
  removeFinishedJob,
  scrapeJob,
  type LlmQueueSettings,
  type Queues,
  type RepairCounts,
} from '@gleaner/queue';

export interface ReconcilerOptions {
  db: Database;
  queues: Queues;
  logger: Logger;
  /** A run older than this is failed, with its pending postings (`RUN_DEADLINE_MS`). */
  runDeadlineMs: number;
  /**
   * How long a row must have been quiet before its missing job counts as lost
   * (`RECONCILE_GRACE_MS`): jobs are added right after their rows are written, never this late.
   */
  graceMs: number;
  /** Most active runs, pending postings and documents looked at per pass. */
  maxRuns?: number;
  maxPostings?: number;
  maxDocuments?: number;
  /**
   * Documents (seed 001): the attempts of the jobs it queues (`DOCUMENT_MAX_RETRIES`) and how long
   * a document may be `processing` before it counts as stale (`DOCUMENT_STALE_AFTER_MS`). Without
   * it, documents are not reconciled.
   */
  documents?: { maxRetries: number; staleAfterMs: number };
  /**
   * LLM extractions (seed 002), while EXTRACTION_ENABLED is on: how their jobs are queued, and
   * how long one may be `processing` before it counts as stale (past its job's timeout). Without
   * it, extractions are not reconciled.
   */
  llm?: LlmQueueSettings & { staleAfterMs: number };
}

/**
 * Compares Postgres (the truth) with Redis (the work) and repairs what Redis lost: the backstop
 * that makes "nothing lost" hold on an at-least-once queue (DESIGN.md). For each active run:
 *
 * - past its deadline → failed, its pending postings settled `error`;
 * - listing not done and no live scrape job → the scrape job is queued again (a job that failed
 *   for good fails the run, as its handler would have);
 * - postings pending with no live crawl or extract job → the stage they were at is queued again
 *   (extract when this run stored their page, crawl otherwise); a job that failed for good
 *   (stalled too often included) settles its posting `error`, as its handler would have;
 * - then every running run is offered to the guarded finalize, which closes those whose work is
 *   all terminal.
 *
 * And for documents:
 *
 * - `pending` or `retry_pending` for longer than the grace period with no live job → the job is
 *   queued again (a `retry_pending` one after what is left of its delay);
 * - `processing` for longer than `DOCUMENT_STALE_AFTER_MS` with no active job (its worker died and
 *   the job was lost or is waiting again) → released to `pending`, its job queued again when lost;
 * - either with a job that failed for good (stalled too often) → `failed`, as the handler would.
 *
 * And for LLM extractions: `queued` past the grace period, or `processing` past its stale
 * threshold, with no live job → queued again; with a job that failed for good → `failed`, its
 * posting settled `error`.
 *
 * Every repair is idempotent: a job queued twice runs once in effect (deterministic ids, guarded
 * settles), and a posting settled by a worker meanwhile is left as it is.
 */
export function createReconciler(options: ReconcilerOptions) {
  const { db, queues, logger, runDeadlineMs, graceMs } = options;
  const maxRuns = options.maxRuns ?? 1_000;
  const maxPostings = options.maxPostings ?? 5_000;
  const maxDocuments = options.maxDocuments ?? 5_000;

  async function failPastDeadline(run: ActiveRun, repairs: RepairCounts): Promise<void> {
    const minutes = Math.round(runDeadlineMs / 60_000);
    const message = `run did not finish within its deadline of ${minutes} min (RUN_DEADLINE_MS); postings still pending were settled as errors`;
    const failed = await failRunPastDeadline(db, run.id, message);
    if (!failed) return;
    repairs.runsPastDeadline += 1;
    logger.warn(
      { runId: run.id, publicRunId: run.runId, pendingSettled: failed.pendingSettled },
      'reconciler: run failed past its deadline',
    );
  }

  async function repairListing(runs: ActiveRun[], repairs: RepairCounts): Promise<void> {
    const quiet = runs.filter((run) => !run.listingDone && run.quietMs >= graceMs);
    if (quiet.length === 0) return;
    const ids = quiet.map((run) => scrapeJob.jobId({ runId: run.id, siteId: run.siteId }));
    const liveness = await jobLiveness(queues, 'scrape', ids);
    for (const [index, run] of quiet.entries()) {
      const jobId = ids[index]!;
      const job = liveness.get(jobId);
      if (!job || job.state === 'live') continue;
      if (job.state === 'failed') {
        if (await failRun(db, run.id, `listing failed: ${job.reason}`)) {
          repairs.runsFailed += 1;
          logger.warn(
            { runId: run.id, jobId, reason: job.reason },
            'reconciler: run failed, its scrape job had failed for good',
          );
        }
        continue;
      }
      if (job.state === 'completed') await removeFinishedJob(queues, 'scrape', jobId);
      await enqueue(queues, 'scrape', {
        runId: run.id,
        siteId: run.siteId,
        correlationId: run.correlationId ?? undefined,
      });
      repairs.scrapeRequeued += 1;
      logger.warn(
        { runId: run.id, jobId, was: job.state },
        'reconciler: scrape job lost; queued again',
      );
    }
  }

  async function repairPostings(runs: ActiveRun[], repairs: RepairCounts): Promise<void> {
    const running = runs.filter((run) => run.status === 'running' && run.listingDone);
    const postings = await listQuietPendingPostings(
      db,
      running.map((run) => run.id),
      graceMs,
      maxPostings,
    );
    if (postings.length === 0) return;
    const correlation = new Map(running.map((run) => [run.id, run.correlationId ?? undefined]));
    const crawlIds = postings.map((p) => crawlJob.jobId({ ...p, postingId: p.id }));
    const extractIds = postings.map((p) => extractJob.jobId({ runId: p.runId, postingId: p.id }));
    const [crawls, extracts] = await Promise.all([
      jobLiveness(queues, 'crawl', crawlIds),
      jobLiveness(queues, 'extract', extractIds),
    ]);

    const toCrawl: QuietPendingPosting[] = [];
    const toExtract: QuietPendingPosting[] = [];
    const failed: { posting: QuietPendingPosting; error: string }[] = [];
    for (const [index, posting] of postings.entries()) {
      const crawl = crawls.get(crawlIds[index]!)!;
      const extract = extracts.get(extractIds[index]!)!;
      if (crawl.state === 'live' || extract.state === 'live') continue;
      // The latest stage's verdict counts: a posting handed to extract is past its crawl.
      const stage = posting.bodyRecorded ? extract : crawl;
      const name = posting.bodyRecorded ? 'extract' : 'crawl';
      if (stage.state === 'failed') {
        failed.push({ posting, error: `${name}: ${stage.reason}` });
        continue;
      }
      if (stage.state === 'completed')
        await removeFinishedJob(
          queues,
          name,
          (posting.bodyRecorded ? extractIds : crawlIds)[index]!,
        );
      (posting.bodyRecorded ? toExtract : toCrawl).push(posting);
    }

    if (failed.length > 0) {
      const settled = await settlePostings(
        db,
        failed.map(({ posting, error }) => ({
          status: 'error' as const,
          postingId: posting.id,
          runId: posting.runId,
          error,
        })),
      );
      repairs.postingsSettled += settled.size;
      for (const { posting, error } of failed) {
        if (settled.has(posting.id))
          logger.warn(
            { runId: posting.runId, postingId: posting.id, error },
            'reconciler: posting settled as error, its job had failed for good',
          );
      }
    }
    if (toCrawl.length > 0) {
      await enqueueBulk(
        queues,
        'crawl',
        toCrawl.map((p) => ({
          runId: p.runId,
          siteId: p.siteId,
          postingId: p.id,
          correlationId: correlation.get(p.runId),
        })),
      );
      repairs.crawlRequeued += toCrawl.length;
    }
    if (toExtract.length > 0) {
      await enqueueBulk(
        queues,
        'extract',
        toExtract.map((p) => ({
          runId: p.runId,
          postingId: p.id,
          correlationId: correlation.get(p.runId),
        })),
      );
      repairs.extractRequeued += toExtract.length;
    }
    const byRun = new Map<string, { crawl: number; extract: number }>();
    for (const [list, key] of [
      [toCrawl, 'crawl'],
      [toExtract, 'extract'],
    ] as const) {
      for (const posting of list) {
        const counts = byRun.get(posting.runId) ?? { crawl: 0, extract: 0 };
        counts[key] += 1;
        byRun.set(posting.runId, counts);
      }
    }
    for (const [runId, counts] of byRun)
      logger.warn({ runId, ...counts }, 'reconciler: posting jobs lost; queued again');
  }

  async function finalizeDone(runs: ActiveRun[], repairs: RepairCounts): Promise<void> {
    for (const run of runs) {
      if (run.status !== 'running' || !run.listingDone) continue;
      const closed = await finalizeRun(db, run.id);
      if (!closed) continue;
      repairs.runsFinalized += 1;
      logger.info(
        { runId: run.id, status: closed.status, expired: closed.expired },
        'run finalized by the reconciler',
      );
    }
  }

  const documentJobId = (document: { id: string; generation: number }) =>
    documentJob.jobId({ documentId: document.id, generation: document.generation });

  async function failLostDocument(
    document: { id: string; generation: number },
    reason: string,
    repairs: RepairCounts,
  ): Promise<void> {
    const message = `extraction job failed for good: ${reason}`;
    if (
      !(await failDocument(db, document.id, document.generation, { errorType: 'unknown', message }))
    )
      return;
    repairs.documentsFailed += 1;
    logger.warn(
      { documentId: document.id, reason },
      'reconciler: document failed, its job had failed for good',
    );
  }

  async function repairDocuments(
    settings: { maxRetries: number; staleAfterMs: number },
    repairs: RepairCounts,
  ): Promise<void> {
    // Jobs Redis lost for waiting documents, and jobs for the stale ones released.
    const lost: DocumentWork[] = [];
    const released: DocumentWork[] = [];

    const waiting = await listQuietWaitingDocuments(db, graceMs, maxDocuments);
    const waitingJobs = await jobLiveness(queues, 'documents', waiting.map(documentJobId));
    for (const document of waiting) {
      const job = waitingJobs.get(documentJobId(document))!;
      if (job.state === 'live') continue;
      if (job.state === 'failed') {
        await failLostDocument(document, job.reason, repairs);
        continue;
      }
      if (job.state === 'completed')
        await removeFinishedJob(queues, 'documents', documentJobId(document));
      lost.push(document);
    }

    const stale = await listStaleProcessingDocuments(db, settings.staleAfterMs, maxDocuments);
    const staleJobs = await jobLiveness(queues, 'documents', stale.map(documentJobId));
    for (const document of stale) {
      const job = staleJobs.get(documentJobId(document))!;
      // A worker holds it: a long extraction, not a stale one (its timeout ends it).
      if (job.state === 'live' && job.active) continue;
      if (job.state === 'failed') {
        await failLostDocument(document, job.reason, repairs);
        continue;
      }
      const pending = await releaseDocument(db, document.id);
      if (!pending) continue;
      repairs.documentsReleased += 1;
      logger.warn(
        { documentId: document.id, workerId: document.workerId, job: job.state },
        'reconciler: stale processing document released to pending',
      );
      // A job still waiting runs it; a lost or finished one is queued again.
      if (job.state === 'live') continue;
      if (job.state === 'completed')
        await removeFinishedJob(queues, 'documents', documentJobId(document));
      released.push(pending);
    }

    if (lost.length + released.length === 0) return;
    await enqueueDocuments(queues, [...lost, ...released], { maxRetries: settings.maxRetries });
    if (lost.length === 0) return;
    repairs.documentsRequeued += lost.length;
    logger.warn(
      { documents: lost.slice(0, 50).map((document) => document.id), count: lost.length },
      'reconciler: document jobs lost; queued again',
    );
  }

  async function repairLlmExtractions(
    settings: LlmQueueSettings & { staleAfterMs: number },
    repairs: RepairCounts,
  ): Promise<void> {
    const quiet = await listQuietLlmExtractions(db, {
      quietMs: graceMs,
      staleMs: settings.staleAfterMs,
      limit: maxDocuments,
    });
    if (quiet.length === 0) return;
    const ids = quiet.map((row) => llmExtractJob.jobId({ ...row, correlationId: undefined }));
    const liveness = await jobLiveness(queues, 'llm-extract', ids);
    const lost: typeof quiet = [];
    const failed: { row: (typeof quiet)[number]; reason: string }[] = [];
    for (const [index, row] of quiet.entries()) {
      const job = liveness.get(ids[index]!)!;
      if (job.state === 'live' && (row.status === 'queued' || job.active)) continue;
      if (job.state === 'failed') {
        failed.push({ row, reason: job.reason });
        continue;
      }
      if (row.status === 'processing' && !(await releaseLlmExtraction(db, row, row.version)))
        continue;
      // A job still waiting runs it; a lost or finished one is queued again.
      if (job.state === 'live') continue;
      if (job.state === 'completed') await removeFinishedJob(queues, 'llm-extract', ids[index]!);
      lost.push(row);
    }
    for (const { row, reason } of failed) {
      const message = `extraction job failed for good: ${reason}`;
      if (!(await failLlmExtraction(db, row, row.version, message))) continue;
      repairs.llmFailed += 1;
      if (row.subjectType === 'posting') {
        // Settled here, closed by this pass's finalize step like every other repaired run.
        const runId = await settlePendingPostingAsError(
          db,
          row.subjectId,
          `llm-extract: ${reason}`,
        );
        if (runId) repairs.postingsSettled += 1;
      }
      logger.warn({ ...row, reason }, 'reconciler: extraction failed, its job had failed for good');
    }
    if (lost.length === 0) return;
    await enqueueLlmExtractions(queues, lost, settings);
    repairs.llmRequeued += lost.length;
    logger.warn(
      { subjects: lost.slice(0, 50).map((row) => row.subjectId), count: lost.length },
      'reconciler: extraction jobs lost; queued again',
    );
  }

  return {
    /**
     * One reconciliation. With `redis: false` (Redis not answering) only what Postgres alone can
     * decide is done: deadlines and finalization.
     */
    async reconcile({ redis }: { redis: boolean }): Promise<RepairCounts> {
      const repairs = noRepairs();
      const runs = await listActiveRuns(db, maxRuns);
      const now = Date.now();
      const current: ActiveRun[] = [];
      for (const run of runs) {
        if (now - run.createdAt.getTime() > runDeadlineMs) await failPastDeadline(run, repairs);
        else current.push(run);
      }
      if (redis) {
        await repairListing(current, repairs);
        await repairPostings(current, repairs);
        if (options.documents) await repairDocuments(options.documents, repairs);
        if (options.llm) await repairLlmExtractions(options.llm, repairs);
      }
      await finalizeDone(current, repairs);
      return repairs;
    },
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;
