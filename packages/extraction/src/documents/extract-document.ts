import {
  detectDocumentFormat,
  knownUnsupportedFormat,
  type DocumentFormat,
  type DocumentHints,
} from './detect-format.js';
import { extractDocx } from './docx.js';
import { DocumentExtractionError } from './errors.js';
import { extractPdf } from './pdf.js';
import { extractHtml, extractPlainText } from './text.js';
import { looksLikeZip } from './zip.js';

export interface DocumentLimits {
  /** Input bytes; a larger document is `unsupported` (`DOCUMENT_TOO_LARGE`). */
  maxBytes: number;
  /** PDF pages read; the rest are ignored, their count still reported. */
  maxPages: number;
  /**
   * Total inflated bytes: DOCX across the zip's entries, PDF across its Flate streams (images
   * aside). A bomb fails as `corruption`.
   */
  maxDecompressedBytes: number;
  /** Extracted text is cut to this many characters (UTF-16 code units, never half a pair). */
  maxTextChars: number;
}

/**
 * 20 MiB covers a CV or a cover letter with photos many times over; 500 pages and 2 million
 * characters (a ~1000-page novel) are past any document a person sends about a job, and bound
 * what one document costs to parse, store and index.
 */
export const defaultDocumentLimits: DocumentLimits = {
  maxBytes: 20 * 1024 * 1024,
  maxPages: 500,
  maxDecompressedBytes: 100 * 1024 * 1024,
  maxTextChars: 2_000_000,
};

export interface ExtractedDocument {
  format: DocumentFormat;
  text: string;
  /** The document's own title (PDF info, DOCX core properties, HTML `<title>`/`<h1>`), if any. */
  title: string | null;
  /** PDF: pages in the file; DOCX: pages as Word last counted them; null when unknown. */
  pageCount: number | null;
  /** `text.length`. */
  textChars: number;
  /** The text is not the whole document: cut at `maxTextChars`, or PDF pages left unread. */
  truncated: boolean;
}

/** Cuts `text` to `max` UTF-16 code units without splitting a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

function withoutNul(text: string | null): string | null {
  // Postgres text cannot hold U+0000, and no document means it.
  return text !== null && text.includes('\0') ? text.replaceAll('\0', '') : text;
}

/**
 * The text of a PDF, DOCX, HTML or plain-text document, in the caller's thread. Throws
 * DocumentExtractionError: `unsupported` for formats we do not read (images, other zips,
 * binary), password-protected PDFs and documents over `maxBytes`; `corruption` for documents
 * their parser cannot open, and DOCX zip bombs; `extractor_missing` for scanned PDFs (no text
 * layer: they need OCR); `unknown` for anything else a parser throws.
 *
 * A parse has no time limit here: run untrusted documents through `createDocumentParserPool`,
 * whose threads can be stopped.
 */
export async function extractDocument(
  bytes: Uint8Array,
  hints?: DocumentHints,
  limits: DocumentLimits = defaultDocumentLimits,
): Promise<ExtractedDocument> {
  if (bytes.byteLength === 0)
    throw new DocumentExtractionError('corruption', 'the document is empty');
  if (bytes.byteLength > limits.maxBytes)
    throw new DocumentExtractionError(
      'unsupported',
      `the document is ${bytes.byteLength} bytes, more than the ${limits.maxBytes} allowed`,
      { code: 'DOCUMENT_TOO_LARGE' },
    );
  const format = detectDocumentFormat(bytes, hints);
  if (format === null) {
    const known = knownUnsupportedFormat(bytes);
    throw new DocumentExtractionError(
      'unsupported',
      known !== null
        ? `the document is ${known}, not a PDF, DOCX, HTML or text document`
        : looksLikeZip(bytes)
          ? 'the document is a zip without word/document.xml, not a DOCX'
          : 'the document is not a PDF, DOCX, HTML or text document',
    );
  }
  let result: { text: string; title: string | null; pageCount: number | null };
  let pagesSkipped = false;
  try {
    if (format === 'pdf') {
      const pdf = await extractPdf(bytes, limits);
      result = pdf;
      pagesSkipped = pdf.pagesSkipped;
    } else if (format === 'docx') {
      result = await extractDocx(bytes, limits.maxDecompressedBytes);
    } else if (format === 'html') {
      result = extractHtml(bytes, hints?.mediaType);
    } else {
      result = extractPlainText(bytes, hints?.mediaType);
    }
  } catch (error) {
    if (error instanceof DocumentExtractionError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new DocumentExtractionError(
      'unknown',
      `reading the ${format} document failed: ${detail}`,
      {
        cause: error,
      },
    );
  }
  const whole = withoutNul(result.text) ?? '';
  const text = cut(whole, limits.maxTextChars);
  return {
    format,
    text,
    title: withoutNul(result.title),
    pageCount: result.pageCount,
    textChars: text.length,
    truncated: pagesSkipped || text.length < whole.length,
  };
}
