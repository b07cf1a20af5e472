import {
  createRun,
  failRun,
  setRunTaskId,
  type Database,
  type RunRow,
  type RunTrigger,
} from '@gleaner/db';
import type { Queues } from './queues.js';
import { enqueue } from './queues.js';

export interface StartRunInput {
  siteId: string;
  trigger: RunTrigger;
  /** Stop after this many postings; all of them when absent. */
  resultsWanted?: number | null;
  /** Carried from the request (or scheduler pass) into every job and log line of the run. */
  correlationId?: string;
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
