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
    // A site's own max_retries + 1 replaces it where the site is known (crawlAttempts).
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

/**
 * A site's crawl jobs get its `max_retries` (seed 003, 3 by default) retries after their first
 * attempt: the scrape that lists its postings, the reconciler that adds a lost job again and a
 * dead letter's requeue all add them with these attempts.
 */
export const crawlAttempts = (site: { maxRetries: number }) => site.maxRetries + 1;
