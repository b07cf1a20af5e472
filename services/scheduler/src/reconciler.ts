import {
  failRunPastDeadline,
  finalizeRun,
  finalizedRunLog,
  listActiveRuns,
  settlePostings,
  type ActiveRun,
  type Database,
  type ExpiryPolicy,
  type RunRequestCounts,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { linkRunDuplicates } from '@gleaner/sources/cross-source';
import {
  enqueueBulk,
  jobLiveness,
  ledgers,
  noRepairs,
  removeFinishedJob,
  workQueueNames,
  type JobPayload,
  type LedgerContext,
  type Queues,
  type Reconciled,
  type ReconcileScope,
  type RepairCounts,
  type StageLedger,
  type WorkQueueName,
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
  /** Most active runs looked at per pass. */
  maxRuns?: number;
  /** Most rows of each stage looked at per pass. */
  maxRows?: number;
  /** Documents' reconcile settings (`ReconcileScope`); without them, documents are not reconciled. */
  documents?: ReconcileScope['documents'];
  /** LLM extractions' reconcile settings, while EXTRACTION_ENABLED is on; without them, not reconciled. */
  llm?: ReconcileScope['llm'];
  /** When the runs it finalizes expire postings; the defaults of `@gleaner/db` when absent. */
  expiry?: ExpiryPolicy;
  /** A run's requests by answer, for its `http_errors` alert; not judged when absent. */
  runRequests?: (runId: string) => Promise<RunRequestCounts | null>;
}

/** Ids logged with a repair at most; the count says how many there were. */
const LOGGED_IDS = 50;

/**
 * Compares Postgres (the truth) with Redis (the work) and repairs what Redis lost: the backstop
 * that makes "nothing lost" hold on an at-least-once queue (DESIGN.md). Each work queue's
 * ledger (`@gleaner/queue`'s stages) says which of its rows may have lost their job and what
 * their job is; for each such row, by what Redis holds of that job:
 *
 * - live (waiting, delayed, active) → left to it; a row a worker claimed counts as held only by
 *   an active job, and is released otherwise (its worker died);
 * - failed for good (stalled too often included) → the row fails as the worker would have
 *   failed it (the ledger's `failForGood`): the reconciler only catches what no live worker saw;
 * - completed or missing → the job is queued again (a completed one removed first, so that its
 *   id can be added again).
 *
 * Around them, the steps that are the runs' own: a run past its deadline is failed with its
 * pending postings, and after the repairs every running run is offered to the guarded finalize,
 * which closes those whose work is all terminal.
 *
 * Every repair is idempotent: a job queued twice runs once in effect (deterministic ids, guarded
 * settles), and a row settled by a worker meanwhile is left as it is.
 */
export function createReconciler(options: ReconcilerOptions) {
  const { db, queues, logger, runDeadlineMs, graceMs } = options;
  const maxRuns = options.maxRuns ?? 1_000;
  const limit = options.maxRows ?? 5_000;

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

  /** Failed postings are settled at once; their runs close in this pass's finalize step. */
  function ledgerContext(repairs: RepairCounts): LedgerContext {
    return {
      db,
      async settlePostings(settles) {
        const settled = await settlePostings(db, settles);
        repairs.postingsSettled += settled.size;
        return settled;
      },
      // This pass's finalize step closes it.
      closeRun: async () => {},
    };
  }

  async function repairStage<Q extends WorkQueueName>(
    queue: Q,
    ledger: StageLedger<Q>,
    reconcile: Reconciled<Q, unknown>,
    scope: ReconcileScope,
    repairs: RepairCounts,
  ): Promise<void> {
    const rows = await reconcile.rows(scope);
    if (rows.length === 0) return;
    const payloads = rows.map((row) => reconcile.payload(row, scope));
    const jobId = (payload: JobPayload<Q>) =>
      (ledger.job.jobId as (payload: JobPayload<Q>) => string)(payload);
    const ids = payloads.map(jobId);
    const liveness = await jobLiveness(queues, queue, ids);
    const count = (key: keyof RepairCounts | undefined, by: number) => {
      if (key) repairs[key] += by;
    };

    // Rows whose job is not holding them. Redis is read after Postgres: a job that finished
    // in between settled its row, so only rows still listed by a second read are repaired.
    const candidates = rows.flatMap((row, index) => {
      const job = liveness.get(ids[index]!)!;
      const claimed = reconcile.claimed?.(row) ?? false;
      // A worker holds it: a long job, not a lost one (its timeout ends it).
      return job.state === 'live' && (!claimed || job.active) ? [] : [{ row, index, job, claimed }];
    });
    if (candidates.length === 0) return;
    const waiting = new Set(
      (await reconcile.rows(scope)).map((row) => jobId(reconcile.payload(row, scope))),
    );

    const failed: { payload: JobPayload<Q>; reason: string }[] = [];
    const lost: unknown[] = [];
    /** What Redis held of the jobs queued again: missing, completed, or waiting for a released row. */
    const was: Record<string, number> = {};
    let released = 0;
    let requeued = 0;
    for (const { row, index, job, claimed } of candidates) {
      if (!waiting.has(ids[index]!)) continue;
      if (job.state === 'failed') {
        failed.push({ payload: payloads[index]!, reason: job.reason });
        continue;
      }
      if (claimed) {
        // Its worker died: the row goes back to wait, or was settled meanwhile and is left.
        if (!(await ledger.release?.(db, payloads[index]!))) continue;
        released += 1;
        // A job still waiting runs it; a lost or finished one is queued again.
        if (job.state === 'live') continue;
        if (!reconcile.counts.released) requeued += 1;
      } else requeued += 1;
      if (job.state === 'completed') await removeFinishedJob(queues, queue, ids[index]!);
      was[job.state] = (was[job.state] ?? 0) + 1;
      lost.push(row);
    }

    if (failed.length > 0) {
      const settled = await ledger.failForGood(ledgerContext(repairs), failed);
      count(reconcile.counts.failed, settled);
      logger.warn(
        {
          queue,
          jobs: failed.slice(0, LOGGED_IDS).map(({ payload }) => jobId(payload)),
          count: failed.length,
          settled,
        },
        'reconciler: jobs had failed for good without settling their rows; rows failed',
      );
    }
    if (lost.length > 0) {
      if (reconcile.requeue) await reconcile.requeue(queues, lost, scope);
      else
        await enqueueBulk(
          queues,
          queue,
          lost.map((row) => reconcile.payload(row, scope)),
        );
    }
    count(reconcile.counts.released, released);
    count(reconcile.counts.requeued, requeued);
    if (lost.length + released > 0)
      logger.warn(
        {
          queue,
          jobs: lost.slice(0, LOGGED_IDS).map((row) => jobId(reconcile.payload(row, scope))),
          requeued: lost.length,
          released,
          was,
        },
        'reconciler: jobs lost; queued again',
      );
  }

  async function finalizeDone(runs: ActiveRun[], repairs: RepairCounts): Promise<void> {
    for (const run of runs) {
      if (run.status !== 'running' || !run.listingDone) continue;
      const { runRequests } = options;
      const closed = await finalizeRun(db, run.id, options.expiry, {
        ...(runRequests && { requests: () => runRequests(run.id) }),
      });
      if (!closed) continue;
      repairs.runsFinalized += 1;
      const { level, fields } = finalizedRunLog(closed);
      logger[level](fields, 'run finalized by the reconciler');
      // As a worker closing it would (decision 0027); the site's next run links what this misses.
      await linkRunDuplicates(db, run.id).catch((error: unknown) =>
        logger.warn({ err: error, runId: run.id }, 'could not link the run’s postings'),
      );
    }
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
        const scope: ReconcileScope = {
          db,
          graceMs,
          limit,
          runs: current,
          documents: options.documents,
          llm: options.llm,
        };
        for (const queue of workQueueNames) {
          const ledger = ledgers[queue] as StageLedger<typeof queue>;
          if ('notReconciled' in ledger.reconcile) continue;
          await repairStage(queue, ledger, ledger.reconcile, scope, repairs);
        }
      }
      await finalizeDone(current, repairs);
      return repairs;
    },
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;
