/**
 * Lever postings API (https://github.com/lever/postings-api): `GET /v0/postings/{site}?mode=json`,
 * paged with `skip` and `limit` until a page comes back short. Sites hosted in Lever's EU
 * environment are served from api.eu.lever.co.
 */
import { isRequirementHeading } from '@gleaner/extraction';
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
  maxPagesSchema,
  maxPostingsSchema,
} from './ats-http.js';
import { ListingBudget, RepeatedPageGuard } from './ats-listing.js';
import {
  amount,
  countryText,
  currencyCode,
  emptyPosting,
  employmentTypeFromText,
  escapeHtml,
  htmlToText,
  lenient,
  locationFromText,
  mapped,
  postedDate,
  remoteFromLocationText,
  salaryPeriodFromText,
  text,
  titleSchema,
} from './ats-mapping.js';

export const LEVER_API = { global: 'https://api.lever.co', eu: 'https://api.eu.lever.co' } as const;

export const leverConfig = z
  .object({
    /** The Lever site name: `acme` in jobs.lever.co/acme. */
    site: boardIdentifier,
    /** Lever's environment: api.lever.co (global) or api.eu.lever.co (eu). */
    region: z.enum(['global', 'eu']).default('global'),
    /** Overrides the region's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.optional(),
    /** Postings per request (`limit`). */
    pageSize: z.int().min(1).max(1000).default(100),
    /** Budget of listing pages per run. */
    maxPages: maxPagesSchema,
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type LeverConfig = z.output<typeof leverConfig>;

const VENDOR = 'Lever';

export function leverBaseUrl(config: Pick<LeverConfig, 'region' | 'baseUrl'>): string {
  return config.baseUrl ?? LEVER_API[config.region];
}

const postingsPage = z.array(
  z.looseObject({
    id: z.string().trim().min(1).max(200),
    hostedUrl: z.url({ protocol: /^https?$/ }),
  }),
);

interface Entry {
  id: string;
  url: string;
  payload: unknown;
}

async function list(
  config: LeverConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const budget = ListingBudget.for<Entry>(options, config.maxPostings);
  const repeats = new RepeatedPageGuard();
  let complete = false;
  for (let page = 0, skip = 0; page < config.maxPages; page += 1) {
    const query = new URLSearchParams({
      mode: 'json',
      skip: String(skip),
      limit: String(config.pageSize),
    });
    const url = joinUrl(
      leverBaseUrl(config),
      `/v0/postings/${encodeURIComponent(config.site)}?${query.toString()}`,
    );
    const { data, json } = await fetchVendorJson(
      context,
      { vendor: VENDOR, url, notFound: 'board', signal: options.signal },
      postingsPage,
    );
    if (repeats.isRepeat(data.map((posting) => posting.id))) break; // `skip` ignored: stop, incomplete
    data.forEach((posting, index) => {
      budget.add(posting.id, {
        id: posting.id,
        url: posting.hostedUrl,
        payload: (json as unknown[])[index],
      });
    });
    const lastPage = data.length < config.pageSize;
    if (budget.truncated) break;
    if (lastPage) {
      complete = true;
      break;
    }
    // A full page and a spent budget: more may follow, so the listing is not known complete.
    if (budget.full) break;
    skip += data.length;
  }
  const postings: ListedPosting[] = budget.items.map((entry) => ({
    externalId: entry.id,
    url: entry.url,
    payload: entry.payload,
  }));
  return { postings, complete: complete && !budget.truncated };
}

const leverList = z.looseObject({ text: lenient(z.string()), content: lenient(z.string()) });

const leverPosting = z.looseObject({
  text: titleSchema,
  createdAt: lenient(z.number()),
  country: lenient(z.string()),
  workplaceType: lenient(z.string()),
  categories: lenient(
    z.looseObject({
      location: lenient(z.string()),
      commitment: lenient(z.string()),
    }),
  ),
  salaryRange: lenient(
    z.looseObject({
      min: lenient(z.union([z.number(), z.string()])),
      max: lenient(z.union([z.number(), z.string()])),
      currency: lenient(z.string()),
      interval: lenient(z.string()),
    }),
  ),
  description: lenient(z.string()),
  lists: lenient(z.array(leverList)),
  additional: lenient(z.string()),
});

function isRemote(
  workplaceType: string | null | undefined,
  location: string | null,
): boolean | null {
  switch (text(workplaceType)?.toLowerCase()) {
    case 'remote':
      return true;
    case 'on-site':
    case 'onsite':
    case 'hybrid':
      return false;
    default: // 'unspecified' or missing
      return remoteFromLocationText(location);
  }
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = leverPosting.safeParse(payload);
  if (!parsed.success) return null;
  const posting = parsed.data;
  const location = locationFromText(posting.categories?.location);
  const lists = (posting.lists ?? []).filter((entry) => text(entry.content) !== null);

  // The hosted page shows the description, then each list under its heading, then `additional`:
  // the description keeps that whole text, as a career page's JSON-LD description would.
  const heading = (entry: z.output<typeof leverList>): string => {
    const title = text(entry.text);
    return title === null ? '' : `<h3>${escapeHtml(title)}</h3>`;
  };
  const sections = [
    text(posting.description),
    ...lists.map((entry) => `${heading(entry)}<ul>${entry.content!.trim()}</ul>`),
    text(posting.additional),
  ].filter((section) => section !== null);

  // Lists headed like "Requirements", "What you bring", "About you" (the shared heading list);
  // "What you'll do" and perks are not requirements.
  const requirementLines = lists
    .filter((entry) => isRequirementHeading(entry.text ?? ''))
    .map((entry) => htmlToText(entry.content))
    .filter((lines) => lines !== null);

  const salary = posting.salaryRange;
  const salaryMin = amount(salary?.min);
  const salaryMax = amount(salary?.max);
  const hasSalary = salaryMin !== null || salaryMax !== null;
  return mapped({
    ...emptyPosting(),
    title: posting.text,
    // The postings API does not name the company.
    ...location,
    locationCountry: countryText(posting.country),
    isRemote: isRemote(posting.workplaceType, location.location),
    employmentType: employmentTypeFromText(posting.categories?.commitment),
    salaryMin,
    salaryMax,
    salaryCurrency: hasSalary ? currencyCode(salary?.currency) : null,
    // 'per-year-salary', 'per-hour-wage', …; another interval ('one-time') is kept as written.
    salaryPeriod: hasSalary
      ? (salaryPeriodFromText(salary?.interval) ?? text(salary?.interval)?.toLowerCase() ?? null)
      : null,
    datePosted: postedDate(posting.createdAt),
    description: sections.length > 0 ? sections.join('\n') : null,
    requirements: requirementLines.length > 0 ? requirementLines.join('\n') : null,
  });
}

/** A Lever job site, read through the public postings API. */
export const leverAdapter: SiteAdapter<typeof leverConfig> = {
  kind: 'lever',
  description:
    'A Lever job site (jobs.lever.co), listed through its public postings API (global or EU).',
  configSchema: leverConfig,
  list,
  mapPosting,
};
