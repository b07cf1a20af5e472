/**
 * SmartRecruiters posting API (https://developers.smartrecruiters.com/docs/posting-api):
 * `GET /v1/companies/{company}/postings?offset&limit` (limit ≤ 100) lists summaries until
 * `offset ≥ totalFound`; each summary's `ref` is its detail, which alone carries the job ad
 * (`jobAd.sections`) and the public `postingUrl`. So this adapter makes one request per posting,
 * one at a time; the detail is the payload.
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
  maxPagesSchema,
  maxPostingsSchema,
} from './ats-http.js';
import { ListingBudget, RepeatedPageGuard } from './ats-listing.js';
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

export const SMARTRECRUITERS_API = 'https://api.smartrecruiters.com';

export const smartRecruitersConfig = z
  .object({
    /** The company identifier: `Acme` in jobs.smartrecruiters.com/Acme. */
    companyIdentifier: boardIdentifier,
    /** The posting API's origin; tests point it at a loopback fixture. */
    baseUrl: baseUrlSchema.default(SMARTRECRUITERS_API),
    /** Summaries per request (`limit`); the API allows at most 100. */
    pageSize: z.int().min(1).max(100).default(100),
    /** Budget of listing pages per run (detail calls are bounded by maxPostings). */
    maxPages: maxPagesSchema,
    /** Budget of postings per run, and so of detail calls. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type SmartRecruitersConfig = z.output<typeof smartRecruitersConfig>;

const VENDOR = 'SmartRecruiters';

const postingsPage = z.looseObject({
  totalFound: z.int().nonnegative(),
  content: z.array(
    z.looseObject({
      id: z.string().trim().min(1).max(200),
      ref: lenient(z.string()),
    }),
  ),
});

type Summary = z.output<typeof postingsPage>['content'][number];

const postingDetail = z.looseObject({
  id: z.string().trim().min(1).max(200),
  postingUrl: z.url({ protocol: /^https?$/ }),
});

/**
 * `ref` comes from the vendor's JSON, so it is followed only when it points into the configured
 * API; otherwise (or when absent) the documented detail URL is built from the id.
 */
export function smartRecruitersDetailUrl(
  config: Pick<SmartRecruitersConfig, 'baseUrl' | 'companyIdentifier'>,
  summary: Pick<Summary, 'id' | 'ref'>,
): string {
  const built = joinUrl(
    config.baseUrl,
    `/v1/companies/${encodeURIComponent(config.companyIdentifier)}/postings/${encodeURIComponent(summary.id)}`,
  );
  if (!summary.ref) return built;
  try {
    const ref = new URL(summary.ref);
    const base = new URL(config.baseUrl);
    const apiPath = `${base.pathname.replace(/\/+$/, '')}/v1/companies/`;
    return ref.origin === base.origin &&
      ref.pathname.startsWith(apiPath) &&
      !ref.username &&
      !ref.password
      ? ref.toString()
      : built;
  } catch {
    return built; // not a URL at all
  }
}

async function listSummaries(
  config: SmartRecruitersConfig,
  context: SourceContext,
  options: ListOptions,
): Promise<{ summaries: Summary[]; complete: boolean; truncated: boolean }> {
  const budget = ListingBudget.for<Summary>(options, config.maxPostings);
  const repeats = new RepeatedPageGuard();
  let complete = false;
  for (let page = 0, offset = 0; page < config.maxPages; page += 1) {
    const query = new URLSearchParams({ offset: String(offset), limit: String(config.pageSize) });
    const url = joinUrl(
      config.baseUrl,
      `/v1/companies/${encodeURIComponent(config.companyIdentifier)}/postings?${query.toString()}`,
    );
    const { data } = await fetchVendorJson(
      context,
      { vendor: VENDOR, url, notFound: 'board', signal: options.signal },
      postingsPage,
    );
    if (repeats.isRepeat(data.content.map((summary) => summary.id))) break; // `offset` ignored
    for (const summary of data.content) budget.add(summary.id, summary);
    if (budget.truncated) break;
    offset += data.content.length;
    // An empty page before totalFound: postings were unpublished while we paged; that is the end.
    if (data.content.length === 0 || offset >= data.totalFound) {
      complete = true;
      break;
    }
    if (budget.full) break;
  }
  return { summaries: budget.items, complete, truncated: budget.truncated };
}

async function list(
  config: SmartRecruitersConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const { summaries, complete, truncated } = await listSummaries(config, context, options);
  const postings = await fetchDetails(
    summaries,
    async (summary): Promise<ListedPosting> => {
      const { data, json } = await fetchVendorJson(
        context,
        {
          vendor: VENDOR,
          url: smartRecruitersDetailUrl(config, summary),
          notFound: 'posting',
          signal: options.signal,
        },
        postingDetail,
      );
      return { externalId: summary.id, url: data.postingUrl, payload: json };
    },
    {
      vendor: VENDOR,
      url: joinUrl(
        config.baseUrl,
        `/v1/companies/${encodeURIComponent(config.companyIdentifier)}/postings`,
      ),
    },
  );
  return { postings, complete: complete && !truncated };
}

const section = lenient(z.looseObject({ title: lenient(z.string()), text: lenient(z.string()) }));

const smartRecruitersPosting = z.looseObject({
  name: titleSchema,
  company: lenient(z.looseObject({ name: lenient(z.string()) })),
  releasedDate: lenient(z.string()),
  location: lenient(
    z.looseObject({
      city: lenient(z.string()),
      region: lenient(z.string()),
      country: lenient(z.string()),
      remote: lenient(z.boolean()),
    }),
  ),
  typeOfEmployment: lenient(z.looseObject({ id: lenient(z.string()), label: lenient(z.string()) })),
  jobAd: lenient(
    z.looseObject({
      sections: lenient(z.looseObject({ jobDescription: section, qualifications: section })),
    }),
  ),
});

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = smartRecruitersPosting.safeParse(payload);
  if (!parsed.success) return null;
  const posting = parsed.data;
  // `country` is a lower-case ISO code ("us"); the helper upper-cases it.
  const location = locationFromParts(
    posting.location?.city,
    posting.location?.region,
    posting.location?.country,
  );
  const remote = posting.location?.remote;
  const sections = posting.jobAd?.sections;
  return mapped({
    ...emptyPosting(),
    title: posting.name,
    company: text(posting.company?.name),
    ...location,
    isRemote:
      remote === true ? true : remote === false || location.location !== null ? false : null,
    // The label is what the company chose to show ("Full-time", "Contract", "Internship").
    employmentType: employmentTypeFromText(
      posting.typeOfEmployment?.label ?? posting.typeOfEmployment?.id,
    ),
    // The posting API publishes no compensation.
    datePosted: postedDate(posting.releasedDate),
    description: text(sections?.jobDescription?.text),
    requirements: htmlToText(sections?.qualifications?.text),
  });
}

/** A SmartRecruiters company, read through the public posting API. */
export const smartRecruitersAdapter: SiteAdapter<typeof smartRecruitersConfig> = {
  kind: 'smartrecruiters',
  description:
    'A SmartRecruiters company (jobs.smartrecruiters.com), listed through its public posting API with one detail call per posting.',
  configSchema: smartRecruitersConfig,
  list,
  mapPosting,
};
