import type { ExtractedFields } from '@gleaner/db';
import { EXTRACTOR_VERSION, extractPosting, textSimhash } from '@gleaner/extraction';
import { ExtractError } from './errors.js';
import { LISTING_CONTENT_TYPE, mapListingPayload } from './listing-payload.js';
import { decodeBody } from './decode-body.js';

/**
 * The deterministic extraction step, shared by the crawl job (from the bytes it just fetched)
 * and the extract job (from the stored body): a page's JSON-LD / microdata / RDFa / DOM, or
 * an ATS payload mapped by its site's adapter. Throws ExtractError when there is no posting.
 */
export function extractFields(input: {
  siteKind: string;
  url: string;
  body: Buffer;
  contentType: string | null;
  /** The body already decoded, when the caller has it. */
  html?: string;
}): ExtractedFields {
  const result =
    input.contentType === LISTING_CONTENT_TYPE
      ? mapListingPayload(input.siteKind, input.body)
      : extractPosting(input.html ?? decodeBody(input.body, input.contentType), { url: input.url });
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
