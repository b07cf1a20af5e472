import { backfillLedger } from './backfill.js';
import { crawlLedger } from './crawl.js';
import { documentsLedger } from './documents.js';
import { extractLedger } from './extract.js';
import type { LedgerMap } from './ledger.js';
import { llmExtractLedger } from './llm-extract.js';
import { llmPagesLedger } from './llm-pages.js';
import { llmSyncLedger } from './llm-sync.js';
import { scrapeLedger } from './scrape.js';
import { webhooksLedger } from './webhooks.js';

/**
 * Every work queue's stage, once (ledger.ts): the worker runs its jobs by its policy and gives
 * up on them through it, the reconciler repairs its rows through it. A queue of the catalogue
 * without a ledger here does not compile.
 */
export const ledgers: LedgerMap = {
  scrape: scrapeLedger,
  crawl: crawlLedger,
  extract: extractLedger,
  documents: documentsLedger,
  'llm-extract': llmExtractLedger,
  'llm-sync': llmSyncLedger,
  'llm-pages': llmPagesLedger,
  backfill: backfillLedger,
  webhooks: webhooksLedger,
};

export { documentErrorTypeOf } from './documents.js';
export { postingFailureError } from './postings.js';
export * from './ledger.js';
