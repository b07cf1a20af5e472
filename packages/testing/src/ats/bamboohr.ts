/**
 * A fixture BambooHR careers site: `GET /careers/list` answers `{ meta: { totalCount }, result }`
 * (every open position, no text or date) and `GET /careers/{id}/detail` answers
 * `{ meta, result: { jobOpening } }` with the description, `datePosted` and the rest. The real
 * site lives at https://{company}.bamboohr.com; here the fixture's origin stands for that host.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  emptyExpected,
  fromDescription,
  fullDescriptionHtml,
  generateAtsPostings,
  type AtsEmployment,
  type AtsPostingSpec,
  type AtsWorkplace,
} from './content.js';
import {
  countOption,
  notFound,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

export interface FixtureBambooHrOptions extends AtsFixtureOptions {
  /** The company subdomain the fixture stands for. Default 'acme'. */
  company?: string;
}

export interface FixtureBambooHrPosting extends FixtureAtsPosting {
  /** The position as `/careers/list` shows it (`payload` is its detail). */
  summary: Record<string, unknown>;
}

export interface FixtureBambooHr extends FixtureAtsServer {
  company: string;
  /** The open positions, in listing order; `payload` is each one's detail. */
  postings(): FixtureBambooHrPosting[];
  /** While set, the careers site answers 404 (an unknown subdomain). */
  setMissing(missing: boolean): void;
}

const EMPLOYMENT_LABELS: Record<AtsEmployment, string> = {
  FULL_TIME: 'Full-Time',
  PART_TIME: 'Part-Time',
  CONTRACTOR: 'Contractor',
  INTERN: 'Intern',
  TEMPORARY: 'Temporary',
};

/** BambooHR's `locationType`: "0" on-site, "1" remote, "2" hybrid. */
const LOCATION_TYPES: Record<AtsWorkplace, string> = {
  remote: '1',
  hybrid: '2',
  'on-site': '0',
  unspecified: '0',
};

function compensation(spec: AtsPostingSpec): string | null {
  const salary = spec.salary;
  if (salary === null) return null;
  return `${salary.min.toLocaleString('en-US')} - ${salary.max.toLocaleString('en-US')} ${salary.currency} per ${salary.period}`;
}

function build(spec: AtsPostingSpec, origin: string): FixtureBambooHrPosting {
  const id = String(40 + spec.index * 3);
  const url = `${origin}/careers/${id}`;
  const place = spec.place;
  const country = place ?? spec.remoteCountry;
  // Half the positions leave `isRemote` null, so `locationType` has to decide.
  const isRemote =
    spec.index % 2 === 0
      ? null
      : spec.workplace === 'unspecified'
        ? null
        : spec.workplace === 'remote';
  const atsLocation = {
    country: country.countryName,
    state: place?.region ?? null,
    province: null,
    city: place?.city ?? null,
  };
  const summary: Record<string, unknown> = {
    id,
    jobOpeningName: spec.title,
    departmentId: String(100 + spec.department.length),
    departmentLabel: spec.department,
    employmentStatusLabel: spec.employment === null ? null : EMPLOYMENT_LABELS[spec.employment],
    location: { city: place?.city ?? null, state: place?.region ?? null },
    atsLocation,
    isRemote,
    locationType: LOCATION_TYPES[spec.workplace],
  };
  const description = fullDescriptionHtml(spec);
  const datePosted = new Date(spec.publishedAt).toISOString().slice(0, 10);
  const detail: Record<string, unknown> = {
    meta: { scheme: 'https' },
    result: {
      jobOpening: {
        jobOpeningShareUrl: url,
        jobOpeningName: spec.title,
        jobOpeningStatus: 'Open',
        departmentId: summary.departmentId,
        departmentLabel: spec.department,
        employmentStatusLabel: summary.employmentStatusLabel,
        location: {
          city: place?.city ?? null,
          state: place?.region ?? null,
          postalCode: null,
          addressCountry: place?.countryName ?? null,
        },
        atsLocation,
        isRemote,
        locationType: LOCATION_TYPES[spec.workplace],
        datePosted,
        minimumExperience: 'Experienced',
        compensation: compensation(spec),
        description,
      },
    },
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    location: [place?.city ?? null, place?.region ?? null, country.countryName]
      .filter((part) => part !== null)
      .join(', '),
    locationCity: place?.city ?? null,
    locationRegion: place?.region ?? null,
    locationCountry: country.countryName,
    isRemote: spec.workplace === 'remote',
    employmentType: spec.employment,
    datePosted,
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
  return { externalId: id, url, payload: detail, expected, spec, summary };
}

export async function createFixtureBambooHr(
  options: FixtureBambooHrOptions = {},
): Promise<FixtureBambooHr> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const company = options.company ?? 'acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let postings: FixtureBambooHrPosting[] = [];
  let missing = false;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => build(spec, origin));
    const byId = new Map(postings.map((posting) => [posting.externalId, posting]));
    return ({ path }) => {
      if (missing) return { status: 404, body: '<!DOCTYPE html><h1>Page not found</h1>' };
      if (path === '/careers/list') {
        return {
          status: 200,
          body: {
            meta: { totalCount: postings.length },
            result: postings.map((posting) => posting.summary),
          },
        };
      }
      const detail = /^\/careers\/([^/]+)\/detail$/.exec(path);
      const posting = detail === null ? undefined : byId.get(detail[1] ?? '');
      return posting === undefined ? notFound() : { status: 200, body: posting.payload };
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
