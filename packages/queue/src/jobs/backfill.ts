import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/**
 * Re-extracts the next batch of stored postings for an extractor version (decision 0013), from
 * the listing payload or stored page body, never fetching. Each job covers the postings after
 * `cursor` and queues the next batch itself; the scheduler queues a lost one again. The id names
 * the version and the cursor, so a batch queued twice runs once.
 */
export const backfillJob = defineJob({
  queue: 'backfill',
  name: 'backfill.re-extract-postings',
  payload: z.object({
    /** The extractor version the postings are re-extracted under. */
    version: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/),
    /** The last posting id the previous batch covered; null for the first batch. */
    cursor: z.uuid().nullable(),
  }),
  defaults: { attempts: 3, backoff: { type: 'exponential', delay: 5_000 }, ...retention },
  jobId: (p) => `backfill-${p.version}-${p.cursor ?? 'start'}`,
});
