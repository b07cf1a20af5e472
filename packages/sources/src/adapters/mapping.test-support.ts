import { htmlToText, type ExtractedPosting } from '@gleaner/extraction';
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
