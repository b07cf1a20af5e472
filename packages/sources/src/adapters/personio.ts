/**
 * Personio job feed (https://developer.personio.de/docs/retrieving-open-job-positions):
 * `GET https://{company}.jobs.personio.de/xml?language=en` answers every open position in one
 * XML document, `<workzag-jobs><position>…</position></workzag-jobs>`, each job text section an
 * HTML `<value>` in CDATA under its `<name>`.
 *
 * The payload of a posting is its `<position>` as fast-xml-parser reads it: element names as
 * keys, text as strings (ids keep their leading zeros), `<position>`, `<jobDescription>` and the
 * additional `<office>` always as arrays.
 */
import { isRequirementHeading } from '@gleaner/extraction';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
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
  fetchVendorDocument,
  hostLabel,
  joinUrl,
  maxPostingsSchema,
} from './ats-http.js';
import { ListingBudget } from './ats-listing.js';
import {
  emptyPosting,
  employmentTypeFromText,
  escapeHtml,
  htmlToText,
  lenient,
  locationFromText,
  mapped,
  postedDate,
  remoteFromLocationText,
  text,
  titleSchema,
} from './ats-mapping.js';

export const personioConfig = z
  .object({
    /** The company's subdomain: `acme` in acme.jobs.personio.de. It becomes a host name label. */
    company: hostLabel,
    /** Personio serves each company's feed under one of two domains. */
    domain: z.enum(['jobs.personio.de', 'jobs.personio.com']).default('jobs.personio.de'),
    /** The language of the job texts (`language`), where the company wrote them in it. */
    language: z
      .string()
      .regex(/^[a-z]{2}$/, { message: 'must be a two-letter language code' })
      .default('en'),
    /** Overrides https://{company}.{domain} (a loopback fixture). */
    baseUrl: baseUrlSchema.optional(),
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type PersonioConfig = z.output<typeof personioConfig>;

const VENDOR = 'Personio';

export function personioBaseUrl(
  config: Pick<PersonioConfig, 'company' | 'domain' | 'baseUrl'>,
): string {
  return config.baseUrl ?? `https://${config.company.toLowerCase()}.${config.domain}`;
}

const ARRAY_PATHS = new Set([
  'workzag-jobs.position',
  'workzag-jobs.position.additionalOffices.office',
  'workzag-jobs.position.jobDescriptions.jobDescription',
]);

const parser = new XMLParser({
  ignoreAttributes: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // Text stays text: ids like "0012" and numeric-looking names are not turned into numbers.
  parseTagValue: false,
  // Numeric character references and the named HTML ones Personio's texts use (&nbsp;, &eacute;);
  // an entity declared in a DOCTYPE is refused outright (size 0), so nothing expands.
  htmlEntities: true,
  processEntities: { enabled: true, maxEntitySize: 0 },
  // The feed is four levels deep; anything much deeper is not a Personio feed.
  maxNestedTags: 16,
  isArray: (_name, path) => ARRAY_PATHS.has(String(path)),
});

/** The feed as a JS object; throws on XML that is not well-formed (SOURCE_RESPONSE_INVALID). */
export function parsePersonioXml(xml: string): unknown {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new Error(`${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col})`);
  }
  return parser.parse(xml) as unknown;
}

const feedSchema = z.object({
  'workzag-jobs': z.union([
    z.literal(''), // <workzag-jobs/>: no open positions
    z.looseObject({
      position: z
        .array(
          z.looseObject({
            id: z
              .string()
              .trim()
              .regex(/^[A-Za-z0-9_-]{1,100}$/),
          }),
        )
        .optional(),
    }),
  ]),
});

async function list(
  config: PersonioConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const baseUrl = personioBaseUrl(config);
  const url = joinUrl(
    baseUrl,
    `/xml?${new URLSearchParams({ language: config.language }).toString()}`,
  );
  const { data, json } = await fetchVendorDocument(
    context,
    {
      vendor: VENDOR,
      url,
      notFound: 'board',
      signal: options.signal,
      accept: 'application/xml, text/xml',
      format: 'XML',
    },
    parsePersonioXml,
    feedSchema,
  );
  const root = data['workzag-jobs'];
  const positions = root === '' ? [] : (root.position ?? []);
  const rawPositions = positions.length === 0 ? [] : (json as RawFeed)['workzag-jobs'].position;
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  positions.forEach((position, index) => {
    budget.add(position.id, {
      externalId: position.id,
      url: joinUrl(baseUrl, `/job/${encodeURIComponent(position.id)}`),
      payload: rawPositions[index],
    });
  });
  return { postings: budget.items, complete: !budget.truncated };
}

type RawFeed = { 'workzag-jobs': { position: unknown[] } };

const personioPosition = z.looseObject({
  name: titleSchema,
  subcompany: lenient(z.string()),
  office: lenient(z.string()),
  additionalOffices: lenient(z.looseObject({ office: lenient(z.array(z.string())) })),
  jobDescriptions: lenient(
    z.looseObject({
      jobDescription: lenient(
        z.array(lenient(z.looseObject({ name: lenient(z.string()), value: lenient(z.string()) }))),
      ),
    }),
  ),
  employmentType: lenient(z.string()),
  schedule: lenient(z.string()),
  createdAt: lenient(z.string()),
});

/**
 * `employmentType` says the contract (permanent, intern, trainee, freelance, temporary,
 * working_student); `schedule` (full-time, part-time, flexible) says the hours, which is what
 * decides between FULL_TIME and PART_TIME for a permanent contract.
 */
function employmentType(contract: string | null, schedule: string | null): string | null {
  const kind = text(contract)?.toLowerCase() ?? null;
  if (kind === null || kind === 'permanent') {
    const hours = text(schedule)?.toLowerCase();
    if (hours === 'part-time') return 'PART_TIME';
    if (hours === 'full-time') return 'FULL_TIME';
  }
  return employmentTypeFromText(kind);
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = personioPosition.safeParse(payload);
  if (!parsed.success) return null;
  const position = parsed.data;
  const location = locationFromText(position.office);
  const offices = [position.office, ...(position.additionalOffices?.office ?? [])];
  const sections = (position.jobDescriptions?.jobDescription ?? []).filter(
    (section) => section != null && text(section.value) !== null,
  ) as { name?: string | null; value: string }[];
  const heading = (name: string | null | undefined): string => {
    const title = text(name);
    return title === null ? '' : `<h3>${escapeHtml(title)}</h3>\n`;
  };
  // Sections headed like "Requirements", "Your profile", "Dein Profil" (the shared heading list).
  const requirementLines = sections
    .filter((section) => isRequirementHeading(section.name ?? ''))
    .map((section) => htmlToText(section.value))
    .filter((lines) => lines !== null);
  return mapped({
    ...emptyPosting(),
    title: position.name,
    company: text(position.subcompany),
    // An office is a name the company gives ("Berlin", "Remote", "HQ"): kept as free text.
    ...location,
    // No remote flag: an office called "Remote" among the offices says it; an office that names a
    // place and no remote one says not; no office says nothing.
    isRemote: offices.some((office) => remoteFromLocationText(text(office)) === true)
      ? true
      : remoteFromLocationText(location.location),
    employmentType: employmentType(position.employmentType ?? null, position.schedule ?? null),
    // The feed publishes no compensation.
    datePosted: postedDate(position.createdAt),
    description:
      sections.length > 0
        ? sections.map((section) => `${heading(section.name)}${section.value.trim()}`).join('\n')
        : null,
    requirements: requirementLines.length > 0 ? requirementLines.join('\n') : null,
  });
}

/** A Personio company, read through its public XML job feed. */
export const personioAdapter: SiteAdapter<typeof personioConfig> = {
  kind: 'personio',
  description:
    'A Personio company ({company}.jobs.personio.de), listed through its public XML job feed.',
  configSchema: personioConfig,
  list,
  mapPosting,
};
