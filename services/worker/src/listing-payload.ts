import { getAdapter } from '@gleaner/sources';
import { ExtractError } from './errors.js';

export { LISTING_CONTENT_TYPE } from './listing-content-type.js';

/** Maps a stored ATS payload with its site's adapter (vendor JSON is validated there). */
export function mapListingPayload(siteKind: string, body: Buffer) {
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
