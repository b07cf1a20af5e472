/**
 * Remotive's public API (https://github.com/remotive-com/remote-jobs-api):
 * `GET /api/remote-jobs?search&limit`, open (no key), every job remote. It does not page: one
 * answer carries every match (`limit` caps it; `job-count` is the length of `jobs`), so a run is
 * one request. Remotive blocks more than two requests a minute and asks for at most four a day:
 * give such a site an interval of six hours or more. There is no location parameter; a location
 * other than "remote" keeps the jobs whose `candidate_required_location` names it or is
 * "Worldwide"/"Anywhere". `search` is a partial, case-insensitive match of title and description.
 * Its terms ask that listings link back to the Remotive URL (the posting's `url`) and name Remotive.
 */
import { z } from 'zod';
import type {
  AtsMappedPosting,
  ListedPosting,
  ListingResult,
  ListOptions,
  SiteAdapter,
  SourceContext,
} from '../types.js';
import { baseUrlSchema, fetchVendorJson, joinUrl, maxPostingsSchema } from './ats-http.js';
import { ListingBudget } from './ats-listing.js';
import {
  emptyPosting,
  employmentTypeFromText,
  lenient,
  locationFromText,
  mapped,
  postedDate,
  salaryFromText,
  text,
  titleSchema,
} from './ats-mapping.js';
import { resolveSearch, savedSearchShape } from './search-api.js';

export const REMOTIVE_API = 'https://remotive.com';

export const remotiveConfig = z
  .object({
    ...savedSearchShape,
    /** A Remotive category slug (`software-dev`), to narrow the search. */
    category: z
      .string()
      .regex(/^[a-z0-9-]{1,100}$/, { message: 'must be a category slug (a-z, 0-9, "-")' })
      .optional(),
    /** The API's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.default(REMOTIVE_API),
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type RemotiveConfig = z.output<typeof remotiveConfig>;

const VENDOR = 'Remotive';

const jobsResponse = z.looseObject({
  'job-count': z.int().nonnegative(),
  jobs: z.array(
    z.looseObject({
      id: z.union([z.int().nonnegative(), z.string().trim().min(1).max(200)]),
      url: z.url({ protocol: /^https?$/ }),
    }),
  ),
});

const ANYWHERE = /\b(worldwide|anywhere)\b/i;

function keepsLocation(location: string | null, required: unknown): boolean {
  if (location === null || /^remote$/i.test(location)) return true;
  if (typeof required !== 'string') return false;
  return ANYWHERE.test(required) || required.toLowerCase().includes(location.toLowerCase());
}

async function list(
  config: RemotiveConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const { search, isSaved } = resolveSearch(config, options);
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  // Every Remotive job is remote: a search for on-site jobs matches none.
  if (search.isRemote === false) return { postings: [], complete: isSaved };
  const filtersLocation = search.location !== null && !/^remote$/i.test(search.location);
  const query = new URLSearchParams();
  if (search.searchTerm !== null) query.set('search', search.searchTerm);
  if (config.category) query.set('category', config.category);
  // The cap goes to the API only when nothing is filtered here afterwards.
  const sentLimit = filtersLocation || !Number.isFinite(budget.limit) ? null : budget.limit;
  if (sentLimit !== null) query.set('limit', String(sentLimit));
  const suffix = query.size > 0 ? `?${query.toString()}` : '';
  const { data, json } = await fetchVendorJson(
    context,
    {
      vendor: VENDOR,
      url: joinUrl(config.baseUrl, `/api/remote-jobs${suffix}`),
      notFound: 'board',
      signal: options.signal,
    },
    jobsResponse,
  );
  const raw = (json as { jobs: Record<string, unknown>[] }).jobs;
  data.jobs.forEach((job, index) => {
    const payload = raw[index]!;
    if (!keepsLocation(search.location, payload.candidate_required_location)) return;
    budget.add(String(job.id), { externalId: String(job.id), url: job.url, payload });
  });
  // A full answer to a capped request may have left matches out.
  const capped = sentLimit !== null && data.jobs.length >= sentLimit;
  return { postings: budget.items, complete: isSaved && !capped && !budget.truncated };
}

const remotiveJob = z.looseObject({
  title: titleSchema,
  company_name: lenient(z.string()),
  job_type: lenient(z.string()),
  publication_date: lenient(z.string()),
  candidate_required_location: lenient(z.string()),
  salary: lenient(z.string()),
  description: lenient(z.string()),
});

/** "2026-11-30T09:00:00" names no zone; Remotive's dates are UTC. */
function publicationDate(value: string | null | undefined): string | null {
  const raw = text(value);
  if (raw === null) return null;
  return postedDate(/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(raw) ? `${raw}Z` : raw);
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = remotiveJob.safeParse(payload);
  if (!parsed.success) return null;
  const job = parsed.data;
  // "freelance" is a contractor; the rest (full_time, part_time, contract, internship) read as such.
  const jobType = job.job_type === 'freelance' ? 'contract' : job.job_type;
  return mapped({
    ...emptyPosting(),
    title: job.title,
    company: text(job.company_name),
    // Where the candidate must live ("Worldwide", "USA Only"): the only place Remotive names.
    ...locationFromText(job.candidate_required_location),
    isRemote: true,
    employmentType: employmentTypeFromText(jobType),
    // Free text, "usually a yearly salary range, in USD" (Remotive's docs): a bare "$" is USD.
    ...salaryFromText(job.salary, 'US'),
    datePosted: publicationDate(job.publication_date),
    description: text(job.description),
  });
}

/** A saved search on Remotive, a remote-only job board, through its public API. */
export const remotiveAdapter: SiteAdapter<typeof remotiveConfig> = {
  kind: 'remotive',
  description:
    'A saved job search on Remotive (remotive.com), a remote-only board, read through its public API (no key; at most a few requests a day).',
  configSchema: remotiveConfig,
  searches: true,
  list,
  mapPosting,
};
