import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/**
 * The LLM sync of one run of a `use_llm_sync` site (seed 004's SyncPostsJob, decision 0025): once
 * the run has listed and read everything, the model is asked which postings it found for the
 * first time are postings of the site it did not list again, and the grounded matches are merged;
 * then the run closes. One per run: the id is the run's.
 */
export const llmSyncJob = defineJob({
  queue: 'llm-sync',
  name: 'llm.sync-postings',
  payload: z.object({
    runId: z.uuid(),
    correlationId: z.string().max(128).optional(),
  }),
  defaults: { attempts: 3, backoff: { type: 'exponential', delay: 10_000 }, ...retention },
  jobId: (p) => `llm-sync-${p.runId}`,
});
