import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/** The BullMQ priority crawl jobs are added with; see `defaults` below. */
export const CRAWL_NEW_JOB_PRIORITY = 1;

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
  defaults: {
    attempts: 4,
    backoff: { type: 'exponential', delay: 2_000 },
    // A job that has not asked its site's gate yet waits behind those coming back for a slot
    // they reserved: BullMQ takes jobs without a priority first, and a parked crawl job drops
    // its priority (services/worker/src/crawl/polite-fetch.ts). Without it, a woken job queues behind
    // every posting a scrape just listed and its site's slot goes unused.
    priority: CRAWL_NEW_JOB_PRIORITY,
    ...retention,
  },
  jobId: (p) => `crawl-${p.runId}-${p.postingId}`,
});
