import { Job } from 'bullmq';
import type { Queues } from './queues.js';
import type { WorkQueueName } from './catalogue.js';

/**
 * What Redis holds of a job, as the reconciler needs it: `live` (waiting, delayed, prioritized,
 * active: it will run or is running), `completed`, `failed` (for good: a failure with attempts
 * left goes back to waiting or delayed), or `missing` (never added, removed, or lost with Redis).
 */
export type JobLiveness =
  /** `active`: a worker holds it now. */
  | { state: 'live'; active: boolean }
  | { state: 'completed' }
  | { state: 'failed'; reason: string }
  | { state: 'missing' };

/** Jobs asked about at once: one command each, written without waiting for replies. */
const CHUNK = 500;

/** The liveness of each job id in one queue. */
export async function jobLiveness(
  queues: Queues,
  queue: WorkQueueName,
  ids: readonly string[],
): Promise<Map<string, JobLiveness>> {
  const found = new Map<string, JobLiveness>();
  for (let start = 0; start < ids.length; start += CHUNK) {
    const chunk = ids.slice(start, start + CHUNK);
    const states = await Promise.all(chunk.map((id) => queues[queue].getJobState(id)));
    await Promise.all(
      chunk.map(async (id, index) => {
        const state = states[index];
        if (state === 'unknown') found.set(id, { state: 'missing' });
        else if (state === 'completed') found.set(id, { state: 'completed' });
        else if (state === 'failed') {
          const job = await Job.fromId(queues[queue], id);
          found.set(id, { state: 'failed', reason: job?.failedReason || 'failed' });
        } else found.set(id, { state: 'live', active: state === 'active' });
      }),
    );
  }
  return found;
}

/**
 * Removes a finished job so that its deterministic id can be added again (adding an id Redis
 * still holds is a no-op). A job that became active meanwhile is locked and stays.
 */
export async function removeFinishedJob(
  queues: Queues,
  queue: WorkQueueName,
  id: string,
): Promise<void> {
  await queues[queue].remove(id);
}
