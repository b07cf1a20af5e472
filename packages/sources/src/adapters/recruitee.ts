/**
 * Recruitee careers site API (https://docs.recruitee.com/reference/offers): every published
 * offer in one request, `GET https://{company}.recruitee.com/api/offers/`.
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
  fetchVendorJson,
  hostLabel,
  joinUrl,
  maxPostingsSchema,
} from './ats-http.js';
import { ListingBudget } from './ats-listing.js';
import {
  amount,
  currencyCode,
  emptyPosting,
  employmentTypeFromText,
  htmlToText,
  lenient,
  locationFromParts,
  locationFromText,
  mapped,
  postedDate,
  salaryPeriodFromText,
  text,
  titleSchema,
} from './ats-mapping.js';

export const recruiteeConfig = z
  .object({
    /** The company's subdomain: `acme` in acme.recruitee.com. It becomes a host name label. */
    company: hostLabel,
    /** Overrides https://{company}.recruitee.com (a custom careers domain, a loopback fixture). */
    baseUrl: baseUrlSchema.optional(),
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type RecruiteeConfig = z.output<typeof recruiteeConfig>;

const VENDOR = 'Recruitee';

export function recruiteeBaseUrl(config: Pick<RecruiteeConfig, 'company' | 'baseUrl'>): string {
  return config.baseUrl ?? `https://${config.company.toLowerCase()}.recruitee.com`;
}

const offersResponse = z.looseObject({
  offers: z.array(
    z.looseObject({
      id: z.int().nonnegative(),
      careers_url: z.url({ protocol: /^https?$/ }),
    }),
  ),
});

async function list(
  config: RecruiteeConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const url = joinUrl(recruiteeBaseUrl(config), '/api/offers/');
  const { data, json } = await fetchVendorJson(
    context,
    { vendor: VENDOR, url, notFound: 'board', signal: options.signal },
    offersResponse,
  );
  const rawOffers = (json as { offers: unknown[] }).offers;
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  data.offers.forEach((offer, index) => {
    budget.add(String(offer.id), {
      externalId: String(offer.id),
      url: offer.careers_url,
      payload: rawOffers[index],
    });
  });
  return { postings: budget.items, complete: !budget.truncated };
}

const money = lenient(z.union([z.number(), z.string()]));

const recruiteeOffer = z.looseObject({
  title: titleSchema,
  company_name: lenient(z.string()),
  location: lenient(z.string()),
  city: lenient(z.string()),
  state_name: lenient(z.string()),
  country: lenient(z.string()),
  country_code: lenient(z.string()),
  remote: lenient(z.boolean()),
  employment_type_code: lenient(z.string()),
  description: lenient(z.string()),
  requirements: lenient(z.string()),
  published_at: lenient(z.string()),
  salary: lenient(
    z.looseObject({
      min: money,
      max: money,
      period: lenient(z.string()),
      currency: lenient(z.string()),
    }),
  ),
});

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = recruiteeOffer.safeParse(payload);
  if (!parsed.success) return null;
  const offer = parsed.data;
  const structured = locationFromParts(
    offer.city,
    offer.state_name,
    offer.country_code ?? offer.country,
  );
  const location = structured.location !== null ? structured : locationFromText(offer.location);
  const salaryMin = amount(offer.salary?.min);
  const salaryMax = amount(offer.salary?.max);
  const hasSalary = salaryMin !== null || salaryMax !== null;
  return mapped({
    ...emptyPosting(),
    title: offer.title,
    company: text(offer.company_name),
    ...location,
    isRemote:
      typeof offer.remote === 'boolean' ? offer.remote : location.location !== null ? false : null,
    // fulltime, fulltime_permanent, parttime_fixed_term, contract, freelance, internship, …
    employmentType: employmentTypeFromText(offer.employment_type_code),
    salaryMin,
    salaryMax,
    salaryCurrency: hasSalary ? currencyCode(offer.salary?.currency) : null,
    salaryPeriod: hasSalary
      ? (salaryPeriodFromText(offer.salary?.period) ??
        text(offer.salary?.period)?.toLowerCase() ??
        null)
      : null,
    datePosted: postedDate(offer.published_at), // "2026-10-12 14:03:11 UTC"
    description: text(offer.description),
    requirements: htmlToText(offer.requirements),
  });
}

/** A Recruitee careers site, read through its public offers API. */
export const recruiteeAdapter: SiteAdapter<typeof recruiteeConfig> = {
  kind: 'recruitee',
  description:
    'A Recruitee careers site ({company}.recruitee.com), listed through its public offers API.',
  configSchema: recruiteeConfig,
  list,
  mapPosting,
};
