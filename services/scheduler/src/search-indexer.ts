import { indexPendingSearch, type Database } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { createIntervalLoop, sleepUnlessAborted, type Sleep } from './interval-loop.js';

export interface SearchIndexerOptions {
  db: Database;
  logger: Logger;
  /** Time between looks for pending postings (`SEARCH_INDEX_INTERVAL_MS`). */
  intervalMs: number;
  /** Postings per statement (`SEARCH_INDEX_BATCH_SIZE`). */
  batchSize: number;
  /** Pause between two statements (`SEARCH_INDEX_PAUSE_MS`). */
  pauseMs: number;
  /** Waits between batches and looks; rejects when `signal` aborts. */
  sleep?: Sleep;
}

export interface SearchIndexer {
  start(): void;
  /** Stops the loop, mid-sleep at once; a statement under way ends first. */
  stop(): Promise<void>;
  /** Indexes every pending posting, a batch at a time; resolves with how many. */
  drain(): Promise<number>;
}

/**
 * Keeps postings' search vectors up to date (decision 0015), off the pipeline's path: a trigger
 * marks a posting `search_pending` when its title, company, location or description changes, and
 * this loop computes the marked postings' vectors in batches, with a pause between statements.
 * Every scheduler replica runs it; replicas skip each other's rows. A failed statement is logged
 * and retried at the next look.
 */
export function createSearchIndexer(options: SearchIndexerOptions): SearchIndexer {
  const { db, logger, intervalMs, batchSize, pauseMs } = options;
  const sleep = options.sleep ?? sleepUnlessAborted;
  const background = createIntervalLoop(
    async () => {
      try {
        const indexed = await drain();
        if (indexed > 0) logger.debug({ indexed }, 'search index: postings brought up to date');
      } catch (error) {
        if (!background.signal.aborted)
          logger.warn({ err: error }, 'search index: a batch failed; retried at the next look');
      }
    },
    intervalMs,
    sleep,
  );

  async function drain(): Promise<number> {
    let total = 0;
    while (!background.signal.aborted) {
      const indexed = await indexPendingSearch(db, batchSize);
      total += indexed;
      if (indexed < batchSize) break;
      await sleep(pauseMs, background.signal);
    }
    return total;
  }

  return { start: background.start, stop: background.stop, drain };
}
