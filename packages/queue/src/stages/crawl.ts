import type { QuietPendingPosting } from '@gleaner/db';
import { crawlJob } from '../jobs/crawl.js';
import { stallLimit, type StageLedger } from './ledger.js';
import { correlationOf, quietPostings, settleFailedPostings } from './postings.js';

/** Fetches one posting's page. Its row is the pending posting whose page this run has not stored. */
export const crawlLedger: StageLedger<'crawl', QuietPendingPosting> = {
  job: crawlJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_CRAWL,
    fleetConcurrency: settings.FLEET_CONCURRENCY_CRAWL,
    timeoutMs: settings.JOB_TIMEOUT_CRAWL_MS,
    maxStalls: stallLimit(settings),
  }),
  failForGood: (context, failures) => settleFailedPostings(context, 'crawl', failures),
  reconcile: {
    rows: (scope) => quietPostings(scope, 'crawl'),
    payload: (posting, scope) => ({
      runId: posting.runId,
      siteId: posting.siteId,
      postingId: posting.id,
      correlationId: correlationOf(scope, posting.runId),
    }),
    counts: { requeued: 'crawlRequeued' },
  },
};
