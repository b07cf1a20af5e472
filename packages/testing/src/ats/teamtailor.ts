/**
 * A fixture Teamtailor career site: `GET /jobs.rss` answers an RSS 2.0 feed of every published
 * job, each `<item>` with title, HTML description (entity-escaped on some items, CDATA on
 * others), RFC 822 `pubDate`, link, `remoteStatus`, guid, `tt:locations` and `tt:department`.
 * The real site lives at https://{company}.teamtailor.com; here the fixture's origin stands for it.
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
  mixSeed,
  uuid,
  type AtsPostingSpec,
  type AtsWorkplace,
} from './content.js';
import {
  countOption,
  startAtsServer,
  type AtsFixtureOptions,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

export interface FixtureTeamtailorOptions extends AtsFixtureOptions {
  /** The career site subdomain the fixture stands for. Default 'acme'. */
  company?: string;
}

export interface FixtureTeamtailor extends FixtureAtsServer {
  company: string;
  /**
   * The published jobs, in feed order. `payload` is the item as the adapter hands it on: its
   * elements by name (`guid`, `title`, `link`, `description`, `pubDate`, `remoteStatus`,
   * `department`, `locations`) and the channel's title as `company`.
   */
  postings(): FixtureAtsPosting[];
  /** The whole feed as served. */
  feed(): string;
  /** While set, the career site answers 404. */
  setMissing(missing: boolean): void;
}

const REMOTE_STATUS: Record<AtsWorkplace, string> = {
  remote: 'fully',
  hybrid: 'hybrid',
  'on-site': 'none',
  unspecified: 'none',
};

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** RFC 822 with the spec's UTC offset: "Wed, 13 May 2026 17:12:26 +0200". */
function rfc822(epochMs: number, offsetMinutes: number): string {
  const local = new Date(Math.floor(epochMs / 1000) * 1000 + offsetMinutes * 60_000);
  const pad = (value: number): string => String(value).padStart(2, '0');
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${DAYS[local.getUTCDay()]}, ${pad(local.getUTCDate())} ${MONTHS[local.getUTCMonth()]} ${local.getUTCFullYear()} ${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())} ${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`;
}

interface Built extends FixtureAtsPosting {
  xml: string;
}

function element(name: string, value: string | null): string {
  return value === null ? '' : `<${name}>${escapeHtml(value)}</${name}>`;
}

function build(spec: AtsPostingSpec, origin: string, seed: number): Built {
  const guid = uuid(createRandom(mixSeed(seed, spec.index + 0x7ea)));
  const jobId = 7_300_000 + spec.index;
  const link = `${origin}/jobs/${jobId}-${spec.slug}`;
  const place = spec.place;
  const description = fullDescriptionHtml(spec);
  const pubDate = rfc822(spec.publishedAt, spec.utcOffsetMinutes);
  const locations =
    place === null
      ? []
      : [
          { name: `${place.city} office`, city: place.city, country: place.countryName },
          ...(spec.index % 4 === 0
            ? [{ name: 'Second office', city: 'Lisbon', country: 'Portugal' }]
            : []),
        ];
  const payload = {
    guid,
    title: spec.title,
    link,
    description,
    pubDate,
    remoteStatus: REMOTE_STATUS[spec.workplace],
    department: spec.department,
    locations,
    company: spec.company,
  };
  // Teamtailor escapes the description's HTML; some feeds wrap it in CDATA instead.
  const descriptionXml =
    spec.index % 2 === 0
      ? element('description', description)
      : `<description><![CDATA[${description}]]></description>`;
  const xml = [
    '<item>',
    element('title', spec.title),
    descriptionXml,
    element('pubDate', pubDate),
    element('link', link),
    element('remoteStatus', payload.remoteStatus),
    element('guid', guid),
    '<tt:locations>',
    ...locations.map(
      (location) =>
        `<tt:location>${element('tt:name', location.name)}${element('tt:city', location.city)}${element('tt:country', location.country)}</tt:location>`,
    ),
    '</tt:locations>',
    element('tt:department', spec.department),
    '</item>',
  ].join('\n');
  const first = locations[0];
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    company: spec.company,
    location: first === undefined ? null : `${first.city}, ${first.country}`,
    locationCity: first?.city ?? null,
    locationCountry: first?.country ?? null,
    isRemote: spec.workplace === 'remote',
    datePosted: new Date(Math.floor(spec.publishedAt / 1000) * 1000).toISOString(),
    description,

    // No vendor salary or requirements field: what the description states.
    ...fromDescription(spec),
  };
  return { externalId: guid, url: link, payload, expected, spec, xml };
}

export async function createFixtureTeamtailor(
  options: FixtureTeamtailorOptions = {},
): Promise<FixtureTeamtailor> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const company = options.company ?? 'acme';
  const companyName = options.companyName ?? companyForSeed(seed);
  const specs = generateAtsPostings(count, seed, companyName);
  let postings: Built[] = [];
  let feed = '';
  let missing = false;

  const server = await startAtsServer(options, (origin) => {
    postings = specs.map((spec) => build(spec, origin, seed));
    feed = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<rss version="2.0" xmlns:tt="https://teamtailor.com/locations">',
      '<channel>',
      element('title', companyName),
      element('description', 'Current Job Openings'),
      element('link', `${origin}/jobs`),
      ...postings.map((posting) => posting.xml),
      '</channel>',
      '</rss>',
    ].join('\n');
    return ({ path }) => {
      if (missing || path !== '/jobs.rss') {
        return {
          status: 404,
          body: '<!DOCTYPE html><h1>The page you were looking for does not exist</h1>',
        };
      }
      return { status: 200, body: feed, contentType: 'application/rss+xml; charset=utf-8' };
    };
  });

  return {
    ...server,
    company,
    postings: () => postings.map(({ xml: _xml, ...posting }) => posting),
    feed: () => feed,
    setMissing: (value) => {
      missing = value;
    },
  };
}
