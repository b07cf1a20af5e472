/**
 * A posting's fields: the one list. The schema's columns, the version snapshot SQL, the settle
 * statements, the extraction record, the corpus evaluator, the ATS mappings' empty record and
 * the API's views are all derived from it, so adding a field touches the schema, its migration
 * and this list. Field meanings follow schema.org JobPosting.
 *
 * This module imports nothing: the extraction package (and the worker's page analyser threads)
 * load it as `@gleaner/db/posting-fields` without loading a database driver.
 */
export const postingFields = {
  title: 'text',
  company: 'text',
  /** The non-empty parts of [city, region, country] joined by ", ". */
  location: 'text',
  locationCity: 'text',
  locationRegion: 'text',
  locationCountry: 'text',
  /** true for TELECOMMUTE, false when a physical jobLocation is given, null when unknown. */
  isRemote: 'boolean',
  /** Upper-cased schema.org values joined by ", ", e.g. "FULL_TIME, CONTRACTOR". */
  employmentType: 'text',
  salaryMin: 'number',
  salaryMax: 'number',
  /** ISO 4217 code, upper-cased. */
  salaryCurrency: 'text',
  /**
   * "hour", "day", "week", "month" or "year" (schema.org's unitText lower-cased, common spellings
   * such as "per annum" or "hourly" mapped to those), or the page's own unit lower-cased.
   */
  salaryPeriod: 'text',
  /** YYYY-MM-DD as published, or a full ISO timestamp (UTC) when the page gave a date-time. */
  datePosted: 'text',
  /**
   * The description's HTML, sanitised: basic formatting tags only, no scripts, styles, frames,
   * event handlers or unsafe URLs. Clean HTML is kept byte for byte as published (trimmed).
   */
  description: 'long-text',
  /** Plain text of `description`: one line per paragraph, heading or list item. */
  descriptionText: 'long-text',
  /**
   * One requirement per line: the structured qualifications / experienceRequirements / skills,
   * or else the lines of the description's Requirements (Qualifications, What you'll need …)
   * section.
   */
  requirements: 'long-text',
} as const;

type FieldKind = (typeof postingFields)[keyof typeof postingFields];
type ValueOf<K extends FieldKind> = K extends 'boolean'
  ? boolean
  : K extends 'number'
    ? number
    : string;

export type PostingFieldKey = keyof typeof postingFields;

/** The fields of one posting; null where the source does not say. */
export type PostingFields = { [K in PostingFieldKey]: ValueOf<(typeof postingFields)[K]> | null };

/** Every posting field, in the list's order. */
export const postingFieldKeys = Object.keys(postingFields) as PostingFieldKey[];

export type LongTextFieldKey = {
  [K in PostingFieldKey]: (typeof postingFields)[K] extends 'long-text' ? K : never;
}[PostingFieldKey];

/** The fields that hold long texts (a description is ~10 KB): stored with lz4, sent apart. */
export const longTextFieldKeys = postingFieldKeys.filter(
  (key): key is LongTextFieldKey => postingFields[key] === 'long-text',
);

/** Every field null: the start of a record that a mapping fills in. */
export function emptyPostingFields(): PostingFields {
  return Object.fromEntries(postingFieldKeys.map((key) => [key, null])) as PostingFields;
}

/** `locationCity` → `location_city`: the column name, and the API's field name. */
export function snakeCase<K extends string>(key: K): SnakeCase<K> {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`) as SnakeCase<K>;
}

export type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : S;

/** The fields under their snake_case names (seed 003's field names): the API's view. */
export type SnakeCasePostingFields = {
  [K in PostingFieldKey as SnakeCase<K>]: PostingFields[K];
};

export function snakeCasePostingFields(fields: PostingFields): SnakeCasePostingFields {
  return Object.fromEntries(
    postingFieldKeys.map((key) => [snakeCase(key), fields[key]]),
  ) as SnakeCasePostingFields;
}

/**
 * Where a field's value came from. `description`: read from the posting's description text
 * rather than a field of its own (an ATS posting's salary line or requirements section).
 */
export type FieldSource = 'ats' | 'json-ld' | 'microdata' | 'rdfa' | 'dom' | 'description' | 'llm';

export type FieldProvenance = Partial<Record<string, FieldSource>>;

/** What extraction writes on a posting: its fields, where each came from, and fingerprints. */
export type ExtractedFields = Partial<PostingFields> & {
  provenance?: FieldProvenance | null;
  extractionVersion?: string | null;
  /** 64-bit SimHash of the posting's own text, as 16 hex digits. */
  contentSimhash?: string | null;
};

/** Every column extraction writes: a re-extracted posting drops what its page no longer says. */
export const extractedFieldKeys = [
  ...postingFieldKeys,
  'provenance',
  'extractionVersion',
  'contentSimhash',
] as const satisfies readonly (keyof ExtractedFields)[];
