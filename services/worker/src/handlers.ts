import type { HandlerMap } from './context.js';
import { backfillHandler } from './backfill/backfill.handler.js';
import { crawlHandler } from './crawl/crawl.handler.js';
import { documentsHandler } from './documents/documents.handler.js';
import { extractHandler } from './extract/extract.handler.js';
import { llmExtractHandler } from './llm/llm-extract.handler.js';
import { llmPagesHandler } from './llm/llm-pages.handler.js';
import { llmSyncHandler } from './llm/llm-sync.handler.js';
import { scrapeHandler } from './scrape/scrape.handler.js';
import { webhooksHandler } from './webhooks/webhooks.handler.js';

/**
 * The worker's stages, one handler per work queue of the catalogue (`@gleaner/queue`): a queue
 * defined there without a handler here does not compile.
 */
export const handlers: HandlerMap = {
  scrape: scrapeHandler,
  crawl: crawlHandler,
  extract: extractHandler,
  documents: documentsHandler,
  'llm-extract': llmExtractHandler,
  'llm-sync': llmSyncHandler,
  'llm-pages': llmPagesHandler,
  backfill: backfillHandler,
  webhooks: webhooksHandler,
};
