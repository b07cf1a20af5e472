/**
 * A fixture Workable job widget API: `GET /api/v1/widget/accounts/{subdomain}` answers
 * `{ name, description, jobs }`, every published job at once; with `details=true` each job also
 * carries its `description`, `requirements` and `benefits` HTML. The real API lives at
 * https://apply.workable.com; here the fixture's origin stands for it.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  EMPLOYMENT_LABELS,
  emptyExpected,
  generateAtsPostings,
  htmlList,
  type AtsPostingSpec,
} from './content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

export interface FixtureWorkableOptions extends AtsFixtureOptions {
  /** The account subdomain the fixture stands for. Default 'acme'. */
  subdomain?: string;
}

export interface FixtureWorkable extends FixtureAtsServer {
  subdomain: string;
  /** The published jobs, in listing order (payloads as listed with `details=true`). */
  postings(): FixtureAtsPosting[];
  /** While set, the account answers 404 (an unknown subdomain). */
  setMissing(missing: boolean): void;
}

/** Workable writes dates as plain dates: "2026-10-12". */
function workableDate(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

function build(spec: AtsPostingSpec, origin: string): FixtureAtsPosting {
  // Workable shortcodes: ten upper-case hex digits.
  const shortcode = (0xa1b2c3d4e5 + spec.index * 7919).toString(16).toUpperCase();
  const url = `${origin}/j/${shortcode}`;
  const place = spec.place;
  const country = place ?? spec.remoteCountry;
  // A remote job that names no office still names the country it hires in.
  const location = {
    country: country.countryName,
    countryCode: country.country,
    city: place?.city ?? '',
    region: place?.region ?? '',
    hidden: false,
  };
  const description = `${spec.introHtml}\n<h3>What you will do</h3>\n${htmlList(spec.responsibilities)}`;
  const requirements = spec.requirements.length > 0 ? htmlList(spec.requirements) : '';
  const benefits = htmlList(spec.benefits);
  const job: Record<string, unknown> = {
    title: spec.title,
    shortcode,
    code: '',
    employment_type: spec.employment === null ? '' : EMPLOYMENT_LABELS[spec.employment],
    telecommuting: spec.workplace === 'remote',
    department: spec.department,
    url,
    shortlink: url,
    application_url: `${url}/apply`,
    published_on: workableDate(spec.publishedAt),
    created_at: workableDate(spec.publishedAt - 86_400_000),
    country: country.countryName,
    city: place?.city ?? '',
    state: place?.region ?? '',
    education: '',
    experience: 'Mid-Senior level',
    function: spec.department,
    industry: 'Computer Software',
    locations: [location],
    description,
    requirements,
    benefits,
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    location: [place?.city, place?.region, country.country]
      .filter((part) => part != null)
      .join(', '),
    locationCity: place?.city ?? null,
    locationRegion: place?.region ?? null,
    locationCountry: country.country,
    isRemote: spec.workplace === 'remote',
    employmentType: spec.employment,
    datePosted: workableDate(spec.publishedAt),
    // The hosted page's order: description, requirements, benefits, each under its heading.
    description: [
      description,
      ...(requirements === '' ? [] : ['<h3>Requirements</h3>', requirements]),
      '<h3>Benefits</h3>',
      benefits,
    ].join('\n'),
    requirements: spec.requirements.length > 0 ? spec.requirements.join('\n') : null,
  };
  return { externalId: shortcode, url, payload: job, expected, spec };
}

const DETAIL_FIELDS = ['description', 'requirements', 'benefits'];

export async function createFixtureWorkable(
  options: FixtureWorkableOptions = {},
): Promise<FixtureWorkable> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const subdomain = options.subdomain ?? 'acme';
  const companyName = options.companyName ?? companyForSeed(seed);
  const specs = generateAtsPostings(count, seed, companyName);
  let postings: FixtureAtsPosting[] = [];
  let missing = false;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => build(spec, origin));
    return ({ path, query }) => {
      if (missing || path !== `/api/v1/widget/accounts/${subdomain}`) {
        return { status: 404, body: { error: 'Not found' } };
      }
      const details = query.get('details') === 'true';
      return {
        status: 200,
        body: {
          name: companyName,
          description: `<p>${companyName} is hiring.</p>`,
          jobs: postings.map((posting) =>
            details
              ? posting.payload
              : Object.fromEntries(
                  Object.entries(posting.payload).filter(([key]) => !DETAIL_FIELDS.includes(key)),
                ),
          ),
        },
      };
    };
  });

  return {
    ...server,
    subdomain,
    postings: () => postings,
    setMissing: (value) => {
      missing = value;
    },
  };
}
