/**
 * The normalised record every extraction path produces. Field meanings follow schema.org
 * JobPosting; the mapping rules live in `json-ld-mapping.ts`.
 */
export interface ExtractedPosting {
  title: string | null;
  company: string | null;
  /** The non-empty parts of [city, region, country] joined by ", ". */
  location: string | null;
  locationCity: string | null;
  locationRegion: string | null;
  locationCountry: string | null;
  /** true for TELECOMMUTE, false when a physical jobLocation is given, null when unknown. */
  isRemote: boolean | null;
  /** Upper-cased schema.org values joined by ", ", e.g. "FULL_TIME, CONTRACTOR". */
  employmentType: string | null;
  salaryMin: number | null;
  salaryMax: number | null;
  /** ISO 4217 code, upper-cased. */
  salaryCurrency: string | null;
  /** Lower-cased unitText: "hour", "day", "week", "month", "year" or whatever the page said. */
  salaryPeriod: string | null;
  /** YYYY-MM-DD as published, or a full ISO timestamp when the page gave a date-time. */
  datePosted: string | null;
  /** HTML as published (not sanitised yet). */
  description: string | null;
  requirements: string | null;
}

/** Where a field's value came from. */
export type FieldSource = 'json-ld' | 'microdata' | 'rdfa' | 'dom';

export interface ExtractionResult {
  posting: ExtractedPosting;
  /** One entry per non-null field of `posting`. */
  provenance: Partial<Record<keyof ExtractedPosting, FieldSource>>;
}
