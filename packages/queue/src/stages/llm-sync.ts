import { listRunsAwaitingSync, settleRunSync, type RunAwaitingSync } from '@gleaner/db';
import { llmSyncJob } from '../jobs/llm-sync.js';
import { stallLimit, type StageLedger } from './ledger.js';

/**
 * A run's LLM sync (decision 0025). Its row is the run: `sync_state` pending while the run,
 * listed and read, waits for it. A job that will not run again marks the sync `failed`, and the
 * run closes without it (the worker that gave up closes it, or the reconciler's finalize step);
 * a run waiting with no job is
 * queued again. With extraction off (no LLM, no worker serving the queue), a waiting run's sync
 * is given up instead, and the reconciler's finalize step closes the run.
 */
export const llmSyncLedger: StageLedger<'llm-sync', RunAwaitingSync> = {
  job: llmSyncJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_LLM_SYNC,
    fleetConcurrency: settings.FLEET_CONCURRENCY_LLM_SYNC,
    timeoutMs: settings.JOB_TIMEOUT_LLM_SYNC_MS,
    maxStalls: stallLimit(settings),
  }),
  async failForGood({ db, closeRun }, failures) {
    let failed = 0;
    for (const { payload } of failures) {
      if (!(await settleRunSync(db, payload.runId, 'failed'))) continue;
      failed += 1;
      await closeRun(payload.runId);
    }
    return failed;
  },
  reconcile: {
    async rows({ db, graceMs, limit, llm }) {
      const due = await listRunsAwaitingSync(db, { quietMs: graceMs, limit });
      if (llm) return due;
      // Extraction is off: no worker serves llm-sync, and the runs would wait for nothing.
      for (const run of due) await settleRunSync(db, run.runId, 'failed');
      return [];
    },
    payload: (row) => ({
      runId: row.runId,
      correlationId: row.correlationId ?? undefined,
    }),
    counts: { requeued: 'syncRequeued', failed: 'syncFailed' },
  },
};
