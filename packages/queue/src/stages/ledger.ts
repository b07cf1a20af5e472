import type { ActiveRun, Database, PostingSettle } from '@gleaner/db';
import type { BackoffStrategy } from 'bullmq';
import type { JobPayload, jobs, WorkQueueName } from '../catalogue.js';
import type { LlmQueueSettings } from '../llm-extract.js';
import type { Queues } from '../queues.js';
import type { RepairCounts } from '../scheduler-status.js';

/**
 * One work queue's stage, defined once: its job, how a worker runs it (the policy), what a job
 * that will not run again does to its row (`failForGood`), and how the reconciler finds and
 * repairs the rows whose job Redis may have lost (`reconcile`). The worker's handler and the
 * reconciler both call it, so "failed for good" means one thing wherever it is decided.
 */
export interface StageLedger<Q extends WorkQueueName, Row = unknown> {
  /** The stage's job, as the catalogue defines it (payload, id, attempts, backoff). */
  job: (typeof jobs)[Q];
  /** How a worker runs the stage's jobs, from the process's settings. */
  policy(settings: StageSettings): StagePolicy;
  /**
   * What a job that will not run again does to its row and its run: by its handler when a
   * permanent error or its last attempt ends it, by the worker that finds it stalled too often,
   * by the reconciler when Redis holds it failed and its row still waits. Idempotent and
   * guarded: a row settled meanwhile is left as it is. Returns how many rows it settled.
   */
  failForGood(context: LedgerContext, failures: readonly Failure<Q>[]): Promise<number>;
  /**
   * Puts a row a worker had claimed back to wait for another worker (a shutdown's release of
   * its jobs in flight; the reconciler's release of a row whose worker died). Only stages whose
   * rows record a claim have one. With `holder` (the worker id that claimed it), only that
   * worker's claim is released. False when the row was not held any more.
   */
  release?(db: Database, payload: JobPayload<Q>, holder?: string): Promise<boolean>;
  /** How the reconciler repairs the stage, or why it does not. */
  reconcile: Reconciled<Q, Row> | NotReconciled;
}

/** A stage the reconciler leaves alone, and why. */
export interface NotReconciled {
  notReconciled: string;
}

/** How a worker runs one stage's jobs. Attempts and backoff delays are the job definition's. */
export interface StagePolicy {
  /** Jobs at once per worker process. */
  concurrency: number;
  /**
   * Jobs at once across every worker process (BullMQ's global concurrency on the queue, set by
   * each replica that serves it: `applyFleetConcurrency`). 0: no fleet-wide cap.
   */
  fleetConcurrency: number;
  /**
   * How long one run of a job may take before its work is aborted and it fails with
   * `JOB_TIMEOUT` (transient, retried by its attempts).
   */
  timeoutMs: number;
  /**
   * How often a job may be orphaned by a worker that died (BullMQ's stall check hands it to
   * another) before it is failed for good. A worker's death is not the job's fault: the limit
   * only stops a job that kills every worker taking it, so it is sized for the restarts, kills
   * and evictions a fleet sees, far above its own attempts.
   */
  maxStalls: number;
  /** A backoff built from the settings, in place of the job definition's. */
  backoff?: BackoffStrategy;
}

/**
 * The settings the stages' policies are built from: the worker's configuration
 * (`@gleaner/config`'s worker, document and extraction fragments) has every one of them.
 */
export interface StageSettings {
  WORKER_CONCURRENCY_SCRAPE: number;
  WORKER_CONCURRENCY_CRAWL: number;
  WORKER_CONCURRENCY_EXTRACT: number;
  WORKER_CONCURRENCY_DOCUMENTS: number;
  WORKER_CONCURRENCY_LLM_EXTRACT: number;
  FLEET_CONCURRENCY_SCRAPE: number;
  FLEET_CONCURRENCY_CRAWL: number;
  FLEET_CONCURRENCY_EXTRACT: number;
  FLEET_CONCURRENCY_DOCUMENTS: number;
  FLEET_CONCURRENCY_LLM_EXTRACT: number;
  WORKER_CONCURRENCY_WEBHOOKS: number;
  FLEET_CONCURRENCY_WEBHOOKS: number;
  WORKER_CONCURRENCY_LLM_SYNC: number;
  FLEET_CONCURRENCY_LLM_SYNC: number;
  /** One run's LLM sync (seed 004: 5 minutes). */
  JOB_TIMEOUT_LLM_SYNC_MS: number;
  WORKER_CONCURRENCY_LLM_PAGES: number;
  FLEET_CONCURRENCY_LLM_PAGES: number;
  /** One job of a multi-pass reading: a page read, a merge, an investigation (seed 004: 10 minutes). */
  JOB_TIMEOUT_LLM_PAGES_MS: number;
  /** One webhook attempt's deadline (the receiver's whole answer). */
  WEBHOOK_TIMEOUT_MS: number;
  JOB_TIMEOUT_SCRAPE_MS: number;
  JOB_TIMEOUT_CRAWL_MS: number;
  JOB_TIMEOUT_EXTRACT_MS: number;
  DOCUMENT_EXTRACTION_TIMEOUT_MS: number;
  EXTRACTION_REQUEST_TIMEOUT_MS: number;
  EXTRACTION_RETRY_BASE_SECONDS: number;
  EXTRACTION_RETRY_MAX_SECONDS: number;
  /** One stall limit for every stage in place of each stage's own; unset keeps theirs. */
  WORKER_MAX_STALLED_COUNT?: number | undefined;
}

/**
 * The stall limit of most stages: a job is orphaned when the worker running it dies, and in a
 * fleet that happens for reasons of the fleet's own (rolling restarts, evictions, out-of-memory
 * kills of a neighbour's work). A job that kills its worker itself is rarer: pages are read in
 * threads under a time budget, documents in parser processes with a heap cap.
 */
export const FLEET_STALL_LIMIT = 10;

/** A job that will not run again, and why (its last attempt's error, or Redis's failed reason). */
export interface Failure<Q extends WorkQueueName> {
  payload: JobPayload<Q>;
  reason: string;
  /** The error itself, when the worker has it: some stages record its type. */
  error?: unknown;
}

/** What failing a row for good may need beside the database. */
export interface LedgerContext {
  db: Database;
  /**
   * Moves failed postings out of `pending` (guarded: only pending ones in that run) and returns
   * those it moved. The worker's settlement also closes their runs when they were the last; the
   * reconciler closes them in its finalize step.
   */
  settlePostings(
    settles: readonly Extract<PostingSettle, { status: 'error' }>[],
  ): Promise<ReadonlySet<string>>;
  /**
   * Closes a run that may close now (its LLM sync given up). The worker closes it at once; the
   * reconciler leaves it to its finalize step.
   */
  closeRun(this: void, runId: string): Promise<void>;
}

/** What one reconciliation pass gives every stage. */
export interface ReconcileScope {
  db: Database;
  /**
   * How long a row must have been quiet before its missing job counts as lost
   * (`RECONCILE_GRACE_MS`): jobs are added right after their rows are written, never this late.
   */
  graceMs: number;
  /** Most rows looked at per stage and pass. */
  limit: number;
  /** The active runs within their deadline, oldest first. */
  runs: readonly ActiveRun[];
  /**
   * Documents (seed 001): the attempts of their jobs (`DOCUMENT_MAX_RETRIES`) and how long one
   * may be `processing` before it counts as stale (`DOCUMENT_STALE_AFTER_MS`). Absent: not
   * reconciled.
   */
  documents?: { maxRetries: number; staleAfterMs: number };
  /**
   * LLM extractions (seed 002), while EXTRACTION_ENABLED is on: how their jobs are queued, and
   * how long one may be `processing` before it counts as stale. Absent: not reconciled.
   */
  llm?: LlmQueueSettings & { staleAfterMs: number };
}

/** How the reconciler repairs a stage whose jobs Redis may lose. */
export interface Reconciled<Q extends WorkQueueName, Row> {
  /**
   * Rows whose job may be lost: waiting past the grace period, or claimed by a worker past
   * their stale time.
   */
  rows(scope: ReconcileScope): Promise<readonly Row[]>;
  /** The job of a row (its id is the job definition's, from this payload). */
  payload(row: Row, scope: ReconcileScope): JobPayload<Q>;
  /**
   * A row a worker has claimed: only an active job holds it. With its job waiting or lost its
   * worker died, and it is released (`StageLedger.release`) before its job runs again.
   */
  claimed?(row: Row): boolean;
  /** Adds the jobs of lost rows again; by default their payloads with the definition's options. */
  requeue?(queues: Queues, rows: readonly Row[], scope: ReconcileScope): Promise<void>;
  /** The repair counts the stage's repairs add to. */
  counts: {
    requeued: keyof RepairCounts;
    /** Rows failed for good; postings settled are counted by the settle itself. */
    failed?: keyof RepairCounts;
    /** Claimed rows released; without it, a released row whose job is added again is requeued. */
    released?: keyof RepairCounts;
  };
}

/** One ledger per work queue: a queue without one does not compile. */
export type LedgerMap = { [Q in WorkQueueName]: StageLedger<Q> };

/** The stall limit a policy uses: the operator's one for every stage, or the stage's own. */
export function stallLimit(settings: StageSettings, own = FLEET_STALL_LIMIT): number {
  return settings.WORKER_MAX_STALLED_COUNT ?? own;
}
