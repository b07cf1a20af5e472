/**
 * A fixture Breezy HR careers site: `GET /json` answers an array of every published position;
 * with `verbose=true` each one carries its `description`. The real site lives at
 * https://{company}.breezy.hr; here the fixture's origin stands for that host.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  createRandom,
  emptyExpected,
  escapeHtml,
  fromDescription,
  fullDescriptionHtml,
  generateAtsPostings,
  hex,
  mixSeed,
  type AtsEmployment,
  type AtsPostingSpec,
} from './content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

export interface FixtureBreezyOptions extends AtsFixtureOptions {
  /** The company subdomain the fixture stands for. Default 'acme'. */
  company?: string;
}

export interface FixtureBreezy extends FixtureAtsServer {
  company: string;
  /** The published positions, in listing order (`payload` as `verbose=true` shows it). */
  postings(): FixtureAtsPosting[];
  /** While set, the careers site answers 404 ("Career portal not found"). */
  setMissing(missing: boolean): void;
}

const TYPES: Record<AtsEmployment, { id: string; name: string }> = {
  FULL_TIME: { id: 'fullTime', name: 'Full-Time' },
  PART_TIME: { id: 'partTime', name: 'Part-Time' },
  CONTRACTOR: { id: 'contract', name: 'Contract' },
  INTERN: { id: 'internship', name: 'Internship' },
  TEMPORARY: { id: 'temporary', name: 'Temporary' },
};

function salaryText(spec: AtsPostingSpec): string {
  const salary = spec.salary;
  return salary === null
    ? ''
    : `${salary.currency} ${salary.min.toLocaleString('en-US')} - ${salary.max.toLocaleString('en-US')} / ${salary.period}`;
}

function build(spec: AtsPostingSpec, origin: string, seed: number): FixtureAtsPosting {
  const random = createRandom(mixSeed(seed, spec.index + 0xb4ee));
  const id = hex(random, 12);
  const friendlyId = `${id}-${spec.slug}`;
  const url = `${origin}/p/${friendlyId}`;
  const place = spec.place;
  const country = place ?? spec.remoteCountry;
  // Some boards write the state as a plain string.
  const state =
    place === null || place.region === null
      ? null
      : spec.index % 3 === 0
        ? place.region
        : { id: place.region, name: place.region };
  const description = fullDescriptionHtml(spec);
  const position: Record<string, unknown> = {
    id,
    friendly_id: friendlyId,
    name: spec.title,
    url,
    published_date: new Date(spec.publishedAt).toISOString(),
    type: spec.employment === null ? { id: 'other', name: null } : TYPES[spec.employment],
    location: {
      country: { name: country.countryName, id: country.country },
      state,
      city: place?.city ?? null,
      is_remote: spec.workplace === 'remote',
      name:
        place === null
          ? `Remote, ${country.countryName}`
          : [place.city, place.region, country.country].filter((part) => part !== null).join(', '),
    },
    department: spec.department,
    salary: salaryText(spec),
    company: {
      name: spec.company,
      logo_url: null,
      friendly_id: spec.company.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
    },
    description,
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    company: spec.company,
    location: [place?.city ?? null, place?.region ?? null, country.country]
      .filter((part) => part !== null)
      .join(', '),
    locationCity: place?.city ?? null,
    locationRegion: place?.region ?? null,
    locationCountry: country.country,
    isRemote: spec.workplace === 'remote',
    // 'other' is what Breezy writes when no type was chosen.
    employmentType: spec.employment ?? 'OTHER',
    datePosted: new Date(spec.publishedAt).toISOString(),
    description,

    // No requirements field: what the description states; the salary from the pay field
    // when the position has one, else from the description.
    ...fromDescription(spec),
    ...(spec.salary && {
      salaryMin: spec.salary.min,
      salaryMax: spec.salary.max,
      salaryCurrency: spec.salary.currency,
      salaryPeriod: spec.salary.period,
    }),
  };
  return { externalId: id, url, payload: position, expected, spec };
}

export async function createFixtureBreezy(
  options: FixtureBreezyOptions = {},
): Promise<FixtureBreezy> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const company = options.company ?? 'acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let postings: FixtureAtsPosting[] = [];
  let missing = false;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => build(spec, origin, seed));
    return ({ path, query }) => {
      if (missing || path !== '/json') {
        return {
          status: 404,
          body: `<!DOCTYPE html><h1>Career portal not found</h1><p>${escapeHtml(company)}</p>`,
        };
      }
      const verbose = query.get('verbose') === 'true';
      return {
        status: 200,
        body: postings.map((posting) => {
          if (verbose) return posting.payload;
          const { description: _description, ...brief } = posting.payload;
          return brief;
        }),
      };
    };
  });

  return {
    ...server,
    company,
    postings: () => postings,
    setMissing: (value) => {
      missing = value;
    },
  };
}
