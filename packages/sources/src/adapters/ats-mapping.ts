/**
 * Helpers shared by the ATS adapters' `mapPosting`: they apply @gleaner/extraction's field
 * conventions (see its `types.ts` and `json-ld-mapping.ts`) to vendor JSON.
 */
import {
  boundNesting,
  findSalaryInText,
  parseLocationText,
  parseSalaryText,
  requirementsFromHtml,
  htmlToText as textOfHtml,
  type ExtractedPosting,
} from '@gleaner/extraction';
import * as cheerio from 'cheerio/slim';
import { z } from 'zod';
import type { AtsMappedPosting } from '../types.js';

/**
 * An optional vendor field: missing, null or of the wrong type all read as null, so one odd
 * field does not cost the whole posting. Required fields (the title) are validated strictly.
 */
export function lenient<T extends z.ZodType>(schema: T) {
  return schema.nullish().catch(null);
}

/** A title: a string that is not blank once trimmed. */
export const titleSchema = z.string().trim().min(1);

/** Vendor ids arrive as numbers (Greenhouse, Recruitee) or strings (the rest). */
export const vendorIdSchema = z.union([z.int().nonnegative(), z.string().trim().min(1).max(200)]);

/** A trimmed, non-empty string, or null. */
export function text(value: string | null | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

/** Every field null: the start of a mapping. */
export { emptyPostingFields as emptyPosting } from '@gleaner/db/posting-fields';

const SALARY_KEYS = ['salaryMin', 'salaryMax', 'salaryCurrency', 'salaryPeriod'] as const;

/**
 * The mapping result. Every adapter ends here, so what holds for one holds for all:
 *
 * - the plain text is derived from the vendor's HTML the same way page extraction derives it;
 * - a vendor that gave no salary amount gets the salary its description states ("Salary range:
 *   $120,000 – $150,000 per year"), a bare "$" read by the posting's country; a vendor that gave
 *   no requirements gets the lines under a requirements heading of its description. These are
 *   the readers (and the one heading list) the JSON-LD path uses on a page's description.
 *
 * Provenance is 'ats' for a field from the vendor's JSON and 'description' for one read from
 * the description text.
 */
export function mapped(mappedFields: ExtractedPosting): AtsMappedPosting {
  const posting: ExtractedPosting = {
    ...mappedFields,
    descriptionText:
      mappedFields.descriptionText ??
      (mappedFields.description === null ? null : textOfHtml(mappedFields.description)),
  };
  const fromDescription = new Set<keyof ExtractedPosting>();
  if (posting.salaryMin === null && posting.salaryMax === null) {
    const salary = findSalaryInText(posting.descriptionText, postingCountry(posting));
    if (salary !== null) {
      posting.salaryMin = salary.min;
      posting.salaryMax = salary.max;
      posting.salaryCurrency = salary.currency;
      posting.salaryPeriod = salary.period;
      for (const key of SALARY_KEYS) fromDescription.add(key);
    }
  }
  if (posting.requirements === null && posting.description !== null) {
    posting.requirements = requirementsFromHtml(posting.description);
    fromDescription.add('requirements');
  }
  const provenance: AtsMappedPosting['provenance'] = {};
  for (const key of Object.keys(posting) as (keyof ExtractedPosting)[]) {
    if (posting[key] !== null) provenance[key] = fromDescription.has(key) ? 'description' : 'ats';
  }
  return { posting, provenance };
}

/** The country that decides a bare "$": the vendor's, else one its location text names. */
/**
 * A vendor's free-text pay field ("80,000 - 95,000 USD per year", "$80k - $95k / year") as the
 * salary fields, a bare "$" read by `country`; all null when it states no amount.
 */
export function salaryFromText(
  value: string | null | undefined,
  country: string | null,
): Pick<ExtractedPosting, (typeof SALARY_KEYS)[number]> {
  const salary = text(value) === null ? null : parseSalaryText(value!, null, country);
  return {
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary?.currency ?? null,
    salaryPeriod: salary?.period ?? null,
  };
}

function postingCountry(posting: ExtractedPosting): string | null {
  if (posting.locationCountry !== null) return posting.locationCountry;
  return posting.location === null ? null : parseLocationText(posting.location).country;
}

export interface LocationParts {
  location: string | null;
  locationCity: string | null;
  locationRegion: string | null;
  locationCountry: string | null;
}

/** The JSON-LD convention: the non-empty parts of [city, region, country] joined by ", ". */
export function locationFromParts(
  city: string | null | undefined,
  region: string | null | undefined,
  country: string | null | undefined,
): LocationParts {
  const locationCity = text(city);
  const locationRegion = text(region);
  const locationCountry = countryText(country);
  const parts = [locationCity, locationRegion, locationCountry].filter((part) => part !== null);
  return {
    location: parts.length > 0 ? parts.join(', ') : null,
    locationCity,
    locationRegion,
    locationCountry,
  };
}

/**
 * A vendor that gives only free text ("San Francisco, CA", "Remote - US"): kept as the
 * location, with no parts, since splitting "London, ON" or "Paris, TX" is a guess.
 */
export function locationFromText(value: string | null | undefined): LocationParts {
  return { location: text(value), locationCity: null, locationRegion: null, locationCountry: null };
}

/** ISO 3166 alpha-2 codes upper-cased ("us" → "US"); names kept as given. */
export function countryText(value: string | null | undefined): string | null {
  const country = text(value);
  return country !== null && /^[A-Za-z]{2}$/.test(country) ? country.toUpperCase() : country;
}

/**
 * The JSON-LD rule for free-text locations: true when the text says remote, false when it names
 * some other place, null when there is no text (a missing field proves nothing).
 */
export function remoteFromLocationText(location: string | null): boolean | null {
  if (location === null) return null;
  return /\bremote\b/i.test(location);
}

const EMPLOYMENT_TYPES: readonly [RegExp, string][] = [
  [/^(fulltime|permanent|regular)/, 'FULL_TIME'],
  [/^parttime/, 'PART_TIME'],
  [/^(contract|freelance)/, 'CONTRACTOR'],
  [/^(intern|trainee|apprentice)/, 'INTERN'],
  [/^(temporary|temp|seasonal)/, 'TEMPORARY'],
  [/^perdiem/, 'PER_DIEM'],
  [/^volunteer/, 'VOLUNTEER'],
];

/**
 * A vendor's employment type label or code ("Full-time", "fulltime_permanent", "Contract",
 * "Intern") as the schema.org value Gleaner stores; an unknown label is upper-cased with
 * underscores ("Working student" → "WORKING_STUDENT") so it stays recognisable.
 */
export function employmentTypeFromText(value: string | null | undefined): string | null {
  const label = text(value);
  if (label === null) return null;
  const key = label.toLowerCase().replace(/[^a-z]/g, '');
  for (const [pattern, type] of EMPLOYMENT_TYPES) if (pattern.test(key)) return type;
  const fallback = label
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return fallback === '' ? null : fallback;
}

/**
 * A salary interval ("per-year-salary", "1 YEAR", "Hourly rate", "month") as Gleaner's period
 * (hour|day|week|month|year); null when the text names none of them.
 */
export function salaryPeriodFromText(value: string | null | undefined): string | null {
  const interval = text(value)?.toLowerCase();
  if (interval === undefined) return null;
  if (/hour/.test(interval)) return 'hour';
  if (/\bday|daily/.test(interval)) return 'day';
  if (/week/.test(interval)) return 'week';
  if (/month/.test(interval)) return 'month';
  if (/year|annual|annum/.test(interval)) return 'year';
  return null;
}

/** A finite number, or a plain numeric string ("85000", "85000.50"). */
export function amount(value: number | string | null | undefined): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return /^-?\d+(?:\.\d+)?$/.test(trimmed) ? Number(trimmed) : null;
}

/** An ISO 4217 code, upper-cased; null for anything that is not a current code ("US$", "ABC"). */
export { currencyCode } from '@gleaner/extraction';

/**
 * datePosted: a plain date as published; a date-time (ISO 8601 with any offset, Recruitee's
 * "2024-01-10 12:00:00 UTC", or epoch milliseconds) as a UTC ISO timestamp.
 */
export function postedDate(value: string | number | null | undefined): string | null {
  if (typeof value === 'number') {
    // Epoch milliseconds between 1990 and 2100; anything else is not a date.
    return Number.isFinite(value) && value > 631_152_000_000 && value < 4_102_444_800_000
      ? new Date(value).toISOString()
      : null;
  }
  const raw = text(value);
  if (raw === null || !/^\d{4}-\d{2}-\d{2}/.test(raw)) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(raw)) return raw;
  const normalised = raw.replace(
    /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) ?UTC$/,
    '$1T$2Z',
  );
  const time = Date.parse(normalised);
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
};

/**
 * One level of HTML entity decoding, for Greenhouse's `content`, which is HTML escaped once more
 * (`&lt;p&gt;Fish &amp;amp; chips&lt;/p&gt;` → `<p>Fish &amp; chips</p>`). Numeric references
 * and the named ones an escaper emits are decoded in a single pass, so `&amp;lt;` becomes `&lt;`
 * and not `<`; unknown names are left as they are.
 */
export function decodeHtmlEntities(value: string): string {
  return value.replace(
    /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));/g,
    (match, decimal: string | undefined, hex: string | undefined, name: string | undefined) => {
      if (name !== undefined) return NAMED_ENTITIES[name] ?? match;
      const codePoint = decimal !== undefined ? Number(decimal) : Number.parseInt(hex ?? '', 16);
      const valid =
        codePoint > 0 && codePoint <= 0x10ffff && !(codePoint >= 0xd800 && codePoint <= 0xdfff);
      return valid ? String.fromCodePoint(codePoint) : match;
    },
  );
}

export function escapeHtml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

const LINE_BREAK = '\uE000';

const BLOCK_ELEMENTS = new Set(
  'address,article,blockquote,dd,div,dl,dt,h1,h2,h3,h4,h5,h6,li,ol,p,pre,section,table,tr,ul'.split(
    ',',
  ),
);

/** A node of the parsed fragment, as far as the text walk reads it. */
interface FragmentNode {
  type: string;
  name?: string;
  data?: string;
  children?: FragmentNode[];
}

/**
 * Readable text of an HTML fragment: one line per block (paragraph, list item, heading), inner
 * whitespace collapsed, blank lines dropped. Requirements are stored as text, one per line, as
 * the JSON-LD mapping stores a list of qualifications.
 *
 * The fragment's text is read in one walk, with a line break around every block and for every
 * `<br>`, rather than by inserting those breaks into the tree: each insertion shifted the
 * parent's children, and 256 KB of `<br>` took 8 s. Its elements nest at most 512 deep
 * (`boundNesting`), which also keeps cheerio's parse linear.
 */
export function htmlToText(html: string | null | undefined): string | null {
  if (html === null || html === undefined || html.trim() === '') return null;
  const $ = cheerio.load(boundNesting(html), null, false);
  let text = '';
  // Nodes to read, last first; a string is text to add once the nodes above it are read.
  const pending: (FragmentNode | string)[] = [$.root()[0] as FragmentNode];
  while (pending.length > 0) {
    const node = pending.pop()!;
    if (typeof node === 'string') {
      text += node;
    } else if (node.type === 'text') {
      text += node.data ?? '';
    } else if (node.name === 'br') {
      text += LINE_BREAK; // newlines in the source are just whitespace in HTML
    } else if (node.children !== undefined && node.type !== 'comment') {
      const isBlock = node.name !== undefined && BLOCK_ELEMENTS.has(node.name);
      if (isBlock) {
        text += LINE_BREAK;
        pending.push(LINE_BREAK);
      }
      for (let index = node.children.length - 1; index >= 0; index--)
        pending.push(node.children[index]!);
    }
  }
  const lines = text
    .split(LINE_BREAK)
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '');
  return lines.length > 0 ? lines.join('\n') : null;
}
