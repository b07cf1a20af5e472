/**
 * Breezy HR careers site (the public JSON behind https://{company}.breezy.hr, the feed Breezy's
 * own jobs widget reads): `GET /json?verbose=true` answers an array of every published position,
 * `verbose` adding each one's `description`. Breezy's v3 REST API needs a customer token and is
 * not used.
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
  emptyPosting,
  employmentTypeFromText,
  lenient,
  locationFromParts,
  locationFromText,
  mapped,
  postedDate,
  salaryFromText,
  text,
  titleSchema,
} from './ats-mapping.js';

export const breezyConfig = z
  .object({
    /** The company's subdomain: `acme` in acme.breezy.hr. It becomes a host name label. */
    company: hostLabel,
    /** Overrides https://{company}.breezy.hr (a loopback fixture in tests). */
    baseUrl: baseUrlSchema.optional(),
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type BreezyConfig = z.output<typeof breezyConfig>;

const VENDOR = 'Breezy HR';

export function breezyBaseUrl(config: Pick<BreezyConfig, 'company' | 'baseUrl'>): string {
  return config.baseUrl ?? `https://${config.company.toLowerCase()}.breezy.hr`;
}

const positionsResponse = z.array(
  z.looseObject({
    id: z.string().trim().min(1).max(200),
    url: z.url({ protocol: /^https?$/ }),
  }),
);

async function list(
  config: BreezyConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const url = joinUrl(breezyBaseUrl(config), '/json?verbose=true');
  const { data, json } = await fetchVendorJson(
    context,
    { vendor: VENDOR, url, notFound: 'board', signal: options.signal },
    positionsResponse,
  );
  const raw = json as unknown[];
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  data.forEach((position, index) => {
    budget.add(position.id, { externalId: position.id, url: position.url, payload: raw[index] });
  });
  return { postings: budget.items, complete: !budget.truncated };
}

/** Breezy writes a state as `{ id, name }` on most boards and as a plain string on some. */
const named = lenient(
  z.union([z.string(), z.looseObject({ id: lenient(z.string()), name: lenient(z.string()) })]),
);

function nameOf(value: z.output<typeof named>): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? text(value) : (text(value.name) ?? text(value.id));
}

const breezyPosition = z.looseObject({
  name: titleSchema,
  published_date: lenient(z.string()),
  salary: lenient(z.string()),
  type: lenient(z.looseObject({ id: lenient(z.string()), name: lenient(z.string()) })),
  location: lenient(
    z.looseObject({
      city: lenient(z.string()),
      state: named,
      country: named,
      is_remote: lenient(z.boolean()),
      name: lenient(z.string()),
    }),
  ),
  company: lenient(z.looseObject({ name: lenient(z.string()) })),
  description: lenient(z.string()),
});

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = breezyPosition.safeParse(payload);
  if (!parsed.success) return null;
  const position = parsed.data;
  const where = position.location;
  // The country's `id` is its ISO code ("US"), upper-cased by the helper; the name is a fallback.
  const country =
    where?.country !== null && typeof where?.country === 'object'
      ? (text(where.country.id) ?? text(where.country.name))
      : nameOf(where?.country);
  const structured = locationFromParts(where?.city, nameOf(where?.state), country);
  const location = structured.location !== null ? structured : locationFromText(where?.name);
  const remote = where?.is_remote;
  return mapped({
    ...emptyPosting(),
    title: position.name,
    company: text(position.company?.name),
    ...location,
    isRemote: typeof remote === 'boolean' ? remote : location.location !== null ? false : null,
    // The label the company shows ("Full-Time", "Contract", "Internship"), else the code.
    employmentType: employmentTypeFromText(position.type?.name ?? position.type?.id),
    // `salary` is free text ("USD 80,000 - 95,000 / year").
    ...salaryFromText(position.salary, location.locationCountry),
    datePosted: postedDate(position.published_date),
    description: text(position.description),
  });
}

/** A Breezy HR careers site, read through its public positions JSON. */
export const breezyAdapter: SiteAdapter<typeof breezyConfig> = {
  kind: 'breezy',
  description:
    'A Breezy HR careers site ({company}.breezy.hr), listed through its public positions JSON with descriptions.',
  configSchema: breezyConfig,
  list,
  mapPosting,
};
