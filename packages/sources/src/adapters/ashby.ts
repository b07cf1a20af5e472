/**
 * Ashby public job posting API (https://developers.ashbyhq.com/docs/public-job-posting-api):
 * the whole board in one request, `GET /posting-api/job-board/{name}?includeCompensation=true`.
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
import {
  baseUrlSchema,
  boardIdentifier,
  fetchVendorJson,
  joinUrl,
  maxPostingsSchema,
} from './ats-http.js';
import { ListingBudget } from './ats-listing.js';
import {
  currencyCode,
  emptyPosting,
  employmentTypeFromText,
  lenient,
  locationFromParts,
  locationFromText,
  mapped,
  postedDate,
  remoteFromLocationText,
  salaryPeriodFromText,
  text,
  titleSchema,
} from './ats-mapping.js';

export const ASHBY_API = 'https://api.ashbyhq.com';

export const ashbyConfig = z
  .object({
    /** The job board name: `acme` in jobs.ashbyhq.com/acme. */
    jobBoardName: boardIdentifier,
    /** The posting API's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.default(ASHBY_API),
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type AshbyConfig = z.output<typeof ashbyConfig>;

const VENDOR = 'Ashby';

const jobBoardResponse = z.looseObject({
  jobs: z.array(
    z.looseObject({
      id: z.string().trim().min(1).max(200),
      jobUrl: z.url({ protocol: /^https?$/ }),
      isListed: lenient(z.boolean()),
    }),
  ),
});

async function list(
  config: AshbyConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const url = joinUrl(
    config.baseUrl,
    `/posting-api/job-board/${encodeURIComponent(config.jobBoardName)}?includeCompensation=true`,
  );
  const { data, json } = await fetchVendorJson(
    context,
    { vendor: VENDOR, url, notFound: 'board', signal: options.signal },
    jobBoardResponse,
  );
  const rawJobs = (json as { jobs: unknown[] }).jobs;
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  data.jobs.forEach((job, index) => {
    // The public board should only carry listed jobs; an unlisted one is not for us to publish.
    if (job.isListed === false) return;
    budget.add(job.id, { externalId: job.id, url: job.jobUrl, payload: rawJobs[index] });
  });
  return { postings: budget.items, complete: !budget.truncated };
}

const compensationComponent = z.looseObject({
  compensationType: lenient(z.string()),
  interval: lenient(z.string()),
  currencyCode: lenient(z.string()),
  minValue: lenient(z.number()),
  maxValue: lenient(z.number()),
});

type CompensationComponent = z.output<typeof compensationComponent>;

const postalAddress = z.looseObject({
  addressLocality: lenient(z.string()),
  addressRegion: lenient(z.string()),
  addressCountry: lenient(z.string()),
});

const ashbyPosting = z.looseObject({
  title: titleSchema,
  location: lenient(z.string()),
  isRemote: lenient(z.boolean()),
  workplaceType: lenient(z.string()),
  employmentType: lenient(z.string()),
  publishedAt: lenient(z.string()),
  descriptionHtml: lenient(z.string()),
  address: lenient(z.looseObject({ postalAddress: lenient(postalAddress) })),
  compensation: lenient(
    z.looseObject({
      compensationTiers: lenient(
        z.array(z.looseObject({ components: lenient(z.array(compensationComponent)) })),
      ),
      summaryComponents: lenient(z.array(compensationComponent)),
    }),
  ),
});

type AshbyPosting = z.output<typeof ashbyPosting>;

const isSalary = (component: CompensationComponent): boolean =>
  component.compensationType === 'Salary' &&
  (component.minValue != null || component.maxValue != null);

/**
 * The salary component of the summary (the range across all tiers, what the board shows), or
 * else of the first tier that has one. Equity and bonus components are not salary.
 */
function salaryComponent(posting: AshbyPosting): CompensationComponent | undefined {
  const compensation = posting.compensation;
  return (
    compensation?.summaryComponents?.find(isSalary) ??
    compensation?.compensationTiers?.flatMap((tier) => tier.components ?? []).find(isSalary)
  );
}

function isRemote(posting: AshbyPosting, location: string | null): boolean | null {
  if (typeof posting.isRemote === 'boolean') return posting.isRemote;
  switch (text(posting.workplaceType)?.toLowerCase()) {
    case 'remote':
      return true;
    case 'onsite':
    case 'hybrid':
      return false;
    default:
      return remoteFromLocationText(location);
  }
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = ashbyPosting.safeParse(payload);
  if (!parsed.success) return null;
  const posting = parsed.data;
  const address = posting.address?.postalAddress;
  const structured = locationFromParts(
    address?.addressLocality,
    address?.addressRegion,
    address?.addressCountry,
  );
  const location = structured.location !== null ? structured : locationFromText(posting.location);
  const salary = salaryComponent(posting);
  return mapped({
    ...emptyPosting(),
    title: posting.title,
    // The posting API does not name the company.
    ...location,
    isRemote: isRemote(posting, location.location),
    // FullTime, PartTime, Intern, Contract, Temporary
    employmentType: employmentTypeFromText(posting.employmentType),
    salaryMin: salary?.minValue ?? null,
    salaryMax: salary?.maxValue ?? null,
    salaryCurrency: currencyCode(salary?.currencyCode),
    salaryPeriod: salaryPeriodFromText(salary?.interval), // '1 YEAR', '1 HOUR', …
    datePosted: postedDate(posting.publishedAt),
    description: text(posting.descriptionHtml),
  });
}

/** An Ashby job board, read through the public job posting API. */
export const ashbyAdapter: SiteAdapter<typeof ashbyConfig> = {
  kind: 'ashby',
  description:
    'An Ashby job board (jobs.ashbyhq.com), listed through its public job posting API with compensation.',
  configSchema: ashbyConfig,
  list,
  mapPosting,
};
