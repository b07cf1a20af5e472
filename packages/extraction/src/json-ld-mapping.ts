/**
 * Maps a schema.org JobPosting node (from JSON-LD, or microdata converted to the same shape) to
 * an `ExtractedPosting`. The rules are the contract the fixture career site in @gleaner/testing
 * computes its expected records by, so a change here is a change of EXTRACTOR_VERSION.
 */
import type { ExtractedPosting } from './types.js';

export type JsonObject = Record<string, unknown>;

/** Guards the walk over untrusted JSON against absurdly deep nesting. */
const MAX_SEARCH_DEPTH = 32;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `JobPosting`, `schema:JobPosting` or `https://schema.org/JobPosting`, alone or in an array. */
export function isJobPostingType(type: unknown): boolean {
  if (typeof type === 'string') return isJobPostingTypeName(type);
  if (Array.isArray(type))
    return type.some((entry) => typeof entry === 'string' && isJobPostingTypeName(entry));
  return false;
}

function isJobPostingTypeName(name: string): boolean {
  const trimmed = name.trim();
  return (
    trimmed === 'JobPosting' || trimmed.endsWith('/JobPosting') || trimmed.endsWith(':JobPosting')
  );
}

/**
 * The first JobPosting node in document order, looking through arrays, `@graph` and any nested
 * object (e.g. a WebPage's `mainEntity`). A posting's own children are not searched.
 */
export function findJobPostingNode(value: unknown, depth = 0): JsonObject | null {
  if (depth > MAX_SEARCH_DEPTH) return null;
  if (Array.isArray(value)) {
    for (const entry of value) {
      const found = findJobPostingNode(entry, depth + 1);
      if (found !== null) return found;
    }
    return null;
  }
  if (!isJsonObject(value)) return null;
  if (isJobPostingType(value['@type'])) return value;
  for (const key in value) {
    const entry = value[key];
    if (typeof entry !== 'object' || entry === null) continue;
    const found = findJobPostingNode(entry, depth + 1);
    if (found !== null) return found;
  }
  return null;
}

export function mapJobPosting(node: JsonObject): ExtractedPosting {
  const address = firstAddress(node.jobLocation);
  const locationCity = address === null ? null : readText(address.addressLocality);
  const locationRegion = address === null ? null : readText(address.addressRegion);
  const locationCountry = address === null ? null : readCountry(address.addressCountry);
  const locationParts = [locationCity, locationRegion, locationCountry].filter(
    (part) => part !== null,
  );
  const salary = readSalary(node.baseSalary);
  return {
    title: readText(node.title),
    company: readCompany(node.hiringOrganization),
    location: locationParts.length > 0 ? locationParts.join(', ') : null,
    locationCity,
    locationRegion,
    locationCountry,
    isRemote: readIsRemote(node.jobLocationType, node.jobLocation),
    employmentType: readEmploymentType(node.employmentType),
    salaryMin: salary.min,
    salaryMax: salary.max,
    salaryCurrency: salary.currency,
    salaryPeriod: salary.period,
    datePosted: readDate(node.datePosted),
    description: readText(node.description),
    requirements:
      readRequirements(node.qualifications) ??
      readRequirements(node.experienceRequirements) ??
      readRequirements(node.skills),
  };
}

/** The first entry of an array, or the value itself. */
function first(value: unknown): unknown {
  return Array.isArray(value) ? (value as unknown[])[0] : value;
}

/**
 * A trimmed, non-empty string. Also accepts JSON-LD value objects (`{"@value": "…"}`) and, for
 * properties repeated in microdata, the first entry of an array.
 */
export function readText(value: unknown): string | null {
  const single = first(value);
  if (typeof single === 'string') {
    const trimmed = single.trim();
    return trimmed === '' ? null : trimmed;
  }
  if (isJsonObject(single) && '@value' in single) return readText(single['@value']);
  return null;
}

/** `hiringOrganization.name`, or hiringOrganization itself when a site gives a plain string. */
function readCompany(value: unknown): string | null {
  const organization = first(value);
  return isJsonObject(organization) ? readText(organization.name) : readText(organization);
}

/** The address object of the first jobLocation; other locations are not represented yet. */
function firstAddress(jobLocation: unknown): JsonObject | null {
  const place = first(jobLocation);
  if (!isJsonObject(place)) return null;
  const address = first(place.address);
  return isJsonObject(address) ? address : null;
}

/** addressCountry is a code or name string, or a Country object with a `name`. */
function readCountry(value: unknown): string | null {
  const country = first(value);
  return isJsonObject(country) ? readText(country.name) : readText(country);
}

/**
 * true when the posting says TELECOMMUTE; false when it names a physical location and does not
 * say so; null when it says neither, since a missing field proves nothing.
 */
function readIsRemote(jobLocationType: unknown, jobLocation: unknown): boolean | null {
  const types = Array.isArray(jobLocationType) ? (jobLocationType as unknown[]) : [jobLocationType];
  if (types.some((type) => typeof type === 'string' && type.trim().toUpperCase() === 'TELECOMMUTE'))
    return true;
  const hasLocation =
    jobLocation !== undefined &&
    jobLocation !== null &&
    !(Array.isArray(jobLocation) && jobLocation.length === 0);
  return hasLocation ? false : null;
}

function readEmploymentType(value: unknown): string | null {
  const entries = Array.isArray(value) ? (value as unknown[]) : [value];
  const types = entries
    .filter((entry): entry is string => typeof entry === 'string')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return types.length > 0 ? types.join(', ').toUpperCase() : null;
}

interface Salary {
  min: number | null;
  max: number | null;
  currency: string | null;
  period: string | null;
}

const NO_SALARY: Salary = { min: null, max: null, currency: null, period: null };

/**
 * baseSalary is usually a MonetaryAmount whose `value` is a number or a QuantitativeValue
 * (minValue/maxValue, or a single `value`); schema.org also allows a bare number.
 */
function readSalary(baseSalary: unknown): Salary {
  const amount = first(baseSalary);
  const bareNumber = readNumber(amount);
  if (bareNumber !== null) return { ...NO_SALARY, min: bareNumber, max: bareNumber };
  if (!isJsonObject(amount)) return NO_SALARY;

  const currency = readText(amount.currency)?.toUpperCase() ?? null;
  const value = first(amount.value);
  let min: number | null = null;
  let max: number | null = null;
  let unitText: string | null = null;
  if (isJsonObject(value)) {
    min = readNumber(value.minValue);
    max = readNumber(value.maxValue);
    if (min === null && max === null) min = max = readNumber(value.value);
    unitText = readText(value.unitText);
  } else {
    min = max = readNumber(value);
  }
  unitText ??= readText(amount.unitText);
  // schema.org's units are HOUR, DAY, WEEK, MONTH and YEAR; lower-casing maps them to our
  // period names and keeps any other unit recognisable.
  return { min, max, currency, period: unitText === null ? null : unitText.toLowerCase() };
}

/** A finite number, or a numeric string such as "85000", "85000.50" or "85,000". */
export function readNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string') return null;
  let text = value.trim();
  if (/^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(text)) text = text.replaceAll(',', '');
  return /^-?\d+(?:\.\d+)?$/.test(text) ? Number(text) : null;
}

/** A plain date is kept as published; a date-time becomes a UTC ISO timestamp. */
function readDate(value: unknown): string | null {
  const text = readText(value);
  if (text === null) return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return text;
  const time = Date.parse(text);
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}

/**
 * A string, a list of strings (one per line), or objects carrying a `description` or `name`
 * (e.g. EducationalOccupationalCredential). Yields null when nothing readable is there, so the
 * caller falls through to the next candidate property.
 */
function readRequirements(value: unknown): string | null {
  if (Array.isArray(value)) {
    const lines = (value as unknown[]).map(readRequirementEntry).filter((line) => line !== null);
    return lines.length > 0 ? lines.join('\n') : null;
  }
  return readRequirementEntry(value);
}

function readRequirementEntry(value: unknown): string | null {
  if (isJsonObject(value) && !('@value' in value))
    return readText(value.description) ?? readText(value.name);
  return typeof value === 'string' || isJsonObject(value) ? readText(value) : null;
}
