import {
  getDocument,
  getRun,
  resolveTemplateChangedAlert,
  runReadPagesFromMarkup,
  type ExpiryPolicy,
} from '@gleaner/db';
import { isClassifiedError } from '@gleaner/errors';
import {
  createQueueTelemetry,
  documentCancellationId,
  documentOfCancellation,
  enqueue,
  FLEET_STALL_LIMIT,
  jobs,
  ledgers,
  subscribeToRunCancellations,
  type JobFailure,
  type JobPayload,
  type LedgerContext,
  type StageLedger,
  type StagePolicy,
  queueKeyPrefix,
  type WorkQueueName,
  type RedisClient,
} from '@gleaner/queue';
import { DelayedError, Job, UnrecoverableError, Worker, type WorkerOptions } from 'bullmq';
import type { HandlerContext, JobHandler, WorkerDeps } from './context.js';
import { createDocumentWorker, type DocumentWorker } from './documents/document-worker.js';
import { handlers } from './handlers.js';
import { createJobLoggers, type JobLoggers } from './job-loggers.js';
import { createInFlightJobs, type InFlightJobs } from './job-signal.js';
import { createPageAnalyser, type PageAnalyser } from './page-analysis/page-analyser.js';
import { isLastAttempt, isPermanent } from './retry-decision.js';
import { createSettlement, type Settlement } from './settlement/settlement.js';
import { rereadRunWithTemplate } from './templates/reread.js';
import { ensureSiteTemplate } from './templates/site-templates.js';
import {
  createWorkerHeartbeat,
  type JobOutcome,
  type WorkerHeartbeat,
} from './worker-heartbeat.js';

export interface RuntimeOptions {
  connection: RedisClient;
  prefix: string;
  queues: readonly WorkQueueName[];
  /**
   * How each served queue's jobs run: main.ts gives every ledger's policy, built from the
   * worker's settings (`stagePolicies`). Left out, a queue runs one job at a time with no
   * deadline, the fleet's stall limit and its job definition's backoff.
   */
  policies?: { [Q in WorkQueueName]?: Partial<StagePolicy> };
  /**
   * Page analyser threads (`WORKER_EXTRACT_THREADS`), where the crawl, extract, LLM and backfill
   * stages read pages under their jobs' signals; default 1. 0 reads pages on the event loop,
   * where nothing stops a page that takes too long: for tests only.
   */
  extractThreads?: number;
  /** How long one page's reading may take in a thread (`WORKER_EXTRACT_PAGE_BUDGET_MS`). */
  pageBudgetMs?: number;
  /** When runs this worker finalizes expire postings (`EXPIRE_AFTER_MISSES`, `LISTING_DROP_GUARD`). */
  expiry?: ExpiryPolicy;
  /**
   * How jobs whose worker died are found (BullMQ's lock and stall check); BullMQ's defaults
   * when absent. `maxStalledCount` replaces every queue's stall limit (`maxStalls`).
   */
  stalls?: Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount'>;
  /** How often the process writes its heartbeat (`WORKER_HEARTBEAT_INTERVAL_MS`); 10 s by default. */
  heartbeatIntervalMs?: number;
}

/** Every work queue's policy, from its ledger and the worker's settings. */
export function stagePolicies(
  settings: Parameters<StageLedger<WorkQueueName>['policy']>[0],
): Record<WorkQueueName, StagePolicy> {
  const entries = Object.entries(ledgers).map(([queue, ledger]) => [
    queue,
    (ledger as StageLedger<WorkQueueName>).policy(settings),
  ]);
  return Object.fromEntries(entries) as Record<WorkQueueName, StagePolicy>;
}

/**
 * BullMQ's own stall limit, never reached: it would fail a job without running its processor,
 * and its row would be settled only after the job had failed, by whichever worker took it next
 * (a kill in between left it to the reconciler). The runtime counts stalls itself (`stalled`).
 */
const NEVER = 1_000_000;

export interface WorkerRuntime {
  workers: Worker[];
  /** Stops taking jobs, waits up to `graceMs` for in-flight ones, then releases the rest. */
  close(graceMs: number): Promise<void>;
}

/** Queues whose jobs read pages, in the page analyser's threads. */
const PAGE_READING_QUEUES: readonly WorkQueueName[] = [
  'crawl',
  'extract',
  'llm-extract',
  'backfill',
];

/** After the grace period, how long jobs let go (`release`) have to put their rows back. */
const RELEASE_WAIT_MS = 3_000;

/**
 * What cancels a job in flight: its run's id, or for a document's extraction the document's own
 * cancellation id (`POST /documents/:id/cancel` broadcasts it on the same channel).
 */
function runIdOf(payload: object): string | undefined {
  if ('runId' in payload && typeof payload.runId === 'string') return payload.runId;
  if ('documentId' in payload && typeof payload.documentId === 'string')
    return documentCancellationId(payload.documentId);
  return undefined;
}

/** What each processor shares with the others of its process. */
interface ProcessorParts {
  settlement: Settlement;
  analyser: PageAnalyser;
  inFlight: InFlightJobs;
  documentWorker: DocumentWorker | undefined;
  heartbeat: WorkerHeartbeat;
  loggers: JobLoggers;
  /** What the ledgers fail rows with: postings settle through the settlement, closing their runs. */
  ledgerContext: LedgerContext;
}

/** Seed 001's heartbeat interval, for every worker. */
const DEFAULT_HEARTBEAT_INTERVAL_MS = 10_000;

/** The code of a job failed for good because dying workers orphaned it too often. */
const JOB_STALLED = 'JOB_STALLED';

/** Whether a failure is the stall limit's: a transient failure (no fault of the job), parked for a requeue. */
const isStallFailure = (error: Error) => error.message.startsWith(`${JOB_STALLED}:`);

/** What the stage's ledger does to the row of a job that will not run again. */
async function giveUp<Q extends WorkQueueName>(
  queue: Q,
  payload: JobPayload<Q>,
  error: Error,
  { ledgerContext }: ProcessorParts,
): Promise<void> {
  const ledger = ledgers[queue] as StageLedger<Q>;
  await ledger.failForGood(ledgerContext, [{ payload, reason: error.message, error }]);
}

/** What the processor takes of its stage's policy: its deadline, and how often a job may stall. */
type RunPolicy = Pick<StagePolicy, 'maxStalls'> & Partial<Pick<StagePolicy, 'timeoutMs'>>;

function createProcessor<Q extends WorkQueueName>(
  queue: Q,
  deps: WorkerDeps,
  parts: ProcessorParts,
  policy: RunPolicy,
  /** The worker's name, as a claimed row records its holder (`documents`). */
  holder: string,
) {
  const { settlement, analyser, inFlight, documentWorker, loggers } = parts;
  const handler = handlers[queue] as JobHandler<Q>;
  const ledger = ledgers[queue] as StageLedger<Q>;
  const definition = jobs[queue];
  return async (job: Job, token?: string, signal?: AbortSignal): Promise<unknown> => {
    const parsed = definition.payload.safeParse(job.data);
    if (!parsed.success) {
      // Re-validated on dequeue: a malformed payload can never succeed, so it fails for good.
      throw new UnrecoverableError(
        `QUEUE_PAYLOAD_INVALID: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`,
      );
    }
    const payload = parsed.data as JobPayload<Q>;
    const log = await loggers.forJob(queue, job, payload);
    // Orphaned by dying workers more often than its stage allows: it fails for good here, its row
    // settled before the job fails, so a worker killed in between leaves it stalled once more for
    // the next worker to settle, not failed with its row waiting.
    if (job.stalledCounter > policy.maxStalls) {
      const error = new Error(
        `${JOB_STALLED}: job stalled more than allowable limit (orphaned by ${job.stalledCounter} workers that died; the ${queue} stage allows ${policy.maxStalls})`,
      );
      log.warn({ err: error }, 'job orphaned too often by dying workers; giving up on it');
      await giveUp(queue, payload, error, parts);
      throw new UnrecoverableError(error.message);
    }
    const jobSignal = inFlight.start({
      queue,
      runId: runIdOf(payload),
      timeoutMs: policy.timeoutMs,
      bullmq: signal,
    });
    const context: HandlerContext = {
      ...deps,
      settlement,
      analyser,
      job,
      log,
      signal: jobSignal.signal,
      token,
      documentWorker,
    };
    const ended = parts.heartbeat.started({
      queue,
      jobId: job.id ?? 'unknown',
      ...beatFieldsOf(payload),
    });
    let outcome: JobOutcome = 'failed';
    try {
      const result = await handler.run(payload, context);
      outcome = 'completed';
      return result;
    } catch (caught) {
      // Moved back to wait, let go to another worker, or its run (document) cancelled: neither
      // done nor failed here.
      if (caught instanceof DelayedError || jobSignal.isReleased || jobSignal.isCancelled)
        outcome = 'uncounted';
      // Moved back to delayed (waiting for its site's slot): not a failure, no attempt spent.
      if (caught instanceof DelayedError) throw caught;
      // Let go by a shutdown: its row is put back and the job returns to the queue for another
      // worker at once, without spending an attempt (the same move as a parked crawl job).
      if (jobSignal.isReleased && ledger.release) {
        await ledger.release(deps.db, payload, holder);
        await job.moveToDelayed(Date.now() + 10, token);
        log.info('job released to another worker');
        throw new DelayedError();
      }
      // Its run was cancelled: there is nothing left to do or to retry, and its rows were
      // settled by the cancel. It completes, so it is neither retried nor dead-lettered.
      if (jobSignal.isCancelled) {
        log.info({ err: caught }, 'run cancelled; job aborted');
        return { cancelled: true };
      }
      // Whatever the aborted work threw (an aborted fetch, an abort error of a wait), the job
      // failed because it ran out of time: JOB_TIMEOUT, retried by the queue's policy.
      const error =
        jobSignal.timedOut ?? (caught instanceof Error ? caught : new Error(String(caught)));
      const permanent = isPermanent(error);
      const lastAttempt = isLastAttempt(job);
      if (permanent || lastAttempt) {
        log.warn({ err: error, permanent }, 'giving up on job');
        await giveUp(queue, payload, error, parts);
      } else {
        log.info({ err: error }, 'job failed; will retry');
      }
      if (permanent && !(error instanceof UnrecoverableError)) {
        const code = isClassifiedError(error) ? error.code : 'PERMANENT';
        throw new UnrecoverableError(`${code}: ${error.message}`);
      }
      throw error;
    } finally {
      ended(outcome);
      jobSignal.dispose();
    }
  };
}

/** What a heartbeat says a job works on: its run and its posting, document or delivery. */
function beatFieldsOf(payload: unknown): { runId?: string; subject?: string } {
  const fields = payload as {
    runId?: unknown;
    postingId?: unknown;
    documentId?: unknown;
    subjectId?: unknown;
    deliveryId?: unknown;
  };
  const subject = [fields.postingId, fields.documentId, fields.subjectId, fields.deliveryId].find(
    (value): value is string => typeof value === 'string',
  );
  return {
    ...(typeof fields.runId === 'string' ? { runId: fields.runId } : {}),
    ...(subject ? { subject } : {}),
  };
}

/**
 * Aborts this process's jobs of the runs cancelled while its cancellation subscriber was away
 * (reconnecting): the broadcast is not replayed, Postgres says which runs ended.
 */
async function abortEndedRuns(deps: WorkerDeps, inFlight: InFlightJobs): Promise<void> {
  for (const runId of inFlight.runIds()) {
    const documentId = documentOfCancellation(runId);
    if (documentId !== undefined) {
      const document = await getDocument(deps.db, documentId, 0);
      if (document?.status === 'cancelled') inFlight.cancel(runId);
      continue;
    }
    const run = await getRun(deps.db, runId);
    if (run?.status === 'cancelled') inFlight.cancel(runId);
  }
}

/**
 * A failure BullMQ will not retry because the job itself cannot succeed; a stall failure is
 * unrecoverable to BullMQ but no fault of the job, so it counts as transient.
 */
function isUnrecoverable(error: Error): boolean {
  const unrecoverable = error instanceof UnrecoverableError || error.name === 'UnrecoverableError';
  return unrecoverable && !isStallFailure(error);
}

/** A failed attempt as the job counters record it: as the dead letters do, retry class and code. */
function failureOf(error: Error): JobFailure {
  const permanent = isUnrecoverable(error);
  const code = isClassifiedError(error)
    ? error.code
    : /^([A-Z][A-Z0-9_]{0,63}):/.exec(error.message)?.[1];
  return { errorClass: permanent ? 'permanent' : 'transient', code: code ?? 'UNCLASSIFIED' };
}

/** Parks a job that will not run again in the dead-letter queue, with what is needed to requeue it. */
async function parkDeadLetter(
  deps: WorkerDeps,
  job: Job,
  error: Error,
  failedForGood = false,
): Promise<void> {
  const permanent = isUnrecoverable(error);
  const exhausted = job.attemptsMade >= (job.opts.attempts ?? 1);
  if (!permanent && !exhausted && !failedForGood && !isStallFailure(error)) return;
  await enqueue(deps.queues, 'dead-letter', {
    queue: job.queueName,
    jobName: job.name,
    jobId: job.id ?? 'unknown',
    payload: job.data as unknown,
    errorClass: permanent ? 'permanent' : 'transient',
    // A retried error keeps its own code; a permanent one was rethrown as "CODE: message".
    errorCode: isClassifiedError(error)
      ? error.code
      : /^([A-Z][A-Z0-9_]+):/.exec(error.message)?.[1],
    error: error.message.slice(0, 2000),
    attemptsMade: job.attemptsMade,
    failedAt: new Date().toISOString(),
  });
}

/**
 * A job an earlier release's stall check marked failed (BullMQ's deferred failure) is failed by
 * the next worker to take it without its processor running: its row is still settled here, and
 * it is parked in the dead letters as a transient failure, so a requeue can run it again.
 */
async function settleDeferredFailure(
  queue: WorkQueueName,
  job: Job,
  deps: WorkerDeps,
  parts: ProcessorParts,
): Promise<void> {
  const error = new Error(
    `${JOB_STALLED}: ${job.deferredFailure || 'job stalled more than allowable limit'}`,
  );
  const parsed = jobs[queue].payload.safeParse(job.data);
  if (parsed.success) {
    const log = await parts.loggers.forJob(queue, job, parsed.data);
    log.warn({ err: error }, 'job failed for good after stalling; giving up on it');
    await giveUp(queue, parsed.data, error, parts);
  }
  deps.counters.jobFailed(queue, { errorClass: 'transient', code: JOB_STALLED });
  await parkDeadLetter(deps, job, error, true);
}

/** Waits for `promise` up to `ms`: `done`, or `timeout`. */
async function within(promise: Promise<'done'>, ms: number): Promise<'done' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function startWorkers(deps: WorkerDeps, options: RuntimeOptions): WorkerRuntime {
  const settlement = createSettlement(deps.db, deps.logger, {
    expiry: options.expiry,
    runRequests: (runId) => deps.counters.runRequests(runId),
    // One job per run (its id is the run's): offered again by every settle that finds the run
    // closable, it is added once.
    awaitingSync: async (runId) => {
      await enqueue(deps.queues, 'llm-sync', { runId });
    },
    // A run that read pages from their markup learns its site's template again when that is due,
    // and reads its pages again with it, before it closes (decision 0028), in the page
    // analyser's threads: a replica without them leaves learning to the extract stage.
    beforeClose: async (run) => {
      if (!readsPages || !(await runReadPagesFromMarkup(deps.db, run.id))) return;
      const templateDeps = { db: deps.db, analyser, log: deps.logger };
      const template = await ensureSiteTemplate(templateDeps, run.siteId, run.id);
      if (template) await rereadRunWithTemplate(templateDeps, run, template);
    },
    afterClose: (run) => resolveTemplateChangedAlert(deps.db, run.id).then(() => undefined),
  });
  // A replica that serves no queue reading pages (scrape, documents only) starts no thread.
  const readsPages = options.queues.some((queue) => PAGE_READING_QUEUES.includes(queue));
  const analyser = createPageAnalyser({
    threads: readsPages ? (options.extractThreads ?? 1) : 0,
    ...(options.pageBudgetMs === undefined ? {} : { pageBudgetMs: options.pageBudgetMs }),
  });
  // Cancelled runs' jobs in flight here are aborted as soon as the broadcast arrives.
  const inFlight = createInFlightJobs();
  // A replica serving documents beats in `document_worker_heartbeats` (seed 001).
  let documentWorker: DocumentWorker | undefined;
  if (options.queues.includes('documents')) {
    if (!deps.documents)
      throw new Error('a worker serving the documents queue needs deps.documents (a parser pool)');
    documentWorker = createDocumentWorker({
      db: deps.db,
      queues: deps.queues,
      logger: deps.logger,
      intervalMs: deps.documents.heartbeatIntervalMs,
    });
    void documentWorker.beat();
  }
  // Every replica beats in `worker_heartbeats`, whatever it serves (GET /workers).
  const heartbeat = createWorkerHeartbeat({
    db: deps.db,
    logger: deps.logger,
    queues: options.queues,
    intervalMs: options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
  });
  void heartbeat.beat();
  const loggers = createJobLoggers({ db: deps.db, logger: deps.logger, runLog: deps.runLog });
  const ledgerContext: LedgerContext = {
    db: deps.db,
    async settlePostings(settles) {
      const moved = await Promise.all(settles.map((settle) => settlement.settle(settle)));
      return new Set(settles.filter((_, index) => moved[index]).map((settle) => settle.postingId));
    },
    closeRun: (runId) => settlement.closeRunIfDone(runId),
  };
  const parts: ProcessorParts = {
    settlement,
    analyser,
    inFlight,
    documentWorker,
    heartbeat,
    loggers,
    ledgerContext,
  };
  const cancellations = subscribeToRunCancellations({
    subscriber: options.connection.duplicate(),
    prefix: options.prefix,
    onCancelled(runId) {
      const aborted = inFlight.cancel(runId);
      if (aborted > 0) deps.logger.info({ runId, aborted }, 'run cancelled; aborting its jobs');
    },
    onResubscribed() {
      abortEndedRuns(deps, inFlight).catch((error: unknown) => {
        deps.logger.warn({ err: error }, 'could not check in-flight runs for cancellation');
      });
    },
    onError(error) {
      deps.logger.warn({ err: error }, 'run cancellation subscriber error');
    },
  });
  const telemetry = createQueueTelemetry();
  const workers = options.queues.map((queue) => {
    const policy = options.policies?.[queue] ?? {};
    const maxStalls = options.stalls?.maxStalledCount ?? policy.maxStalls ?? FLEET_STALL_LIMIT;
    // Stamped on each job as `processedBy`, so an operator can tell which replica ran it.
    const name =
      documentWorker && queue === 'documents' ? documentWorker.workerId : heartbeat.workerId;
    const processor = createProcessor(
      queue,
      deps,
      parts,
      { maxStalls, timeoutMs: policy.timeoutMs },
      name,
    );
    const backoffStrategy = policy.backoff ?? jobs[queue].backoffStrategy;
    const worker = new Worker(queue, processor, {
      connection: options.connection,
      prefix: queueKeyPrefix(options.connection, options.prefix, queue),
      // Each job runs in a span that is a child of the one that added it (see createQueues).
      telemetry,
      concurrency: policy.concurrency ?? 1,
      name,
      // A queue whose backoff is its own (documents: seed 001's retry table; llm-extract).
      ...(backoffStrategy ? { settings: { backoffStrategy } } : {}),
      ...options.stalls,
      maxStalledCount: NEVER,
    });
    worker.on('completed', () => deps.counters.jobCompleted(queue));
    // Moved back to wait by this worker's stall check: its worker died. Counted apart from the
    // job's own failures; the processor decides whether it may run again.
    worker.on('stalled', () => deps.counters.jobStalled(queue));
    worker.on('failed', (job, error) => {
      if (!job) return;
      if (job.deferredFailure) {
        settleDeferredFailure(queue, job, deps, parts).catch((settleError: unknown) => {
          deps.logger.error(
            { err: settleError, queue, jobId: job.id },
            'could not settle a job failed by stalling',
          );
        });
        return;
      }
      deps.counters.jobFailed(queue, failureOf(error));
      parkDeadLetter(deps, job, error).catch((parkError: unknown) => {
        deps.logger.error(
          { err: parkError, queue, jobId: job.id },
          'could not park job in dead-letter queue',
        );
      });
    });
    worker.on('error', (error) => deps.logger.error({ err: error, queue }, 'worker error'));
    return worker;
  });

  let closing: Promise<void> | undefined;
  return {
    workers,
    close(graceMs) {
      closing ??= (async () => {
        // Not awaited: a beat must not eat the grace period when Postgres is slow to answer.
        void documentWorker?.stopping();
        void heartbeat.stopping();
        const graceful = Promise.all(workers.map((worker) => worker.close())).then(
          () => 'done' as const,
        );
        let outcome = await within(graceful, graceMs);
        if (outcome === 'timeout') {
          deps.logger.warn(
            { graceMs },
            'in-flight jobs did not finish in time; releasing them to other workers',
          );
          // Queues whose ledgers can put their rows back let their jobs go now; the others'
          // jobs are left to BullMQ's stall check, which hands them on once their lock expires.
          const released = options.queues
            .filter((queue) => ledgers[queue].release !== undefined)
            .reduce((count, queue) => count + inFlight.release(queue), 0);
          if (released > 0) outcome = await within(graceful, RELEASE_WAIT_MS);
          if (outcome === 'timeout') await Promise.all(workers.map((worker) => worker.close(true)));
        }
        await cancellations.close();
        await analyser.close();
        await documentWorker?.stop();
        await heartbeat.stop();
      })();
      return closing;
    },
  };
}
