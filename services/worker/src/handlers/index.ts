import type { JobHandler } from '../context.js';
import { crawlHandler } from './crawl.handler.js';
import { extractHandler } from './extract.handler.js';
import { scrapeHandler } from './scrape.handler.js';

/** Queues a worker process can serve. `llm-extract` joins when its handler lands. */
export const servedQueues = ['scrape', 'crawl', 'extract'] as const;
export type ServedQueue = (typeof servedQueues)[number];

/** One handler per served queue: leaving one out does not compile. */
export const handlers: { [Q in ServedQueue]: JobHandler<Q> } = {
  scrape: scrapeHandler,
  crawl: crawlHandler,
  extract: extractHandler,
};
