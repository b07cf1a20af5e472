/**
 * Workable job widget API (https://help.workable.com/hc/en-us/articles/115012771647):
 * `GET https://apply.workable.com/api/v1/widget/accounts/{subdomain}?details=true` answers every
 * published job of the account in one request; `details=true` adds each job's `description`,
 * `requirements` and `benefits` HTML.
 *
 * The careers page itself reads `POST /api/v3/accounts/{subdomain}/jobs`, paged with a
 * `nextPage` token, but that API is undocumented and needs a detail call per job for the text;
 * the widget API is the one Workable documents for public use.
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
  emptyPosting,
  employmentTypeFromText,
  htmlToText,
  lenient,
  locationFromParts,
  mapped,
  postedDate,
  text,
  titleSchema,
} from './ats-mapping.js';

export const WORKABLE_API = 'https://apply.workable.com';

export const workableConfig = z
  .object({
    /** The account subdomain: `acme` in apply.workable.com/acme. */
    subdomain: boardIdentifier,
    /** The widget API's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.default(WORKABLE_API),
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type WorkableConfig = z.output<typeof workableConfig>;

const VENDOR = 'Workable';

const widgetResponse = z.looseObject({
  jobs: z.array(
    z.looseObject({
      shortcode: z.string().trim().min(1).max(200),
      url: lenient(z.url({ protocol: /^https?$/ })),
      shortlink: lenient(z.url({ protocol: /^https?$/ })),
    }),
  ),
});

async function list(
  config: WorkableConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const url = joinUrl(
    config.baseUrl,
    `/api/v1/widget/accounts/${encodeURIComponent(config.subdomain)}?details=true`,
  );
  const { data, json } = await fetchVendorJson(
    context,
    { vendor: VENDOR, url, notFound: 'board', signal: options.signal },
    widgetResponse,
  );
  const rawJobs = (json as { jobs: unknown[] }).jobs;
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  data.jobs.forEach((job, index) => {
    // A job without a public URL cannot be linked to; Workable always sends one.
    const publicUrl = job.url ?? job.shortlink;
    if (!publicUrl) return;
    budget.add(job.shortcode, {
      externalId: job.shortcode,
      url: publicUrl,
      payload: rawJobs[index],
    });
  });
  return { postings: budget.items, complete: !budget.truncated };
}

const workableLocation = z.looseObject({
  city: lenient(z.string()),
  region: lenient(z.string()),
  country: lenient(z.string()),
  countryCode: lenient(z.string()),
  hidden: lenient(z.boolean()),
});

const workableJob = z.looseObject({
  title: titleSchema,
  employment_type: lenient(z.string()),
  telecommuting: lenient(z.boolean()),
  published_on: lenient(z.string()),
  created_at: lenient(z.string()),
  city: lenient(z.string()),
  state: lenient(z.string()),
  country: lenient(z.string()),
  locations: lenient(z.array(lenient(workableLocation))),
  description: lenient(z.string()),
  requirements: lenient(z.string()),
  benefits: lenient(z.string()),
});

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = workableJob.safeParse(payload);
  if (!parsed.success) return null;
  const job = parsed.data;
  // The first location shown on the job page; the top-level fields repeat it for old widgets.
  const first = job.locations?.find((entry) => entry != null && entry.hidden !== true);
  const structured = first
    ? locationFromParts(first.city, first.region, first.countryCode ?? first.country)
    : locationFromParts(job.city, job.state, job.country);
  const requirements = text(job.requirements);
  const benefits = text(job.benefits);
  // The hosted job page's order: description, then requirements and benefits under headings.
  const sections = [
    text(job.description),
    ...(requirements === null ? [] : ['<h3>Requirements</h3>', requirements]),
    ...(benefits === null ? [] : ['<h3>Benefits</h3>', benefits]),
  ].filter((section) => section !== null);
  const telecommuting = job.telecommuting;
  return mapped({
    ...emptyPosting(),
    title: job.title,
    // The widget names the account once, above its jobs; a job's payload does not carry it.
    ...structured,
    isRemote:
      telecommuting === true
        ? true
        : telecommuting === false || structured.location !== null
          ? false
          : null,
    employmentType: employmentTypeFromText(job.employment_type),
    // The widget publishes no compensation.
    datePosted: postedDate(job.published_on ?? job.created_at),
    description: sections.length > 0 ? sections.join('\n') : null,
    requirements: htmlToText(requirements),
  });
}

/** A Workable account, read through the public job widget API. */
export const workableAdapter: SiteAdapter<typeof workableConfig> = {
  kind: 'workable',
  description:
    'A Workable account (apply.workable.com), listed through its public job widget API with details.',
  configSchema: workableConfig,
  list,
  mapPosting,
};
