/**
 * A fixture Ashby public job posting API: `GET /posting-api/job-board/{name}?includeCompensation=true`
 * answers `{ apiVersion, jobs }`; compensation appears only when asked for. Every twelfth job is
 * unlisted (`isListed: false`), which an adapter must leave out.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  createRandom,
  emptyExpected,
  fromDescription,
  fullDescriptionHtml,
  generateAtsPostings,
  mixSeed,
  plainText,
  uuid,
  type AtsEmployment,
  type AtsPostingSpec,
} from './content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

export interface FixtureAshbyOptions extends AtsFixtureOptions {
  /** Default 'acme'. */
  jobBoardName?: string;
}

export interface FixtureAshby extends FixtureAtsServer {
  jobBoardName: string;
  /** The board's listed jobs, in listing order (unlisted ones are served but not here). */
  postings(): FixtureAtsPosting[];
  /** Ids of the jobs served with `isListed: false`. */
  unlistedIds(): string[];
  /** While set, the board answers 404. */
  setMissing(missing: boolean): void;
}

const EMPLOYMENT_TYPES: Record<AtsEmployment, string> = {
  FULL_TIME: 'FullTime',
  PART_TIME: 'PartTime',
  INTERN: 'Intern',
  CONTRACTOR: 'Contract',
  TEMPORARY: 'Temporary',
};
const WORKPLACE_TYPES = {
  remote: 'Remote',
  hybrid: 'Hybrid',
  'on-site': 'OnSite',
  unspecified: null,
} as const;
const INTERVALS = { year: '1 YEAR', month: '1 MONTH', hour: '1 HOUR' } as const;
const STEP = { year: 5000, month: 200, hour: 2 } as const;

interface Built {
  posting: FixtureAtsPosting;
  listed: boolean;
}

function compensationFor(
  spec: AtsPostingSpec,
  seed: number,
): { compensation: Record<string, unknown>; salary: { min: number; max: number } | null } {
  const salary = spec.salary;
  if (salary === null) {
    return {
      compensation: {
        compensationTierSummary: null,
        scrapeableCompensationSalarySummary: null,
        compensationTiers: [],
        summaryComponents: [],
      },
      salary: null,
    };
  }
  const random = createRandom(mixSeed(seed, spec.index + 0xa5b));
  const component = (min: number, max: number) => ({
    id: uuid(random),
    summary: `${salary.currency} ${min} – ${max}`,
    compensationType: 'Salary',
    interval: INTERVALS[salary.period],
    currencyCode: salary.currency,
    minValue: min,
    maxValue: max,
  });
  const equity = {
    id: uuid(random),
    summary: '0.05% – 0.1%',
    compensationType: 'EquityPercentage',
    interval: 'NONE',
    currencyCode: null,
    minValue: 0.05,
    maxValue: 0.1,
  };
  const withEquity = spec.index % 2 === 0;
  // Some jobs have a second, lower tier (another pay zone); the summary spans both.
  const twoTiers = spec.index % 3 === 0;
  // Some answers leave the summary empty; the first tier's salary then stands.
  const noSummary = spec.index % 5 === 1;
  const tierA = component(salary.min, salary.max);
  const tierB = component(salary.min - STEP[salary.period], salary.max - STEP[salary.period]);
  const tiers = [
    {
      id: uuid(random),
      tierSummary: tierA.summary,
      title: 'Zone A',
      additionalInformation: null,
      components: withEquity ? [equity, tierA] : [tierA],
    },
    ...(twoTiers
      ? [
          {
            id: uuid(random),
            tierSummary: tierB.summary,
            title: 'Zone B',
            additionalInformation: null,
            components: withEquity ? [equity, tierB] : [tierB],
          },
        ]
      : []),
  ];
  const summary = twoTiers
    ? component(tierB.minValue, tierA.maxValue)
    : component(salary.min, salary.max);
  const summaryComponents = noSummary ? [] : withEquity ? [equity, summary] : [summary];
  return {
    compensation: {
      compensationTierSummary: summary.summary,
      scrapeableCompensationSalarySummary: summary.summary,
      compensationTiers: tiers,
      summaryComponents,
    },
    salary: noSummary
      ? { min: tierA.minValue, max: tierA.maxValue }
      : { min: summary.minValue, max: summary.maxValue },
  };
}

function build(spec: AtsPostingSpec, origin: string, board: string, seed: number): Built {
  const id = uuid(createRandom(mixSeed(seed, spec.index + 0xa5b7)));
  const jobUrl = `${origin}/${board}/${id}`;
  const place = spec.place;
  const descriptionHtml = fullDescriptionHtml(spec);
  const { compensation, salary } = compensationFor(spec, seed);
  const listed = spec.index % 12 !== 11;
  const job: Record<string, unknown> = {
    id,
    title: spec.title,
    department: spec.department,
    team: spec.team,
    ...(spec.employment === null ? {} : { employmentType: EMPLOYMENT_TYPES[spec.employment] }),
    location: place?.city ?? 'Remote',
    secondaryLocations: [],
    publishedAt: new Date(spec.publishedAt).toISOString().replace('Z', '+00:00'),
    isListed: listed,
    isRemote: spec.workplace === 'remote',
    workplaceType: WORKPLACE_TYPES[spec.workplace],
    address:
      place === null
        ? null
        : {
            postalAddress: {
              addressLocality: place.city,
              ...(place.region === null ? {} : { addressRegion: place.region }),
              addressCountry: place.countryName,
            },
          },
    jobUrl,
    applyUrl: `${jobUrl}/application`,
    descriptionHtml,
    descriptionPlain: plainText(descriptionHtml),
    shouldDisplayCompensationOnJobPostings: salary !== null,
    compensation,
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    location:
      place === null
        ? 'Remote'
        : [place.city, place.region, place.countryName].filter((part) => part !== null).join(', '),
    locationCity: place?.city ?? null,
    locationRegion: place?.region ?? null,
    locationCountry: place?.countryName ?? null,
    isRemote: spec.workplace === 'remote',
    employmentType: spec.employment,
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary === null ? null : spec.salary!.currency,
    salaryPeriod: salary === null ? null : spec.salary!.period,
    datePosted: new Date(spec.publishedAt).toISOString(),
    description: descriptionHtml,
    // Ashby has no requirements field: the description's requirements section.
    requirements: fromDescription(spec).requirements,
  };
  return { posting: { externalId: id, url: jobUrl, payload: job, expected, spec }, listed };
}

export async function createFixtureAshby(options: FixtureAshbyOptions = {}): Promise<FixtureAshby> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const jobBoardName = options.jobBoardName ?? 'acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let all: Built[] = [];
  let missing = false;

  const server = await startAtsServer(options, (origin) => {
    all = specs.map((spec) => build(spec, origin, jobBoardName, seed));
    return ({ path, query }) => {
      if (missing || path !== `/posting-api/job-board/${jobBoardName}`) {
        return { status: 404, body: { success: false, errors: ['Job board not found'] } };
      }
      const withCompensation = query.get('includeCompensation') === 'true';
      const jobs = all.map(({ posting }) => {
        if (withCompensation) return posting.payload;
        const { compensation: _compensation, ...rest } = posting.payload;
        return rest;
      });
      return { status: 200, body: { apiVersion: '1', jobs } };
    };
  });

  return {
    ...server,
    jobBoardName,
    postings: () => all.filter((entry) => entry.listed).map((entry) => entry.posting),
    unlistedIds: () =>
      all.filter((entry) => !entry.listed).map((entry) => entry.posting.externalId),
    setMissing: (value) => {
      missing = value;
    },
  };
}
