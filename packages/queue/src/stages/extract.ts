import type { QuietPendingPosting } from '@gleaner/db';
import { extractJob } from '../jobs/extract.js';
import { stallLimit, type StageLedger } from './ledger.js';
import { correlationOf, quietPostings, settleFailedPostings } from './postings.js';

/**
 * Extracts the fields of a stored page. Its row is the pending posting whose page this run
 * stored: a posting handed to extract is past its crawl, and only the extract job's verdict counts.
 */
export const extractLedger: StageLedger<'extract', QuietPendingPosting> = {
  job: extractJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_EXTRACT,
    fleetConcurrency: settings.FLEET_CONCURRENCY_EXTRACT,
    timeoutMs: settings.JOB_TIMEOUT_EXTRACT_MS,
    maxStalls: stallLimit(settings),
  }),
  failForGood: (context, failures) => settleFailedPostings(context, 'extract', failures),
  reconcile: {
    rows: (scope) => quietPostings(scope, 'extract'),
    payload: (posting, scope) => ({
      runId: posting.runId,
      postingId: posting.id,
      correlationId: correlationOf(scope, posting.runId),
    }),
    counts: { requeued: 'extractRequeued' },
  },
};
