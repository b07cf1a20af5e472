import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/** Lists one site's postings for one run, upserts them and fans out crawl jobs. */
export const scrapeJob = defineJob({
  queue: 'scrape',
  name: 'scrape.list-postings',
  payload: z.object({
    runId: z.uuid(),
    siteId: z.uuid(),
    correlationId: z.string().max(128).optional(),
  }),
  defaults: { attempts: 3, backoff: { type: 'exponential', delay: 5_000 }, ...retention },
  jobId: (p) => `scrape-${p.runId}`,
});
