/**
 * Adzuna job search API (https://developer.adzuna.com/docs/search):
 * `GET /v1/api/jobs/{country}/search/{page}?app_id&app_key&results_per_page&what&where`, pages
 * counted from 1, at most 50 results a page, `count` the total the search matches. The key pair
 * (`ADZUNA_APP_ID`, `ADZUNA_APP_KEY`) travels in the query string, so errors name the URL without
 * it. Adzuna has no remote filter: with `is_remote`, results that do not say "remote" in their
 * title, description or location are left out after each page. Results carry a description
 * snippet (the API cuts it), no currency, and a salary that may be Adzuna's own estimate
 * (`salary_is_predicted: "1"`), which is not the employer's and is not kept.
 *
 * The default access is 25 requests a minute and 250 a day (developer.adzuna.com terms), hence
 * the small default `maxPages`.
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
import { ListingBudget, RepeatedPageGuard } from './ats-listing.js';
import {
  amount,
  emptyPosting,
  employmentTypeFromText,
  lenient,
  locationFromText,
  mapped,
  postedDate,
  remoteFromLocationText,
  text,
  titleSchema,
} from './ats-mapping.js';
import {
  requireCredential,
  resolveSearch,
  savedSearchShape,
  type EffectiveSearch,
} from './search-api.js';

export const ADZUNA_API = 'https://api.adzuna.com';

/** The countries Adzuna's API serves (the `{country}` path segment). */
export const adzunaCountries = [
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

export const adzunaConfig = z
  .object({
    ...savedSearchShape,
    /** Adzuna's country site to search (`gb` → adzuna.co.uk). */
    country: z.enum(adzunaCountries).default('gb'),
    /** The API's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.default(ADZUNA_API),
    /** `results_per_page`; the API allows at most 50. */
    pageSize: z.int().min(1).max(50).default(50),
    /** Requests per run: the default key allows 250 a day. */
    maxPages: z.int().min(1).max(1000).default(20),
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type AdzunaConfig = z.output<typeof adzunaConfig>;

const VENDOR = 'Adzuna';

const searchPage = z.looseObject({
  count: z.int().nonnegative(),
  results: z.array(
    z.looseObject({
      id: z.union([z.string().trim().min(1).max(200), z.int().nonnegative()]),
      redirect_url: z.url({ protocol: /^https?$/ }),
    }),
  ),
});

/** The JSON-LD rule, widened to the title and description: Adzuna has no remote field. */
const saysRemote = (values: readonly unknown[]) =>
  values.some((value) => typeof value === 'string' && /\bremote\b/i.test(value));

function pageUrl(
  config: AdzunaConfig,
  search: EffectiveSearch,
  page: number,
  keys: { appId: string; appKey: string } | null,
): string {
  const query = new URLSearchParams();
  if (keys) {
    query.set('app_id', keys.appId);
    query.set('app_key', keys.appKey);
  }
  query.set('results_per_page', String(config.pageSize));
  if (search.searchTerm !== null) query.set('what', search.searchTerm);
  if (search.location !== null) query.set('where', search.location);
  return joinUrl(
    config.baseUrl,
    `/v1/api/jobs/${config.country}/search/${page}?${query.toString()}`,
  );
}

async function list(
  config: AdzunaConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const keys = {
    appId: requireCredential(context.credentials?.adzuna?.appId, VENDOR, 'ADZUNA_APP_ID'),
    appKey: requireCredential(context.credentials?.adzuna?.appKey, VENDOR, 'ADZUNA_APP_KEY'),
  };
  const { search, isSaved } = resolveSearch(config, options);
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  const repeats = new RepeatedPageGuard();
  let reachedEnd = false;
  for (let page = 1, seen = 0; page <= config.maxPages; page += 1) {
    const { data, json } = await fetchVendorJson(
      context,
      {
        vendor: VENDOR,
        url: pageUrl(config, search, page, keys),
        shownUrl: pageUrl(config, search, page, null),
        notFound: 'board',
        signal: options.signal,
      },
      searchPage,
    );
    const raw = (json as { results: Record<string, unknown>[] }).results;
    if (repeats.isRepeat(data.results.map((result) => String(result.id)))) break; // page ignored
    data.results.forEach((result, index) => {
      const payload = raw[index]!;
      const location = (payload.location as { display_name?: unknown } | undefined)?.display_name;
      if (search.isRemote === true && !saysRemote([payload.title, payload.description, location]))
        return;
      budget.add(String(result.id), {
        externalId: String(result.id),
        url: result.redirect_url,
        payload,
      });
    });
    if (budget.truncated) break;
    seen += data.results.length;
    if (data.results.length === 0 || seen >= data.count) {
      reachedEnd = true;
      break;
    }
    if (budget.full) break;
  }
  return { postings: budget.items, complete: reachedEnd && isSaved && !budget.truncated };
}

const adzunaJob = z.looseObject({
  title: titleSchema,
  description: lenient(z.string()),
  created: lenient(z.string()),
  company: lenient(z.looseObject({ display_name: lenient(z.string()) })),
  location: lenient(z.looseObject({ display_name: lenient(z.string()) })),
  salary_min: lenient(z.union([z.number(), z.string()])),
  salary_max: lenient(z.union([z.number(), z.string()])),
  salary_is_predicted: lenient(z.union([z.string(), z.number(), z.boolean()])),
  contract_time: lenient(z.string()),
  contract_type: lenient(z.string()),
});

/** `contract_type: contract` first (a contract may be full time), then the hours, then permanent. */
function employmentType(job: z.output<typeof adzunaJob>): string | null {
  if (job.contract_type === 'contract') return 'CONTRACTOR';
  if (job.contract_time) return employmentTypeFromText(job.contract_time);
  return employmentTypeFromText(job.contract_type);
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = adzunaJob.safeParse(payload);
  if (!parsed.success) return null;
  const job = parsed.data;
  const location = locationFromText(job.location?.display_name);
  const predicted = ['1', 1, true].includes(job.salary_is_predicted as string | number | boolean);
  const salaryMin = predicted ? null : amount(job.salary_min);
  const salaryMax = predicted ? null : amount(job.salary_max);
  const description = text(job.description);
  return mapped({
    ...emptyPosting(),
    title: job.title,
    company: text(job.company?.display_name),
    ...location,
    isRemote: saysRemote([job.title, description])
      ? true
      : remoteFromLocationText(location.location),
    employmentType: employmentType(job),
    salaryMin,
    salaryMax,
    // Adzuna's salaries are yearly; it names no currency (the country site's, not in the result).
    salaryPeriod: salaryMin !== null || salaryMax !== null ? 'year' : null,
    datePosted: postedDate(job.created),
    description,
  });
}

/** A saved search on Adzuna, read through its job search API. */
export const adzunaAdapter: SiteAdapter<typeof adzunaConfig> = {
  kind: 'adzuna',
  description:
    'A saved job search on Adzuna (api.adzuna.com), read through its search API; keys from ADZUNA_APP_ID and ADZUNA_APP_KEY.',
  configSchema: adzunaConfig,
  searches: true,
  list,
  mapPosting,
};
