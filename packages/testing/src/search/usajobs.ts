/**
 * A fixture USAJOBS Search API (https://developer.usajobs.gov/api-reference/get-api-search):
 * `GET /api/Search?Keyword&LocationName&RemoteIndicator&ResultsPerPage&Page` with the headers the
 * API requires: `Host`, `User-Agent` (the e-mail the key was issued to) and `Authorization-Key`.
 * A missing or wrong key or e-mail answers 401 with an empty body. Query names are matched
 * without regard to case and unknown ones are ignored (an ASP.NET API); `ResultsPerPage` above
 * 500 or a `Page` below 1 answer 400, and no query reads past 10,000 results. `Keyword` keeps jobs
 * with every word in the title or summary, `LocationName` those whose place names every word,
 * `RemoteIndicator=True` remote jobs.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import { emptyExpected } from '../ats/content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsServer,
} from '../ats/server.js';
import {
  generateSearchJobs,
  isoDate,
  matchesAllWords,
  matchesLocation,
  type SearchJob,
} from './catalogue.js';

export const USAJOBS_MAX_RESULTS_PER_PAGE = 500;
export const USAJOBS_RESULT_CAP = 10_000;

export interface FixtureUsaJobsOptions extends Omit<
  AtsFixtureOptions,
  'postings' | 'seed' | 'companyName'
> {
  /** Jobs in the catalogue. Default 240. */
  jobs?: number;
  /** The key and the e-mail it was issued to. Default `test-key` / `jobs@example.test`. */
  apiKey?: string;
  userAgent?: string;
}

export interface FixtureUsaJobsJob {
  externalId: string;
  url: string;
  /** The `SearchResultItems` entry as the API lists it. */
  payload: Record<string, unknown>;
  expected: ExpectedPostingFields;
  job: SearchJob;
}

export interface FixtureUsaJobs extends FixtureAtsServer {
  apiKey: string;
  userAgent: string;
  jobs(): FixtureUsaJobsJob[];
  matching(search: { keyword?: string; location?: string; remote?: boolean }): FixtureUsaJobsJob[];
  /** The `Host`, `User-Agent` and `Authorization-Key` of each search request, oldest first. */
  keyHeaders(): {
    host: string | undefined;
    userAgent: string | undefined;
    authorizationKey: string | undefined;
  }[];
}

const SCHEDULES: Record<SearchJob['employment'], { name: string; expected: string }> = {
  FULL_TIME: { name: 'Full-time', expected: 'FULL_TIME' },
  PART_TIME: { name: 'Part-time', expected: 'PART_TIME' },
  CONTRACTOR: { name: 'Intermittent', expected: 'INTERMITTENT' },
  INTERN: { name: 'Full-time', expected: 'FULL_TIME' },
  TEMPORARY: { name: 'Part-time', expected: 'PART_TIME' },
};

function build(job: SearchJob, origin: string): FixtureUsaJobsJob {
  const id = String(800_000_000 + job.index * 13);
  const url = `${origin}/job/${id}`;
  const display =
    job.place === null
      ? 'Anywhere in the U.S. (remote job)'
      : `${job.place.city}, ${job.place.region}`;
  const schedule = SCHEDULES[job.employment];
  const qualifications = `Applicants must have one year of specialized experience as a ${job.title}.`;
  const published = isoDate(job.publishedAt).slice(0, 19);
  const payload: Record<string, unknown> = {
    MatchedObjectId: id,
    MatchedObjectDescriptor: {
      PositionID: `NW-27-${1000 + job.index}`,
      PositionTitle: job.title,
      PositionURI: url,
      ApplyURI: [`${origin}/job/${id}/apply`],
      PositionLocationDisplay: display,
      PositionLocation: [
        {
          LocationName: display,
          CountryCode: 'United States',
          CountrySubDivisionCode: job.place?.region ?? '',
          CityName: display,
          Longitude: -97.74,
          Latitude: 30.27,
        },
      ],
      OrganizationName: job.company,
      DepartmentName: 'Department of Fixtures',
      JobCategory: [{ Name: 'Information Technology Management', Code: '2210' }],
      JobGrade: [{ Code: 'GS' }],
      PositionSchedule: [{ Name: schedule.name, Code: '1' }],
      PositionOfferingType: [{ Name: 'Permanent', Code: '15317' }],
      QualificationSummary: qualifications,
      PositionRemuneration: [
        job.salary === null
          ? {
              MinimumRange: '0.0',
              MaximumRange: '0.0',
              RateIntervalCode: 'WC',
              Description: 'Without Compensation',
            }
          : {
              MinimumRange: `${job.salary.min}.0`,
              MaximumRange: `${job.salary.max}.0`,
              RateIntervalCode: 'PA',
              Description: 'Per Year',
            },
      ],
      PositionStartDate: `${published}.0000`,
      PositionEndDate: '2027-01-31T23:59:59.9970',
      PublicationStartDate: `${published}.0000`,
      ApplicationCloseDate: '2027-01-31T23:59:59.9970',
      PositionFormattedDescription: [
        { Label: 'Dynamic Teaser', LabelDescription: 'Hit highlighting' },
      ],
      UserArea: {
        Details: {
          JobSummary: job.description,
          WhoMayApply: { Name: 'United States Citizens', Code: '' },
          LowGrade: '11',
          HighGrade: '12',
          TeleworkEligible: job.isRemote,
          RemoteIndicator: job.isRemote,
        },
        IsRadialSearch: false,
      },
    },
    RelevanceRank: 0,
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: job.title,
    company: job.company,
    location: display,
    locationCountry: 'United States',
    isRemote: job.isRemote,
    employmentType: schedule.expected,
    salaryMin: job.salary?.min ?? null,
    salaryMax: job.salary?.max ?? null,
    salaryCurrency: job.salary === null ? null : 'USD',
    salaryPeriod: job.salary === null ? null : 'year',
    datePosted: published.slice(0, 10),
    description: job.description,
    requirements: qualifications,
  };
  return { externalId: id, url, payload, expected, job };
}

export async function createFixtureUsaJobs(
  options: FixtureUsaJobsOptions = {},
): Promise<FixtureUsaJobs> {
  const count = countOption('jobs', options.jobs, 240);
  const apiKey = options.apiKey ?? 'test-key';
  const userAgent = options.userAgent ?? 'jobs@example.test';
  const catalogue = generateSearchJobs(count);
  const headerLog: ReturnType<FixtureUsaJobs['keyHeaders']> = [];
  let jobs: FixtureUsaJobsJob[] = [];
  const matching: FixtureUsaJobs['matching'] = (search) =>
    jobs.filter(
      ({ job }) =>
        (!search.keyword || matchesAllWords(job, search.keyword)) &&
        (!search.location || matchesLocation(job, search.location)) &&
        (!search.remote || job.isRemote),
    );

  const server = await startAtsServer(options, (origin) => {
    jobs = catalogue.map((job) => build(job, origin));
    return ({ path, query, headers }) => {
      if (path.toLowerCase() !== '/api/search')
        return {
          status: 404,
          body: { Message: 'No HTTP resource was found that matches the request URI.' },
        };
      const header = (name: string) => {
        const value = headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      headerLog.push({
        host: header('host'),
        userAgent: header('user-agent'),
        authorizationKey: header('authorization-key'),
      });
      if (
        !header('host') ||
        header('authorization-key') !== apiKey ||
        header('user-agent') !== userAgent
      )
        return { status: 401, body: '', contentType: 'text/plain' };
      const params = new Map([...query].map(([name, value]) => [name.toLowerCase(), value]));
      const perPage = Number(params.get('resultsperpage') ?? '250');
      const page = Number(params.get('page') ?? '1');
      if (!Number.isSafeInteger(perPage) || perPage < 1 || perPage > USAJOBS_MAX_RESULTS_PER_PAGE)
        return {
          status: 400,
          body: {
            Message: `ResultsPerPage must be between 1 and ${USAJOBS_MAX_RESULTS_PER_PAGE}.`,
          },
        };
      if (!Number.isSafeInteger(page) || page < 1)
        return { status: 400, body: { Message: 'Page must be a positive integer.' } };
      const remote = params.get('remoteindicator');
      if (remote !== undefined && !/^(true|false)$/i.test(remote))
        return { status: 400, body: { Message: 'RemoteIndicator must be True or False.' } };
      const found = matching({
        keyword: params.get('keyword'),
        location: params.get('locationname'),
        remote: remote?.toLowerCase() === 'true',
      });
      const start = (page - 1) * perPage;
      const end = Math.min(page * perPage, USAJOBS_RESULT_CAP);
      const items = start >= end ? [] : found.slice(start, end).map((entry) => entry.payload);
      return {
        status: 200,
        body: {
          LanguageCode: 'EN',
          SearchParameters: {},
          SearchResult: {
            SearchResultCount: items.length,
            SearchResultCountAll: found.length,
            SearchResultItems: items,
            UserArea: {
              NumberOfPages: String(Math.ceil(found.length / perPage)),
              IsRadialSearch: false,
            },
          },
        },
      };
    };
  });
  return {
    ...server,
    apiKey,
    userAgent,
    jobs: () => jobs,
    matching,
    keyHeaders: () => [...headerLog],
  };
}
