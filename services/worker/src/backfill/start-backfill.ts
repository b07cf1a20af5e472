import { setTimeout as sleep } from 'node:timers/promises';
import { startExtractionBackfill, type BackfillStart, type Database } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { enqueue, type Queues } from '@gleaner/queue';

/**
 * Starts the backfill of this worker's extractor version, once per version whatever the number
 * of replicas (the row is keyed by version, the first batch's job id by version and cursor), and
 * queues its next batch. A backfill that exists already is left where it is: its running batch
 * job dedupes this one, and the scheduler queues one that was lost.
 */
export async function startBackfill(
  deps: { db: Database; queues: Queues; logger: Logger },
  version: string,
): Promise<BackfillStart> {
  const start = await startExtractionBackfill(deps.db, version);
  if (!start.started) {
    deps.logger.warn(
      { version, newerVersion: start.newerVersion },
      'a newer extractor version has a backfill already; this version starts none',
    );
    return start;
  }
  const { backfill } = start;
  if (backfill.status === 'running')
    await enqueue(deps.queues, 'backfill', { version, cursor: backfill.cursor });
  deps.logger.info(
    {
      version,
      status: backfill.status,
      total: backfill.total,
      done: backfill.done,
      skipped: backfill.skipped,
      failed: backfill.failed,
    },
    'extractor backfill',
  );
  return start;
}

/**
 * `startBackfill` at a worker's start, tried again every `retryMs` while Postgres or Redis do not
 * answer, until it succeeds or `signal` aborts (shutdown).
 */
export async function keepStartingBackfill(
  deps: { db: Database; queues: Queues; logger: Logger },
  version: string,
  signal: AbortSignal,
  retryMs = 30_000,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await startBackfill(deps, version);
      return;
    } catch (error) {
      deps.logger.warn({ err: error, version }, 'could not start the extractor backfill; retrying');
    }
    try {
      await sleep(retryMs, undefined, { signal });
    } catch {
      return; // aborted: shutting down
    }
  }
}
