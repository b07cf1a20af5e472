/**
 * Whether two postings seen through different sources (a company's ATS feed and its career site,
 * or two boards) are the same job: the rule that links them (decision 0027), measured on a
 * labelled set of pairs from two public job lists (`pnpm eval:dedupe`, eval/dedupe/README.md).
 *
 * 1. **ATS ids in the URLs decide when both have one**: the same vendor's job id is the same job,
 *    different ids are different jobs, whatever the titles say.
 * 2. **Otherwise the fields**: the same company, the same title and the same places, each
 *    compared as normalised here, and, since a role is hired for again every season under the
 *    same title, no sign of two hirings: not two different seasons or years in the titles, not
 *    posted more than SAME_JOB_MAX_DAYS_APART days apart. Company, title or location missing:
 *    not the same (a guess is worse than a duplicate left in the list).
 */

/** What the rule reads of a posting. */
export interface JobRecord {
  url: string;
  /** Its ATS job id (`greenhouse:6330949`) when known otherwise: an ATS feed's own record. */
  atsKey?: string | null;
  company: string | null;
  title: string | null;
  /** One location, or several (a posting open in several cities). */
  location: string | readonly string[] | null;
  /** When it was posted, when known. */
  datePosted?: Date | null;
}

/** Two postings of the same role further apart than this are two hirings (a season each). */
export const SAME_JOB_MAX_DAYS_APART = 14;

export type SameJobVerdict =
  { same: true; by: 'ats' | 'fields' } | { same: false; by: 'ats' | 'fields' | 'missing-fields' };

/** ATS job URLs: the vendor and the path (or query) part that is the job's id. */
const ATS_PATTERNS: readonly { vendor: string; host: RegExp; id: (url: URL) => string | null }[] = [
  {
    vendor: 'greenhouse',
    host: /(^|\.)greenhouse\.io$/,
    id: (url) => /\/jobs\/(\d+)/.exec(url.pathname)?.[1] ?? url.searchParams.get('token'),
  },
  { vendor: 'lever', host: /^jobs\.(eu\.)?lever\.co$/, id: (url) => uuidIn(url.pathname) },
  { vendor: 'ashby', host: /^jobs\.ashbyhq\.com$/, id: (url) => uuidIn(url.pathname) },
  {
    vendor: 'workday',
    host: /\.myworkdayjobs\.com$|\.myworkdaysite\.com$/,
    // `/job/<location>/<title>_<requisition>`: the requisition id is the job.
    id: (url) => /_([A-Za-z0-9-]+)(?:\/apply)?\/?$/.exec(url.pathname)?.[1]?.toLowerCase() ?? null,
  },
  {
    vendor: 'smartrecruiters',
    host: /^(jobs|careers)\.smartrecruiters\.com$/,
    id: (url) => /\/(\d{6,})/.exec(url.pathname)?.[1] ?? null,
  },
  {
    vendor: 'icims',
    host: /\.icims\.com$/,
    id: (url) => /\/jobs\/(\d+)/.exec(url.pathname)?.[1] ?? null,
  },
  {
    vendor: 'workable',
    host: /^apply\.workable\.com$/,
    id: (url) => /\/j\/([A-Z0-9]+)/i.exec(url.pathname)?.[1]?.toUpperCase() ?? null,
  },
];

function uuidIn(path: string): string | null {
  return (
    /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i.exec(path)?.[0].toLowerCase() ??
    null
  );
}

/**
 * `vendor:id` of an ATS job URL, or undefined when the URL is not one (a career site's own page).
 * A Greenhouse id is read from `gh_jid` on any host too: career sites embed the board with it.
 */
export function atsJobKey(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const ghJid = url.searchParams.get('gh_jid');
  if (ghJid && /^\d+$/.test(ghJid)) return `greenhouse:${ghJid}`;
  const host = url.hostname.toLowerCase();
  for (const pattern of ATS_PATTERNS) {
    if (!pattern.host.test(host)) continue;
    const id = pattern.id(url);
    return id ? `${pattern.vendor}:${id}` : undefined;
  }
  return undefined;
}

const fold = (text: string) =>
  text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/&/g, ' and ');

/** Legal forms and the like: "Ventas, Inc" is Ventas. */
const COMPANY_NOISE = new Set([
  'inc',
  'incorporated',
  'llc',
  'ltd',
  'limited',
  'corp',
  'corporation',
  'co',
  'company',
  'plc',
  'lp',
  'llp',
  'gmbh',
  'ag',
  'sa',
  'the',
]);

/** "D. E. Shaw" and "D.E. Shaw", "Ventas, Inc" and "Ventas": one company. */
export function normaliseCompany(company: string): string {
  return fold(company)
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '' && !COMPANY_NOISE.has(word))
    .join('');
}

/** Words a title carries about the hiring season rather than the job: a year, a season. */
const YEAR = /^(?:19|20)\d\d$/;
const SEASON_WORD = /^(?:summer|fall|autumn|winter|spring)$/;
const isSeasonWord = (word: string) => YEAR.test(word) || SEASON_WORD.test(word);

/** The season words of a title ("summer", "2025"), by kind: the year and the season apart. */
function seasonOf(title: string): { years: Set<string>; seasons: Set<string> } {
  const words = fold(title).split(/[^a-z0-9]+/);
  const years = new Set(words.filter((word) => YEAR.test(word)));
  const seasons = new Set(
    words
      .filter((word) => SEASON_WORD.test(word))
      .map((word) => (word === 'autumn' ? 'fall' : word)),
  );
  return { years, seasons };
}

/** Both name one and they differ: "Summer 2024" and "Summer 2025" are two hirings. */
const differ = (a: Set<string>, b: Set<string>) =>
  a.size > 0 && b.size > 0 && ![...a].some((value) => b.has(value));
/** Spellings of one word. */
const SAME_WORD: Record<string, string> = {
  internship: 'intern',
  interns: 'intern',
  engineering: 'engineer',
  engineers: 'engineer',
  developers: 'developer',
  sr: 'senior',
  jr: 'junior',
};

/**
 * A title's words without the season ("Summer 2025") and the punctuation, each spelled one way
 * ("Internship" is "intern", "Engineering" is "engineer"), in order of their first use, sorted:
 * "2025 Summer Internship - Software Engineering" and "Software Engineer Intern" are one title.
 */
export function normaliseTitle(title: string): string {
  const words = fold(title)
    .split(/[^a-z0-9+#]+/)
    .filter((word) => word !== '' && !isSeasonWord(word))
    .map((word) => SAME_WORD[word] ?? word);
  return [...new Set(words)].sort().join(' ');
}

const CITY_ALIASES: Record<string, string> = {
  nyc: 'new york',
  'new york city': 'new york',
  ny: 'new york',
  sf: 'san francisco',
  'sf bay area': 'san francisco',
  la: 'los angeles',
  dc: 'washington',
  'washington dc': 'washington',
};

/** Each location's city (before its first comma), one spelling each; "Remote" is a place. */
export function normaliseLocations(location: JobRecord['location']): Set<string> {
  const list = location === null ? [] : typeof location === 'string' ? [location] : location;
  const cities = new Set<string>();
  for (const place of list) {
    const city = fold(place.split(',')[0] ?? '')
      .replace(/[^a-z0-9 ]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
    if (city !== '') cities.add(CITY_ALIASES[city] ?? city);
  }
  return cities;
}

/**
 * The fields half of the rule alone: what decides when a URL carries no ATS id. The places must
 * be the same set, not merely share one: one city in common is as often a second requisition for
 * another office.
 */
export function sameJobByFields(a: JobRecord, b: JobRecord): SameJobVerdict {
  if (!a.company || !b.company || !a.title || !b.title)
    return { same: false, by: 'missing-fields' };
  const [here, there] = [normaliseLocations(a.location), normaliseLocations(b.location)];
  if (here.size === 0 || there.size === 0) return { same: false, by: 'missing-fields' };
  const [seasonA, seasonB] = [seasonOf(a.title), seasonOf(b.title)];
  const apartDays =
    a.datePosted && b.datePosted
      ? Math.abs(a.datePosted.getTime() - b.datePosted.getTime()) / 86_400_000
      : 0;
  const same =
    normaliseCompany(a.company) === normaliseCompany(b.company) &&
    normaliseTitle(a.title) === normaliseTitle(b.title) &&
    here.size === there.size &&
    [...here].every((city) => there.has(city)) &&
    !differ(seasonA.years, seasonB.years) &&
    !differ(seasonA.seasons, seasonB.seasons) &&
    apartDays <= SAME_JOB_MAX_DAYS_APART;
  return { same, by: 'fields' };
}

/** The rule: ATS ids when both URLs carry one, the fields otherwise. */
export function sameJob(a: JobRecord, b: JobRecord): SameJobVerdict {
  const [keyA, keyB] = [a.atsKey ?? atsJobKey(a.url), b.atsKey ?? atsJobKey(b.url)];
  if (keyA !== undefined && keyB !== undefined) return { same: keyA === keyB, by: 'ats' };
  return sameJobByFields(a, b);
}
