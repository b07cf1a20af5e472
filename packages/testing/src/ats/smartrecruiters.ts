/**
 * A fixture SmartRecruiters posting API: `GET /v1/companies/{company}/postings?offset&limit`
 * (limit defaults to 10 and may not exceed 100) answers `{ offset, limit, totalFound, content }`
 * of summaries whose `ref` is `GET /v1/companies/{company}/postings/{id}`, the detail with the
 * job ad and the public `postingUrl`.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  companyForSeed,
  compensationHtml,
  createRandom,
  EMPLOYMENT_LABELS,
  emptyExpected,
  fromDescription,
  escapeHtml,
  generateAtsPostings,
  htmlList,
  mixSeed,
  uuid,
  type AtsEmployment,
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

export interface FixtureSmartRecruitersOptions extends AtsFixtureOptions {
  /** Default 'Acme'. */
  companyIdentifier?: string;
}

export interface FixtureSmartRecruitersPosting extends FixtureAtsPosting {
  /** The listing's summary of the posting (its `ref` leads to `payload`, the detail). */
  summary: Record<string, unknown>;
}

export interface FixtureSmartRecruiters extends FixtureAtsServer {
  companyIdentifier: string;
  /** The company's postings, in listing order; `payload` is each one's detail. */
  postings(): FixtureSmartRecruitersPosting[];
  /** While set, the company answers 404. */
  setMissing(missing: boolean): void;
  /** While set, `offset` is ignored: every request gets the first page (a broken paging API). */
  setIgnoreOffset(ignore: boolean): void;
}

const EMPLOYMENT_IDS: Record<AtsEmployment, string> = {
  FULL_TIME: 'permanent',
  PART_TIME: 'part_time',
  CONTRACTOR: 'contract',
  INTERN: 'intern',
  TEMPORARY: 'temporary',
};

function build(
  spec: AtsPostingSpec,
  origin: string,
  companyIdentifier: string,
  seed: number,
): FixtureSmartRecruitersPosting {
  const random = createRandom(mixSeed(seed, spec.index + 0x5a7));
  const id = `744000${String(81_000_000 + spec.index * 37).padStart(9, '0')}`;
  const place = spec.place;
  const country = place ?? spec.remoteCountry;
  const summary: Record<string, unknown> = {
    id,
    name: spec.title,
    uuid: uuid(random),
    jobAdId: uuid(random),
    defaultJobAd: true,
    refNumber: `REF${1000 + spec.index}`,
    company: { identifier: companyIdentifier, name: spec.company },
    releasedDate: new Date(spec.publishedAt).toISOString(),
    location:
      place === null
        ? {
            country: country.country.toLowerCase(),
            remote: true,
            fullLocation: `Remote, ${country.countryName}`,
          }
        : {
            city: place.city,
            ...(place.region === null ? {} : { region: place.region }),
            country: place.country.toLowerCase(),
            remote: spec.workplace === 'remote',
            fullLocation: [place.city, place.region, place.countryName]
              .filter((part) => part !== null)
              .join(', '),
          },
    industry: { id: 'computer_software', label: 'Computer Software' },
    department: { id: String(90_000 + spec.department.length), label: spec.department },
    function: { id: 'engineering', label: 'Engineering' },
    ...(spec.employment === null
      ? {}
      : {
          typeOfEmployment: {
            id: EMPLOYMENT_IDS[spec.employment],
            label: EMPLOYMENT_LABELS[spec.employment],
          },
        }),
    experienceLevel: { id: 'mid_senior_level', label: 'Mid-Senior Level' },
    customField: [],
    visibility: 'PUBLIC',
    ref: `${origin}/v1/companies/${companyIdentifier}/postings/${id}`,
    creator: { name: 'Alex Doe' },
    language: { code: 'en', label: 'English', labelNative: 'English (US)' },
  };
  const postingUrl = `${origin}/${companyIdentifier}/${id}-${spec.slug}`;
  // SmartRecruiters has no salary field: pay, when published, is in the job description.
  const compensation = compensationHtml(spec);
  const jobDescription = `${spec.introHtml}\n<h3>What you will do</h3>\n${htmlList(spec.responsibilities)}${compensation === '' ? '' : `\n${compensation}`}`;
  const detail: Record<string, unknown> = {
    ...summary,
    applyUrl: `${postingUrl}?oga=true`,
    postingUrl,
    referralUrl: `${postingUrl}?trid=referral`,
    jobAd: {
      sections: {
        companyDescription: {
          title: 'Company Description',
          text: `<p>${escapeHtml(spec.company)} is hiring.</p>`,
        },
        jobDescription: { title: 'Job Description', text: jobDescription },
        qualifications: {
          title: 'Qualifications',
          text: spec.requirements.length > 0 ? htmlList(spec.requirements) : '',
        },
        additionalInformation: { title: 'Additional Information', text: htmlList(spec.benefits) },
      },
    },
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
    datePosted: new Date(spec.publishedAt).toISOString(),
    description: jobDescription,
    ...fromDescription(spec), // the salary from the job description
    requirements: spec.requirements.length > 0 ? spec.requirements.join('\n') : null,
  };
  return { externalId: id, url: postingUrl, payload: detail, expected, spec, summary };
}

export async function createFixtureSmartRecruiters(
  options: FixtureSmartRecruitersOptions = {},
): Promise<FixtureSmartRecruiters> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const companyIdentifier = options.companyIdentifier ?? 'Acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let postings: FixtureSmartRecruitersPosting[] = [];
  let missing = false;
  let ignoreOffset = false;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => build(spec, origin, companyIdentifier, seed));
    const byId = new Map(postings.map((posting) => [posting.externalId, posting]));
    const prefix = `/v1/companies/${companyIdentifier}/postings`;
    return ({ path, query }) => {
      if (missing || !path.startsWith(prefix)) {
        return { status: 404, body: { code: 'NOT_FOUND', message: 'Company not found' } };
      }
      if (path === prefix) {
        const offset = ignoreOffset ? 0 : Number(query.get('offset') ?? '0');
        const limit = Number(query.get('limit') ?? '10');
        if (
          !Number.isSafeInteger(offset) ||
          offset < 0 ||
          !Number.isSafeInteger(limit) ||
          limit < 1 ||
          limit > 100
        ) {
          return {
            status: 400,
            body: {
              code: 'INVALID_PARAMETER',
              message: 'offset must be >= 0 and limit between 1 and 100',
            },
          };
        }
        return {
          status: 200,
          body: {
            offset,
            limit,
            totalFound: postings.length,
            content: postings.slice(offset, offset + limit).map((posting) => posting.summary),
          },
        };
      }
      const posting = byId.get(path.slice(prefix.length + 1));
      return posting === undefined ? notFound() : { status: 200, body: posting.payload };
    };
  });

  return {
    ...server,
    companyIdentifier,
    postings: () => postings,
    setMissing: (value) => {
      missing = value;
    },
    setIgnoreOffset: (value) => {
      ignoreOffset = value;
    },
  };
}
