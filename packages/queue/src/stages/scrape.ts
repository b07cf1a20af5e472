import { failRun, listActiveRuns, type ActiveRun } from '@gleaner/db';
import { scrapeJob } from '../jobs/scrape.js';
import { stallLimit, type StageLedger } from './ledger.js';

/**
 * Lists a site and queues a crawl job per posting. Its row is the run: a run whose listing is
 * not done waits for it.
 */
export const scrapeLedger: StageLedger<'scrape', ActiveRun> = {
  job: scrapeJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_SCRAPE,
    fleetConcurrency: settings.FLEET_CONCURRENCY_SCRAPE,
    timeoutMs: settings.JOB_TIMEOUT_SCRAPE_MS,
    maxStalls: stallLimit(settings),
  }),
  async failForGood({ db }, failures) {
    let failed = 0;
    for (const { payload, reason } of failures)
      if (await failRun(db, payload.runId, `listing failed: ${reason}`)) failed += 1;
    return failed;
  },
  reconcile: {
    // Read again rather than taken from the pass's list: the reconciler reads twice.
    rows: async ({ db, runs, graceMs, limit }) => {
      const current = new Set(runs.map((run) => run.id));
      return (await listActiveRuns(db, Math.max(limit, runs.length))).filter(
        (run) => current.has(run.id) && !run.listingDone && run.quietMs >= graceMs,
      );
    },
    payload: (run) => ({
      runId: run.id,
      siteId: run.siteId,
      correlationId: run.correlationId ?? undefined,
    }),
    counts: { requeued: 'scrapeRequeued', failed: 'runsFailed' },
  },
};
