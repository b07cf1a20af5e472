/**
 * A fixture Personio job feed: `GET /xml?language=en` answers the company's open positions as
 * one XML document, `<workzag-jobs><position>…</position></workzag-jobs>`, each job text section
 * as HTML in CDATA. The real feed lives at https://{company}.jobs.personio.de; here the fixture's
 * origin stands for that host.
 */
import type { ExpectedPostingFields } from '../career-site.js';
import {
  ATS_PLACES,
  companyForSeed,
  emptyExpected,
  generateAtsPostings,
  htmlList,
  isoSeconds,
  isoWithOffset,
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

export interface FixturePersonioOptions extends AtsFixtureOptions {
  /** The company subdomain the fixture stands for. Default 'acme'. */
  company?: string;
}

export interface FixturePersonio extends FixtureAtsServer {
  company: string;
  /**
   * The open positions, in feed order. `payload` is the position as an XML parser reads it
   * (element names as keys, text as strings, repeated elements as arrays).
   */
  postings(): FixtureAtsPosting[];
  /** The feed as served. */
  xml(): string;
  /** While set, the feed answers 404 (an unknown company). */
  setMissing(missing: boolean): void;
  /** While set, the feed answers this text with status 200 instead of the real XML. */
  setRawBody(body: string | null): void;
}

/** Personio's `employmentType` and `schedule` values for each kind of contract. */
const CONTRACTS: Record<AtsEmployment, { employmentType: string; schedule: string }> = {
  FULL_TIME: { employmentType: 'permanent', schedule: 'full-time' },
  PART_TIME: { employmentType: 'permanent', schedule: 'part-time' },
  CONTRACTOR: { employmentType: 'freelance', schedule: 'full-time' },
  INTERN: { employmentType: 'intern', schedule: 'full-time' },
  TEMPORARY: { employmentType: 'temporary', schedule: 'full-time' },
};

export function escapeXml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

interface Section {
  name: string;
  value: string;
}

function build(
  spec: AtsPostingSpec,
  origin: string,
): FixtureAtsPosting & { payload: Record<string, unknown> } {
  const id = String(1_500_000 + spec.index);
  const url = `${origin}/job/${id}`;
  const place = spec.place;
  const office = place?.city ?? 'Remote';
  // Remote postings with an office offer "Remote" as well; some on-site ones a second city.
  const additionalOffices =
    spec.workplace === 'remote' && place !== null
      ? ['Remote']
      : spec.index % 4 === 1 && place !== null
        ? [ATS_PLACES[(ATS_PLACES.indexOf(place) + 1) % ATS_PLACES.length]!.city]
        : [];
  const sections: Section[] = [
    { name: `About ${spec.company}`, value: spec.introHtml },
    { name: 'Your tasks', value: htmlList(spec.responsibilities) },
  ];
  if (spec.requirements.length > 0)
    sections.push({ name: spec.requirementsHeading, value: htmlList(spec.requirements) });
  sections.push({ name: 'What we offer', value: htmlList(spec.benefits) });
  const contract = spec.employment === null ? null : CONTRACTS[spec.employment];
  const position: Record<string, unknown> = {
    id,
    subcompany: spec.company,
    office,
    ...(additionalOffices.length === 0 ? {} : { additionalOffices: { office: additionalOffices } }),
    department: spec.department,
    recruitingCategory: spec.team,
    name: spec.title,
    jobDescriptions: { jobDescription: sections },
    ...(contract === null ? {} : { employmentType: contract.employmentType }),
    seniority: spec.title.startsWith('Junior') ? 'entry-level' : 'experienced',
    schedule: contract?.schedule ?? 'flexible',
    yearsOfExperience: spec.title.startsWith('Junior') ? '1-2' : '2-5',
    keywords: spec.department,
    occupation: 'software_and_web_development',
    occupationCategory: 'it_software',
    createdAt: isoWithOffset(spec.publishedAt, spec.utcOffsetMinutes),
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    company: spec.company,
    location: office, // free text: the feed names an office, not its parts
    isRemote: spec.workplace === 'remote',
    employmentType: spec.employment,
    datePosted: isoSeconds(spec.publishedAt),
    description: sections.map((section) => `<h3>${section.name}</h3>\n${section.value}`).join('\n'),
    requirements: spec.requirements.length > 0 ? spec.requirements.join('\n') : null,
  };
  return { externalId: id, url, payload: position, expected, spec };
}

function positionXml(position: Record<string, unknown>): string {
  const lines: string[] = ['  <position>'];
  for (const [key, value] of Object.entries(position)) {
    if (key === 'additionalOffices') {
      const offices = (value as { office: string[] }).office;
      lines.push(
        `    <additionalOffices>${offices.map((office) => `<office>${escapeXml(office)}</office>`).join('')}</additionalOffices>`,
      );
    } else if (key === 'jobDescriptions') {
      const sections = (value as { jobDescription: Section[] }).jobDescription;
      lines.push('    <jobDescriptions>');
      for (const section of sections) {
        lines.push(
          `      <jobDescription><name>${escapeXml(section.name)}</name><value><![CDATA[${section.value}]]></value></jobDescription>`,
        );
      }
      lines.push('    </jobDescriptions>');
    } else {
      lines.push(`    <${key}>${escapeXml(String(value))}</${key}>`);
    }
  }
  lines.push('  </position>');
  return lines.join('\n');
}

export async function createFixturePersonio(
  options: FixturePersonioOptions = {},
): Promise<FixturePersonio> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const company = options.company ?? 'acme';
  const specs = generateAtsPostings(count, seed, options.companyName ?? companyForSeed(seed));
  let postings: FixtureAtsPosting[] = [];
  let feed = '';
  let missing = false;
  let rawBody: string | null = null;

  const server = await startAtsServer(options, (origin) => {
    const built = specs.map((spec) => build(spec, origin));
    postings = built;
    feed = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<workzag-jobs>',
      ...built.map((posting) => positionXml(posting.payload)),
      '</workzag-jobs>',
    ].join('\n');
    return ({ path }) => {
      if (missing || path !== '/xml') {
        return { status: 404, body: '<!DOCTYPE html><html><body>Page not found</body></html>' };
      }
      return {
        status: 200,
        body: rawBody ?? feed,
        contentType: 'text/xml; charset=UTF-8',
      };
    };
  });

  return {
    ...server,
    company,
    postings: () => postings,
    xml: () => feed,
    setMissing: (value) => {
      missing = value;
    },
    setRawBody: (value) => {
      rawBody = value;
    },
  };
}
