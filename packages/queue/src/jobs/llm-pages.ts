import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/** A short stable digest of a URL or key, for job ids (`:` and length are BullMQ's limits). */
const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 24);

const common = { runId: z.uuid(), correlationId: z.string().max(128).optional() };

/**
 * Seed 004's multi-pass reading of a `postsOnListing` site's run (decision 0026), one job per
 * unit of each pass: `read` one listing page into candidate posts, `merge` the run's candidates
 * (run-level, once every page is read), `investigate` one merged post's own page for the
 * required fields still empty. Ids are deterministic per pass and unit, so that each is queued
 * once however often its predecessor runs.
 */
export const llmPagesJob = defineJob({
  queue: 'llm-pages',
  name: 'llm.read-pages',
  payload: z.discriminatedUnion('pass', [
    z.object({ pass: z.literal('read'), ...common, url: z.string().max(2048) }),
    z.object({ pass: z.literal('merge'), ...common }),
    z.object({ pass: z.literal('investigate'), ...common, key: z.string().max(2200) }),
  ]),
  defaults: { attempts: 3, backoff: { type: 'exponential', delay: 10_000 }, ...retention },
  jobId: (p) =>
    p.pass === 'read'
      ? `pages-read-${p.runId}-${digest(p.url)}`
      : p.pass === 'merge'
        ? `pages-merge-${p.runId}`
        : `pages-investigate-${p.runId}-${digest(p.key)}`,
});
