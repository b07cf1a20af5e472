import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/** Fetches one posting page, stores the body, and hands changed content to extraction. */
export const crawlJob = defineJob({
  queue: 'crawl',
  name: 'crawl.fetch-posting',
  payload: z.object({
    runId: z.uuid(),
    siteId: z.uuid(),
    postingId: z.uuid(),
    correlationId: z.string().max(128).optional(),
  }),
  defaults: { attempts: 4, backoff: { type: 'exponential', delay: 2_000 }, ...retention },
  jobId: (p) => `crawl-${p.runId}-${p.postingId}`,
});
