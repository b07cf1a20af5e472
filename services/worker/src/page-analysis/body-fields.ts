import type { ExtractedFields } from '@gleaner/db';
import { decodeBody } from '@gleaner/http/charset';
import { getAdapter } from '@gleaner/sources';
import {
  ExtractError,
  extractPageFields,
  LISTING_CONTENT_TYPE,
  toExtractedFields,
} from './page-fields.js';

/**
 * The deterministic extraction step for any body, shared by the crawl (the bytes it just
 * fetched, on the event loop when no analyser thread takes them) and the extract stage (the
 * stored body): a page's JSON-LD / microdata / RDFa / DOM, or an ATS payload mapped by its
 * site's adapter. Throws ExtractError when there is no posting.
 */
export function extractBodyFields(input: {
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

/** Maps a stored ATS payload with its site's adapter (vendor JSON is validated there). */
function mapListingPayload(siteKind: string, body: Buffer) {
  const adapter = getAdapter(siteKind);
  if (!adapter?.mapPosting) {
    throw new ExtractError(
      `site kind "${siteKind}" cannot map listing payloads`,
      'EXTRACT_UNSUPPORTED_TYPE',
      'permanent',
    );
  }
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ExtractError(
      'stored listing payload is not JSON',
      'EXTRACT_CORRUPT_BODY',
      'permanent',
    );
  }
  return adapter.mapPosting(payload);
}
