import {
  failRun,
  listQuietPagesWork,
  settleInvestigation,
  settleListingPage,
  type PagesWork,
} from '@gleaner/db';
import { llmPagesJob } from '../jobs/llm-pages.js';
import { stallLimit, type StageLedger } from './ledger.js';

/**
 * The multi-pass reading of a `postsOnListing` site's run (decision 0026). Its rows: the run's
 * listing pages (pass 1), its `pages_state` (pass 2, run-level) and its merged posts (pass 3).
 * A page read that will not run again leaves the page `failed` (the listing is then incomplete
 * and expires nothing); an investigation that will not, leaves its post as the listing gave it;
 * a merge that will not fails the run. The reconciler queues again what waits with no job, and
 * the merge job of a run whose pages are all read or whose posts are all investigated; with
 * extraction off (no worker serves the queue), it fails the runs that wait.
 */
export const llmPagesLedger: StageLedger<'llm-pages', PagesWork> = {
  job: llmPagesJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_LLM_PAGES,
    fleetConcurrency: settings.FLEET_CONCURRENCY_LLM_PAGES,
    timeoutMs: settings.JOB_TIMEOUT_LLM_PAGES_MS,
    maxStalls: stallLimit(settings),
  }),
  async failForGood({ db }, failures) {
    let failed = 0;
    for (const { payload, reason } of failures) {
      const settled =
        payload.pass === 'read'
          ? await settleListingPage(db, payload.runId, payload.url, { error: reason })
          : payload.pass === 'investigate'
            ? await settleInvestigation(db, payload.runId, payload.key, { error: reason })
            : await failRun(db, payload.runId, `reading the listing pages failed: ${reason}`);
      if (settled) failed += 1;
    }
    return failed;
  },
  reconcile: {
    async rows({ db, graceMs, limit, llm }) {
      const due = await listQuietPagesWork(db, { quietMs: graceMs, limit });
      if (llm) return due;
      // Extraction is off: no worker serves llm-pages, and the runs would wait for nothing.
      for (const runId of new Set(due.map((work) => work.runId)))
        await failRun(db, runId, 'reading the listing pages needs EXTRACTION_ENABLED');
      return [];
    },
    payload: (row) => ({ ...row, correlationId: row.correlationId ?? undefined }),
    counts: { requeued: 'pagesRequeued', failed: 'pagesFailed' },
  },
};
