/**
 * Greenhouse job board API (https://developers.greenhouse.io/job-board.html): the whole board in
 * one request, `GET /v1/boards/{token}/jobs?content=true`.
 *
 * Pay ranges are only on the single-job endpoint (`?pay_transparency=true`), one request per
 * job. They are opt-in (`payRanges: true`): the listing alone is one request for every other
 * field, while N detail calls made inside the scrape job bypass the per-site politeness gate
 * that crawl jobs go through, and one failed call among N fails the whole listing. Turn it on
 * for boards known to publish pay (US pay-transparency states); calls are made one at a time.
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
  fetchDetails,
  joinUrl,
  maxPostingsSchema,
  type VendorResponse,
} from './ats-http.js';
import { ListingBudget } from './ats-listing.js';
import {
  amount,
  currencyCode,
  decodeHtmlEntities,
  emptyPosting,
  employmentTypeFromText,
  lenient,
  locationFromText,
  mapped,
  postedDate,
  remoteFromLocationText,
  salaryPeriodFromText,
  text,
  titleSchema,
} from './ats-mapping.js';
import { AtsRequestError, atsErrorCodes } from './ats-request-error.js';

export const GREENHOUSE_API = 'https://boards-api.greenhouse.io';

export const greenhouseConfig = z
  .object({
    /** The board token: `acme` in boards.greenhouse.io/acme. */
    boardToken: boardIdentifier,
    /** The job board API's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.default(GREENHOUSE_API),
    /** Also call the single-job endpoint for each posting to read its pay ranges (salary). */
    payRanges: z.boolean().default(false),
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type GreenhouseConfig = z.output<typeof greenhouseConfig>;

const VENDOR = 'Greenhouse';

const listedJob = z.looseObject({
  id: z.int().nonnegative(),
  absolute_url: z.url({ protocol: /^https?$/ }),
});

const jobsResponse = z.looseObject({ jobs: z.array(listedJob) });

interface Entry {
  id: number;
  url: string;
  payload: unknown;
}

function jobsUrl(config: GreenhouseConfig, content: boolean): string {
  const path = `/v1/boards/${encodeURIComponent(config.boardToken)}/jobs`;
  return joinUrl(config.baseUrl, content ? `${path}?content=true` : path);
}

function jobUrl(config: GreenhouseConfig, id: number): string {
  const path = `/v1/boards/${encodeURIComponent(config.boardToken)}/jobs/${id}`;
  return joinUrl(config.baseUrl, config.payRanges ? `${path}?pay_transparency=true` : path);
}

async function listJobs(
  config: GreenhouseConfig,
  context: SourceContext,
  signal: AbortSignal | undefined,
): Promise<{ response: VendorResponse<z.output<typeof jobsResponse>>; inline: boolean }> {
  try {
    const response = await fetchVendorJson(
      context,
      { vendor: VENDOR, url: jobsUrl(config, true), notFound: 'board', signal },
      jobsResponse,
    );
    return { response, inline: true };
  } catch (error) {
    // A large board with content inline can outgrow the fetcher's body cap (5 MB by default);
    // without content the listing is small, and each job's detail carries its content.
    if (!(error instanceof AtsRequestError) || error.code !== atsErrorCodes.responseTooLarge)
      throw error;
    const response = await fetchVendorJson(
      context,
      { vendor: VENDOR, url: jobsUrl(config, false), notFound: 'board', signal },
      jobsResponse,
    );
    return { response, inline: false };
  }
}

const detailResponse = z.looseObject({ id: z.int().nonnegative() });

async function list(
  config: GreenhouseConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const { response, inline } = await listJobs(config, context, options.signal);
  const rawJobs = (response.json as { jobs: unknown[] }).jobs;
  const budget = ListingBudget.for<Entry>(options, config.maxPostings);
  response.data.jobs.forEach((job, index) => {
    budget.add(String(job.id), { id: job.id, url: job.absolute_url, payload: rawJobs[index] });
  });

  const listed = (entry: Entry, payload: unknown): ListedPosting => ({
    externalId: String(entry.id),
    url: entry.url,
    payload,
  });
  if (inline && !config.payRanges) {
    return {
      postings: budget.items.map((entry) => listed(entry, entry.payload)),
      complete: !budget.truncated,
    };
  }
  const postings = await fetchDetails(
    budget.items,
    async (entry) => {
      const detail = await fetchVendorJson(
        context,
        {
          vendor: VENDOR,
          url: jobUrl(config, entry.id),
          notFound: 'posting',
          signal: options.signal,
        },
        detailResponse,
      );
      return listed(entry, detail.json);
    },
    { vendor: VENDOR, url: jobsUrl(config, inline) },
  );
  return { postings, complete: !budget.truncated };
}

const metadataEntry = z.looseObject({ name: lenient(z.string()), value: z.unknown() });

const payRange = z.looseObject({
  min_cents: lenient(z.number()),
  max_cents: lenient(z.number()),
  currency_type: lenient(z.string()),
  title: lenient(z.string()),
});

const greenhousePosting = z.looseObject({
  title: titleSchema,
  company_name: lenient(z.string()),
  location: lenient(z.looseObject({ name: lenient(z.string()) })),
  first_published: lenient(z.string()),
  content: lenient(z.string()),
  metadata: lenient(z.array(metadataEntry)),
  pay_input_ranges: lenient(z.array(payRange)),
});

/** Greenhouse has no employment type field; boards commonly add an "Employment Type" custom field. */
function employmentTypeFromMetadata(
  metadata: z.output<typeof metadataEntry>[] | null | undefined,
): string | null {
  const field = metadata?.find((entry) => /employment\s*type/i.test(entry.name ?? ''));
  const values = Array.isArray(field?.value) ? (field.value as unknown[]) : [field?.value];
  const types = values
    .map((value) => (typeof value === 'string' ? employmentTypeFromText(value) : null))
    .filter((type) => type !== null);
  return types.length > 0 ? [...new Set(types)].join(', ') : null;
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = greenhousePosting.safeParse(payload);
  if (!parsed.success) return null;
  const job = parsed.data;
  const location = locationFromText(job.location?.name);
  // The first range; boards with one range per location list the primary one first.
  const range = job.pay_input_ranges?.[0];
  const cents = (value: number | null | undefined): number | null => {
    const parsedAmount = amount(value);
    return parsedAmount === null ? null : parsedAmount / 100;
  };
  const pay =
    range && (cents(range.min_cents) !== null || cents(range.max_cents) !== null)
      ? range
      : undefined;
  const content = text(job.content);
  return mapped({
    ...emptyPosting(),
    title: job.title,
    company: text(job.company_name),
    ...location,
    isRemote: remoteFromLocationText(location.location),
    employmentType: employmentTypeFromMetadata(job.metadata),
    salaryMin: cents(pay?.min_cents),
    salaryMax: cents(pay?.max_cents),
    salaryCurrency: currencyCode(pay?.currency_type),
    // Greenhouse gives no interval, only the range's title ("Annual base salary", "Hourly rate").
    salaryPeriod: salaryPeriodFromText(pay?.title),
    datePosted: postedDate(job.first_published),
    // `content` is HTML escaped once more; raw markup means someone already unescaped it.
    description:
      content === null ? null : text(content.includes('<') ? content : decodeHtmlEntities(content)),
  });
}

/** A Greenhouse job board, read through the public job board API. */
export const greenhouseAdapter: SiteAdapter<typeof greenhouseConfig> = {
  kind: 'greenhouse',
  description:
    'A Greenhouse job board (boards-api.greenhouse.io), listed through its public job board API.',
  configSchema: greenhouseConfig,
  list,
  mapPosting,
};
