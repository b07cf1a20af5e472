import type { ExtractedFields } from '@gleaner/db';
import {
  EXTRACTOR_VERSION,
  extractPosting,
  textSimhash,
  type ExtractedPosting,
} from '@gleaner/extraction';
import { ExtractError } from './errors.js';

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
  if (!result)
    throw new ExtractError('page holds no job posting', 'EXTRACT_NOT_A_POSTING', 'permanent');
  const text = result.posting.descriptionText ?? result.posting.description ?? result.posting.title;
  return {
    ...result.posting,
    provenance: result.provenance,
    extractionVersion: EXTRACTOR_VERSION,
    contentSimhash: text ? textSimhash(text) : null,
  };
}

/**
 * A page's fields from its HTML (JSON-LD / microdata / RDFa / DOM). Needs only
 * @gleaner/extraction, so that the page analyser's threads load nothing else.
 */
export function extractPageFields(url: string, html: string): ExtractedFields {
  return toExtractedFields(extractPosting(html, { url }));
}
