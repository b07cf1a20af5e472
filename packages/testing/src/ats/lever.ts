/**
 * A fixture Lever postings API: `GET /v0/postings/{site}?mode=json&skip=N&limit=M` answers a
 * JSON array of postings (all of them without `limit`); other modes answer HTML, as Lever does.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  createRandom,
  EMPLOYMENT_LABELS,
  emptyExpected,
  escapeHtml,
  generateAtsPostings,
  htmlList,
  listItems,
  mixSeed,
  plainText,
  uuid,
  type AtsPostingSpec,
} from './content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

export interface FixtureLeverOptions extends AtsFixtureOptions {
  /** Default 'acme'. */
  site?: string;
}

export interface FixtureLever extends FixtureAtsServer {
  site: string;
  /** The site's postings, in listing order. */
  postings(): FixtureAtsPosting[];
  /** While set, the site answers 404 (`{"ok":false,"error":"Document not found"}`). */
  setMissing(missing: boolean): void;
  /** While set, `skip` is ignored: every request gets the first page (a broken paging API). */
  setIgnoreSkip(ignore: boolean): void;
  /**
   * While set, the board lists only its first `count` postings, as a board answering short for a
   * while does (0: `200` with `[]`, the postings API's JSON array with nothing in it); null lists
   * them all again.
   */
  setListed(count: number | null): void;
}

const INTERVALS = {
  year: 'per-year-salary',
  month: 'per-month-salary',
  hour: 'per-hour-wage',
} as const;

function locationText(spec: AtsPostingSpec): string {
  const place = spec.place;
  if (place === null) return 'Remote';
  return spec.workplace === 'remote'
    ? `${place.city} or Remote`
    : `${place.city}, ${place.region ?? place.countryName}`;
}

function buildPosting(
  spec: AtsPostingSpec,
  origin: string,
  site: string,
  seed: number,
): FixtureAtsPosting {
  const id = uuid(createRandom(mixSeed(seed, spec.index + 0x1e7e)));
  const hostedUrl = `${origin}/${site}/${id}`;
  const lists = [{ text: 'What you will do', content: listItems(spec.responsibilities) }];
  if (spec.requirements.length > 0)
    lists.push({ text: spec.requirementsHeading, content: listItems(spec.requirements) });
  const additional = `<div><b>Benefits</b></div>${htmlList(spec.benefits)}`;
  const location = locationText(spec);
  const country = (spec.place ?? spec.remoteCountry).country;
  const salary = spec.salary;
  const posting: Record<string, unknown> = {
    additional,
    additionalPlain: plainText(additional),
    categories: {
      ...(spec.employment === null ? {} : { commitment: EMPLOYMENT_LABELS[spec.employment] }),
      department: spec.department,
      location,
      team: spec.team,
      allLocations: [location],
    },
    country,
    createdAt: spec.publishedAt,
    descriptionPlain: plainText(spec.introHtml),
    description: spec.introHtml,
    id,
    lists,
    text: spec.title,
    workplaceType: spec.workplace,
    hostedUrl,
    applyUrl: `${hostedUrl}/apply`,
    ...(salary === null
      ? {}
      : {
          salaryRange: {
            currency: salary.currency,
            interval: INTERVALS[salary.period],
            min: salary.min,
            max: salary.max,
          },
          salaryDescription: '<div>Pay depends on experience and location.</div>',
          salaryDescriptionPlain: 'Pay depends on experience and location.',
        }),
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    location, // free text, with the country from `country`
    locationCountry: country,
    isRemote: spec.workplace === 'remote',
    employmentType: spec.employment,
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary?.currency ?? null,
    salaryPeriod: salary?.period ?? null,
    datePosted: new Date(spec.publishedAt).toISOString(),
    // The hosted page's order: description, each list under its heading, then `additional`.
    description: [
      spec.introHtml,
      ...lists.map((list) => `<h3>${escapeHtml(list.text)}</h3><ul>${list.content}</ul>`),
      additional,
    ].join('\n'),
    requirements: spec.requirements.length > 0 ? spec.requirements.join('\n') : null,
  };
  return { externalId: id, url: hostedUrl, payload: posting, expected, spec };
}

export async function createFixtureLever(options: FixtureLeverOptions = {}): Promise<FixtureLever> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const site = options.site ?? 'acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let postings: FixtureAtsPosting[] = [];
  let missing = false;
  let ignoreSkip = false;
  let listed: number | null = null;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => buildPosting(spec, origin, site, seed));
    return ({ path, query }) => {
      if (missing || (path !== `/v0/postings/${site}` && path !== `/v0/postings/${site}/`)) {
        return { status: 404, body: { ok: false, error: 'Document not found' } };
      }
      if (query.get('mode') !== 'json') {
        return {
          status: 200,
          body: `<!DOCTYPE html><html><body><h1>${postings.length} open positions</h1></body></html>`,
        };
      }
      const skip = ignoreSkip ? 0 : Number(query.get('skip') ?? '0');
      const limit = query.has('limit') ? Number(query.get('limit')) : postings.length;
      if (!Number.isSafeInteger(skip) || skip < 0 || !Number.isSafeInteger(limit) || limit < 0) {
        return { status: 400, body: { ok: false, error: 'Invalid skip or limit' } };
      }
      const board = listed === null ? postings : postings.slice(0, listed);
      return {
        status: 200,
        body: board.slice(skip, skip + limit).map((posting) => posting.payload),
      };
    };
  });

  return {
    ...server,
    site,
    postings: () => postings,
    setMissing: (value) => {
      missing = value;
    },
    setIgnoreSkip: (value) => {
      ignoreSkip = value;
    },
    setListed: (value) => {
      listed = value;
    },
  };
}
