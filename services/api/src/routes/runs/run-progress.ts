import type { RunWorker, RunWithProgress, SiteRow } from '@gleaner/db';
import type { RunLogStage } from '@gleaner/queue';
import { presentRun } from '../jobs/presenters.js';

/** Where a stage is: not begun, under way, through, or cut short by the run's end. */
export type StageState = 'waiting' | 'active' | 'done' | 'stopped';

export interface StageProgress {
  stage: RunLogStage;
  name: string;
  state: StageState;
  done: number;
  /** Null while unknown: a listing in progress does not know how many it will find. */
  total: number | null;
  /** A few words beside the count ("3 unchanged, 1 error"). */
  note: string;
}

/** What the run page shows and `progress` events carry: the run's report and its stages. */
export interface RunProgress {
  run: ReturnType<typeof presentRun>;
  listing_done: boolean;
  /** The run has ended (`succeeded`, `partial`, `failed`, `cancelled`): nothing will change. */
  ended: boolean;
  stages: StageProgress[];
  /** The worker processes whose last heartbeat held jobs of the run, and how many each. */
  workers: { worker_id: string; status: RunWorker['status']; jobs: number }[];
}

export function isRunActive(status: string): boolean {
  return status === 'queued' || status === 'running';
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/**
 * The stages of a run, from the counters `GET /jobs/scrape/:runId` reports. Listing (ING) has
 * listed `requested_pages` postings and is through when the scrape job completed its listing.
 * Crawling (CRL) has handled each listed posting that is no longer pending: extracted, unchanged
 * (skipped) or failed. Extraction (EXT) has extracted `ready_count` of those that needed it: the
 * listed ones neither unchanged nor failed. A crawl job extracts the page it fetched
 * (decision 0004), so the last two move together unless pages are unchanged or fail.
 */
export function presentRunProgress(
  run: RunWithProgress,
  site: Pick<SiteRow, 'siteName'> | undefined,
  workers: readonly RunWorker[] = [],
): RunProgress {
  const ended = !isRunActive(run.status);
  const listed = run.requestedPages;
  const handled = run.readyCount + run.skippedCount + run.errorsCount;
  const toExtract = Math.max(listed - run.skippedCount - run.errorsCount, run.readyCount);
  const started = run.status === 'running' || ended;
  const laterStage = (done: number, total: number): StageState => {
    if (ended) return done >= total ? 'done' : 'stopped';
    return run.listingDone && done >= total ? 'done' : listed > 0 ? 'active' : 'waiting';
  };
  return {
    run: presentRun(run, site),
    listing_done: run.listingDone,
    ended,
    workers: workers.map((worker) => ({
      worker_id: worker.workerId,
      status: worker.status,
      jobs: worker.jobs,
    })),
    stages: [
      {
        stage: 'ING',
        name: 'Listing',
        state: run.listingDone ? 'done' : ended ? 'stopped' : started ? 'active' : 'waiting',
        done: listed,
        total: run.listingDone || ended ? listed : null,
        note: `${plural(listed, 'posting')} listed`,
      },
      {
        stage: 'CRL',
        name: 'Crawling',
        state: laterStage(handled, listed),
        done: handled,
        total: listed,
        note: `${run.skippedCount} unchanged, ${plural(run.errorsCount, 'error')}`,
      },
      {
        stage: 'EXT',
        name: 'Extraction',
        state: laterStage(run.readyCount, toExtract),
        done: run.readyCount,
        total: toExtract,
        note: `${run.readyCount} ready`,
      },
    ],
  };
}
