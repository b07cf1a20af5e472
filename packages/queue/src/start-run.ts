import { randomUUID } from 'node:crypto';
import {
  createRun,
  failRun,
  newPublicRunId,
  setRunTaskId,
  startScheduledSlots,
  type Database,
  type RunRow,
  type RunSearch,
  type RunTrigger,
  type SlotOutcome,
} from '@gleaner/db';
import { scrapeJob } from './jobs/scrape.js';
import type { Queues } from './queues.js';
import { enqueue, enqueueBulk } from './queues.js';

export interface StartRunInput {
  siteId: string;
  trigger: RunTrigger;
  /** Stop after this many postings; all of them when absent. */
  resultsWanted?: number | null;
  /** Carried from the request (or scheduler pass) into every job and log line of the run. */
  correlationId?: string;
  /**
   * The run's own search over a search-driven site's saved search (`POST /jobs/scrape`); stored
   * on the run, where the scrape job reads it. Such a run never expires postings.
   */
  search?: RunSearch | null;
}

/**
 * Starts a scrape run: creates the `queued` run, enqueues its scrape job and records the job
 * id on the run. When the job cannot be queued, the run is closed as failed, so the site is not
 * blocked by a run no worker will ever see. The one way a run starts: the API, the scheduler,
 * the tests and the benchmarks all call it.
 *
 * Throws `ActiveRunExistsError` when the site already has a queued or running run.
 */
export async function startScrapeRun(
  deps: { db: Database; queues: Queues },
  input: StartRunInput,
): Promise<RunRow> {
  const { db, queues } = deps;
  const run = await createRun(db, input);
  let taskId: string;
  try {
    taskId = await enqueue(queues, 'scrape', {
      runId: run.id,
      siteId: input.siteId,
      correlationId: input.correlationId,
    });
  } catch (error) {
    await failRun(db, run.id, 'could not enqueue the scrape job');
    throw error;
  }
  await setRunTaskId(db, run.id, taskId);
  return { ...run, taskId };
}

/** A due site and the slot (its `next_run_at`) the scheduler saw. */
export interface DueSlot {
  siteId: string;
  slot: Date;
}

/** The next run of a site comes `interval × (1 ± JITTER)` after this one starts (seed 003). */
export const SCHEDULE_JITTER = 0.1;

/**
 * Starts the scheduled runs of many due sites: one statement creates the `queued` runs
 * (`trigger='schedule'`, `scheduled_for` = the slot) and moves each site's `next_run_at` on by
 * its interval ± 10 %, then one bulk add queues their scrape jobs. A site whose run is still
 * active skips this slot; a slot another scheduler took is left to it.
 *
 * When the jobs cannot be queued (Redis away), the runs stay `queued` and the slots spent: the
 * reconciler finds runs with no scrape job and queues them. Returns each site's outcome, the
 * runs started and, when it happened, the error that kept their jobs from being queued.
 */
export async function startScheduledRuns(
  deps: { db: Database; queues: Queues },
  slots: readonly DueSlot[],
  correlationId: string,
  random: () => number = Math.random,
): Promise<{
  outcomes: Map<string, SlotOutcome>;
  started: { siteId: string; id: string; runId: string }[];
  /** Set when the runs were created but their scrape jobs could not be queued. */
  enqueueError?: Error;
}> {
  const claims = slots.map(({ siteId, slot }) => {
    const id = randomUUID();
    return {
      siteId,
      slot,
      id,
      runId: newPublicRunId('schedule'),
      taskId: scrapeJob.jobId({ runId: id, siteId }),
      intervalFactor: 1 + SCHEDULE_JITTER * (2 * random() - 1),
      correlationId,
    };
  });
  const outcomes = await startScheduledSlots(deps.db, claims);
  const started = claims.filter((claim) => outcomes.get(claim.siteId) === 'started');
  let enqueueError: Error | undefined;
  try {
    await enqueueBulk(
      deps.queues,
      'scrape',
      started.map((claim) => ({ runId: claim.id, siteId: claim.siteId, correlationId })),
    );
  } catch (error) {
    enqueueError = error instanceof Error ? error : new Error(String(error));
  }
  return {
    outcomes,
    started: started.map(({ siteId, id, runId }) => ({ siteId, id, runId })),
    enqueueError,
  };
}
