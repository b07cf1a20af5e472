/**
 * A fixture Remotive public API (https://github.com/remotive-com/remote-jobs-api):
 * `GET /api/remote-jobs?search&limit&category&company_name`, open (no key), every job remote.
 * There is no paging: one answer carries every match, `limit` caps it, and `job-count` is the
 * length of `jobs`. `search` keeps jobs whose title or description contains the phrase (the API's
 * `ilike`); a `limit` that is not a positive integer answers 400. Remotive blocks callers above
 * two requests a minute: inject that with `fail({ status: 429, retryAfter })`.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import { emptyExpected, escapeHtml } from '../ats/content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsServer,
} from '../ats/server.js';
import { generateSearchJobs, isoDate, matchesPhrase, type SearchJob } from './catalogue.js';

export interface FixtureRemotiveOptions extends Omit<
  AtsFixtureOptions,
  'postings' | 'seed' | 'companyName'
> {
  /** Jobs in the catalogue (the remote half are listed). Default 240. */
  jobs?: number;
}

export interface FixtureRemotiveJob {
  externalId: string;
  url: string;
  payload: Record<string, unknown>;
  expected: ExpectedPostingFields;
  job: SearchJob;
}

export interface FixtureRemotive extends FixtureAtsServer {
  jobs(): FixtureRemotiveJob[];
  matching(search: { search?: string }): FixtureRemotiveJob[];
}

const JOB_TYPES: Record<SearchJob['employment'], string> = {
  FULL_TIME: 'full_time',
  PART_TIME: 'part_time',
  CONTRACTOR: 'contract',
  INTERN: 'internship',
  TEMPORARY: 'freelance',
};

function build(job: SearchJob, origin: string): FixtureRemotiveJob {
  const id = 1_900_000 + job.index;
  const slug = job.title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  const url = `${origin}/remote-jobs/software-dev/${slug}-${id}`;
  const description = `<p>${escapeHtml(job.description)}</p>`;
  const region = job.place === null ? 'Worldwide' : 'USA Only';
  const payload: Record<string, unknown> = {
    id,
    url,
    title: job.title,
    company_name: job.company,
    company_logo: `${origin}/job/${id}/logo`,
    category: 'Software Development',
    tags: ['python', 'remote'],
    job_type: JOB_TYPES[job.employment],
    publication_date: isoDate(job.publishedAt).slice(0, 19),
    candidate_required_location: region,
    salary:
      job.salary === null
        ? ''
        : `$${job.salary.min.toLocaleString('en-US')} - $${job.salary.max.toLocaleString('en-US')} per year`,
    description,
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: job.title,
    company: job.company,
    location: region,
    isRemote: true,
    employmentType: job.employment === 'TEMPORARY' ? 'CONTRACTOR' : job.employment,
    salaryMin: job.salary?.min ?? null,
    salaryMax: job.salary?.max ?? null,
    salaryCurrency: job.salary === null ? null : 'USD',
    salaryPeriod: job.salary === null ? null : 'year',
    datePosted: isoDate(job.publishedAt),
    description,
  };
  return { externalId: String(id), url, payload, expected, job };
}

export async function createFixtureRemotive(
  options: FixtureRemotiveOptions = {},
): Promise<FixtureRemotive> {
  const count = countOption('jobs', options.jobs, 240);
  const catalogue = generateSearchJobs(count).filter((job) => job.isRemote);
  let jobs: FixtureRemotiveJob[] = [];
  const matching: FixtureRemotive['matching'] = (search) =>
    jobs.filter(({ job }) => !search.search || matchesPhrase(job, search.search));

  const server = await startAtsServer(options, (origin) => {
    jobs = catalogue.map((job) => build(job, origin));
    return ({ path, query }) => {
      if (path !== '/api/remote-jobs') return { status: 404, body: '<h1>Not Found</h1>' };
      const limitText = query.get('limit');
      const limit = limitText === null ? Infinity : Number(limitText);
      if (limitText !== null && (!/^\d+$/.test(limitText) || limit < 1))
        return { status: 400, body: { error: 'limit must be a positive integer' } };
      const found = matching({ search: query.get('search') ?? '' })
        .filter(({ payload }) => {
          const company = query.get('company_name');
          return (
            !company || String(payload.company_name).toLowerCase().includes(company.toLowerCase())
          );
        })
        .slice(0, limit);
      return {
        status: 200,
        body: {
          '0-legal-notice':
            'Remotive API Legal Notice: link back to the Remotive job URL and mention Remotive as the source.',
          'job-count': found.length,
          jobs: found.map((entry) => entry.payload),
        },
      };
    };
  });
  return { ...server, jobs: () => jobs, matching };
}
