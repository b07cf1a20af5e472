import {
  finalizeRun,
  finalizedRunLog,
  readPostingsForWork,
  settlePostings,
  type Database,
  type ExpiryPolicy,
  type PostingForWork,
  type PostingSettle,
  type RunRequestCounts,
  type FinalizedRun,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import DataLoader from 'dataloader';
import { linkRunDuplicates } from '@gleaner/sources/cross-source';

/**
 * How postings leave `pending` and runs close, for every stage of the worker: the only module
 * that finalizes runs.
 *
 * Reads and settles are gathered across the jobs a worker runs at once. While one batch is in
 * flight the next one fills up; when the worker is idle a request waits only for the end of the
 * current turn of the event loop (group commit). Each job still awaits its own result, so a job
 * completes only after its posting's row has committed. After each batch's commit the runs it
 * touched are offered to `finalizeRun`: it must see the settles committed (DESIGN.md, Finalize).
 */
export interface Settlement {
  /**
   * The posting with its run's status and its site's settings, when it is still pending in
   * `runId` and that run is running; otherwise undefined (a duplicate delivery, a finished or
   * cancelled run), after offering the run for closing: the job may be the retry of one whose
   * settle committed but whose run check failed.
   */
  pendingWork(target: { postingId: string; runId: string }): Promise<PostingForWork | undefined>;
  /**
   * Moves the posting out of `pending`, then closes its run if it was the last. False when it
   * was no longer pending in that run.
   */
  settle(settle: PostingSettle): Promise<boolean>;
  /** Closes the run when its listing is done and nothing is pending, and logs when it did. */
  closeRunIfDone(runId: string): Promise<void>;
}

export interface SettlementOptions {
  /** Most postings in one statement. */
  maxBatchSize?: number;
  /** When the runs it finalizes expire postings; the defaults of `@gleaner/db` when absent. */
  expiry?: ExpiryPolicy;
  /** A run's requests by answer, for its `http_errors` alert; not judged when absent. */
  runRequests?: (runId: string) => Promise<RunRequestCounts | null>;
  /** Queues the LLM sync of a run that would close but for it (decision 0025). */
  awaitingSync?: (runId: string) => Promise<void>;
  /**
   * What a run's postings need before the run closes, once none is pending (a failure is logged
   * and the run closes all the same).
   */
  beforeClose?: (run: { id: string; siteId: string }) => Promise<void>;
  /** What follows a run's close that is not the settles' business (a failure is logged). */
  afterClose?: (run: FinalizedRun) => Promise<void>;
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

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

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
    if (keys.length === 1) return [asError(error)];
    return Promise.all(
      keys.map(async (key) => {
        try {
          const [value] = await write([key]);
          return value as V;
        } catch (alone) {
          return asError(alone);
        }
      }),
    );
  }
}

export function createSettlement(
  db: Database,
  logger: Logger,
  {
    maxBatchSize = 64,
    expiry,
    runRequests,
    awaitingSync,
    beforeClose,
    afterClose,
  }: SettlementOptions = {},
): Settlement {
  async function closeRunIfDone(runId: string): Promise<void> {
    const closed = await finalizeRun(db, runId, expiry, {
      ...(runRequests && { requests: () => runRequests(runId) }),
      ...(awaitingSync && { awaitingSync }),
      ...(beforeClose && {
        beforeClose: ({ siteId }) =>
          beforeClose({ id: runId, siteId }).catch((error: unknown) => {
            logger.warn(
              { err: error, runId },
              'could not finish what comes before the run’s close',
            );
          }),
      }),
    });
    if (!closed) return;
    const { level, fields } = finalizedRunLog(closed);
    logger[level](fields, 'run finalized');
    // The same jobs seen through other sources (decision 0027). Not the settles' business: a
    // failure is logged, and the site's next run links them.
    try {
      const linked = await linkRunDuplicates(db, runId);
      if (linked > 0) logger.info({ runId, linked }, 'postings linked to the same jobs elsewhere');
    } catch (error) {
      logger.warn({ err: error, runId }, 'could not link the run’s postings across sources');
    }
    try {
      await afterClose?.(closed);
    } catch (error) {
      logger.warn({ err: error, runId }, 'could not finish what follows the run’s close');
    }
  }

  const reads = groupCommit<string, PostingForWork | undefined>(async (ids) => {
    const found = await readPostingsForWork(db, ids);
    return ids.map((id) => found.get(id));
  }, maxBatchSize);

  const settles = groupCommit<PostingSettle, boolean>(async (keys) => {
    const results = await eachOrAlone(keys, async (batch) => {
      const settled = await settlePostings(db, batch);
      return batch.map((key) => settled.has(key.postingId));
    });
    // Every run the batch touched, whatever each settle's outcome: a settle that found its
    // posting settled already may be the retry of one whose commit went through. A failure
    // here fails the batch's jobs, and their retries offer the run again.
    for (const runId of new Set(keys.map((key) => key.runId))) await closeRunIfDone(runId);
    return results;
  }, maxBatchSize);

  return {
    async pendingWork({ postingId, runId }) {
      const posting = await reads.load(postingId);
      if (posting?.runId !== runId || posting.runStatus !== 'running') return undefined;
      if (posting.status === 'pending') return posting;
      await closeRunIfDone(runId);
      return undefined;
    },
    settle: (settle) => settles.load(settle),
    closeRunIfDone,
  };
}
