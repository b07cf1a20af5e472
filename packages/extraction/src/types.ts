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
  /**
   * "hour", "day", "week", "month" or "year" (schema.org's unitText lower-cased, common spellings
   * such as "per annum" or "hourly" mapped to those), or the page's own unit lower-cased.
   */
  salaryPeriod: string | null;
  /** YYYY-MM-DD as published, or a full ISO timestamp (UTC) when the page gave a date-time. */
  datePosted: string | null;
  /**
   * The description's HTML, sanitised: basic formatting tags only, no scripts, styles, frames,
   * event handlers or unsafe URLs. Clean HTML is kept byte for byte as published (trimmed).
   */
  description: string | null;
  /** Plain text of `description`: one line per paragraph, heading or list item. */
  descriptionText: string | null;
  /**
   * One requirement per line: the structured qualifications / experienceRequirements / skills,
   * or else the lines of the description's Requirements (Qualifications, What you'll need …)
   * section.
   */
  requirements: string | null;
}

/** Where a field's value came from. */
export type FieldSource = 'json-ld' | 'microdata' | 'rdfa' | 'dom';

export interface ExtractionResult {
  posting: ExtractedPosting;
  /** One entry per non-null field of `posting`. */
  provenance: Partial<Record<keyof ExtractedPosting, FieldSource>>;
}
