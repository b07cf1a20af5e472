import { z } from 'zod';
import { defineJob } from '../define-job.js';

/**
 * A job that exhausted its attempts, parked with everything needed to requeue it. Nothing
 * consumes this queue: operators inspect, requeue or purge its jobs.
 */
export const deadLetterJob = defineJob({
  queue: 'dead-letter',
  name: 'dead-letter.park-job',
  payload: z.object({
    queue: z.string(),
    jobName: z.string(),
    jobId: z.string(),
    payload: z.unknown(),
    errorClass: z.enum(['permanent', 'transient']),
    errorCode: z.string().optional(),
    error: z.string(),
    attemptsMade: z.number().int(),
    failedAt: z.iso.datetime(),
  }),
  defaults: { attempts: 1, removeOnComplete: false, removeOnFail: false },
  jobId: (p) => `dead-${p.queue}-${p.jobId}`,
});
