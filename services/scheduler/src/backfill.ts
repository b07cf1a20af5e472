import { listRunningExtractionBackfills, type Database } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { backfillJob, enqueue, jobLiveness, removeFinishedJob, type Queues } from '@gleaner/queue';

export interface BackfillResumerOptions {
  db: Database;
  queues: Queues;
  logger: Logger;
}

/**
 * Keeps every running extractor backfill moving (decision 0013). A backfill's progress is its
 * row in Postgres; its next batch is one job in Redis, whose id names the version and the cursor.
 * When that job is gone (Redis flushed, a worker died between saving a batch and queueing the
 * next, the job failed for good, or a worker of another release declined it), the batch at the
 * row's cursor is queued again. A batch queued twice runs once: the row's cursor moves in the
 * batch's own transaction, and the other delivery finds it moved. Returns how many it queued.
 */
export function createBackfillResumer(options: BackfillResumerOptions) {
  const { db, queues, logger } = options;
  return async function resumeBackfills(): Promise<number> {
    const running = await listRunningExtractionBackfills(db);
    if (running.length === 0) return 0;
    const payloads = running.map((backfill) => ({
      version: backfill.version,
      cursor: backfill.cursor,
    }));
    const ids = payloads.map((payload) => backfillJob.jobId(payload));
    const liveness = await jobLiveness(queues, 'backfill', ids);
    let queued = 0;
    for (const [index, payload] of payloads.entries()) {
      const jobId = ids[index]!;
      const job = liveness.get(jobId);
      if (job?.state === 'live') continue;
      if (job?.state === 'completed' || job?.state === 'failed')
        await removeFinishedJob(queues, 'backfill', jobId);
      await enqueue(queues, 'backfill', payload);
      queued += 1;
      logger.info(
        { version: payload.version, cursor: payload.cursor, was: job?.state ?? 'missing' },
        'extractor backfill resumed: its next batch queued',
      );
    }
    return queued;
  };
}

export type BackfillResumer = ReturnType<typeof createBackfillResumer>;
