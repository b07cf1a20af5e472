import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/** Parses a stored body into posting fields; retried from the stored body, never refetched. */
export const extractJob = defineJob({
  queue: 'extract',
  name: 'extract.parse-posting',
  payload: z.object({
    runId: z.uuid(),
    postingId: z.uuid(),
    correlationId: z.string().max(128).optional(),
  }),
  defaults: { attempts: 3, backoff: { type: 'exponential', delay: 1_000 }, ...retention },
  jobId: (p) => `extract-${p.runId}-${p.postingId}`,
});
