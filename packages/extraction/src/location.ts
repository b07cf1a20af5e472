/**
 * Locations written as text: "London, UK", "San Francisco, CA", "Remote - US", "Berlin or
 * Remote", "1 Finsbury Ave, London EC2A 4NE, United Kingdom". Values are kept as the page wrote
 * them (a country stays "UK" or "Germany"); only the parts are told apart. Nothing is inferred
 * that the text does not say: "Austin, TX" has no country.
 */

export interface ParsedLocation {
  city: string | null;
  region: string | null;
  country: string | null;
  /** true when the text says remote, false when it says hybrid or on-site, null otherwise. */
  isRemote: boolean | null;
}

const REMOTE_WORDS =
  '\\b(?:fully\\s+remote|100\\s?%\\s+remote|remote(?:[\\s-]first|[\\s-]friendly)?|work\\s+from\\s+home|wfh|home[\\s-]?(?:based|office)|telecommute|anywhere|worldwide|télétravail|homeoffice)\\b';
const NOT_REMOTE_WORDS =
  '\\b(?:hybrid|on[\\s-]?site|in[\\s-]office|office[\\s-]based|vor\\s+ort)\\b';
const REMOTE = new RegExp(REMOTE_WORDS, 'i');
const NOT_REMOTE = new RegExp(NOT_REMOTE_WORDS, 'i');
const REMOTE_ALL = new RegExp(REMOTE_WORDS, 'gi');
const NOT_REMOTE_ALL = new RegExp(NOT_REMOTE_WORDS, 'gi');

/** Regions of the world: not a city, region or country of ours. */
// prettier-ignore
const AREAS = new Set([
  'europe', 'emea', 'eu', 'americas', 'north america', 'latam', 'apac', 'asia', 'global',
  'international', 'multiple locations', 'various locations', 'flexible', 'nationwide',
]);

const US_STATES = new Set(
  (
    'AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH ' +
    'OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY ON QC BC AB MB NS NB SK NL PE'
  ).split(' '),
);

// prettier-ignore
const COUNTRIES = new Set(
  [
    'us', 'usa', 'u.s.', 'u.s.a.', 'united states', 'united states of america', 'uk', 'u.k.',
    'gb', 'united kingdom', 'great britain', 'england', 'scotland', 'wales', 'northern ireland',
    'de', 'germany', 'deutschland', 'fr', 'france', 'nl', 'netherlands', 'the netherlands',
    'ie', 'ireland', 'es', 'spain', 'españa', 'pt', 'portugal', 'it', 'italy', 'ca', 'canada',
    'au', 'australia', 'nz', 'new zealand', 'in', 'india', 'pl', 'poland', 'se', 'sweden',
    'no', 'norway', 'dk', 'denmark', 'fi', 'finland', 'ch', 'switzerland', 'at', 'austria',
    'österreich', 'be', 'belgium', 'cz', 'czechia', 'czech republic', 'ro', 'romania', 'jp',
    'japan', 'sg', 'singapore', 'br', 'brazil', 'mx', 'mexico', 'il', 'israel', 'ar',
    'argentina', 'za', 'south africa', 'ee', 'estonia', 'lt', 'lithuania', 'lv', 'latvia',
    'gr', 'greece', 'hu', 'hungary', 'ua', 'ukraine', 'tr', 'turkey', 'ae',
    'united arab emirates', 'schweiz', 'suisse', 'nederland', 'sverige', 'danmark',
  ],
);

/** England, Scotland … are regions within GB in schema.org terms when a country follows. */
const UK_NATIONS = new Set(['england', 'scotland', 'wales', 'northern ireland']);

const POSTAL_CODE =
  /\b(?:\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|\d{4}\s?[A-Z]{2}|\d{4,5}|[A-Z]\d[A-Z]\s?\d[A-Z]\d)\b/g;

function isCountry(part: string): boolean {
  return COUNTRIES.has(part.toLowerCase());
}

/**
 * Splits a location text into city, region and country. Several locations ("London or Berlin",
 * "London; Paris") yield the first.
 */
export function parseLocationText(text: string): ParsedLocation {
  const isRemote = REMOTE.test(text) ? true : NOT_REMOTE.test(text) ? false : null;
  // "Remote (US)", "Remote - Germany", "Berlin (Hybrid)": drop the words, brackets and dashes.
  const rest = text
    .replace(REMOTE_ALL, ' ')
    .replace(NOT_REMOTE_ALL, ' ')
    // "Bordeaux (33)": a French département number is not part of the place.
    .replace(/\(\s*\d{1,3}\s*\)/g, ' ')
    .replace(/[()[\]]/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/^[\s\-–—:,]+|[\s\-–—:,]+$/g, '');
  // " or " in lower case only: "Portland, OR" is Oregon.
  const first = rest.split(/\s*(?:;|\||\s\/\s|\bor\b|\+|•)\s*/)[0] ?? '';
  const parts = first
    .split(/\s*(?:,|\s[-–—:]\s)\s*/)
    .map((part) => part.replace(POSTAL_CODE, ' ').replace(/\s+/g, ' ').trim())
    .map((part) => part.replace(/^[-–—:,.\s]+|[-–—:,\s]+$/g, ''))
    // Street lines start with a number; what is left is place names.
    .filter((part) => part !== '' && !/^\d/.test(part) && !AREAS.has(part.toLowerCase()));

  const location: ParsedLocation = { city: null, region: null, country: null, isRemote };
  if (parts.length === 0) return location;
  if (parts.length === 1) {
    const only = parts[0] ?? '';
    if (UK_NATIONS.has(only.toLowerCase())) location.region = only;
    else if (isCountry(only)) location.country = only;
    else location.city = only;
    return location;
  }
  const last = parts[parts.length - 1] ?? '';
  if (parts.length === 2) {
    location.city = parts[0] ?? null;
    if (US_STATES.has(last) || UK_NATIONS.has(last.toLowerCase()) || !isCountry(last))
      location.region = last;
    else location.country = last;
    return location;
  }
  location.city = parts[parts.length - 3] ?? null;
  location.region = parts[parts.length - 2] ?? null;
  location.country = last;
  return location;
}

/** The text says the work is remote ("Remote", "Remote - EMEA", "Anywhere"). */
export function isRemoteText(text: string): boolean {
  return REMOTE.test(text);
}
