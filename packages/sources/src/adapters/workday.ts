/**
 * Workday career sites ({tenant}.wd{N}.myworkdayjobs.com/{site}), read through the JSON API the
 * site's own pages use:
 *
 * - `POST /wday/cxs/{tenant}/{site}/jobs` with `{ appliedFacets, limit, offset, searchText }`
 *   answers `{ total, jobPostings: [{ title, externalPath, locationsText, postedOn }], facets }`.
 *   Workday refuses a `limit` above 20 and reads no further than 2,000 results into one query;
 *   `total` is only reliable on the first page (later pages answer 0).
 * - `GET /wday/cxs/{tenant}/{site}{externalPath}` answers the posting,
 *   `{ jobPostingInfo: { title, jobDescription, location, timeType, startDate, … },
 *   hiringOrganization }`: the payload.
 *
 * A query matching more than 2,000 postings is split by the facets the search offers (job family,
 * location, time type, …): each value becomes its own query, recursively with a second facet when
 * one value is still above the cap. Postings listed under several values are kept once.
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
  fetchDetails,
  fetchVendorJson,
  joinUrl,
  maxPostingsSchema,
} from './ats-http.js';
import { ListingBudget, RepeatedPageGuard } from './ats-listing.js';
import {
  countryText,
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

/** Results per search request: Workday refuses more. */
export const WORKDAY_PAGE_SIZE = 20;
/** Results one search query reaches, whatever its total. */
export const WORKDAY_RESULT_CAP = 2000;

export const workdayConfig = z
  .object({
    /** The career site's host: `acme.wd5.myworkdayjobs.com`. */
    host: z
      .string()
      .regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.wd\d{1,3}\.myworkdayjobs\.com$/, {
        message: 'must be a Workday career host, {tenant}.wd{N}.myworkdayjobs.com',
      }),
    /** The tenant: `acme` in /wday/cxs/acme/External. */
    tenant: boardIdentifier,
    /** The career site: `External` in acme.wd5.myworkdayjobs.com/External. */
    site: boardIdentifier,
    /** Overrides https://{host} (a loopback fixture). */
    baseUrl: baseUrlSchema.optional(),
    /**
     * Budget of search requests per run. At 20 postings a page, a site of 10,000 postings takes
     * some 500, more when it has to be split by facets.
     */
    maxPages: z.int().min(1).max(10_000).default(1000),
    /** Budget of postings per run, and so of detail calls. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type WorkdayConfig = z.output<typeof workdayConfig>;

const VENDOR = 'Workday';

export function workdayBaseUrl(config: Pick<WorkdayConfig, 'host' | 'baseUrl'>): string {
  return config.baseUrl ?? `https://${config.host.toLowerCase()}`;
}

/**
 * `host`, `tenant` and `site` from a career site's address as people share it:
 * `https://acme.wd5.myworkdayjobs.com/External`, `…/en-US/External/job/Berlin/…`. The tenant is the
 * host's first label, as on every myworkdayjobs.com site; null for any other address.
 */
export function workdaySiteFromUrl(
  address: string,
): Pick<WorkdayConfig, 'host' | 'tenant' | 'site'> | null {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || url.username || url.password || url.port) return null;
  const segments = url.pathname.split('/').filter((segment) => segment !== '');
  // An optional locale before the site: /en-US/External.
  const site = /^[a-z]{2}-[A-Z]{2}$/.test(segments[0] ?? '') ? segments[1] : segments[0];
  const parsed = workdayConfig.safeParse({
    host: url.hostname,
    tenant: url.hostname.split('.')[0],
    site,
  });
  if (!parsed.success) return null;
  return { host: parsed.data.host, tenant: parsed.data.tenant, site: parsed.data.site };
}

function apiUrl(config: WorkdayConfig, path: string): string {
  return joinUrl(
    workdayBaseUrl(config),
    `/wday/cxs/${encodeURIComponent(config.tenant)}/${encodeURIComponent(config.site)}${path}`,
  );
}

/**
 * `/job/{location}/{title}_{req}`: path segments of URL-safe characters only, since the path is
 * appended to our own API URL (no `..`, no query, no other host).
 */
const externalPathSchema = z
  .string()
  .max(1000)
  .regex(/^\/job(?:\/[A-Za-z0-9._~%!$&'()*+,;=:@-]+)+$/)
  .refine((path) => !path.split('/').some((segment) => segment === '.' || segment === '..'));

interface FacetValue {
  id: string;
  count: number;
}

interface Facet {
  parameter: string;
  values: FacetValue[];
}

/** Facets nest: a group (`locationMainGroup`) holds facets of its own (`locations`, …). */
interface RawFacet {
  facetParameter?: string | null | undefined;
  id?: string | null | undefined;
  count?: number | null | undefined;
  values?: RawFacet[] | null | undefined;
}

const rawFacet: z.ZodType<RawFacet> = z.lazy(() =>
  z.looseObject({
    facetParameter: lenient(z.string().max(200)),
    id: lenient(z.string().max(200)),
    count: lenient(z.int().nonnegative()),
    values: lenient(z.array(rawFacet).max(10_000)),
  }),
);

const searchResponse = z.looseObject({
  total: z.int().nonnegative(),
  jobPostings: z.array(z.looseObject({ externalPath: externalPathSchema })),
  facets: lenient(z.array(rawFacet).max(1000)),
});

type SearchResponse = z.output<typeof searchResponse>;

/** Every facet with values, groups flattened (bounded: facets from vendor JSON). */
function flattenFacets(facets: readonly RawFacet[], depth = 0): Facet[] {
  if (depth > 3) return [];
  const result: Facet[] = [];
  for (const facet of facets) {
    const children = facet.values ?? [];
    const values = children.filter(
      (value): value is RawFacet & { id: string; count: number } =>
        typeof value.id === 'string' && value.id !== '' && typeof value.count === 'number',
    );
    if (facet.facetParameter && values.length > 0) {
      result.push({
        parameter: facet.facetParameter,
        values: values.map(({ id, count }) => ({ id, count })),
      });
    }
    const groups = children.filter((value) => value.facetParameter && value.values);
    result.push(...flattenFacets(groups, depth + 1));
  }
  return result;
}

/**
 * The facet to split a query by: one not applied yet whose values cover its total (each posting
 * has a value), with the smallest largest value, so that fewer values need splitting again. A
 * facet that covers only part of the total (postings without a location) is a last resort, and
 * the listing is then not known complete.
 */
function chooseSplit(
  facets: readonly Facet[],
  applied: Readonly<Record<string, string[]>>,
  total: number,
): { facet: Facet; covers: boolean } | null {
  let best: { facet: Facet; covers: boolean; sum: number; largest: number } | null = null;
  for (const facet of facets) {
    if (facet.parameter in applied) continue;
    const values = facet.values.filter((value) => value.count > 0);
    if (values.length < 2) continue; // one value splits nothing
    const sum = values.reduce((all, value) => all + value.count, 0);
    const largest = Math.max(...values.map((value) => value.count));
    const covers = sum >= total;
    const better =
      best === null ||
      (covers && !best.covers) ||
      (covers === best.covers && (covers ? largest < best.largest : sum > best.sum));
    if (better) best = { facet: { ...facet, values }, covers, sum, largest };
  }
  return best && { facet: best.facet, covers: best.covers };
}

interface Summary {
  externalPath: string;
}

class WorkdaySearch {
  readonly budget: ListingBudget<Summary>;
  private pages = 0;

  constructor(
    private readonly config: WorkdayConfig,
    private readonly context: SourceContext,
    private readonly options: ListOptions,
  ) {
    this.budget = ListingBudget.for<Summary>(options, config.maxPostings);
  }

  get exhausted(): boolean {
    return this.pages >= this.config.maxPages;
  }

  private async page(
    applied: Readonly<Record<string, string[]>>,
    offset: number,
  ): Promise<SearchResponse> {
    this.pages += 1;
    const { data } = await fetchVendorJson(
      this.context,
      {
        vendor: VENDOR,
        url: apiUrl(this.config, '/jobs'),
        notFound: 'board',
        signal: this.options.signal,
        json: { appliedFacets: applied, limit: WORKDAY_PAGE_SIZE, offset, searchText: '' },
      },
      searchResponse,
    );
    return data;
  }

  /** Lists one query (splitting it when above the cap); true when it was listed whole. */
  async query(applied: Readonly<Record<string, string[]>>): Promise<boolean> {
    if (this.exhausted || this.budget.full) return false;
    const first = await this.page(applied, 0);
    const total = first.total;
    if (total > WORKDAY_RESULT_CAP) {
      const split = chooseSplit(flattenFacets(first.facets ?? []), applied, total);
      if (split !== null) {
        let complete = split.covers;
        for (const value of split.facet.values) {
          const listed = await this.query({ ...applied, [split.facet.parameter]: [value.id] });
          // Once a budget is spent, the remaining values answer false without a request.
          complete &&= listed;
        }
        return complete;
      }
      // No facet left to split by: the first 2,000 are all this query reaches.
      await this.read(first, applied, WORKDAY_RESULT_CAP);
      return false;
    }
    return this.read(first, applied, total);
  }

  /** Pages through a query from its first page up to `total`; true when it got there. */
  private async read(
    first: SearchResponse,
    applied: Readonly<Record<string, string[]>>,
    total: number,
  ): Promise<boolean> {
    const repeats = new RepeatedPageGuard();
    let page = first;
    let offset = 0;
    for (;;) {
      const paths = page.jobPostings.map((posting) => posting.externalPath);
      if (repeats.isRepeat(paths)) return false; // `offset` ignored
      for (const path of paths) this.budget.add(path, { externalPath: path });
      if (this.budget.truncated) return false;
      offset += paths.length;
      // An empty page before `total`: postings closed while we paged; that is the end.
      if (paths.length === 0 || offset >= Math.min(total, WORKDAY_RESULT_CAP)) {
        return offset >= total || paths.length === 0;
      }
      if (this.budget.full || this.exhausted) return false;
      page = await this.page(applied, offset);
    }
  }
}

const postingDetail = z.looseObject({
  jobPostingInfo: z.looseObject({ title: titleSchema }),
});

async function list(
  config: WorkdayConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const search = new WorkdaySearch(config, context, options);
  const complete = await search.query({});
  const postings = await fetchDetails(
    search.budget.items,
    async (summary): Promise<ListedPosting> => {
      const { json } = await fetchVendorJson(
        context,
        {
          vendor: VENDOR,
          url: apiUrl(config, summary.externalPath),
          notFound: 'posting',
          signal: options.signal,
        },
        postingDetail,
      );
      return {
        externalId: summary.externalPath,
        // The public page, built on the configured host: vendor JSON does not choose our links.
        url: joinUrl(
          workdayBaseUrl(config),
          `/${encodeURIComponent(config.site)}${summary.externalPath}`,
        ),
        payload: json,
      };
    },
    { vendor: VENDOR, url: apiUrl(config, '/jobs') },
  );
  return { postings, complete: complete && !search.budget.truncated };
}

const workdayPosting = z.looseObject({
  jobPostingInfo: z.looseObject({
    title: titleSchema,
    jobDescription: lenient(z.string()),
    location: lenient(z.string()),
    country: lenient(z.looseObject({ descriptor: lenient(z.string()) })),
    remoteType: lenient(z.string()),
    timeType: lenient(z.string()),
    startDate: lenient(z.string()),
  }),
  hiringOrganization: lenient(z.looseObject({ name: lenient(z.string()) })),
});

/** Workday's remote types are the tenant's own labels: "Remote", "Fully Remote", "Hybrid", "On-site". */
function isRemote(remoteType: string | null | undefined, location: string | null): boolean | null {
  const label = text(remoteType)?.toLowerCase();
  if (label !== undefined) {
    if (/hybrid|on-?site|office|flex/.test(label)) return false;
    if (/remote|virtual|home/.test(label)) return true;
  }
  return remoteFromLocationText(location);
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = workdayPosting.safeParse(payload);
  if (!parsed.success) return null;
  const info = parsed.data.jobPostingInfo;
  const location = locationFromText(info.location);
  return mapped({
    ...emptyPosting(),
    title: info.title,
    company: text(parsed.data.hiringOrganization?.name),
    ...location,
    locationCountry: countryText(info.country?.descriptor),
    isRemote: isRemote(info.remoteType, location.location),
    // "Full time" / "Part time": the only contract detail the posting carries.
    employmentType: employmentTypeFromText(info.timeType),
    // The career site publishes no compensation field, nor a separate requirements section.
    datePosted: postedDate(info.startDate),
    description: text(info.jobDescription),
  });
}

/** A Workday career site, read through the JSON search API its pages use. */
export const workdayAdapter: SiteAdapter<typeof workdayConfig> = {
  kind: 'workday',
  description:
    'A Workday career site ({tenant}.wd{N}.myworkdayjobs.com/{site}), searched 20 postings a page, split by facets past the 2,000 results a search reaches, with one detail call per posting.',
  configSchema: workdayConfig,
  list,
  mapPosting,
};
