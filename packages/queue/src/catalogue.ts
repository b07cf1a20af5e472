import type { z } from 'zod';
import { backfillJob } from './jobs/backfill.js';
import { crawlJob } from './jobs/crawl.js';
import { deadLetterJob } from './jobs/dead-letter.js';
import { documentJob } from './jobs/documents.js';
import { extractJob } from './jobs/extract.js';
import { llmExtractJob } from './jobs/llm-extract.js';
import { llmPagesJob } from './jobs/llm-pages.js';
import { llmSyncJob } from './jobs/llm-sync.js';
import { schedulerPassJob } from './jobs/scheduler-pass.js';
import { scrapeJob } from './jobs/scrape.js';
import { webhookJob } from './jobs/webhooks.js';

export { STANDARD_WEBHOOK_RETRY_SCHEDULE_MS } from './jobs/webhooks.js';

/**
 * Every job, once: API, worker and scheduler import this and nothing else. Loads only zod, so
 * that `@gleaner/config` reads the work queues from here (`@gleaner/queue/catalogue`).
 */
export const jobs = {
  scrape: scrapeJob,
  crawl: crawlJob,
  extract: extractJob,
  documents: documentJob,
  'llm-extract': llmExtractJob,
  'llm-sync': llmSyncJob,
  'llm-pages': llmPagesJob,
  backfill: backfillJob,
  webhooks: webhookJob,
  'dead-letter': deadLetterJob,
  scheduler: schedulerPassJob,
} as const;

export type QueueName = keyof typeof jobs;
export const queueNames = Object.keys(jobs) as QueueName[];
export type JobPayload<Q extends QueueName> = z.output<(typeof jobs)[Q]['payload']>;

/**
 * Queues whose jobs workers run. Dead letters are parked for operators, never consumed; forced
 * scheduling passes are run by the scheduler service.
 */
export type WorkQueueName = Exclude<QueueName, 'dead-letter' | 'scheduler'>;
export const workQueueNames = queueNames.filter(
  (name): name is WorkQueueName => name !== 'dead-letter' && name !== 'scheduler',
);
