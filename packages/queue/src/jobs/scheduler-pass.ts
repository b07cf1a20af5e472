import { z } from 'zod';
import { defineJob } from '../define-job.js';

/**
 * A scheduling pass asked for through the API (`POST /scheduler/run`): whichever scheduler
 * replica takes it runs a pass at once, for every due site or for one site whether due or not,
 * and returns the pass report as the job's result. Passes on the scheduler's own interval do not
 * go through the queue.
 */
export const schedulerPassJob = defineJob({
  queue: 'scheduler',
  name: 'scheduler.run-pass',
  payload: z.object({
    requestId: z.uuid(),
    /** A site's name or id: start its run now even if it is not due. */
    site: z.string().min(1).max(200).optional(),
    correlationId: z.string().max(128).optional(),
  }),
  // A pass is cheap and a forced one is asked for by a person waiting: no retries, kept an hour.
  defaults: { attempts: 1, removeOnComplete: { age: 3600 }, removeOnFail: { age: 24 * 3600 } },
  jobId: (p) => `pass-${p.requestId}`,
});
