import { backfillJob } from '../jobs/backfill.js';
import { stallLimit, type StageLedger } from './ledger.js';

/** One batch of an extractor backfill (decision 0013). */
export const backfillLedger: StageLedger<'backfill'> = {
  job: backfillJob,
  policy: (settings) => ({
    // One batch job at a time across every replica: the backfill's rate is its own.
    concurrency: 1,
    fleetConcurrency: 1,
    // A batch of stored bodies extracted one after another, as an extract job does one.
    timeoutMs: settings.JOB_TIMEOUT_EXTRACT_MS,
    maxStalls: stallLimit(settings),
  }),
  // The batch stays where it was: its backfill's row keeps the cursor, and the scheduler queues
  // the batch again.
  failForGood: async () => 0,
  reconcile: {
    notReconciled:
      "a backfill's progress is its row's cursor, not a row per job: each scheduler pass queues the batch at the cursor of every running backfill whose job is gone (services/scheduler/src/backfill.ts)",
  },
};
