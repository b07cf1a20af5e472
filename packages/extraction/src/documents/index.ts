/**
 * People's documents (CVs, cover letters, references) as text: PDF, DOCX, HTML and plain text,
 * with the extraction guide's error types (seed 001). `extractDocument` parses in the caller's
 * thread; `createDocumentParserPool` runs it in child processes that a timeout or a cancellation can
 * really stop.
 */
export { detectDocumentFormat, type DocumentFormat, type DocumentHints } from './detect-format.js';
export { DocumentExtractionError, type DocumentErrorType } from './errors.js';
export {
  defaultDocumentLimits,
  extractDocument,
  type DocumentLimits,
  type ExtractedDocument,
} from './extract-document.js';
export {
  createDocumentParserPool,
  type DocumentParserPool,
  type DocumentParserPoolOptions,
} from './parser-pool.js';
