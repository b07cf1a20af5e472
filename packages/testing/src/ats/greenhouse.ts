/**
 * A fixture Greenhouse job board API: `GET /v1/boards/{token}/jobs[?content=true]` (the whole
 * board, `{ jobs, meta: { total } }`) and `GET /v1/boards/{token}/jobs/{id}[?pay_transparency=true]`,
 * with `content` HTML-escaped as Greenhouse sends it.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  EMPLOYMENT_LABELS,
  emptyExpected,
  escapeHtml,
  fromDescription,
  fullDescriptionHtml,
  isoSeconds,
  isoWithOffset,
  generateAtsPostings,
  type AtsPostingSpec,
} from './content.js';
import {
  countOption,
  notFound,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

export interface FixtureGreenhouseOptions extends AtsFixtureOptions {
  /** Default 'acme'. */
  boardToken?: string;
}

export interface FixtureGreenhousePosting extends FixtureAtsPosting {
  /** The single-job answer with `pay_transparency=true`: the payload when `payRanges` is on. */
  detailWithPay: Record<string, unknown>;
  /** The mapped record of `detailWithPay` (salary from its pay range). */
  expectedWithPay: ExpectedPostingFields;
}

export interface FixtureGreenhouse extends FixtureAtsServer {
  boardToken: string;
  /** The board's jobs, in listing order. */
  postings(): FixtureGreenhousePosting[];
  /** While set, every URL of the board answers 404 (a deleted or mistyped board). */
  setMissing(missing: boolean): void;
}

const PERIOD_TITLES = {
  year: 'Annual base salary',
  month: 'Monthly stipend',
  hour: 'Hourly rate',
} as const;

function locationName(spec: AtsPostingSpec): string {
  const place = spec.place;
  if (spec.workplace === 'remote')
    return place === null ? `Remote - ${spec.remoteCountry.country}` : `${place.city} or Remote`;
  const name = `${place!.city}, ${place!.region ?? place!.countryName}`;
  return spec.workplace === 'hybrid' ? `${name} (Hybrid)` : name;
}

function buildPosting(
  spec: AtsPostingSpec,
  origin: string,
  boardToken: string,
): FixtureGreenhousePosting {
  const id = 4_100_000_000 + spec.index * 1117;
  const url = `${origin}/${boardToken}/jobs/${id}`;
  // Boards add custom fields; many carry an "Employment Type" (single or multi select).
  const style = spec.index % 4;
  const metadata =
    style === 0
      ? null
      : [
          { id: 9_100_001, name: 'Cost Center', value: null, value_type: 'short_text' },
          ...(spec.employment === null
            ? []
            : [
                {
                  id: 9_100_002,
                  name: 'Employment Type',
                  value:
                    style === 3
                      ? [EMPLOYMENT_LABELS[spec.employment]]
                      : EMPLOYMENT_LABELS[spec.employment],
                  value_type: style === 3 ? 'multi_select' : 'single_select',
                },
              ]),
        ];
  const job: Record<string, unknown> = {
    absolute_url: url,
    data_compliance: [
      {
        type: 'gdpr',
        requires_consent: false,
        requires_processing_consent: false,
        requires_retention_consent: false,
        retention_period: null,
      },
    ],
    internal_job_id: 5_000_000 + spec.index,
    location: { name: locationName(spec) },
    metadata,
    id,
    updated_at: isoWithOffset(spec.updatedAt, spec.utcOffsetMinutes),
    requisition_id: `REQ-${1000 + spec.index}`,
    title: spec.title,
    company_name: spec.company,
    first_published: isoWithOffset(spec.publishedAt, spec.utcOffsetMinutes),
    language: 'en',
    content: escapeHtml(fullDescriptionHtml(spec)),
    departments: [
      {
        id: 4_000_000 + spec.department.length,
        name: spec.department,
        child_ids: [],
        parent_id: null,
      },
    ],
    offices:
      spec.place === null
        ? []
        : [
            {
              id: 4_100_000 + spec.place.city.length,
              name: spec.place.city,
              location: `${spec.place.city}, ${spec.place.countryName}`,
              child_ids: [],
              parent_id: null,
            },
          ],
  };
  const salary = spec.salary;
  const detailWithPay = {
    ...job,
    pay_input_ranges:
      salary === null
        ? []
        : [
            {
              min_cents: Math.round(salary.min * 100),
              max_cents: Math.round(salary.max * 100),
              currency_type: salary.currency,
              title: PERIOD_TITLES[salary.period],
              blurb: '<p>The final offer depends on experience and location.</p>',
            },
          ],
  };
  const location = locationName(spec);
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    company: spec.company,
    location, // free text: Greenhouse gives no parts
    isRemote: spec.workplace === 'remote',
    employmentType: metadata === null ? null : spec.employment,
    datePosted: isoSeconds(spec.publishedAt),
    description: fullDescriptionHtml(spec),
    // Greenhouse has no requirements field, and pay only with `payRanges`: the description's.
    ...fromDescription(spec),
  };
  return {
    externalId: String(id),
    url,
    payload: job,
    expected,
    spec,
    detailWithPay,
    expectedWithPay: {
      ...expected,
      salaryMin: salary?.min ?? null,
      salaryMax: salary?.max ?? null,
      salaryCurrency: salary?.currency ?? null,
      salaryPeriod: salary?.period ?? null,
    },
  };
}

/** Fields the list endpoint leaves out without `content=true`. */
function withoutContent(job: Record<string, unknown>): Record<string, unknown> {
  const { content: _content, departments: _departments, offices: _offices, ...rest } = job;
  return rest;
}

export async function createFixtureGreenhouse(
  options: FixtureGreenhouseOptions = {},
): Promise<FixtureGreenhouse> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const boardToken = options.boardToken ?? 'acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let postings: FixtureGreenhousePosting[] = [];
  let missing = false;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => buildPosting(spec, origin, boardToken));
    const byId = new Map(postings.map((posting) => [posting.externalId, posting]));
    const prefix = `/v1/boards/${boardToken}/jobs`;
    return ({ path, query }) => {
      if (missing || !path.startsWith(prefix))
        return { status: 404, body: { status: 404, error: 'Job board not found' } };
      if (path === prefix || path === `${prefix}/`) {
        const content = query.get('content') === 'true';
        return {
          status: 200,
          body: {
            jobs: postings.map((posting) =>
              content ? posting.payload : withoutContent(posting.payload),
            ),
            meta: { total: postings.length },
          },
        };
      }
      const posting = byId.get(path.slice(prefix.length + 1));
      if (posting === undefined) return notFound();
      return {
        status: 200,
        body: query.get('pay_transparency') === 'true' ? posting.detailWithPay : posting.payload,
      };
    };
  });

  return {
    ...server,
    boardToken,
    postings: () => postings,
    setMissing: (value) => {
      missing = value;
    },
  };
}
