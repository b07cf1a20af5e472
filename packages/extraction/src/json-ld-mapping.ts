/**
 * Maps a schema.org JobPosting node (from JSON-LD, or microdata converted to the same shape) to
 * an `ExtractedPosting`. The rules are the contract the fixture career site in @gleaner/testing
 * computes its expected records by, so a change here is a change of EXTRACTOR_VERSION.
 */
import { readDescription } from './description.js';
import { normaliseDate } from './dates.js';
import { normaliseEmploymentType } from './employment-type.js';
import { decodeEntities, htmlToText, normaliseWhitespace } from './html-text.js';
import { isRemoteText, parseLocationText, type ParsedLocation } from './location.js';
import { currencyFromSymbol } from './currency.js';
import { requirementsFromBlocks } from './requirements.js';
import {
  findSalaryInText,
  normaliseSalaryPeriod,
  NO_SALARY,
  parseSalaryText,
  type Salary,
} from './salary.js';
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

/** Properties whose entries are the items of a list: a JobPosting found there is one of many. */
const LIST_PROPERTIES = new Set(['itemListElement', 'item']);

export interface JobPostingSearch {
  /** The page's postings in document order, not counting those listed in an ItemList. */
  postings: JsonObject[];
  /** Some JobPosting sat in an ItemList (a listing page's structured data). */
  hasListedPosting: boolean;
  /** Every `@type` seen, local names only ("WebPage", "BlogPosting"). */
  types: Set<string>;
}

export function createJobPostingSearch(): JobPostingSearch {
  return { postings: [], hasListedPosting: false, types: new Set() };
}

/**
 * Adds the JobPosting nodes of one parsed JSON-LD value to `search`, looking through arrays,
 * `@graph` and any nested object (e.g. a WebPage's `mainEntity`). A posting's own children are
 * not searched; postings reached through an ItemList's elements are counted as listed instead.
 */
export function collectJobPostings(
  value: unknown,
  search: JobPostingSearch,
  isInList = false,
  depth = 0,
): void {
  if (depth > MAX_SEARCH_DEPTH) return;
  if (Array.isArray(value)) {
    for (const entry of value) collectJobPostings(entry, search, isInList, depth + 1);
    return;
  }
  if (!isJsonObject(value)) return;
  const type = value['@type'];
  for (const name of Array.isArray(type) ? (type as unknown[]) : [type]) {
    if (typeof name === 'string') search.types.add(localTypeName(name));
  }
  if (isJobPostingType(type)) {
    if (isInList) search.hasListedPosting = true;
    else search.postings.push(value);
    return;
  }
  for (const key in value) {
    const entry = value[key];
    if (typeof entry !== 'object' || entry === null) continue;
    collectJobPostings(entry, search, isInList || LIST_PROPERTIES.has(key), depth + 1);
  }
}

function localTypeName(name: string): string {
  const trimmed = name.trim();
  return trimmed.slice(Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf(':')) + 1);
}

/** Every node with an `@id`, for resolving references (`{"@id": "#org"}`) across blocks. */
export function indexNodesById(values: readonly unknown[]): Map<string, JsonObject> {
  const index = new Map<string, JsonObject>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > MAX_SEARCH_DEPTH) return;
    if (Array.isArray(value)) {
      for (const entry of value) visit(entry, depth + 1);
      return;
    }
    if (!isJsonObject(value)) return;
    const id = value['@id'];
    // The fullest description of a node wins over bare references to it.
    if (
      typeof id === 'string' &&
      Object.keys(value).length >
        (index.get(id) === undefined ? 1 : Object.keys(index.get(id) ?? {}).length)
    )
      index.set(id, value);
    for (const key in value) {
      const entry = value[key];
      if (typeof entry === 'object' && entry !== null) visit(entry, depth + 1);
    }
  };
  for (const value of values) visit(value, 0);
  return index;
}

/** Looks up a node by `@id` when a property holds only a reference (`{"@id": "#org"}`). */
export type ReferenceResolver = (id: string) => JsonObject | null;

export interface MappingContext {
  resolveReference?: ReferenceResolver;
}

export function mapJobPosting(node: JsonObject, context: MappingContext = {}): ExtractedPosting {
  const resolve = (value: unknown): unknown => dereference(value, context.resolveReference);
  const description = readDescription(readText(node.description));
  const location = readLocation(node.jobLocation, resolve);
  const locationParts = [location.city, location.region, location.country].filter(
    (part) => part !== null,
  );
  // The posting-level salaryCurrency covers a baseSalary (or text) that names no currency.
  const salaryContext: SalaryContext = {
    resolve,
    country: location.country,
    currency: readCurrency(node.salaryCurrency, location.country),
  };
  let salary = readSalary(resolve(first(node.baseSalary)), salaryContext);
  if (salary.min === null && salary.max === null) {
    const estimated = readSalary(resolve(first(node.estimatedSalary)), salaryContext);
    const fromText =
      estimated.min !== null || estimated.max !== null
        ? estimated
        : findSalaryInText(description.text, location.country);
    if (fromText !== null) salary = fromText;
  }
  if (salary.currency === null && (salary.min !== null || salary.max !== null))
    salary = { ...salary, currency: salaryContext.currency };
  return {
    title: readLabel(node.title) ?? readLabel(node.name),
    company: readCompany(resolve(first(node.hiringOrganization))),
    location: locationParts.length > 0 ? locationParts.join(', ') : null,
    locationCity: location.city,
    locationRegion: location.region,
    locationCountry: location.country,
    isRemote: readIsRemote(node, location),
    employmentType: normaliseEmploymentType(node.employmentType),
    salaryMin: salary.min,
    salaryMax: salary.max,
    salaryCurrency: salary.currency,
    salaryPeriod: salary.period,
    datePosted: readDate(node.datePosted),
    description: description.html,
    descriptionText: description.text,
    requirements:
      readRequirements(node.qualifications) ??
      readRequirements(node.experienceRequirements) ??
      readRequirements(node.skills) ??
      requirementsFromBlocks(description.blocks),
  };
}

/** A reference-only object (`@id` and at most `@type`) replaced by the node it names. */
function dereference(value: unknown, resolveReference: ReferenceResolver | undefined): unknown {
  if (resolveReference === undefined || !isJsonObject(value)) return value;
  const id = value['@id'];
  if (typeof id !== 'string') return value;
  const keys = Object.keys(value).filter((key) => key !== '@id' && key !== '@type');
  if (keys.length > 0) return value;
  return resolveReference(id) ?? value;
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

/**
 * A short label (title, company name): templates often HTML-escape it before putting it into
 * JSON ("R&amp;D"), which no reader means; references are decoded and whitespace collapsed.
 */
function readLabel(value: unknown): string | null {
  const text = readText(value);
  if (text === null) return null;
  const label = normaliseWhitespace(text.includes('&') ? decodeEntities(text) : text);
  return label === '' ? null : label;
}

/** `hiringOrganization.name`, or hiringOrganization itself when a site gives a plain string. */
function readCompany(organization: unknown): string | null {
  return isJsonObject(organization)
    ? (readLabel(organization.name) ?? readLabel(organization.legalName))
    : readLabel(organization);
}

interface Location extends ParsedLocation {
  /** A jobLocation was given at all (even an empty Place): the posting names a workplace. */
  isGiven: boolean;
}

/**
 * The first jobLocation that names a place: a Place with a PostalAddress (the usual shape), a
 * Place or address written as text, or a bare PostalAddress. Other locations are not represented.
 */
function readLocation(jobLocation: unknown, resolve: (value: unknown) => unknown): Location {
  const places = Array.isArray(jobLocation) ? (jobLocation as unknown[]) : [jobLocation];
  const isGiven = places.some((place) => place !== undefined && place !== null);
  let isRemote: boolean | null = null;
  for (const entry of places) {
    const parsed = readPlace(resolve(entry), resolve);
    if (parsed === null) continue;
    isRemote ??= parsed.isRemote;
    if (parsed.city !== null || parsed.region !== null || parsed.country !== null)
      return { ...parsed, isRemote: parsed.isRemote ?? isRemote, isGiven };
  }
  return { city: null, region: null, country: null, isRemote, isGiven };
}

function readPlace(place: unknown, resolve: (value: unknown) => unknown): ParsedLocation | null {
  const text = readText(place);
  if (text !== null) return parseLocationText(text);
  if (!isJsonObject(place)) return null;
  const address = resolve(first(place.address)) ?? (isPostalAddress(place) ? place : undefined);
  const addressText = readText(address);
  if (addressText !== null) return parseLocationText(addressText);
  if (isJsonObject(address)) return readPostalAddress(address);
  const name = readText(place.name);
  return name === null ? null : parseLocationText(name);
}

function isPostalAddress(value: JsonObject): boolean {
  return (
    'addressLocality' in value ||
    'addressRegion' in value ||
    'addressCountry' in value ||
    readText(value['@type'])?.endsWith('PostalAddress') === true
  );
}

function readPostalAddress(address: JsonObject): ParsedLocation {
  let city = readLabel(address.addressLocality);
  let region = readLabel(address.addressRegion);
  let isRemote: boolean | null = null;
  if (city !== null && isRemoteText(city)) {
    // "addressLocality": "Remote" (or "Remote - London") is how some ATSs say remote.
    isRemote = true;
    city = parseLocationText(city).city;
  } else if (city !== null && region === null && city.includes(',')) {
    // "addressLocality": "Columbus, OH": city and region in one field.
    const parsed = parseLocationText(city);
    if (parsed.city !== null && parsed.country === null) ({ city, region } = parsed);
  }
  return { city, region, country: readCountry(address.addressCountry), isRemote };
}

/** addressCountry is a code or name string, or a Country object with a `name`. */
function readCountry(value: unknown): string | null {
  const country = first(value);
  return isJsonObject(country) ? readLabel(country.name) : readLabel(country);
}

const REMOTE_LOCATION_TYPES = new Set(['TELECOMMUTE', 'REMOTE']);

/**
 * true when the posting says TELECOMMUTE (or a workplaceType / location text says remote); false
 * when it names a physical location, or says hybrid or on-site, and does not say so; null when it
 * says neither, since a missing field proves nothing.
 */
function readIsRemote(node: JsonObject, location: Location): boolean | null {
  const types = Array.isArray(node.jobLocationType)
    ? (node.jobLocationType as unknown[])
    : [node.jobLocationType];
  if (
    types.some(
      (type) => typeof type === 'string' && REMOTE_LOCATION_TYPES.has(type.trim().toUpperCase()),
    )
  )
    return true;
  const workplace = readText(node.workplaceType) ?? readText(node.workplace);
  const workplaceRemote = workplace === null ? null : parseLocationText(workplace).isRemote;
  if (workplaceRemote === true || location.isRemote === true) return true;
  if (workplaceRemote === false || location.isRemote === false) return false;
  return location.isGiven ? false : null;
}

interface SalaryContext {
  resolve: (value: unknown) => unknown;
  /** The posting's country as written: decides a bare "$" (see currency.ts). */
  country: string | null;
  /** The posting-level `salaryCurrency`, for amounts that name none. */
  currency: string | null;
}

/**
 * A currency as a page writes it in a currency property: an ISO 4217 code in any case, or a
 * symbol ("$", "£"); null for anything else, so the field only ever holds a real code.
 */
function readCurrency(value: unknown, country: string | null): string | null {
  const text = readText(value);
  return text === null ? null : currencyFromSymbol(text, country);
}

/**
 * baseSalary is usually a MonetaryAmount whose `value` is a number or a QuantitativeValue
 * (minValue/maxValue, or a single `value`); schema.org also allows a bare number, and sites
 * write text ("£110000 - £120000 per annum") in either place.
 */
function readSalary(amount: unknown, context: SalaryContext): Salary {
  const { resolve, country } = context;
  const bareNumber = readNumber(amount);
  if (bareNumber !== null) return { ...NO_SALARY, min: bareNumber, max: bareNumber };
  const text = readText(amount);
  if (text !== null) return parseSalaryText(text, context.currency, country) ?? NO_SALARY;
  if (!isJsonObject(amount)) return NO_SALARY;

  const currency = readCurrency(amount.currency, country) ?? context.currency;
  const value = resolve(first(amount.value));
  let min: number | null = null;
  let max: number | null = null;
  let unitText: string | null = null;
  let fromText: Salary | null = null;
  if (isJsonObject(value)) {
    min = readNumber(value.minValue);
    max = readNumber(value.maxValue);
    if (min === null && max === null) min = max = readNumber(value.value);
    unitText = readText(value.unitText);
    if (min === null && max === null) {
      const valueText = readText(value.value) ?? readText(value.minValue);
      if (valueText !== null) fromText = parseSalaryText(valueText, currency, country);
    }
  } else {
    min = max = readNumber(value);
    const valueText = min === null ? readText(value) : null;
    if (valueText !== null) fromText = parseSalaryText(valueText, currency, country);
  }
  unitText ??= readText(amount.unitText);
  if (fromText !== null) {
    ({ min, max } = fromText);
    unitText ??= fromText.period;
  }
  return {
    min,
    max,
    currency: currency ?? fromText?.currency ?? null,
    period: unitText === null ? null : normaliseSalaryPeriod(unitText),
  };
}

/** A finite number, or a numeric string such as "85000", "85000.50" or "85,000". */
export function readNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string') return null;
  let text = value.trim();
  if (/^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(text)) text = text.replaceAll(',', '');
  return /^-?\d+(?:\.\d+)?$/.test(text) ? Number(text) : null;
}

/** ISO 8601: a date as published, a date-time as a UTC timestamp (see dates.ts). */
function readDate(value: unknown): string | null {
  const text = readText(value);
  return text === null ? null : normaliseDate(text);
}

/**
 * A string, a list of strings (one per line), or objects carrying a `description` or `name`
 * (e.g. EducationalOccupationalCredential). A string holding HTML (a list, usually) becomes its
 * lines. Yields null when nothing readable is there, so the caller falls through to the next
 * candidate property.
 */
function readRequirements(value: unknown): string | null {
  if (Array.isArray(value)) {
    const lines = (value as unknown[]).map(readRequirementEntry).filter((line) => line !== null);
    return lines.length > 0 ? lines.join('\n') : null;
  }
  return readRequirementEntry(value);
}

function readRequirementEntry(value: unknown): string | null {
  const text =
    isJsonObject(value) && !('@value' in value)
      ? (readText(value.description) ?? readText(value.name))
      : typeof value === 'string' || isJsonObject(value)
        ? readText(value)
        : null;
  if (text === null || !HAS_TAG.test(text)) return text;
  return htmlToText(text);
}

const HAS_TAG = /<[a-zA-Z/]/;
