import { htmlToText, type ExtractedPosting } from '@gleaner/extraction';
import { createFetcher, type Fetcher } from '@gleaner/http';
import { expect } from 'vitest';

/**
 * A mapped posting without its derived `descriptionText`, after checking that field is the
 * description's plain text: fixture records list only the fields vendors deliver.
 */
export function vendorFields(
  posting: ExtractedPosting | undefined,
): Omit<ExtractedPosting, 'descriptionText'> | undefined {
  if (!posting) return posting;
  const { descriptionText, ...fields } = posting;
  expect(descriptionText).toBe(fields.description === null ? null : htmlToText(fields.description));
  return fields;
}

/**
 * The fetcher the adapter tests list their loopback fixtures with (5 MB bodies unless
 * `maxBodyBytes` says otherwise). Close it after the tests.
 */
export function createTestFetcher({ maxBodyBytes = 5_000_000 } = {}): Fetcher {
  return createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 5000,
    maxBodyBytes,
    maxRedirects: 3,
    allowPrivateNetworks: true,
  });
}
