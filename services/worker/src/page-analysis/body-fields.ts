import { loadBody, type Database, type ExtractedFields } from '@gleaner/db';
import type { SiteTemplate, TemplateFit } from '@gleaner/extraction';
import { decodeBody } from '@gleaner/http/charset';
import { getAdapter } from '@gleaner/sources';
import {
  ExtractError,
  extractPageFields,
  LISTING_CONTENT_TYPE,
  toExtractedFields,
} from './page-fields.js';

/**
 * The deterministic extraction step for any body, as the page analyser runs it on the event
 * loop: an ATS payload mapped by its site's adapter (small JSON; threads load no adapters), or,
 * in an analyser without threads (tests), a page's JSON-LD / microdata / RDFa / DOM. Throws
 * ExtractError when there is no posting.
 */
export function extractBodyFields(
  input: {
    siteKind: string;
    url: string;
    body: Buffer;
    contentType: string | null;
    /** The body already decoded, when the caller has it. */
    html?: string;
    /** The site's learned template, when it has one. */
    template?: SiteTemplate;
  },
  onTemplateFit?: (fit: TemplateFit) => void,
): ExtractedFields {
  if (input.contentType === LISTING_CONTENT_TYPE)
    return toExtractedFields(mapListingPayload(input.siteKind, input.body));
  return extractPageFields(
    input.url,
    input.html ?? decodeBody(input.body, input.contentType),
    input.template,
    onTemplateFit,
  );
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

/** A posting's stored page (or ATS payload), which the later stages read instead of fetching. */
export async function loadStoredPage(
  db: Database,
  posting: { bodySha256: string | null },
): Promise<{ body: Buffer; contentType: string | null; sha256: string }> {
  if (!posting.bodySha256)
    throw new ExtractError('posting has no stored body', 'EXTRACT_BODY_MISSING', 'permanent');
  const stored = await loadBody(db, posting.bodySha256);
  if (!stored)
    throw new ExtractError(
      `body ${posting.bodySha256} is not stored`,
      'EXTRACT_BODY_MISSING',
      'permanent',
    );
  return { ...stored, sha256: posting.bodySha256 };
}
