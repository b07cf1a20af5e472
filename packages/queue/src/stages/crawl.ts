import type { QuietPendingPosting } from '@gleaner/db';
import { crawlAttempts, crawlJob } from '../jobs/crawl.js';
import { enqueueBulk } from '../queues.js';
import type { JobPayload } from '../catalogue.js';
import { stallLimit, type ReconcileScope, type StageLedger } from './ledger.js';
import { correlationOf, quietPostings, settleFailedPostings } from './postings.js';

const payload = (posting: QuietPendingPosting, scope: ReconcileScope): JobPayload<'crawl'> => ({
  runId: posting.runId,
  siteId: posting.siteId,
  postingId: posting.id,
  correlationId: correlationOf(scope, posting.runId),
});

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
    payload,
    // Each with its site's attempts (max_retries + 1), as the scrape added it.
    requeue: async (queues, rows, scope) => {
      const attempts = new Map(rows.map((row) => [row.id, crawlAttempts(row)]));
      await enqueueBulk(
        queues,
        'crawl',
        rows.map((row) => payload(row, scope)),
        (job) => ({ attempts: attempts.get(job.postingId) }),
      );
    },
    counts: { requeued: 'crawlRequeued' },
  },
};
