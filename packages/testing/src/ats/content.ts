/**
 * Deterministic job postings shared by the ATS fixture servers. Each vendor fixture renders a
 * spec in its vendor's JSON and computes the record Gleaner should map it to from the spec, by
 * the field conventions of @gleaner/extraction, never by running an adapter.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import { chance, createRandom, integer, mixSeed, pick, pickSome, type Random } from '../random.js';

export interface AtsPlace {
  city: string;
  region: string | null;
  /** ISO 3166 alpha-2, upper-case. */
  country: string;
  countryName: string;
}

export type AtsEmployment = 'FULL_TIME' | 'PART_TIME' | 'CONTRACTOR' | 'INTERN' | 'TEMPORARY';
export type AtsWorkplace = 'remote' | 'hybrid' | 'on-site' | 'unspecified';
export type AtsSalaryPeriod = 'year' | 'month' | 'hour';

export interface AtsSalary {
  min: number;
  max: number;
  /** ISO 4217, upper-case. */
  currency: string;
  period: AtsSalaryPeriod;
}

export interface AtsPostingSpec {
  index: number;
  company: string;
  title: string;
  /** URL slug of the title, e.g. "senior-backend-engineer". */
  slug: string;
  department: string;
  team: string;
  /** The office; null only for remote postings that name none. */
  place: AtsPlace | null;
  /** The country a remote posting hires in (the office's, or one picked). */
  remoteCountry: AtsPlace;
  workplace: AtsWorkplace;
  employment: AtsEmployment | null;
  salary: AtsSalary | null;
  /**
   * The salary the description states in a "Compensation" section (many boards publish pay
   * only there), or null when it states none: two in three salaried postings.
   */
  descriptionSalary: AtsSalary | null;
  /** Epoch milliseconds, with a time of day and milliseconds. */
  publishedAt: number;
  updatedAt: number;
  /** How vendors that write local times with an offset write this posting's dates. */
  utcOffsetMinutes: number;
  /** Opening paragraphs, as HTML (with entity references such as `&amp;` and `&mdash;`). */
  introHtml: string;
  responsibilities: string[];
  /** Plain-text lines; empty when the posting lists none. */
  requirements: string[];
  requirementsHeading: string;
  benefits: string[];
}

// Deterministic randomness (one stream per posting so that posting N does not depend on how
// many postings the fixture has): the package's own, re-exported for the board renderers.
export { chance, createRandom, integer, mixSeed, pick, type Random } from '../random.js';

/** A lower-case hex string of `length` digits, e.g. for UUID-like ids. */
export function hex(random: Random, length: number): string {
  let out = '';
  while (out.length < length) out += Math.floor(random.next() * 16).toString(16);
  return out;
}

export function uuid(random: Random): string {
  const h = hex(random, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

// ---------------------------------------------------------------------------------------------
// Content pools

export const ATS_COMPANIES = [
  'Northwind Analytics',
  'Lumen Freight',
  'Brightwell Health',
  'Copperleaf Energy',
  'Tessellate Labs',
] as const;

const SENIORITIES = ['', '', '', 'Senior ', 'Senior ', 'Staff ', 'Principal ', 'Junior ', 'Lead '];

/** name | department | skills */
const ROLES = [
  'Backend Engineer | Engineering | Go, PostgreSQL, Kafka, gRPC',
  'Frontend Engineer | Engineering | TypeScript, React, CSS, accessibility',
  'Data Engineer | Data | Python, Spark, Airflow, dbt',
  'Machine Learning Engineer | Data | PyTorch, Python, Kubernetes, MLOps',
  'Site Reliability Engineer | Engineering | Kubernetes, Terraform, Prometheus, Linux',
  'Product Designer | Design | Figma, prototyping, user research, design systems',
  'Product Manager | Product | discovery, analytics, roadmapping, SQL',
  'Sales & Partnerships Manager | Sales | partner programmes, CRM, contracts, negotiation',
  'Customer Success Manager | Customer Success | onboarding, renewals, Gainsight, communication',
  'Financial Analyst | Finance | Excel, financial modelling, SQL, reporting',
  'Recruiter | People | sourcing, interviewing, employer branding, ATS tooling',
  'Technical Writer | Engineering | docs-as-code, Markdown, APIs, editing',
].map((line) => {
  const [name = '', department = '', skills = ''] = line.split(' | ');
  return { name, department, skills: skills.split(', ') };
});

const TEAMS = [
  'Payments',
  'Platform',
  'Growth',
  'Search',
  'Logistics',
  'Identity',
  'Billing',
  'R&D',
];

/** city | region (may be empty) | country code | country name */
export const ATS_PLACES: readonly AtsPlace[] = [
  'San Francisco | CA | US | United States',
  'New York | NY | US | United States',
  'Austin | TX | US | United States',
  'Seattle | WA | US | United States',
  'Toronto | ON | CA | Canada',
  'London | England | GB | United Kingdom',
  'Manchester | England | GB | United Kingdom',
  'Berlin | Berlin | DE | Germany',
  'München | Bayern | DE | Germany',
  'Amsterdam | Noord-Holland | NL | Netherlands',
  'Paris | Île-de-France | FR | France',
  'Dublin |  | IE | Ireland',
  'Lisbon |  | PT | Portugal',
].map((line) => {
  const [city = '', region = '', country = '', countryName = ''] = line.split(' | ');
  return { city, region: region === '' ? null : region, country, countryName };
});

const CURRENCY_BY_COUNTRY: Record<string, string> = { US: 'USD', GB: 'GBP', CA: 'CAD' }; // others: EUR

const ABOUT = [
  '{company} helps organisations make better decisions with their data.',
  'Founded in 2016, {company} now serves more than 4,000 customers in 30 countries.',
  'We are a remote-friendly team of 300 people across Europe &amp; North America.',
  'Our customers range from two-person start-ups to household names.',
  'We are profitable, growing and backed by investors who think in decades.',
];

const RESPONSIBILITIES = [
  'Design, build and operate systems used by thousands of customers every day',
  'Work closely with product, design & engineering to ship improvements every week',
  'Own problems end to end, from the first sketch to measuring the outcome',
  'Break large, ambiguous projects into small steps and deliver them incrementally',
  'Review the work of your peers and help raise the bar for quality',
  'Write clear proposals so that others can build on your work',
  'Mentor newer colleagues and share what you learn',
  'Talk to customers regularly to understand how they use the product',
];

const REQUIREMENTS = [
  '{years}+ years of experience as a {role} or similar',
  'Hands-on experience with {skill1} and {skill2}',
  'Working knowledge of {skill3}',
  'Clear written & spoken English',
  'A track record of shipping work that customers use',
  'Comfort with ambiguity and a bias for action',
  'Experience with {skill4} is a plus',
];

const REQUIREMENT_HEADINGS = ['Requirements', 'Qualifications', 'What you bring', 'About you'];

const BENEFITS = [
  'Competitive salary and meaningful equity',
  'Private health, dental & vision insurance',
  '30 days of paid holiday plus public holidays',
  'Learning & development budget of 2,000 per year',
  'Flexible working hours',
  'Sixteen weeks of fully paid parental leave',
  'A home-office allowance',
];

// ---------------------------------------------------------------------------------------------
// Generation

const BASE_DATE = Date.UTC(2026, 10, 1); // 2026-11-01, fixed so content never depends on today
const DAY_MS = 86_400_000;

export function generateAtsPostings(
  count: number,
  seed: number,
  company: string,
): AtsPostingSpec[] {
  const specs: AtsPostingSpec[] = [];
  for (let index = 0; index < count; index++) specs.push(generatePosting(index, seed, company));
  return specs;
}

export function companyForSeed(seed: number): string {
  return pick(createRandom(mixSeed(seed, 0x5eed)), ATS_COMPANIES);
}

function generatePosting(index: number, seed: number, company: string): AtsPostingSpec {
  const random = createRandom(mixSeed(seed, index));
  const role = pick(random, ROLES);
  const team = pick(random, TEAMS);
  const withTeam = chance(random, 0.3);
  // U+2013 (en dash) puts multi-byte UTF-8 into titles, as real boards do.
  const title = `${pick(random, SENIORITIES)}${role.name}${withTeam ? ` \u2013 ${team}` : ''}`;

  const workplaceRoll = random.next();
  const workplace: AtsWorkplace =
    workplaceRoll < 0.2
      ? 'remote'
      : workplaceRoll < 0.35
        ? 'hybrid'
        : workplaceRoll < 0.9
          ? 'on-site'
          : 'unspecified';
  const place = workplace === 'remote' && chance(random, 0.5) ? null : pick(random, ATS_PLACES);
  const remoteCountry = place ?? pick(random, ATS_PLACES);

  const employmentRoll = random.next();
  const employment: AtsEmployment | null =
    employmentRoll < 0.6
      ? 'FULL_TIME'
      : employmentRoll < 0.7
        ? 'PART_TIME'
        : employmentRoll < 0.8
          ? 'CONTRACTOR'
          : employmentRoll < 0.88
            ? 'INTERN'
            : employmentRoll < 0.95
              ? 'TEMPORARY'
              : null;

  const currency = CURRENCY_BY_COUNTRY[remoteCountry.country] ?? 'EUR';
  let salary: AtsSalary | null = null;
  if (chance(random, 0.7)) {
    if (employment === 'INTERN') {
      const min = integer(random, 20, 40) * 100;
      salary = { min, max: min + integer(random, 0, 10) * 100, currency, period: 'month' };
    } else if (employment === 'FULL_TIME' || employment === null) {
      const min = integer(random, 45, 180) * 1000;
      salary = { min, max: min + integer(random, 10, 40) * 1000, currency, period: 'year' };
    } else {
      const min = integer(random, 50, 240) / 2; // halves: exact in binary, and cents are integers
      salary = { min, max: min + integer(random, 0, 20), currency, period: 'hour' };
    }
  }

  const publishedAt = BASE_DATE - integer(random, 1, 90) * DAY_MS + integer(random, 0, DAY_MS - 1);
  const updatedAt = publishedAt + integer(random, 0, 5 * DAY_MS);
  const utcOffsetMinutes = pick(random, [0, -240, -300, 60, 120, 330]);

  const skills = pickSome(random, role.skills, 4);
  const fill = (line: string): string =>
    line
      .replace('{company}', company)
      .replace('{years}', String(integer(random, 2, 8)))
      .replace('{role}', role.name)
      .replace('{skill1}', skills[0] ?? 'SQL')
      .replace('{skill2}', skills[1] ?? 'Git')
      .replace('{skill3}', skills[2] ?? 'Linux')
      .replace('{skill4}', skills[3] ?? 'Docker');

  const intro = [
    `<p>${pickSome(random, ABOUT, integer(random, 2, 3))
      .map((sentence) => sentence.replace('{company}', escapeHtml(company)))
      .join(' ')}</p>`,
    `<p>As a ${escapeHtml(role.name)} on the ${escapeHtml(team)} team, you will use ${escapeHtml(skills.join(', '))}.</p>`,
  ];
  if (chance(random, 0.3))
    intro.push('<p>We read every application&nbsp;&mdash; and we reply to all of them.</p>');

  return {
    index,
    company,
    title,
    slug: title
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, ''),
    department: role.department,
    team,
    place,
    remoteCountry,
    workplace,
    employment,
    salary,
    // From the index, not the random stream, so that every other field stays as it was.
    descriptionSalary: index % 3 === 1 ? null : salary,
    publishedAt,
    updatedAt,
    utcOffsetMinutes,
    introHtml: intro.join('\n'),
    responsibilities: pickSome(random, RESPONSIBILITIES, integer(random, 3, 5)),
    requirements: chance(random, 0.85)
      ? pickSome(random, REQUIREMENTS, integer(random, 3, 5)).map(fill)
      : [],
    requirementsHeading: pick(random, REQUIREMENT_HEADINGS),
    benefits: pickSome(random, BENEFITS, integer(random, 3, 5)),
  };
}

// ---------------------------------------------------------------------------------------------
// Rendering helpers

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** `<li>` items of plain-text lines, without the surrounding list (Lever's `lists[].content`). */
export function listItems(lines: readonly string[]): string {
  return lines.map((line) => `<li>${escapeHtml(line)}</li>`).join('');
}

export function htmlList(lines: readonly string[]): string {
  return `<ul>${listItems(lines)}</ul>`;
}

/**
 * The posting's whole text as HTML: intro, responsibilities, requirements, benefits and, when
 * the description states pay, compensation. `fromDescription(spec)` is what it yields.
 */
export function fullDescriptionHtml(spec: AtsPostingSpec): string {
  const parts = [spec.introHtml, '<h3>What you will do</h3>', htmlList(spec.responsibilities)];
  if (spec.requirements.length > 0)
    parts.push(`<h3>${spec.requirementsHeading}</h3>`, htmlList(spec.requirements));
  parts.push('<h3>Benefits</h3>', htmlList(spec.benefits));
  const compensation = compensationHtml(spec);
  if (compensation !== '') parts.push(compensation);
  return parts.join('\n');
}

/** Unambiguous symbols, as boards that hire in several countries write them. */
const CURRENCY_SYMBOLS: Record<string, string> = { USD: '$', CAD: 'CA$', GBP: '£', EUR: '€' };
const PERIOD_WORDS: Record<AtsSalaryPeriod, string> = {
  year: 'per year',
  month: 'per month',
  hour: 'per hour',
};

/**
 * The "Compensation" section of a posting whose description states pay ("Salary range:
 * $120,000 – $150,000 per year."), or '' when it states none.
 */
export function compensationHtml(spec: AtsPostingSpec): string {
  const salary = spec.descriptionSalary;
  if (salary === null) return '';
  const symbol = CURRENCY_SYMBOLS[salary.currency] ?? `${salary.currency} `;
  const money = (value: number): string =>
    `${symbol}${value.toLocaleString('en-US', { minimumFractionDigits: Number.isInteger(value) ? 0 : 2 })}`;
  const range =
    salary.min === salary.max
      ? money(salary.min)
      : `${money(salary.min)} \u2013 ${money(salary.max)}`;
  return `<h3>Compensation</h3>\n<p>Salary range: ${escapeHtml(range)} ${PERIOD_WORDS[salary.period]}.</p>`;
}

/**
 * What a reader of descriptions takes from `fullDescriptionHtml(spec)`: the stated salary and
 * the lines under the requirements heading. Adapters fill these from the description when the
 * vendor's JSON has no such field (provenance 'description'), so a fixture of a vendor without
 * a salary or requirements field expects them from here.
 */
export function fromDescription(
  spec: AtsPostingSpec,
): Pick<
  ExpectedPostingFields,
  'salaryMin' | 'salaryMax' | 'salaryCurrency' | 'salaryPeriod' | 'requirements'
> {
  const salary = spec.descriptionSalary;
  return {
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary?.currency ?? null,
    salaryPeriod: salary?.period ?? null,
    requirements: spec.requirements.length > 0 ? spec.requirements.join('\n') : null,
  };
}

/** A crude text rendering for vendors' `descriptionPlain` fields (not compared by tests). */
export function plainText(html: string): string {
  return html
    .replace(/<\/(p|li|h\d)>/g, '\n')
    .replace(/<[^>]+>/g, '')
    .replaceAll('&nbsp;', ' ')
    .replaceAll('&mdash;', '\u2014')
    .replaceAll('&amp;', '&')
    .replace(/\n+/g, '\n')
    .trim();
}

export const EMPLOYMENT_LABELS: Record<AtsEmployment, string> = {
  FULL_TIME: 'Full-time',
  PART_TIME: 'Part-time',
  CONTRACTOR: 'Contract',
  INTERN: 'Internship',
  TEMPORARY: 'Temporary',
};

/** ISO 8601 with the spec's UTC offset, e.g. "2026-10-12T10:03:11-04:00" (seconds precision). */
export function isoWithOffset(epochMs: number, offsetMinutes: number): string {
  const local = new Date(Math.floor(epochMs / 1000) * 1000 + offsetMinutes * 60_000)
    .toISOString()
    .slice(0, 19);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The UTC ISO timestamp a date written at seconds precision stands for. */
export function isoSeconds(epochMs: number): string {
  return new Date(Math.floor(epochMs / 1000) * 1000).toISOString();
}

/** The record an adapter's `mapPosting` should produce, all fields null to start from. */
export function emptyExpected(): ExpectedPostingFields {
  return {
    title: null,
    company: null,
    location: null,
    locationCity: null,
    locationRegion: null,
    locationCountry: null,
    isRemote: null,
    employmentType: null,
    salaryMin: null,
    salaryMax: null,
    salaryCurrency: null,
    salaryPeriod: null,
    datePosted: null,
    description: null,
    requirements: null,
  };
}
