import type { SiteTemplate } from '@gleaner/extraction';
import type { PageAnalysis, PageInput, PageReading, StoredPageInput } from './analyse-page.js';
import type {
  TemplateLabelInput,
  TemplateLabelResult,
  TemplateLearnInput,
} from './template-tasks.js';

/**
 * What the event loop and a page analyser thread say to each other (page-analyser.ts and
 * analyse-page.thread.ts). Apart from page-analyser.ts because a thread must not load what it
 * loads (site adapters, the database client).
 */

/** The kinds of work a thread does: a fetched page for the crawl, a stored one read again. */
export interface AnalysisTasks {
  /** Fingerprints, the unchanged check and extraction (`analysePage`). */
  crawl: { input: PageInput; result: PageAnalysis };
  /** Extraction and, when asked, the visible text (`readPage`): the extract and LLM stages. */
  read: { input: StoredPageInput; result: PageReading };
  /** A site's template learned from its stored pages (`learnTemplate`, decision 0028). */
  learn: { input: TemplateLearnInput; result: { template: SiteTemplate | null } };
  /** A model's labels for one page grounded in the site's template (`labelPage`). */
  label: { input: TemplateLabelInput; result: TemplateLabelResult };
}
export type AnalysisKind = keyof AnalysisTasks;

/** One page sent to a thread. */
export type AnalysisRequest = {
  [K in AnalysisKind]: { id: number; kind: K; input: AnalysisTasks[K]['input'] };
}[AnalysisKind];

/**
 * A thread's answer for one page, or `'ready'` once its module has loaded. A thread answers a
 * batch of pages with one message holding every page's answer.
 */
export type AnalysisReply =
  { id: number; result: AnalysisTasks[AnalysisKind]['result'] } | { id: number; error: string };

/** What each thread is started with. */
export interface AnalyserThreadData {
  /**
   * Two 32-bit integers the thread writes as it goes: at `PROGRESS_SEQUENCE` a count of pages
   * begun, at `PROGRESS_PAGE` the id of the page it is analysing (`IDLE` between pages).
   */
  progress: SharedArrayBuffer;
}

export const PROGRESS_SEQUENCE = 0;
export const PROGRESS_PAGE = 1;
export const IDLE = -1;
