import type { ExtractedFields } from '@gleaner/db';
import { ClassifiedError, type RetryClass } from '@gleaner/errors';
import {
  EXTRACTOR_VERSION,
  extractPosting,
  textSimhash,
  type ExtractedPosting,
  type SiteTemplate,
  type TemplateFit,
} from '@gleaner/extraction';

/**
 * Fields from a page's HTML: JSON-LD, microdata, RDFa, then the DOM. Needs only
 * @gleaner/extraction (and types), so that the page analyser's threads load nothing else;
 * ATS payloads are mapped in `body-fields.ts`, on the event loop.
 */

/** Content type of a stored body that is an ATS listing's JSON payload rather than a fetched page. */
export const LISTING_CONTENT_TYPE = 'application/vnd.gleaner.listing+json';

/** Extraction could not produce a posting (`EXTRACT_*`). */
export class ExtractError extends ClassifiedError {
  constructor(message: string, code: string, retryClass: RetryClass) {
    super(message, code, retryClass);
  }
}

/**
 * The coded error an extraction threw, rebuilt from what an analyser thread sent back (a thread's
 * errors reach the event loop as data). One without a code failed in a way nobody classified: it
 * is transient, as it would have been had it been thrown here.
 */
export function toExtractError(error: {
  message: string;
  code?: string;
  retryClass?: RetryClass;
}): ExtractError {
  return new ExtractError(
    error.message,
    error.code ?? 'EXTRACT_FAILED',
    error.retryClass ?? 'transient',
  );
}

/** The message of a page the rules find no posting in (`EXTRACT_NOT_A_POSTING`). */
export const NOT_A_POSTING_MESSAGE = 'page holds no job posting';

/**
 * Fields from an extraction result: the posting, where each field came from, the extractor's
 * version and the SimHash of the posting's own text. Throws ExtractError when there is none.
 */
export function toExtractedFields(
  result: {
    posting: ExtractedPosting;
    provenance: NonNullable<ExtractedFields['provenance']>;
  } | null,
): ExtractedFields {
  if (!result) throw new ExtractError(NOT_A_POSTING_MESSAGE, 'EXTRACT_NOT_A_POSTING', 'permanent');
  const text = result.posting.descriptionText ?? result.posting.description ?? result.posting.title;
  return {
    ...result.posting,
    provenance: result.provenance,
    extractionVersion: EXTRACTOR_VERSION,
    contentSimhash: text ? textSimhash(text) : null,
  };
}

/**
 * A page's fields from its decoded HTML, read with the site's template when it has one (telling
 * `onTemplateFit` how the page agreed with it). A page the template does not fit is read as if
 * the site had none: the crawl fetches posting pages only, so such a page is more likely a
 * redesign's than a listing's, and the rules still judge whether it is a posting. Throws
 * ExtractError when it holds no posting.
 */
export function extractPageFields(
  url: string,
  html: string,
  template?: SiteTemplate,
  onTemplateFit?: (fit: TemplateFit) => void,
): ExtractedFields {
  if (template === undefined) return toExtractedFields(extractPosting(html, { url }));
  let fit: TemplateFit | undefined;
  const result = extractPosting(html, { url, template, onTemplateFit: (each) => (fit = each) });
  if (fit !== undefined) onTemplateFit?.(fit);
  // A page of another design was read as without a template already; one the template refused
  // as its site's chrome only (a listing's look) is left to the rules alone.
  if (fit?.fits === false && result === null)
    return toExtractedFields(extractPosting(html, { url }));
  return toExtractedFields(result);
}
