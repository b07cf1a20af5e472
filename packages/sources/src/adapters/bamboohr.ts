/**
 * BambooHR careers site (the public JSON behind https://{company}.bamboohr.com/careers): `GET
 * /careers/list` answers `{ meta: { totalCount }, result }`, every open position at once, with
 * titles, departments and locations but no text or date. `GET /careers/{id}/detail` answers
 * `{ result: { jobOpening } }` with the description, `datePosted` and the rest, so this adapter
 * makes one detail call per posting, one at a time; the detail is the payload.
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
  fetchDetails,
  fetchVendorJson,
  hostLabel,
  joinUrl,
  maxPostingsSchema,
} from './ats-http.js';
import { ListingBudget } from './ats-listing.js';
import {
  emptyPosting,
  employmentTypeFromText,
  lenient,
  locationFromParts,
  mapped,
  postedDate,
  salaryFromText,
  text,
  titleSchema,
  vendorIdSchema,
} from './ats-mapping.js';

export const bambooHrConfig = z
  .object({
    /** The company's subdomain: `acme` in acme.bamboohr.com. It becomes a host name label. */
    company: hostLabel,
    /** Overrides https://{company}.bamboohr.com (a loopback fixture in tests). */
    baseUrl: baseUrlSchema.optional(),
    /** Budget of postings per run, and so of detail calls. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type BambooHrConfig = z.output<typeof bambooHrConfig>;

const VENDOR = 'BambooHR';

export function bambooHrBaseUrl(config: Pick<BambooHrConfig, 'company' | 'baseUrl'>): string {
  return config.baseUrl ?? `https://${config.company.toLowerCase()}.bamboohr.com`;
}

const listResponse = z.looseObject({
  result: z.array(z.looseObject({ id: vendorIdSchema })),
});

const detailResponse = z.looseObject({ result: z.looseObject({ jobOpening: z.looseObject({}) }) });

/** The public page of a position: what the careers site links to. */
function postingUrl(config: BambooHrConfig, id: string): string {
  return joinUrl(bambooHrBaseUrl(config), `/careers/${encodeURIComponent(id)}`);
}

async function list(
  config: BambooHrConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const url = joinUrl(bambooHrBaseUrl(config), '/careers/list');
  const { data } = await fetchVendorJson(
    context,
    { vendor: VENDOR, url, notFound: 'board', signal: options.signal },
    listResponse,
  );
  const budget = ListingBudget.for<string>(options, config.maxPostings);
  for (const opening of data.result) budget.add(String(opening.id), String(opening.id));
  const postings = await fetchDetails(
    budget.items,
    async (id): Promise<ListedPosting> => {
      const { json } = await fetchVendorJson(
        context,
        {
          vendor: VENDOR,
          url: joinUrl(bambooHrBaseUrl(config), `/careers/${encodeURIComponent(id)}/detail`),
          notFound: 'posting',
          signal: options.signal,
        },
        detailResponse,
      );
      return { externalId: id, url: postingUrl(config, id), payload: json };
    },
    { vendor: VENDOR, url },
  );
  return { postings, complete: !budget.truncated };
}

const place = lenient(
  z.looseObject({
    city: lenient(z.string()),
    state: lenient(z.string()),
    province: lenient(z.string()),
    country: lenient(z.string()),
    addressCountry: lenient(z.string()),
  }),
);

const bambooHrDetail = z.looseObject({
  result: z.looseObject({
    jobOpening: z.looseObject({
      jobOpeningName: titleSchema,
      description: lenient(z.string()),
      datePosted: lenient(z.string()),
      compensation: lenient(z.string()),
      employmentStatusLabel: lenient(z.string()),
      location: place,
      atsLocation: place,
      isRemote: lenient(z.boolean()),
      locationType: lenient(z.union([z.string(), z.number()])),
    }),
  }),
});

/** BambooHR's `locationType`: "0" on-site, "1" remote, "2" hybrid. */
function remoteFromLocationType(value: string | number | null | undefined): boolean | null {
  switch (String(value ?? '')) {
    case '1':
      return true;
    case '0':
    case '2':
      return false;
    default:
      return null;
  }
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = bambooHrDetail.safeParse(payload);
  if (!parsed.success) return null;
  const opening = parsed.data.result.jobOpening;
  // `location` is the address the company typed; `atsLocation` the structured one it picked.
  const location = locationFromParts(
    opening.location?.city ?? opening.atsLocation?.city,
    opening.location?.state ?? opening.atsLocation?.state ?? opening.atsLocation?.province,
    opening.location?.addressCountry ?? opening.atsLocation?.country,
  );
  const remote =
    typeof opening.isRemote === 'boolean'
      ? opening.isRemote
      : remoteFromLocationType(opening.locationType);
  return mapped({
    ...emptyPosting(),
    title: opening.jobOpeningName,
    // The careers JSON does not name the company.
    ...location,
    // `compensation` is free text ("80,000 - 95,000 USD per year").
    ...salaryFromText(opening.compensation, location.locationCountry),
    isRemote: remote ?? (location.location !== null ? false : null),
    employmentType: employmentTypeFromText(opening.employmentStatusLabel),
    datePosted: postedDate(opening.datePosted),
    description: text(opening.description),
  });
}

/** A BambooHR careers site, read through its public careers JSON. */
export const bambooHrAdapter: SiteAdapter<typeof bambooHrConfig> = {
  kind: 'bamboohr',
  description:
    'A BambooHR careers site ({company}.bamboohr.com/careers), listed through its public careers JSON with one detail call per posting.',
  configSchema: bambooHrConfig,
  list,
  mapPosting,
};
