/**
 * A fixture Recruitee careers site API: `GET /api/offers/` answers `{ offers }`, every published
 * offer at once. The real API lives at https://{company}.recruitee.com; here the fixture's origin
 * stands for that host.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  emptyExpected,
  generateAtsPostings,
  htmlList,
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

export interface FixtureRecruiteeOptions extends AtsFixtureOptions {
  /** The company subdomain the fixture stands for. Default 'acme'. */
  company?: string;
}

export interface FixtureRecruitee extends FixtureAtsServer {
  company: string;
  /** The published offers, in listing order. */
  postings(): FixtureAtsPosting[];
  /** While set, the careers site answers 404 (an unknown subdomain). */
  setMissing(missing: boolean): void;
}

const EMPLOYMENT_CODES: Record<AtsEmployment, string> = {
  FULL_TIME: 'fulltime_permanent',
  PART_TIME: 'parttime',
  CONTRACTOR: 'contract',
  INTERN: 'internship',
  TEMPORARY: 'temporary',
};

/** Recruitee's timestamps: "2026-10-12 14:03:11 UTC". */
function recruiteeTime(epochMs: number): string {
  return `${new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function build(spec: AtsPostingSpec, origin: string): FixtureAtsPosting {
  const id = 1_200_000 + spec.index;
  const slug = `${spec.slug}-${spec.index + 1}`;
  const careersUrl = `${origin}/o/${slug}`;
  const place = spec.place;
  const country = place ?? spec.remoteCountry;
  const description = `${spec.introHtml}\n<h3>What you will do</h3>\n${htmlList(spec.responsibilities)}\n<h3>Benefits</h3>\n${htmlList(spec.benefits)}`;
  const salary = spec.salary;
  // Recruitee sends amounts as strings on some accounts and numbers on others.
  const money = (value: number): number | string => (spec.index % 2 === 0 ? String(value) : value);
  const offer: Record<string, unknown> = {
    id,
    slug,
    position: spec.index,
    status: 'published',
    title: spec.title,
    careers_url: careersUrl,
    careers_apply_url: `${careersUrl}/c/new`,
    location:
      place === null
        ? `Remote, ${country.countryName}`
        : [place.city, place.region, place.countryName].filter((part) => part !== null).join(', '),
    city: place?.city ?? '',
    state_name: place?.region ?? '',
    state_code: '',
    country: country.countryName,
    country_code: country.country,
    postal_code: '',
    remote: spec.workplace === 'remote',
    hybrid: spec.workplace === 'hybrid',
    on_site: spec.workplace === 'on-site',
    ...(spec.employment === null
      ? {}
      : { employment_type_code: EMPLOYMENT_CODES[spec.employment] }),
    category_code: 'it',
    department: spec.department,
    company_name: spec.company,
    description,
    requirements: spec.requirements.length > 0 ? htmlList(spec.requirements) : '',
    published_at: recruiteeTime(spec.publishedAt),
    created_at: recruiteeTime(spec.publishedAt - 86_400_000),
    updated_at: recruiteeTime(spec.updatedAt),
    salary:
      salary === null
        ? { min: null, max: null, period: null, currency: null }
        : {
            min: money(salary.min),
            max: money(salary.max),
            period: salary.period,
            currency: salary.currency,
          },
    min_hours: spec.employment === 'PART_TIME' ? 20 : 40,
    max_hours: 40,
    experience_code: 'mid_level',
    education_code: 'bachelor_degree',
    tags: [],
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    company: spec.company,
    location:
      place === null
        ? country.country
        : [place.city, place.region, place.country].filter((part) => part !== null).join(', '),
    locationCity: place?.city ?? null,
    locationRegion: place?.region ?? null,
    locationCountry: country.country,
    isRemote: spec.workplace === 'remote',
    employmentType: spec.employment,
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary?.currency ?? null,
    salaryPeriod: salary?.period ?? null,
    datePosted: new Date(Math.floor(spec.publishedAt / 1000) * 1000).toISOString(),
    description,
    requirements: spec.requirements.length > 0 ? spec.requirements.join('\n') : null,
  };
  return { externalId: String(id), url: careersUrl, payload: offer, expected, spec };
}

export async function createFixtureRecruitee(
  options: FixtureRecruiteeOptions = {},
): Promise<FixtureRecruitee> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const company = options.company ?? 'acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let postings: FixtureAtsPosting[] = [];
  let missing = false;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => build(spec, origin));
    return ({ path }) => {
      if (missing || (path !== '/api/offers/' && path !== '/api/offers')) {
        return { status: 404, body: { error: 'Not found' } };
      }
      return { status: 200, body: { offers: postings.map((posting) => posting.payload) } };
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
