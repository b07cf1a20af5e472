import type { z } from 'zod';
import { crawlJob } from './jobs/crawl.js';
import { deadLetterJob } from './jobs/dead-letter.js';
import { extractJob } from './jobs/extract.js';
import { llmExtractJob } from './jobs/llm-extract.js';
import { scrapeJob } from './jobs/scrape.js';

/** Every job, once: API, worker and scheduler import this and nothing else. */
export const jobs = {
  scrape: scrapeJob,
  crawl: crawlJob,
  extract: extractJob,
  'llm-extract': llmExtractJob,
  'dead-letter': deadLetterJob,
} as const;

export type QueueName = keyof typeof jobs;
export const queueNames = Object.keys(jobs) as QueueName[];
export type JobPayload<Q extends QueueName> = z.output<(typeof jobs)[Q]['payload']>;
