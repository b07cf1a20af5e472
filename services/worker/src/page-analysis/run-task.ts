import { analysePage, readPage, type FieldExtractor } from './analyse-page.js';
import { labelPage, learnTemplate } from './template-tasks.js';
import type { AnalysisKind, AnalysisRequest, AnalysisTasks } from './thread-protocol.js';

/** Runs one analysis task, in a thread or on the event loop alike. */
export function runAnalysisTask(
  request: AnalysisRequest,
  extract: FieldExtractor,
): AnalysisTasks[AnalysisKind]['result'] {
  switch (request.kind) {
    case 'crawl':
      return analysePage(request.input, extract);
    case 'read':
      return readPage(request.input, extract);
    case 'learn':
      return learnTemplate(request.input);
    case 'label':
      return labelPage(request.input);
  }
}
