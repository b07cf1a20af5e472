import { ClassifiedError, type RetryClass } from '@gleaner/errors';

/**
 * Why a document could not be read, in the extraction guide's terms (seed 001): `timeout`,
 * `extractor_missing` and `unknown` are retried (an operator can also retry an
 * `extractor_missing` once the extractor exists, e.g. OCR for scans); `corruption` and
 * `unsupported` are permanent, since the same bytes fail the same way every time.
 */
export type DocumentErrorType =
  'timeout' | 'corruption' | 'extractor_missing' | 'unsupported' | 'unknown';

const CODES: Record<DocumentErrorType, string> = {
  timeout: 'DOCUMENT_TIMEOUT',
  corruption: 'DOCUMENT_CORRUPT',
  extractor_missing: 'DOCUMENT_EXTRACTOR_MISSING',
  unsupported: 'DOCUMENT_UNSUPPORTED',
  unknown: 'DOCUMENT_UNKNOWN',
};

export function retryClassOf(errorType: DocumentErrorType): RetryClass {
  return errorType === 'corruption' || errorType === 'unsupported' ? 'permanent' : 'transient';
}

export function isDocumentErrorType(value: unknown): value is DocumentErrorType {
  return typeof value === 'string' && Object.hasOwn(CODES, value);
}

/**
 * A document that could not be read. The code is `DOCUMENT_<TYPE>` unless a more precise one is
 * given (`DOCUMENT_TOO_LARGE` is an `unsupported`); the retry class follows the type.
 */
export class DocumentExtractionError extends ClassifiedError {
  constructor(
    readonly errorType: DocumentErrorType,
    message: string,
    options?: { cause?: unknown; code?: string },
  ) {
    super(message, options?.code ?? CODES[errorType], retryClassOf(errorType), options);
  }
}
