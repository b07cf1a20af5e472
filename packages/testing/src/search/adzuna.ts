/**
 * A fixture Adzuna job search API (https://developer.adzuna.com/docs/search):
 * `GET /v1/api/jobs/{country}/search/{page}?app_id&app_key&results_per_page&what&where`. The key
 * pair travels in the query string; a missing or wrong one answers 401 with Adzuna's exception
 * body (`AUTH_FAIL`). Pages count from 1, `results_per_page` is at most 50, and an unknown query
 * parameter answers 400 (`BAD_REQUEST`), as the API does. `what` keeps jobs with every word in
 * the title or description, `where` those whose place names every word ("remote": remote jobs).
 * Adzuna has no remote filter.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import { emptyExpected } from '../ats/content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type AtsReply,
  type FixtureAtsServer,
} from '../ats/server.js';
import {
  generateSearchJobs,
  isoDate,
  matchesAllWords,
  matchesLocation,
  placeText,
  type SearchJob,
} from './catalogue.js';

export const ADZUNA_COUNTRIES = [
  'at',
  'au',
  'be',
  'br',
  'ca',
  'ch',
  'de',
  'es',
  'fr',
  'gb',
  'in',
  'it',
  'mx',
  'nl',
  'nz',
  'pl',
  'sg',
  'us',
  'za',
] as const;

const KNOWN_PARAMETERS = new Set([
  'app_id',
  'app_key',
  'results_per_page',
  'what',
  'what_and',
  'what_phrase',
  'what_or',
  'what_exclude',
  'title_only',
  'where',
  'distance',
  'location0',
  'location1',
  'location2',
  'max_days_old',
  'category',
  'sort_dir',
  'sort_by',
  'salary_min',
  'salary_max',
  'salary_include_unknown',
  'full_time',
  'part_time',
  'contract',
  'permanent',
  'company',
  'content-type',
]);

export const ADZUNA_MAX_RESULTS_PER_PAGE = 50;

export interface FixtureAdzunaOptions extends Omit<
  AtsFixtureOptions,
  'postings' | 'seed' | 'companyName'
> {
  /** Jobs in the catalogue. Default 240. */
  jobs?: number;
  /** The key pair the API accepts. Default `test-app` / `test-key`. */
  appId?: string;
  appKey?: string;
}

export interface FixtureAdzunaJob {
  externalId: string;
  url: string;
  /** The result as the API lists it. */
  payload: Record<string, unknown>;
  expected: ExpectedPostingFields;
  job: SearchJob;
}

export interface FixtureAdzuna extends FixtureAtsServer {
  appId: string;
  appKey: string;
  /** Every job of the catalogue, newest first (the API's order here). */
  jobs(): FixtureAdzunaJob[];
  /** The jobs a search matches, in the order the API pages them. */
  matching(search: { what?: string; where?: string }): FixtureAdzunaJob[];
}

function exception(status: number, name: string, display: string): AtsReply {
  return {
    status,
    body: {
      __CLASS__: 'Adzuna::API::Response::Exception',
      exception: name,
      display,
      doc: 'https://api.adzuna.com/v1/doc',
    },
  };
}

function build(job: SearchJob, origin: string): FixtureAdzunaJob {
  const id = String(4_300_000_000 + job.index * 7);
  // Every fifth salary is Adzuna's estimate (`salary_is_predicted: "1"`), not the employer's.
  const predicted = job.salary !== null && job.index % 5 === 0;
  const contract: Record<string, string> =
    job.employment === 'FULL_TIME'
      ? { contract_time: 'full_time', contract_type: 'permanent' }
      : job.employment === 'PART_TIME'
        ? { contract_time: 'part_time' }
        : job.employment === 'CONTRACTOR'
          ? { contract_type: 'contract' }
          : {};
  const url = `${origin}/land/ad/${id}?se=fixture&v=1`;
  const payload: Record<string, unknown> = {
    __CLASS__: 'Adzuna::API::Response::Job',
    id,
    adref: `eyJhbGciOiJIUzI1NiJ9.${id}`,
    title: job.title,
    description: job.description,
    created: isoDate(job.publishedAt).replace('.000Z', 'Z'),
    redirect_url: url,
    company: { __CLASS__: 'Adzuna::API::Response::Company', display_name: job.company },
    location: {
      __CLASS__: 'Adzuna::API::Response::Location',
      display_name: placeText(job),
      area: job.place === null ? ['US'] : ['US', job.place.region, job.place.city],
    },
    category: { __CLASS__: 'Adzuna::API::Response::Category', tag: 'it-jobs', label: 'IT Jobs' },
    ...(job.salary === null
      ? {}
      : {
          salary_min: job.salary.min,
          salary_max: job.salary.max,
          salary_is_predicted: predicted ? '1' : '0',
        }),
    ...contract,
  };
  const stated = job.salary !== null && !predicted;
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: job.title,
    company: job.company,
    location: placeText(job),
    isRemote: job.isRemote,
    employmentType: job.employment === 'INTERN' ? null : job.employment,
    salaryMin: stated ? job.salary!.min : null,
    salaryMax: stated ? job.salary!.max : null,
    salaryPeriod: stated ? 'year' : null,
    datePosted: isoDate(job.publishedAt),
    description: job.description,
  };
  return { externalId: id, url, payload, expected, job };
}

export async function createFixtureAdzuna(
  options: FixtureAdzunaOptions = {},
): Promise<FixtureAdzuna> {
  const count = countOption('jobs', options.jobs, 240);
  const appId = options.appId ?? 'test-app';
  const appKey = options.appKey ?? 'test-key';
  const catalogue = generateSearchJobs(count);
  let jobs: FixtureAdzunaJob[] = [];
  const matching = (search: { what?: string; where?: string }) =>
    jobs.filter(
      ({ job }) =>
        (!search.what || matchesAllWords(job, search.what)) &&
        (!search.where || matchesLocation(job, search.where)),
    );

  const server = await startAtsServer(options, (origin) => {
    jobs = catalogue.map((job) => build(job, origin));
    return ({ path, query }) => {
      const route = /^\/v1\/api\/jobs\/([a-z]{2})\/search\/([^/]+)$/.exec(path);
      if (!route) return exception(404, 'NOT_FOUND', 'No such endpoint');
      if (query.get('app_id') !== appId || query.get('app_key') !== appKey)
        return exception(401, 'AUTH_FAIL', 'Authorisation failed');
      if (!(ADZUNA_COUNTRIES as readonly string[]).includes(route[1]!))
        return exception(400, 'BAD_REQUEST', `Unsupported country: ${route[1]}`);
      for (const name of query.keys())
        if (!KNOWN_PARAMETERS.has(name))
          return exception(400, 'BAD_REQUEST', `Unknown parameter: ${name}`);
      const page = Number(route[2]);
      const perPage = Number(query.get('results_per_page') ?? '10');
      if (!Number.isSafeInteger(page) || page < 1)
        return exception(400, 'BAD_REQUEST', 'page must be a positive integer');
      if (!Number.isSafeInteger(perPage) || perPage < 1 || perPage > ADZUNA_MAX_RESULTS_PER_PAGE)
        return exception(
          400,
          'BAD_REQUEST',
          `results_per_page must be between 1 and ${ADZUNA_MAX_RESULTS_PER_PAGE}`,
        );
      const found = matching({ what: query.get('what') ?? '', where: query.get('where') ?? '' });
      const salaries = found.flatMap(({ job }) => (job.salary ? [job.salary.min] : []));
      return {
        status: 200,
        body: {
          __CLASS__: 'Adzuna::API::Response::JobSearchResults',
          count: found.length,
          mean: salaries.length ? salaries.reduce((a, b) => a + b, 0) / salaries.length : 0,
          results: found.slice((page - 1) * perPage, page * perPage).map((entry) => entry.payload),
        },
      };
    };
  });
  return { ...server, appId, appKey, jobs: () => jobs, matching };
}
