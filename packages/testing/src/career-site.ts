/**
 * A fixture company career site on loopback: robots.txt, a sitemap, paginated listing pages and
 * posting pages that embed a schema.org JobPosting as JSON-LD, like most career sites built on an
 * ATS. Content is generated deterministically from a seed, and each posting carries the record
 * an extractor should produce from it (`expected`), computed from the generated data by the
 * mapping rules documented in @gleaner/extraction, never by running the extractor.
 *
 * Pages are rendered once into Buffers (and again on `update`) so that the server costs almost
 * nothing per request: the benchmark that uses this site measures Gleaner, not the fixture.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { chance, createRandom, integer, mixSeed, pick, pickSome, type Random } from './random.js';
import { listenOrigin } from './listen.js';

export interface FixtureSiteOptions {
  /** Number of postings published at start. Default 50. */
  postings?: number;
  /** Approximate size in bytes of each posting page. Default 8000; the benchmark uses 30000. */
  pageBytes?: number;
  /** Seed of the content generator; the same seed gives the same postings. Default 1. */
  seed?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** Links per listing page. Default 25. */
  listingPageSize?: number;
  /** The hiring company of every posting; by default one picked from the seed. */
  companyName?: string;
  /**
   * Posting ids (e.g. 'job-0007') whose page answers 302 to the given URL while the posting stays
   * listed: a posting that moved to another host, or a page that redirects somewhere hostile.
   */
  redirects?: Record<string, string>;
  /**
   * How long the site waits before answering a request, by its target (path and query), in ms:
   * a slow site, or with a delay longer than any timeout, one that never answers. Default 0.
   */
  responseDelayMs?: number | ((target: string) => number);
  /**
   * Requests answered `429 Too Many Requests` with `Retry-After: 1` instead of their page: called
   * with each request's target and how many requests for it arrived so far (1 for the first).
   */
  tooManyRequests?: (target: string, nth: number) => boolean;
  /**
   * Where each posting lives. 'path' (default): `/jobs/job-0007`. 'query': one page for every
   * posting, told apart by its query, `/careers/job?id=7`, as many career sites built in-house do.
   */
  postingPaths?: 'path' | 'query';
  /**
   * How the site points crawlers at its postings. `/sitemap.xml` (every posting) is served in each.
   * - 'robots' (default): robots.txt names `/sitemap.xml`.
   * - 'index': robots.txt names `/sitemaps/index.xml`, a sitemap index of a gzipped sitemap
   *   (`/sitemaps/postings-1.xml.gz`, served as `application/gzip` without Content-Encoding) with the
   *   first half of the postings, a plain one with the rest (`/sitemaps/postings-2.xml`), one of
   *   pages that are not postings (`/sitemaps/pages.xml`) and the index itself (a loop).
   * - 'unlisted': robots.txt names no sitemap; only the conventional `/sitemap.xml` finds them.
   */
  sitemaps?: 'robots' | 'index' | 'unlisted';
  /**
   * Every posting page is one unclosed tag repeated to `bytes` (`'<meta '` by default), sent
   * gzip-compressed to a client that accepts it (4 MB of `<meta ` is 12 KB gzipped, under any
   * body cap): a page on which a tag scanner quadratic in unclosed tags takes minutes. The
   * postings stay listed; their `expected` records do not apply, as the pages hold none.
   */
  hostilePages?: { bytes: number; tag?: string };
}

/** The record an extractor should produce for a posting page (same shape as ExtractedPosting). */
export type ExpectedPostingFields = {
  title: string | null;
  company: string | null;
  location: string | null;
  locationCity: string | null;
  locationRegion: string | null;
  locationCountry: string | null;
  isRemote: boolean | null;
  employmentType: string | null;
  salaryMin: number | null;
  salaryMax: number | null;
  salaryCurrency: string | null;
  salaryPeriod: string | null;
  datePosted: string | null;
  description: string | null;
  requirements: string | null;
};

/** A published posting. Treat as read-only: `update` replaces it with a new object. */
export interface FixturePosting {
  /** e.g. 'job-0001' */
  id: string;
  /** Path and query, e.g. '/jobs/job-0001' (or '/careers/job?id=1' with `postingPaths: 'query'`) */
  path: string;
  url: string;
  /** The JobPosting node embedded in the page. */
  jsonLd: Record<string, unknown>;
  expected: ExpectedPostingFields;
}

export interface FixtureCareerSite {
  /** Origin, e.g. http://127.0.0.1:40123 */
  url: string;
  sitemapUrl: string;
  listingUrl: string;
  /** Currently published postings, in id order. */
  postings(): FixturePosting[];
  /** A currently published posting. */
  get(id: string): FixturePosting | undefined;
  /** Unpublishes: gone from the sitemap and listings, the page answers 404. Already removed ids are ignored. */
  remove(ids: string[]): void;
  /** Changes the page (new ETag, later Last-Modified) and its expected record. */
  update(id: string, patch: { title?: string; description?: string }): FixturePosting;
  /** Requests received whose target (path and query) starts with `pathPrefix`; all when omitted. */
  requestCount(pathPrefix?: string): number;
  /** When the last request whose target starts with `pathPrefix` arrived (epoch ms), if any. */
  lastRequestAt(pathPrefix?: string): number | undefined;
  resetRequestCount(): void;
  /** Stops listening and closes connections; safe to call more than once. */
  close(): Promise<void>;
}

export async function createFixtureCareerSite(
  options: FixtureSiteOptions = {},
): Promise<FixtureCareerSite> {
  const settings = resolveOptions(options);
  const requestCounts = new Map<string, number>();
  const lastRequests = new Map<string, number>();
  const delays = new Set<NodeJS.Timeout>();

  const server = createServer();
  // Pages embed absolute URLs, so content is built once the port is known. The handler is
  // attached in the same tick, before any request can have been read.
  const origin = await listenOrigin(server, settings.port, settings.host);
  const catalog = createCatalog(origin, settings);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const target = request.url ?? '/';
    const nth = (requestCounts.get(target) ?? 0) + 1;
    requestCounts.set(target, nth);
    lastRequests.set(target, Date.now());
    if (options.tooManyRequests?.(target, nth)) {
      response.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' });
      response.end('slow down');
      return;
    }
    const delayMs =
      typeof options.responseDelayMs === 'function'
        ? options.responseDelayMs(target)
        : (options.responseDelayMs ?? 0);
    if (delayMs <= 0) return handleRequest(catalog, request, response, target);
    const timer = setTimeout(() => {
      delays.delete(timer);
      if (!response.destroyed) handleRequest(catalog, request, response, target);
    }, delayMs);
    delays.add(timer);
  });

  let closing: Promise<void> | undefined;
  return {
    url: origin,
    sitemapUrl: `${origin}/sitemap.xml`,
    listingUrl: `${origin}/jobs`,
    postings: () => catalog.published().map((record) => record.posting),
    get: (id) => catalog.publishedById(id)?.posting,
    remove: (ids) => catalog.remove(ids),
    update: (id, patch) => catalog.update(id, patch).posting,
    requestCount: (pathPrefix) => {
      let total = 0;
      for (const [target, count] of requestCounts) {
        if (pathPrefix === undefined || target.startsWith(pathPrefix)) total += count;
      }
      return total;
    },
    lastRequestAt: (pathPrefix) => {
      let last: number | undefined;
      for (const [target, at] of lastRequests) {
        if (pathPrefix === undefined || target.startsWith(pathPrefix))
          last = Math.max(last ?? at, at);
      }
      return last;
    },
    resetRequestCount: () => {
      requestCounts.clear();
      lastRequests.clear();
    },
    close: () => {
      for (const timer of delays) clearTimeout(timer);
      delays.clear();
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        // Keep-alive connections would hold close() open for keepAliveTimeout (5 s); every
        // response is written in one piece, so there is nothing in flight worth waiting for.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Options

interface Settings {
  postings: number;
  pageBytes: number;
  seed: number;
  host: string;
  port: number;
  listingPageSize: number;
  companyName: string;
  redirects: ReadonlyMap<string, string>;
  postingPaths: 'path' | 'query';
  sitemaps: 'robots' | 'index' | 'unlisted';
  hostilePages: { bytes: number; tag: string } | null;
}

function resolveOptions(options: FixtureSiteOptions): Settings {
  const seed = options.seed ?? 1;
  const settings: Settings = {
    postings: options.postings ?? 50,
    pageBytes: options.pageBytes ?? 8000,
    seed,
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    listingPageSize: options.listingPageSize ?? 25,
    companyName: options.companyName ?? pick(createRandom(mixSeed(seed, 0x5eed)), COMPANIES),
    redirects: new Map(Object.entries(options.redirects ?? {})),
    postingPaths: options.postingPaths ?? 'path',
    sitemaps: options.sitemaps ?? 'robots',
    hostilePages: options.hostilePages
      ? { bytes: options.hostilePages.bytes, tag: options.hostilePages.tag ?? '<meta ' }
      : null,
  };
  requireInteger('postings', settings.postings, 0);
  requireInteger('pageBytes', settings.pageBytes, 0);
  requireInteger('seed', settings.seed, Number.MIN_SAFE_INTEGER);
  requireInteger('port', settings.port, 0);
  requireInteger('listingPageSize', settings.listingPageSize, 1);
  if (settings.hostilePages) {
    requireInteger('hostilePages.bytes', settings.hostilePages.bytes, 1);
    if (settings.hostilePages.tag === '')
      throw new RangeError('Fixture career site: hostilePages.tag must not be empty');
  }
  return settings;
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`Fixture career site: ${name} must be an integer >= ${min}, got ${value}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Content pools

const COMPANIES = [
  'Northwind Analytics',
  'Lumen Freight',
  'Brightwell Health',
  'Copperleaf Energy',
  'Tessellate Labs',
] as const;

const SENIORITIES = ['', '', '', 'Senior ', 'Senior ', 'Staff ', 'Principal ', 'Junior ', 'Lead '];

interface Role {
  name: string;
  area: string;
  skills: readonly string[];
}

/** name | area of work | skills */
const ROLES: readonly Role[] = [
  'Backend Engineer | backend services | Go, PostgreSQL, Kafka, gRPC',
  'Frontend Engineer | web applications | TypeScript, React, CSS, accessibility',
  'Full-Stack Developer | product features | TypeScript, Node.js, React, SQL',
  'Data Engineer | data pipelines | Python, Spark, Airflow, dbt',
  'Data Scientist | forecasting models | Python, statistics, SQL, experimentation',
  'Machine Learning Engineer | model serving | PyTorch, Python, Kubernetes, MLOps',
  'Site Reliability Engineer | production infrastructure | Kubernetes, Terraform, Prometheus, Linux',
  'Security Engineer | application security | threat modelling, OWASP, cloud IAM, Go',
  'Mobile Engineer (iOS) | our iOS app | Swift, SwiftUI, Xcode, CI for mobile',
  'QA Engineer | test automation | Playwright, TypeScript, test design, CI',
  'Product Manager | the product roadmap | discovery, analytics, roadmapping, SQL',
  'Product Designer | user experience | Figma, prototyping, user research, design systems',
  'Technical Writer | developer documentation | docs-as-code, Markdown, APIs, editing',
  'Account Executive | mid-market sales | SaaS sales, Salesforce, negotiation, forecasting',
  'Sales & Partnerships Manager | channel partnerships | partner programmes, CRM, contracts, negotiation',
  'Customer Success Manager | enterprise accounts | onboarding, renewals, Gainsight, communication',
  'Support Engineer | customer support | troubleshooting, SQL, APIs, Zendesk',
  'Financial Analyst | planning & analysis | Excel, financial modelling, SQL, reporting',
  'Recruiter | technical hiring | sourcing, Greenhouse, interviewing, employer branding',
  'Marketing Manager | growth marketing | SEO, lifecycle email, analytics, copywriting',
].map((line) => {
  const [name = '', area = '', skills = ''] = line.split(' | ');
  return { name, area, skills: skills.split(', ') };
});

const TEAMS = [
  'Payments',
  'Platform',
  'Growth',
  'Search',
  'Logistics',
  'Identity',
  'Billing',
  'Insights',
];

interface Place {
  city: string;
  region: string | null;
  country: string;
  postalCode: string;
  street: string;
}

/** city | region (may be empty) | country | postal code | street */
const PLACES: readonly Place[] = [
  'San Francisco | CA | US | 94105 | 201 Mission St',
  'New York | NY | US | 10011 | 85 Tenth Ave',
  'Austin | TX | US | 78701 | 500 W 2nd St',
  'Seattle | WA | US | 98109 | 1100 Dexter Ave N',
  'Chicago | IL | US | 60607 | 1000 W Fulton Market',
  'Boston | MA | US | 02210 | 1 Seaport Ln',
  'London | England | GB | EC2A 4NE | 1 Finsbury Ave',
  'Manchester | England | GB | M1 3LA | 3 Piccadilly Pl',
  'Edinburgh | Scotland | GB | EH3 9QG | 20 Lothian Rd',
  'Berlin | Berlin | DE | 10115 | Invalidenstraße 65',
  'München | Bayern | DE | 80331 | Sendlinger Str. 7',
  'Amsterdam | Noord-Holland | NL | 1017 CE | Herengracht 500',
  'Paris | Île-de-France | FR | 75002 | 12 Rue du Mail',
  'Dublin |  | IE | D02 X285 | 1 Grand Canal Sq',
  'Barcelona | Cataluña | ES | 08018 | Carrer de Pere IV 29',
  'Lisbon |  | PT | 1200-109 | Rua do Alecrim 26',
].map((line) => {
  const [city = '', region = '', country = '', postalCode = '', street = ''] = line.split(' | ');
  return { city, region: region === '' ? null : region, country, postalCode, street };
});

const CURRENCY_BY_COUNTRY: Record<string, string> = { US: 'USD', GB: 'GBP' }; // others: EUR

const RESPONSIBILITIES = [
  'Design, build and operate {area} used by thousands of customers every day',
  'Work closely with product, design and engineering to ship improvements to {area} every week',
  'Own problems end to end, from the first sketch to measuring the outcome in production',
  'Break large, ambiguous projects into small steps and deliver them incrementally',
  'Review the work of your peers and help raise the bar for quality across the {team} team',
  'Write clear proposals and decision records so that others can build on your work',
  'Mentor newer colleagues and share what you learn in internal talks',
  'Take part in a fair, well-paid on-call rotation with a strong blameless culture',
  'Talk to customers regularly to understand how they use {area}',
  'Improve the tooling, processes and documentation that the {team} team relies on',
  'Measure what matters and use data to decide what to build next',
  'Keep {area} secure, reliable and fast as we grow into new markets',
];

const BENEFITS = [
  'Competitive salary and meaningful equity',
  'Private health, dental and vision insurance for you and your dependants',
  '30 days of paid holiday plus public holidays',
  'Learning &amp; development budget of 2,000 per year',
  'Flexible working hours and a remote-friendly culture',
  'Sixteen weeks of fully paid parental leave',
  'A home-office allowance and the equipment of your choice',
  'Company retreats twice a year',
  'Pension or 401(k) matching',
  'Mental health support through a confidential counselling service',
];

const ABOUT_SENTENCES = [
  '{company} helps organisations make better decisions with their data.',
  'We are a team of about 400 people across Europe and North America.',
  'Our customers include hospitals, retailers, logistics companies and public bodies.',
  'We have been profitable since 2021 and grow sustainably.',
  'We value clear writing, kind feedback and shipping small things often.',
  'Diverse teams build better products, and we are committed to an inclusive workplace.',
  'We welcome applications from people of every background, identity and experience.',
  'You will join a team that cares deeply about craft and about each other.',
];

const EXPERIENCE_PHRASES = [
  '{years}+ years of professional experience as a {role}',
  'Hands-on experience with {skill1} and {skill2}',
  'Strong working knowledge of {skill3}',
  'Familiarity with {skill4} is a plus',
  'Excellent written and spoken English',
  'A track record of shipping work that customers love',
  'Comfort with ambiguity and a bias for action',
];

// ---------------------------------------------------------------------------------------------
// Generated postings

type SalaryShape = 'range' | 'single' | 'number' | 'numeric-strings' | 'no-unit';

interface SalarySpec {
  shape: SalaryShape;
  /** As written in the page (sometimes lower-case, as some ATSs emit it). */
  currency: string;
  min: number;
  max: number;
  unit: 'YEAR' | 'HOUR';
}

type RequirementsSpec =
  | { property: 'qualifications' | 'experienceRequirements' | 'skills'; value: string }
  | { property: 'qualifications'; value: string[] };

type ScriptTagStyle = 'plain' | 'single-quoted-extra' | 'unquoted' | 'id-nonce' | 'upper-case';

/** Everything the page, its JSON-LD and its expected record are derived from. */
interface PostingSpec {
  index: number;
  id: string;
  title: string;
  /** Whitespace around the JSON-LD title, as sloppy templates produce; the record trims it. */
  titlePadding: string;
  company: string;
  places: Place[];
  countryAsObject: boolean;
  /** How TELECOMMUTE is written, or null for on-site postings. */
  remote: 'string' | 'array' | null;
  remoteCountry: string;
  employmentType: string | string[];
  salary: SalarySpec | null;
  datePosted: string;
  validThrough: string;
  description: string;
  requirements: RequirementsSpec | null;
  /** Adds an OccupationalExperienceRequirements that has no text, only monthsOfExperience. */
  hasMonthsOfExperience: boolean;
  typeAsArray: boolean;
  scriptStyle: ScriptTagStyle;
  inGraph: boolean;
  hasBreadcrumbBlock: boolean;
  prettyJson: boolean;
  escapeSlashes: boolean;
  /** Seed of the page filler, kept so that a re-render after `update` keeps the same chrome. */
  fillerSeed: number;
  initialLastModified: number;
}

const BASE_DATE = Date.UTC(2026, 10, 1); // 2026-11-01, fixed so content never depends on today
const DAY_MS = 86_400_000;

function generatePosting(index: number, settings: Settings): PostingSpec {
  const random = createRandom(mixSeed(settings.seed, index));
  const id = `job-${String(index + 1).padStart(4, '0')}`;
  const role = pick(random, ROLES);
  const team = chance(random, 0.35) ? pick(random, TEAMS) : null;
  // U+2013 (en dash) puts multi-byte UTF-8 into titles, as real sites do.
  const title = `${pick(random, SENIORITIES)}${role.name}${team === null ? '' : ` \u2013 ${team}`}`;

  const remote = chance(random, 0.25) ? (chance(random, 0.7) ? 'string' : 'array') : null;
  // Half the remote postings still name an office (the legal entity's); the others name none.
  const hasPlace = remote === null || chance(random, 0.5);
  const places: Place[] = [];
  if (hasPlace) {
    places.push(pick(random, PLACES));
    if (chance(random, 0.15)) places.push(pick(random, PLACES));
  }
  const homeCountry = places[0]?.country ?? 'US';

  const employmentType = pickEmploymentType(random);
  const firstType = Array.isArray(employmentType)
    ? (employmentType[0] ?? 'FULL_TIME')
    : employmentType;
  const salary = chance(random, 0.8) ? generateSalary(random, homeCountry, firstType) : null;

  const postedAt = BASE_DATE - integer(random, 0, 90) * DAY_MS;
  const datePosted = new Date(postedAt).toISOString().slice(0, 10);
  const validThrough = `${new Date(postedAt + 60 * DAY_MS).toISOString().slice(0, 10)}T23:59:59Z`;

  const skills = pickSome(random, role.skills, 4);
  const descriptionBytes = Math.max(400, Math.floor((settings.pageBytes - 4500) * 0.4));
  // A stream of its own: the description's length follows pageBytes, and the fields drawn after
  // it must not change with the page size.
  const descriptionRandom = createRandom(mixSeed(settings.seed, index + 0x20000));
  const description = generateDescription(
    descriptionRandom,
    settings.companyName,
    role,
    team,
    skills,
    descriptionBytes,
  );

  return {
    index,
    id,
    title,
    titlePadding: chance(random, 0.08) ? ' \n ' : '',
    company: settings.companyName,
    places,
    countryAsObject: chance(random, 0.2),
    remote,
    remoteCountry: homeCountry,
    employmentType,
    salary,
    datePosted,
    validThrough,
    description,
    requirements: generateRequirements(random, role, skills),
    hasMonthsOfExperience: chance(random, 0.2),
    typeAsArray: chance(random, 0.1),
    scriptStyle: pick(random, [
      'plain',
      'plain',
      'plain',
      'single-quoted-extra',
      'unquoted',
      'id-nonce',
      'upper-case',
    ] as const),
    inGraph: chance(random, 0.2),
    hasBreadcrumbBlock: chance(random, 0.3),
    prettyJson: chance(random, 0.3),
    escapeSlashes: chance(random, 0.25),
    fillerSeed: mixSeed(settings.seed, index + 0x10000),
    initialLastModified: postedAt + integer(random, 8 * 3600, 18 * 3600) * 1000,
  };
}

function pickEmploymentType(random: Random): string | string[] {
  const roll = random.next();
  if (roll < 0.6) return 'FULL_TIME';
  if (roll < 0.7) return 'PART_TIME';
  if (roll < 0.8) return 'CONTRACTOR';
  if (roll < 0.85) return 'INTERN';
  if (roll < 0.9) return 'TEMPORARY';
  if (roll < 0.95) return ['FULL_TIME', 'CONTRACTOR'];
  return ['PART_TIME'];
}

function generateSalary(random: Random, country: string, employmentType: string): SalarySpec {
  const currency = CURRENCY_BY_COUNTRY[country] ?? 'EUR';
  const hourly = employmentType !== 'FULL_TIME';
  const shape = pick(random, [
    'range',
    'range',
    'range',
    'single',
    'number',
    'numeric-strings',
    'no-unit',
  ] as const);
  let min: number;
  let max: number;
  if (hourly) {
    min = integer(random, 50, 240) / 2; // 25.0 to 120.0 in half units: some decimals
    max = min + integer(random, 0, 20);
  } else {
    min = integer(random, 45, 180) * 1000;
    max = min + integer(random, 10, 40) * 1000;
  }
  if (shape === 'single' || shape === 'number') max = min;
  return {
    shape,
    currency: chance(random, 0.12) ? currency.toLowerCase() : currency,
    min,
    max,
    unit: hourly ? 'HOUR' : 'YEAR',
  };
}

function generateRequirements(
  random: Random,
  role: Role,
  skills: string[],
): RequirementsSpec | null {
  const lines = pickSome(random, EXPERIENCE_PHRASES, integer(random, 3, 5)).map((phrase) =>
    phrase
      .replace('{years}', String(integer(random, 2, 8)))
      .replace('{role}', role.name)
      .replace('{skill1}', skills[0] ?? 'SQL')
      .replace('{skill2}', skills[1] ?? 'Git')
      .replace('{skill3}', skills[2] ?? 'Linux')
      .replace('{skill4}', skills[3] ?? 'Docker'),
  );
  const roll = random.next();
  if (roll < 0.4) {
    // Some sites wrap the text in line breaks; the record holds it trimmed.
    const padding = chance(random, 0.25) ? '\n  ' : '';
    return { property: 'qualifications', value: `${padding}${lines.join('; ')}.${padding}` };
  }
  if (roll < 0.7) return { property: 'qualifications', value: lines };
  if (roll < 0.8)
    return { property: 'experienceRequirements', value: lines[0] ?? 'Relevant experience' };
  if (roll < 0.85) return { property: 'skills', value: skills.join(', ') };
  return null;
}

function generateDescription(
  random: Random,
  company: string,
  role: Role,
  team: string | null,
  skills: string[],
  targetBytes: number,
): string {
  const fill = (text: string): string =>
    text
      .replaceAll('{company}', company)
      .replaceAll('{area}', role.area)
      .replaceAll('{team}', team ?? role.area);
  const about = (): string =>
    `<p>${pickSome(random, ABOUT_SENTENCES, integer(random, 2, 4))
      .map(fill)
      .join(' ')}</p>`;
  const list = (items: string[]): string =>
    `<ul>${items.map((item) => `<li>${item}</li>`).join('')}</ul>`;

  const parts = [
    about(),
    `<p>As a ${role.name} at ${company}, you will work on ${role.area}${team === null ? '' : ` with the ${team} team`}. We use ${skills.join(', ')} and pick new tools when they earn their place.</p>`,
    `<h3>What you'll do</h3>`,
    list(pickSome(random, RESPONSIBILITIES, integer(random, 4, 6)).map(fill)),
    `<h3>What we offer</h3>`,
    list(pickSome(random, BENEFITS, integer(random, 4, 7))),
  ];
  let size = parts.reduce((total, part) => total + Buffer.byteLength(part), 0);
  // Long descriptions are the norm on career sites; they are what makes JSON-LD a large share
  // of a posting page.
  while (size < targetBytes) {
    const part =
      random.next() < 0.6
        ? about()
        : `<h3>${pick(random, ['How we work', 'Your first months', 'Our team'])}</h3>${list(
            pickSome(random, RESPONSIBILITIES, integer(random, 3, 5)).map(fill),
          )}`;
    parts.push(part);
    size += Buffer.byteLength(part);
  }
  return parts.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Where postings live

/** A posting's path and query on the site. */
function postingPathOf(id: string, style: Settings['postingPaths']): string {
  return style === 'query' ? `/careers/job?id=${Number(id.slice('job-'.length))}` : `/jobs/${id}`;
}

/** The posting id a request target names, if it names one (the posting may not exist). */
function postingIdOf(path: string, query: string, style: Settings['postingPaths']): string | null {
  if (style === 'query') {
    if (path !== '/careers/job') return null;
    const id = new URLSearchParams(query).get('id') ?? '';
    return /^[1-9]\d{0,5}$/.test(id) ? `job-${id.padStart(4, '0')}` : null;
  }
  return path.startsWith('/jobs/') ? decodeURIComponentSafe(path.slice('/jobs/'.length)) : null;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

// ---------------------------------------------------------------------------------------------
// JSON-LD and the expected record

function buildJsonLd(spec: PostingSpec, origin: string, url: string): Record<string, unknown> {
  const node: Record<string, unknown> = {};
  if (!spec.inGraph) node['@context'] = 'https://schema.org';
  node['@type'] = spec.typeAsArray ? ['JobPosting'] : 'JobPosting';
  node.title = `${spec.titlePadding}${spec.title}${spec.titlePadding}`;
  node.description = spec.description;
  node.identifier = { '@type': 'PropertyValue', name: spec.company, value: spec.id };
  node.datePosted = spec.datePosted;
  node.validThrough = spec.validThrough;
  node.employmentType = spec.employmentType;
  node.hiringOrganization = {
    '@type': 'Organization',
    name: spec.company,
    sameAs: origin,
    logo: `${origin}/static/logo.png`,
  };
  if (spec.places.length > 0) {
    const places = spec.places.map((place) => ({
      '@type': 'Place',
      address: {
        '@type': 'PostalAddress',
        streetAddress: place.street,
        addressLocality: place.city,
        ...(place.region === null ? {} : { addressRegion: place.region }),
        postalCode: place.postalCode,
        addressCountry: spec.countryAsObject
          ? { '@type': 'Country', name: place.country }
          : place.country,
      },
    }));
    node.jobLocation = places.length === 1 ? places[0] : places;
  }
  if (spec.remote !== null) {
    node.jobLocationType = spec.remote === 'array' ? ['TELECOMMUTE'] : 'TELECOMMUTE';
    node.applicantLocationRequirements = { '@type': 'Country', name: spec.remoteCountry };
  }
  if (spec.salary !== null) node.baseSalary = buildBaseSalary(spec.salary);
  if (spec.requirements !== null) node[spec.requirements.property] = spec.requirements.value;
  if (
    spec.hasMonthsOfExperience &&
    (spec.requirements === null || spec.requirements.property === 'qualifications')
  ) {
    // Structured experience without text, as Google's guidelines suggest. Only next to
    // qualifications (which the record reads first) or alone (nothing readable: null), so the
    // record does not depend on whether a textless property stops the search.
    node.experienceRequirements = {
      '@type': 'OccupationalExperienceRequirements',
      monthsOfExperience: 12 * (1 + (spec.index % 5)),
    };
  }
  node.directApply = true;
  node.url = url;
  return node;
}

function buildBaseSalary(salary: SalarySpec): Record<string, unknown> {
  const amount: Record<string, unknown> = { '@type': 'MonetaryAmount', currency: salary.currency };
  switch (salary.shape) {
    case 'range':
      amount.value = {
        '@type': 'QuantitativeValue',
        minValue: salary.min,
        maxValue: salary.max,
        unitText: salary.unit,
      };
      break;
    case 'single':
      amount.value = { '@type': 'QuantitativeValue', value: salary.min, unitText: salary.unit };
      break;
    case 'number':
      amount.value = salary.min;
      amount.unitText = salary.unit;
      break;
    case 'numeric-strings':
      amount.value = {
        '@type': 'QuantitativeValue',
        minValue: String(salary.min),
        maxValue: String(salary.max),
        unitText: salary.unit,
      };
      break;
    case 'no-unit':
      amount.value = { '@type': 'QuantitativeValue', minValue: salary.min, maxValue: salary.max };
      break;
  }
  return amount;
}

/**
 * The record by @gleaner/extraction's mapping rules, read off the generated data: it says what
 * the page means, not what some extractor happened to produce.
 */
function buildExpected(spec: PostingSpec): ExpectedPostingFields {
  const place = spec.places[0] ?? null;
  const salary = spec.salary;
  return {
    title: spec.title,
    company: spec.company,
    location:
      place === null
        ? null
        : [place.city, place.region, place.country].filter((part) => part !== null).join(', '),
    locationCity: place?.city ?? null,
    locationRegion: place?.region ?? null,
    locationCountry: place?.country ?? null,
    isRemote: spec.remote !== null ? true : place !== null ? false : null,
    employmentType: (Array.isArray(spec.employmentType)
      ? spec.employmentType.join(', ')
      : spec.employmentType
    ).toUpperCase(),
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary?.currency.toUpperCase() ?? null,
    salaryPeriod: salary === null || salary.shape === 'no-unit' ? null : salary.unit.toLowerCase(),
    datePosted: spec.datePosted,
    description: spec.description.trim(),
    requirements:
      spec.requirements === null
        ? null
        : Array.isArray(spec.requirements.value)
          ? spec.requirements.value.join('\n')
          : spec.requirements.value.trim(),
  };
}

// ---------------------------------------------------------------------------------------------
// HTML

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const SCRIPT_OPEN_TAGS: Record<ScriptTagStyle, [open: string, close: string]> = {
  plain: ['<script type="application/ld+json">', '</script>'],
  'single-quoted-extra': ['<script type=\'application/ld+json\' data-rh="true">', '</script>'],
  unquoted: ['<script type=application/ld+json>', '</script>'],
  'id-nonce': [
    '<script id="job-posting-ld" type="application/ld+json" nonce="r4nd0mN0nce">',
    '</script>',
  ],
  'upper-case': ['<SCRIPT TYPE="application/ld+json">', '</SCRIPT>'],
};

function serializeJsonLd(value: unknown, spec: PostingSpec): string {
  const json = JSON.stringify(value, null, spec.prettyJson ? 2 : undefined);
  // "</script" inside the JSON would end the element early; escaping every "</" (valid JSON) is
  // what several frameworks do, so some pages do it.
  return spec.escapeSlashes
    ? json.replaceAll('</', '<\\/')
    : json.replace(/<\/(script)/gi, '<\\/$1');
}

function jsonLdScript(
  value: unknown,
  spec: PostingSpec,
  style: ScriptTagStyle = spec.scriptStyle,
): string {
  const [open, close] = SCRIPT_OPEN_TAGS[style];
  return `${open}${serializeJsonLd(value, spec)}${close}`;
}

const STYLE_SHEET = `<style>
:root{--ink:#1d2433;--muted:#5b6478;--accent:#2456d6;--line:#e3e6ee}
*{box-sizing:border-box}body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--ink)}
.site-header,.site-footer{padding:16px 32px;border-bottom:1px solid var(--line)}.site-footer{border-top:1px solid var(--line)}
.site-header nav a,.site-footer a{margin-right:16px;color:var(--muted);text-decoration:none}
main{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,1fr);gap:48px;max-width:1120px;margin:0 auto;padding:32px}
.job-title{font-size:2rem;margin:0 0 8px}.job-meta{display:flex;gap:16px;padding:0;list-style:none;color:var(--muted)}
.apply-button{display:inline-block;padding:12px 20px;background:var(--accent);color:#fff;border-radius:6px}
.similar-jobs .card{padding:12px 0;border-bottom:1px solid var(--line)}
</style>`;

function locationText(spec: PostingSpec): string {
  const place = spec.places[0];
  const office =
    place === undefined
      ? ''
      : [place.city, place.region, place.country].filter((part) => part !== null).join(', ');
  if (spec.remote === null) return office;
  return office === ''
    ? `Remote (${spec.remoteCountry})`
    : `Remote (${spec.remoteCountry}) or ${office}`;
}

function salaryText(salary: SalarySpec | null): string {
  if (salary === null) return 'Salary on request';
  const currency = salary.currency.toUpperCase();
  const per = salary.shape === 'no-unit' ? '' : ` per ${salary.unit.toLowerCase()}`;
  const amount = salary.min === salary.max ? `${salary.min}` : `${salary.min}\u2013${salary.max}`;
  return `${currency} ${amount}${per}`;
}

function renderPostingPage(
  spec: PostingSpec,
  jsonLd: Record<string, unknown>,
  origin: string,
  url: string,
  pageBytes: number,
): string {
  const title = escapeHtml(spec.title);
  const company = escapeHtml(spec.company);
  const plainDescription = spec.description
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

  const breadcrumb = {
    '@type': 'BreadcrumbList',
    itemListElement: [
      { '@type': 'ListItem', position: 1, name: 'Jobs', item: `${origin}/jobs` },
      { '@type': 'ListItem', position: 2, name: spec.title, item: url },
    ],
  };
  const structuredData = spec.inGraph
    ? {
        '@context': 'https://schema.org',
        '@graph': [{ '@type': 'WebPage', '@id': url, name: spec.title, breadcrumb }, jsonLd],
      }
    : jsonLd;

  const head = [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${title} \u2013 ${company} Careers</title>`,
    `<meta name="description" content="${escapeHtml(plainDescription.slice(0, 155))}">`,
    `<link rel="canonical" href="${url}">`,
    `<meta property="og:type" content="website"><meta property="og:title" content="${title}"><meta property="og:url" content="${url}">`,
    STYLE_SHEET,
    // An ordinary script before the structured data, as tag managers put there.
    "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());gtag('config','G-FIXTURE');</script>",
    '<script src="/static/app.js" defer></script>',
    spec.hasBreadcrumbBlock
      ? jsonLdScript({ '@context': 'https://schema.org', ...breadcrumb }, spec, 'plain')
      : '',
    jsonLdScript(structuredData, spec),
    '</head>',
  ].join('\n');

  const body = [
    '<body>',
    `<header class="site-header"><a class="logo" href="/jobs">${company} Careers</a><nav><a href="/jobs">All jobs</a><a href="#teams">Teams</a><a href="#benefits">Benefits</a><a href="#locations">Locations</a></nav></header>`,
    '<main id="main">',
    '<article class="job">',
    `<nav class="breadcrumbs"><a href="/jobs">Jobs</a> / <span>${title}</span></nav>`,
    `<h1 class="job-title">${title}</h1>`,
    `<p class="job-company">${company}</p>`,
    `<p class="job-location">${escapeHtml(locationText(spec))}</p>`,
    `<ul class="job-meta"><li>${escapeHtml(Array.isArray(spec.employmentType) ? spec.employmentType.join(', ') : spec.employmentType)}</li><li>Posted <time datetime="${spec.datePosted}">${spec.datePosted}</time></li><li>${escapeHtml(salaryText(spec.salary))}</li></ul>`,
    `<div class="job-description">\n${spec.description}\n</div>`,
    '<a class="apply-button" href="#apply" id="apply">Apply now</a>',
    '</article>',
  ].join('\n');

  const footer = [
    '</main>',
    `<footer class="site-footer"><p>&copy; 2026 ${company}</p><nav><a href="#privacy">Privacy</a><a href="#terms">Terms</a><a href="#accessibility">Accessibility</a><a href="#cookies">Cookie settings</a></nav></footer>`,
    `<script>window.__CAREERS__={"jobId":"${spec.id}","locale":"en"};</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');

  // Fill up to the requested size with "similar jobs" cards: markup a real page would carry
  // and a DOM parser has to get through.
  const fixedBytes = Buffer.byteLength(head) + Buffer.byteLength(body) + Buffer.byteLength(footer);
  const random = createRandom(spec.fillerSeed);
  const cards: string[] = [];
  let fillerBytes = 0;
  const fillerTarget = pageBytes - fixedBytes - 80; // 80: the aside's own tags
  while (fillerBytes < fillerTarget) {
    const place = pick(random, PLACES);
    const card = `<li class="card"><a class="similar-link" href="/jobs">${escapeHtml(
      `${pick(random, SENIORITIES)}${pick(random, ROLES).name}`,
    )}</a><span class="card-location">${escapeHtml(place.city)}, ${place.country}</span><span class="card-team">${pick(random, TEAMS)}</span></li>`;
    cards.push(card);
    fillerBytes += Buffer.byteLength(card) + 1;
  }
  const aside =
    cards.length === 0
      ? ''
      : `<aside class="similar-jobs"><h2>Similar jobs</h2><ul>\n${cards.join('\n')}\n</ul></aside>\n`;
  return `${head}\n${body}\n${aside}${footer}`;
}

function renderListingPage(
  company: string,
  links: readonly PostingRecord[],
  page: number,
  hasNext: boolean,
): string {
  const items = links
    .map(
      (record) =>
        `<li><a class="job-link" href="${escapeHtml(record.posting.path)}">${escapeHtml(record.spec.title)}</a> <span class="job-location">${escapeHtml(locationText(record.spec))}</span></li>`,
    )
    .join('\n');
  const companyHtml = escapeHtml(company);
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    `<head><meta charset="utf-8"><title>Jobs at ${companyHtml}${page > 1 ? ` \u2013 page ${page}` : ''}</title></head>`,
    '<body>',
    `<h1>Open positions at ${companyHtml}</h1>`,
    `<ul class="job-list">\n${items}\n</ul>`,
    `<nav class="pagination">${page > 1 ? `<a rel="prev" href="/jobs?page=${page - 1}">Previous</a> ` : ''}${hasNext ? `<a rel="next" href="/jobs?page=${page + 1}">Next</a>` : ''}</nav>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

function renderSitemap(records: readonly PostingRecord[]): string {
  const urls = records
    .map(
      (record) =>
        `<url><loc>${escapeXml(record.posting.url)}</loc><lastmod>${new Date(record.lastModified).toISOString()}</lastmod></url>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls}\n</urlset>\n`;
}

/** Pages a whole-site sitemap lists beside the postings (`sitemaps: 'index'`). */
const NON_POSTING_PAGES = ['/', '/about', '/jobs', '/blog/how-we-hire', '/careers'];

function renderPagesSitemap(origin: string): string {
  const urls = NON_POSTING_PAGES.map((path) => `<url><loc>${origin}${path}</loc></url>`).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls}\n</urlset>\n`;
}

function renderSitemapIndex(origin: string): string {
  const children = [
    `${origin}/sitemaps/postings-1.xml.gz`,
    `${origin}/sitemaps/postings-2.xml`,
    `${origin}/sitemaps/pages.xml`,
    // Indexes that list themselves exist; a crawler must not go round in circles.
    `${origin}/sitemaps/index.xml`,
  ]
    .map((loc) => `<sitemap><loc>${loc}</loc></sitemap>`)
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${children}\n</sitemapindex>\n`;
}

// ---------------------------------------------------------------------------------------------
// Catalog: published postings and their pre-rendered responses

interface PostingRecord {
  spec: PostingSpec;
  posting: FixturePosting;
  page: Buffer;
  /** The page gzip-compressed, for a client that accepts it (`hostilePages` only). */
  gzippedPage: Buffer | null;
  etag: string;
  lastModified: number;
  lastModifiedHeader: string;
}

interface Catalog {
  published(): readonly PostingRecord[];
  publishedById(id: string): PostingRecord | undefined;
  remove(ids: string[]): void;
  update(id: string, patch: { title?: string; description?: string }): PostingRecord;
  sitemap(): Buffer;
  /** Files under `/sitemaps/` (`sitemaps: 'index'`), by path; null when there is none. */
  sitemapFile(path: string): { contentType: string; body: Buffer } | null;
  /** Null when the page does not exist. */
  listingPage(page: number): Buffer | null;
  robots: Buffer;
  /** Where a posting's page redirects to instead of answering (`redirects` option). */
  redirectOf(id: string): string | undefined;
  /** The posting id a request names (`postingPaths`), or null when it names none. */
  postingIdOf(path: string, query: string): string | null;
}

function createRecord(
  spec: PostingSpec,
  origin: string,
  settings: Settings,
  lastModified: number,
): PostingRecord {
  const path = postingPathOf(spec.id, settings.postingPaths);
  const jsonLd = buildJsonLd(spec, origin, `${origin}${path}`);
  const { hostilePages } = settings;
  const page = hostilePages
    ? Buffer.from(
        hostilePages.tag.repeat(Math.ceil(hostilePages.bytes / hostilePages.tag.length)),
      ).subarray(0, hostilePages.bytes)
    : Buffer.from(renderPostingPage(spec, jsonLd, origin, `${origin}${path}`, settings.pageBytes));
  return {
    spec,
    posting: { id: spec.id, path, url: `${origin}${path}`, jsonLd, expected: buildExpected(spec) },
    page,
    gzippedPage: hostilePages ? gzipSync(page) : null,
    etag: `"${createHash('sha1').update(page).digest('base64url').slice(0, 20)}"`,
    lastModified,
    lastModifiedHeader: new Date(lastModified).toUTCString(),
  };
}

function createCatalog(origin: string, settings: Settings): Catalog {
  const all = new Map<string, PostingRecord>();
  for (let index = 0; index < settings.postings; index++) {
    const spec = generatePosting(index, settings);
    all.set(spec.id, createRecord(spec, origin, settings, spec.initialLastModified));
  }
  const removed = new Set<string>();
  let published: PostingRecord[] = [...all.values()];
  // Sitemap and listings change only on remove/update; cache them until then.
  let sitemapCache: Buffer | undefined;
  const listingCache = new Map<number, Buffer>();
  const sitemapFiles = new Map<string, { contentType: string; body: Buffer }>();
  const invalidate = (): void => {
    sitemapCache = undefined;
    listingCache.clear();
    sitemapFiles.clear();
  };
  const renderSitemapFile = (path: string): { contentType: string; body: Buffer } | null => {
    const xml = 'application/xml; charset=utf-8';
    const half = Math.ceil(published.length / 2);
    switch (path) {
      case '/sitemaps/index.xml':
        return { contentType: xml, body: Buffer.from(renderSitemapIndex(origin)) };
      case '/sitemaps/postings-1.xml.gz':
        return {
          contentType: 'application/gzip',
          body: gzipSync(renderSitemap(published.slice(0, half))),
        };
      case '/sitemaps/postings-2.xml':
        return { contentType: xml, body: Buffer.from(renderSitemap(published.slice(half))) };
      case '/sitemaps/pages.xml':
        return { contentType: xml, body: Buffer.from(renderPagesSitemap(origin)) };
      default:
        return null;
    }
  };
  const robotsSitemap = {
    robots: `Sitemap: ${origin}/sitemap.xml\n`,
    index: `Sitemap: ${origin}/sitemaps/index.xml\n`,
    unlisted: '',
  }[settings.sitemaps];
  const pageCount = (): number =>
    Math.max(1, Math.ceil(published.length / settings.listingPageSize));

  return {
    published: () => published,
    publishedById: (id) => (removed.has(id) ? undefined : all.get(id)),
    remove(ids) {
      // Check every id first so that a typo leaves the site unchanged.
      const unknown = ids.filter((id) => !all.has(id));
      if (unknown.length > 0)
        throw new Error(`Fixture career site has no posting ${unknown.join(', ')}`);
      for (const id of ids) removed.add(id);
      published = [...all.values()].filter((record) => !removed.has(record.spec.id));
      invalidate();
    },
    update(id, patch) {
      const current = all.get(id);
      if (current === undefined || removed.has(id)) {
        throw new Error(`Fixture career site has no published posting "${id}"`);
      }
      if (patch.title?.trim() === '' || patch.description?.trim() === '') {
        throw new RangeError(
          'Fixture career site: an updated title or description must not be blank',
        );
      }
      const spec: PostingSpec = {
        ...current.spec,
        title: patch.title?.trim() ?? current.spec.title,
        titlePadding: patch.title === undefined ? current.spec.titlePadding : '',
        description: patch.description ?? current.spec.description,
      };
      // HTTP dates have one-second resolution: step at least a second so that a conditional
      // request made before the update never matches after it.
      const lastModified = Math.max(
        Math.floor(Date.now() / 1000) * 1000,
        current.lastModified + 1000,
      );
      const record = createRecord(spec, origin, settings, lastModified);
      all.set(id, record);
      published = published.map((entry) => (entry.spec.id === id ? record : entry));
      invalidate();
      return record;
    },
    sitemap() {
      sitemapCache ??= Buffer.from(renderSitemap(published));
      return sitemapCache;
    },
    sitemapFile(path) {
      if (settings.sitemaps !== 'index') return null;
      let file = sitemapFiles.get(path) ?? null;
      if (file === null) {
        file = renderSitemapFile(path);
        if (file !== null) sitemapFiles.set(path, file);
      }
      return file;
    },
    listingPage(page) {
      if (page > pageCount()) return null;
      let cached = listingCache.get(page);
      if (cached === undefined) {
        const start = (page - 1) * settings.listingPageSize;
        const links = published.slice(start, start + settings.listingPageSize);
        cached = Buffer.from(
          renderListingPage(settings.companyName, links, page, page < pageCount()),
        );
        listingCache.set(page, cached);
      }
      return cached;
    },
    robots: Buffer.from(`User-agent: *\nAllow: /\n\n${robotsSitemap}`),
    redirectOf: (id) => settings.redirects.get(id),
    postingIdOf: (path, query) => postingIdOf(path, query, settings.postingPaths),
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP

const HTML = 'text/html; charset=utf-8';
const METHOD_NOT_ALLOWED = Buffer.from('Method Not Allowed\n');
const NOT_FOUND_PAGE = Buffer.from(
  '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Page not found</title></head><body><h1>Page not found</h1><p><a href="/jobs">See all open positions</a></p></body></html>\n',
);

function handleRequest(
  catalog: Catalog,
  request: IncomingMessage,
  response: ServerResponse,
  target: string,
): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    return send(request, response, 405, 'text/plain; charset=utf-8', METHOD_NOT_ALLOWED);
  }
  const queryStart = target.indexOf('?');
  const path = queryStart === -1 ? target : target.slice(0, queryStart);

  if (path === '/robots.txt')
    return send(request, response, 200, 'text/plain; charset=utf-8', catalog.robots);
  if (path === '/sitemap.xml')
    return send(request, response, 200, 'application/xml; charset=utf-8', catalog.sitemap());
  const sitemapFile = path.startsWith('/sitemaps/') ? catalog.sitemapFile(path) : null;
  if (sitemapFile !== null)
    return send(request, response, 200, sitemapFile.contentType, sitemapFile.body);
  if (path === '/jobs') {
    const pageParameter =
      new URLSearchParams(queryStart === -1 ? '' : target.slice(queryStart + 1)).get('page') ?? '1';
    const listing = /^[1-9]\d{0,5}$/.test(pageParameter)
      ? catalog.listingPage(Number(pageParameter))
      : null;
    return listing === null
      ? send(request, response, 404, HTML, NOT_FOUND_PAGE)
      : send(request, response, 200, HTML, listing);
  }
  const id = catalog.postingIdOf(path, queryStart === -1 ? '' : target.slice(queryStart + 1));
  if (id !== null) {
    const record = catalog.publishedById(id);
    if (record === undefined) return send(request, response, 404, HTML, NOT_FOUND_PAGE);
    const location = catalog.redirectOf(id);
    if (location !== undefined) {
      response.writeHead(302, { location });
      response.end();
      return;
    }
    response.setHeader('etag', record.etag);
    response.setHeader('last-modified', record.lastModifiedHeader);
    if (isNotModified(request, record)) {
      response.writeHead(304);
      response.end();
      return;
    }
    if (record.gzippedPage !== null && /\bgzip\b/.test(request.headers['accept-encoding'] ?? '')) {
      response.setHeader('content-encoding', 'gzip');
      return send(request, response, 200, HTML, record.gzippedPage);
    }
    return send(request, response, 200, HTML, record.page);
  }
  send(request, response, 404, HTML, NOT_FOUND_PAGE);
}

/** RFC 9110 §13.2.2: If-None-Match decides when present; If-Modified-Since only otherwise. */
function isNotModified(request: IncomingMessage, record: PostingRecord): boolean {
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    return ifNoneMatch
      .split(',')
      .map((tag) => tag.trim().replace(/^W\//, ''))
      .some((tag) => tag === '*' || tag === record.etag);
  }
  const ifModifiedSince = request.headers['if-modified-since'];
  if (ifModifiedSince === undefined) return false;
  const since = Date.parse(ifModifiedSince);
  return !Number.isNaN(since) && Math.floor(record.lastModified / 1000) * 1000 <= since;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // malformed escapes: look the raw text up, which simply finds nothing
  }
}

function send(
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  contentType: string,
  body: Buffer,
): void {
  response.writeHead(status, { 'content-type': contentType, 'content-length': body.length });
  response.end(request.method === 'HEAD' ? undefined : body);
}
