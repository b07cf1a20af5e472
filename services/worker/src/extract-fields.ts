import type { ExtractedFields } from '@gleaner/db';
import { decodeBody } from './decode-body.js';
import { LISTING_CONTENT_TYPE, mapListingPayload } from './listing-payload.js';
import { extractPageFields, toExtractedFields } from './page-fields.js';

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
  if (input.contentType === LISTING_CONTENT_TYPE)
    return toExtractedFields(mapListingPayload(input.siteKind, input.body));
  return extractPageFields(input.url, input.html ?? decodeBody(input.body, input.contentType));
}
