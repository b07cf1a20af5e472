import {
  getPostingsForWork,
  settleExtractedPages,
  settleUnchangedPostings,
  type Database,
  type ExtractedPage,
  type PostingForWork,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import DataLoader from 'dataloader';
import { finalizeAndLog } from './handlers/settle.js';

/**
 * The crawl stage's Postgres traffic, gathered across the jobs a worker runs at once. While
 * one batch is in flight the next one fills up; when the worker is idle a request waits only
 * for the end of the current turn of the event loop (group commit). Each job still awaits its
 * own result, so a job completes only after its posting's row has committed.
 */
export interface PostingStore {
  forWork(postingId: string): Promise<PostingForWork | undefined>;
  /** Stores the page and settles the posting `ready`; false when it was no longer pending. */
  settleExtracted(page: ExtractedPage): Promise<boolean>;
  /** Settles the posting `skipped` (its page did not change); false when no longer pending. */
  settleUnchanged(target: { postingId: string; runId: string }): Promise<boolean>;
}

export interface PostingStoreOptions {
  /** Most postings in one statement. */
  maxBatchSize?: number;
}

/** One batch in flight per loader; requests arriving meanwhile form the next batch. */
function groupCommit<K, V>(
  write: (keys: readonly K[]) => Promise<(V | Error)[]>,
  maxBatchSize: number,
): DataLoader<K, V> {
  let inFlight: Promise<unknown> = Promise.resolve();
  return new DataLoader<K, V>(
    (keys) => {
      const batch = write(keys);
      inFlight = batch.catch(() => undefined);
      return batch;
    },
    {
      cache: false,
      maxBatchSize,
      batchScheduleFn: (dispatch) => {
        void inFlight.then(() => setImmediate(dispatch));
      },
    },
  );
}

/**
 * Runs `write` for a whole batch; when the batch statement fails and holds more than one
 * request, each request is tried alone, so one bad row fails only its own job.
 */
async function eachOrAlone<K, V>(
  keys: readonly K[],
  write: (keys: readonly K[]) => Promise<V[]>,
): Promise<(V | Error)[]> {
  try {
    return await write(keys);
  } catch (error) {
    if (keys.length === 1) return [error instanceof Error ? error : new Error(String(error))];
    return Promise.all(
      keys.map(async (key) => {
        try {
          const [value] = await write([key]);
          return value as V;
        } catch (alone) {
          return alone instanceof Error ? alone : new Error(String(alone));
        }
      }),
    );
  }
}

export function createPostingStore(
  db: Database,
  logger: Logger,
  { maxBatchSize = 64 }: PostingStoreOptions = {},
): PostingStore {
  /** After the batch's commit: closes each run that no longer has a pending posting. */
  async function finalizeRuns(runIds: Iterable<string>): Promise<void> {
    for (const runId of new Set(runIds)) await finalizeAndLog(db, logger.child({ runId }), runId);
  }

  const reads = groupCommit<string, PostingForWork | undefined>(async (ids) => {
    const found = await getPostingsForWork(db, ids);
    return ids.map((id) => found.get(id));
  }, maxBatchSize);

  /** Settles a batch, then (its commit done) tries to close the runs it touched. */
  function settling<K extends { postingId: string; runId: string }>(
    settle: (batch: readonly K[]) => Promise<Set<string>>,
  ) {
    return async (keys: readonly K[]): Promise<(boolean | Error)[]> => {
      const results = await eachOrAlone(keys, async (batch) => {
        const settled = await settle(batch);
        return batch.map((key) => settled.has(key.postingId));
      });
      // A failure here fails the batch's jobs; their retries find the postings settled and
      // try to close the run again (crawl handler), so no run is left open by it.
      await finalizeRuns(
        keys.filter((_, index) => results[index] === true).map((key) => key.runId),
      );
      return results;
    };
  }

  const extracted = groupCommit<ExtractedPage, boolean>(
    settling((batch) => settleExtractedPages(db, batch)),
    maxBatchSize,
  );
  const unchanged = groupCommit<{ postingId: string; runId: string }, boolean>(
    settling((batch) => settleUnchangedPostings(db, batch)),
    maxBatchSize,
  );

  return {
    forWork: (postingId) => reads.load(postingId),
    settleExtracted: (page) => extracted.load(page),
    settleUnchanged: (target) => unchanged.load(target),
  };
}
