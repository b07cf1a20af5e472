import type { PostingFields } from '@gleaner/db/posting-fields';

/**
 * The normalised record every extraction path produces: a posting's fields, as Gleaner's one
 * list defines them (`@gleaner/db/posting-fields`). The mapping rules live in
 * `json-ld-mapping.ts`.
 */
export type ExtractedPosting = PostingFields;

/**
 * Where a field's value came from. `description`: read from the posting's description text (a
 * salary line, a requirements section) rather than from a field of its own, as ATS postings are
 * when the vendor's JSON has no such field.
 */
export type FieldSource = 'json-ld' | 'microdata' | 'rdfa' | 'dom' | 'description';

export interface ExtractionResult {
  posting: ExtractedPosting;
  /** One entry per non-null field of `posting`. */
  provenance: Partial<Record<keyof ExtractedPosting, FieldSource>>;
}
