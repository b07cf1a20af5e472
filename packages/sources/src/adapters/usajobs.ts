/**
 * USAJOBS Search API (https://developer.usajobs.gov/api-reference/get-api-search):
 * `GET /api/Search?Keyword&LocationName&RemoteIndicator&ResultsPerPage&Page` on data.usajobs.gov,
 * with the key in `Authorization-Key` and the e-mail it was issued to as `User-Agent`
 * (`USAJOBS_API_KEY`, `USAJOBS_USER_AGENT`); `Host` is the request's own. At most 500 results a
 * page (250 by default), and no query pages past 10,000 results: a search that matches more is
 * listed to there and reported incomplete. The payload is each `SearchResultItems` entry.
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
  countryText,
  emptyPosting,
  employmentTypeFromText,
  lenient,
  locationFromText,
  mapped,
  remoteFromLocationText,
  text,
  titleSchema,
} from './ats-mapping.js';
import { requireCredential, resolveSearch, savedSearchShape } from './search-api.js';

export const USAJOBS_API = 'https://data.usajobs.gov';

/** No query reads past this many results, whatever `SearchResultCountAll` says. */
export const USAJOBS_RESULT_CAP = 10_000;

export const usaJobsConfig = z
  .object({
    ...savedSearchShape,
    /** The API's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.default(USAJOBS_API),
    /** `ResultsPerPage`; the API allows at most 500. */
    pageSize: z.int().min(1).max(500).default(500),
    maxPages: z.int().min(1).max(1000).default(20),
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type UsaJobsConfig = z.output<typeof usaJobsConfig>;

const VENDOR = 'USAJOBS';

const searchPage = z.looseObject({
  SearchResult: z.looseObject({
    SearchResultCountAll: z.int().nonnegative(),
    SearchResultItems: z.array(
      z.looseObject({
        MatchedObjectId: z.union([z.string().trim().min(1).max(200), z.int().nonnegative()]),
        MatchedObjectDescriptor: z.looseObject({ PositionURI: z.url({ protocol: /^https?$/ }) }),
      }),
    ),
  }),
});

async function list(
  config: UsaJobsConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const headers = {
    'authorization-key': requireCredential(
      context.credentials?.usajobs?.apiKey,
      VENDOR,
      'USAJOBS_API_KEY',
    ),
    'user-agent': requireCredential(
      context.credentials?.usajobs?.userAgent,
      VENDOR,
      'USAJOBS_USER_AGENT',
    ),
  };
  const { search, isSaved } = resolveSearch(config, options);
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  const repeats = new RepeatedPageGuard();
  let reachedEnd = false;
  for (let page = 1, seen = 0; page <= config.maxPages; page += 1) {
    const query = new URLSearchParams();
    if (search.searchTerm !== null) query.set('Keyword', search.searchTerm);
    if (search.location !== null) query.set('LocationName', search.location);
    if (search.isRemote === true) query.set('RemoteIndicator', 'True');
    query.set('ResultsPerPage', String(config.pageSize));
    query.set('Page', String(page));
    const { data, json } = await fetchVendorJson(
      context,
      {
        vendor: VENDOR,
        url: joinUrl(config.baseUrl, `/api/Search?${query.toString()}`),
        notFound: 'board',
        headers,
        signal: options.signal,
      },
      searchPage,
    );
    const items = data.SearchResult.SearchResultItems;
    const raw = (json as { SearchResult: { SearchResultItems: unknown[] } }).SearchResult
      .SearchResultItems;
    if (repeats.isRepeat(items.map((item) => String(item.MatchedObjectId)))) break;
    items.forEach((item, index) => {
      const id = String(item.MatchedObjectId);
      budget.add(id, {
        externalId: id,
        url: item.MatchedObjectDescriptor.PositionURI,
        payload: raw[index],
      });
    });
    if (budget.truncated) break;
    seen += items.length;
    const total = data.SearchResult.SearchResultCountAll;
    if (items.length === 0 || seen >= total) {
      reachedEnd = true;
      break;
    }
    // Past the cap the API answers nothing more: the rest of a larger search is out of reach.
    if (seen >= USAJOBS_RESULT_CAP || budget.full) break;
  }
  return { postings: budget.items, complete: reachedEnd && isSaved && !budget.truncated };
}

const usaJobsItem = z.looseObject({
  MatchedObjectDescriptor: z.looseObject({
    PositionTitle: titleSchema,
    OrganizationName: lenient(z.string()),
    PositionLocationDisplay: lenient(z.string()),
    PositionLocation: lenient(z.array(z.looseObject({ CountryCode: lenient(z.string()) }))),
    PositionSchedule: lenient(z.array(z.looseObject({ Name: lenient(z.string()) }))),
    PositionRemuneration: lenient(
      z.array(
        z.looseObject({
          MinimumRange: lenient(z.union([z.string(), z.number()])),
          MaximumRange: lenient(z.union([z.string(), z.number()])),
          RateIntervalCode: lenient(z.string()),
        }),
      ),
    ),
    PublicationStartDate: lenient(z.string()),
    QualificationSummary: lenient(z.string()),
    UserArea: lenient(
      z.looseObject({
        Details: lenient(
          z.looseObject({ JobSummary: lenient(z.string()), RemoteIndicator: lenient(z.boolean()) }),
        ),
      }),
    ),
  }),
});

/**
 * USAJOBS' pay intervals (its RateIntervalCode list, written either as the code or its name):
 * PA per year, PH per hour, PD per day, PM per month, PW piece work, BW bi-weekly, WC without
 * compensation. Only the first four are a period Gleaner stores; the others carry no salary.
 */
const PERIODS: Record<string, string> = {
  pa: 'year',
  'per year': 'year',
  ph: 'hour',
  'per hour': 'hour',
  pd: 'day',
  'per day': 'day',
  pm: 'month',
  'per month': 'month',
};

/** "2026-11-30T09:00:00.0000" names no zone: the date is what the announcement states. */
function publicationDate(value: string | null | undefined): string | null {
  const match = /^(\d{4}-\d{2}-\d{2})/.exec(value?.trim() ?? '');
  return match ? match[1]! : null;
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = usaJobsItem.safeParse(payload);
  if (!parsed.success) return null;
  const job = parsed.data.MatchedObjectDescriptor;
  const location = locationFromText(job.PositionLocationDisplay);
  const countries = new Set((job.PositionLocation ?? []).map((place) => text(place.CountryCode)));
  const pay = job.PositionRemuneration?.[0];
  const period = PERIODS[(pay?.RateIntervalCode ?? '').trim().toLowerCase()] ?? null;
  const positive = (value: string | number | null | undefined) => {
    const parsedAmount = amount(value);
    return parsedAmount !== null && parsedAmount > 0 ? parsedAmount : null;
  };
  const salaryMin = period === null ? null : positive(pay?.MinimumRange);
  const salaryMax = period === null ? null : positive(pay?.MaximumRange);
  const hasPay = salaryMin !== null || salaryMax !== null;
  const details = job.UserArea?.Details;
  return mapped({
    ...emptyPosting(),
    title: job.PositionTitle,
    company: text(job.OrganizationName),
    ...location,
    // One country across every location (federal jobs: "United States"), else none.
    locationCountry: countries.size === 1 ? countryText([...countries][0]) : null,
    isRemote: details?.RemoteIndicator ?? remoteFromLocationText(location.location),
    employmentType: employmentTypeFromText(job.PositionSchedule?.[0]?.Name),
    salaryMin,
    salaryMax,
    salaryCurrency: hasPay ? 'USD' : null,
    salaryPeriod: hasPay ? period : null,
    datePosted: publicationDate(job.PublicationStartDate),
    description: text(details?.JobSummary),
    requirements: text(job.QualificationSummary),
  });
}

/** A saved search on USAJOBS, the US federal government's job board, through its Search API. */
export const usaJobsAdapter: SiteAdapter<typeof usaJobsConfig> = {
  kind: 'usajobs',
  description:
    'A saved job search on USAJOBS (data.usajobs.gov), read through its Search API; key from USAJOBS_API_KEY and USAJOBS_USER_AGENT.',
  configSchema: usaJobsConfig,
  searches: true,
  list,
  mapPosting,
};
