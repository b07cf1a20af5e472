import type { PostingFields } from '@gleaner/db/posting-fields';

/**
 * The normalised record every extraction path produces: a posting's fields, as Gleaner's one
 * list defines them (`@gleaner/db/posting-fields`). The mapping rules live in
 * `json-ld-mapping.ts`.
 */
export type ExtractedPosting = PostingFields;

/** Where a field's value came from. */
export type FieldSource = 'json-ld' | 'microdata' | 'rdfa' | 'dom';

export interface ExtractionResult {
  posting: ExtractedPosting;
  /** One entry per non-null field of `posting`. */
  provenance: Partial<Record<keyof ExtractedPosting, FieldSource>>;
}
