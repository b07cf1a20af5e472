/**
 * Teamtailor career site, read through its public RSS feed: `GET https://{company}.teamtailor.com
 * /jobs.rss` answers every published job in one RSS 2.0 document, each `<item>` with its title,
 * link, HTML description, `pubDate`, `remoteStatus`, `tt:department` and `tt:locations`.
 *
 * Teamtailor's JSON:API (api.teamtailor.com/v1/jobs, paged with `page[size]` and `links.next`)
 * needs an `Authorization: Token token=…` key and an `X-Api-Version` header: a per-customer
 * secret that a site's config would keep in the database and show to every viewer of
 * `GET /sites`, and headers the shared fetcher does not send. The feed needs neither and carries
 * the same posting fields, so it is the source here. RSS is not JSON: each item becomes a plain
 * object of its elements (below, `TeamtailorItem`), which is the payload.
 */
import * as cheerio from 'cheerio/slim';
import { Parser } from 'htmlparser2';
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
  hostLabel,
  joinUrl,
  maxPostingsSchema,
  translateFetchError,
  type VendorRequest,
} from './ats-http.js';
import { ListingBudget } from './ats-listing.js';
import { AtsRequestError, atsErrorCodes } from './ats-request-error.js';
import {
  emptyPosting,
  lenient,
  locationFromParts,
  locationFromText,
  mapped,
  postedDate,
  text,
  titleSchema,
} from './ats-mapping.js';

export const teamtailorConfig = z
  .object({
    /** The career site's subdomain: `acme` in acme.teamtailor.com. It becomes a host name label. */
    company: hostLabel,
    /**
     * Overrides https://{company}.teamtailor.com: a career site on the company's own domain
     * (https://careers.acme.example), or a loopback fixture in tests.
     */
    baseUrl: baseUrlSchema.optional(),
    /** Budget of postings per run. */
    maxPostings: maxPostingsSchema,
  })
  .strict();

export type TeamtailorConfig = z.output<typeof teamtailorConfig>;

const VENDOR = 'Teamtailor';

export function teamtailorBaseUrl(config: Pick<TeamtailorConfig, 'company' | 'baseUrl'>): string {
  return config.baseUrl ?? `https://${config.company.toLowerCase()}.teamtailor.com`;
}

/** One feed item as the payload: its elements by name, locations as a list. */
export interface TeamtailorItem {
  guid: string | null;
  title: string;
  link: string;
  description: string | null;
  pubDate: string | null;
  remoteStatus: string | null;
  department: string | null;
  locations: { name: string | null; city: string | null; country: string | null }[];
  /** The channel's title: the company's name. */
  company: string | null;
}

const MAX_LOCATIONS = 50;
/**
 * Elements open at once in a feed: an item's deepest element is six down (`rss`, `channel`, `item`,
 * `tt:locations`, `tt:location`, `tt:name`). A feed may come from the company's own domain, and
 * htmlparser2 shifts its list of open elements at the front for every tag it opens, so 1 MB of
 * unclosed `<a>` would take minutes to build into a tree: past this depth the body is no feed.
 */
const MAX_FEED_NESTING = 64;

/** Whether `xml` ever has more than `MAX_FEED_NESTING` elements open: one pass, no tree. */
function nestsTooDeep(xml: string): boolean {
  let depth = 0;
  let tooDeep = false;
  const parser = new Parser(
    {
      onopentagname() {
        if (++depth > MAX_FEED_NESTING && !tooDeep) {
          tooDeep = true;
          parser.pause();
        }
      },
      onclosetag() {
        depth--;
      },
    },
    { xmlMode: true, recognizeCDATA: true },
  );
  parser.end(xml);
  return tooDeep;
}

const feedItem = z.object({
  guid: z.string().max(200).nullable(),
  title: z.string().max(1000),
  link: z.url({ protocol: /^https?$/ }).max(2048),
});

function invalidFeed(request: VendorRequest, what: string, cause?: unknown): AtsRequestError {
  return new AtsRequestError(
    `${request.vendor} answered ${request.url} with ${what}`,
    atsErrorCodes.responseInvalid,
    'transient',
    { url: request.url, cause },
  );
}

async function fetchFeed(context: SourceContext, request: VendorRequest): Promise<string> {
  request.signal?.throwIfAborted();
  try {
    const response = await context.fetcher.fetch({
      url: request.url,
      accept: 'application/rss+xml, application/xml;q=0.9, text/xml;q=0.8',
      signal: request.signal,
    });
    return response.text();
  } catch (error) {
    throw translateFetchError(error, request);
  }
}

interface XmlElement {
  children(selector: string): { first(): { length: number; text(): string } };
}

/** The text of an element's first child named `name` (`tt:city`), or null when it has none. */
function child(element: XmlElement, name: string): string | null {
  const found = element.children(name.replace(':', '\\:')).first();
  return found.length === 0 ? null : found.text();
}

/** The feed's items as payloads; a body that is not an RSS channel is SOURCE_RESPONSE_INVALID. */
export function parseTeamtailorFeed(xml: string, request: VendorRequest): TeamtailorItem[] {
  if (nestsTooDeep(xml))
    throw invalidFeed(request, `elements nested more than ${MAX_FEED_NESTING} deep`);
  const $ = cheerio.load(xml, { xml: true });
  const channel = $('rss > channel').first();
  if (channel.length === 0) throw invalidFeed(request, 'a body that is not an RSS feed');
  const company = text(channel.children('title').first().text());
  return channel
    .children('item')
    .toArray()
    .map((node, index) => {
      const item = $(node);
      const locations = item
        .children('tt\\:locations')
        .children('tt\\:location')
        .slice(0, MAX_LOCATIONS)
        .toArray()
        .map((location) => {
          const element = $(location);
          return {
            name: child(element, 'tt:name'),
            city: child(element, 'tt:city'),
            country: child(element, 'tt:country'),
          };
        });
      const parsed = feedItem.safeParse({
        guid: text(child(item, 'guid')),
        title: child(item, 'title') ?? '',
        link: child(item, 'link')?.trim(),
      });
      if (!parsed.success) {
        const issues = parsed.error.issues
          .slice(0, 3)
          .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
          .join('; ');
        throw invalidFeed(
          request,
          `an item that does not have the documented shape (item ${index}: ${issues})`,
          parsed.error,
        );
      }
      return {
        ...parsed.data,
        description: child(item, 'description'),
        pubDate: child(item, 'pubDate'),
        remoteStatus: child(item, 'remoteStatus'),
        department: child(item, 'tt:department'),
        locations,
        company,
      };
    });
}

async function list(
  config: TeamtailorConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<ListingResult> {
  const request: VendorRequest = {
    vendor: VENDOR,
    url: joinUrl(teamtailorBaseUrl(config), '/jobs.rss'),
    notFound: 'board',
    signal: options.signal,
  };
  const items = parseTeamtailorFeed(await fetchFeed(context, request), request);
  const budget = ListingBudget.for<ListedPosting>(options, config.maxPostings);
  for (const item of items) {
    // The guid is the job's id; an item without one is known by its link.
    const externalId = item.guid ?? item.link;
    budget.add(externalId, { externalId, url: item.link, payload: item });
  }
  return { postings: budget.items, complete: !budget.truncated };
}

const teamtailorPayload = z.looseObject({
  title: titleSchema,
  description: lenient(z.string()),
  pubDate: lenient(z.string()),
  remoteStatus: lenient(z.string()),
  locations: lenient(
    z.array(
      z.looseObject({
        name: lenient(z.string()),
        city: lenient(z.string()),
        country: lenient(z.string()),
      }),
    ),
  ),
  company: lenient(z.string()),
});

/** RSS dates are RFC 822 ("Wed, 13 May 2026 17:12:26 +0200"): read as a UTC ISO timestamp. */
function rssDate(value: string | null | undefined): string | null {
  const raw = text(value);
  if (raw === null) return null;
  if (
    !/^(?:[A-Za-z]{3}, )?\d{1,2} [A-Za-z]{3} \d{4} \d{2}:\d{2}(?::\d{2})? (?:[+-]\d{4}|GMT|UTC|Z)$/.test(
      raw,
    )
  )
    return postedDate(raw); // some feeds write ISO 8601
  const time = Date.parse(raw);
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}

/** `remoteStatus`: "fully" and "temporary" are remote; "hybrid" and "none" are not. */
function remoteFromStatus(value: string | null | undefined): boolean | null {
  switch (text(value)?.toLowerCase()) {
    case 'fully':
    case 'temporary':
      return true;
    case 'hybrid':
    case 'none':
      return false;
    default:
      return null;
  }
}

function mapPosting(payload: unknown): AtsMappedPosting | null {
  const parsed = teamtailorPayload.safeParse(payload);
  if (!parsed.success) return null;
  const item = parsed.data;
  // A job may name several locations; the first is its main one. Teamtailor gives city and
  // country (a name), and `name` is the label the company gave the place ("HQ, Stockholm").
  const first = item.locations?.[0];
  const structured = locationFromParts(first?.city, null, first?.country);
  const location = structured.location !== null ? structured : locationFromText(first?.name);
  const remote = remoteFromStatus(item.remoteStatus);
  return mapped({
    ...emptyPosting(),
    title: item.title,
    company: text(item.company),
    ...location,
    isRemote: remote ?? (location.location !== null ? false : null),
    // The feed carries no employment type or pay.
    datePosted: rssDate(item.pubDate),
    description: text(item.description),
  });
}

/** A Teamtailor career site, read through its public jobs RSS feed. */
export const teamtailorAdapter: SiteAdapter<typeof teamtailorConfig> = {
  kind: 'teamtailor',
  description:
    'A Teamtailor career site ({company}.teamtailor.com or its own domain), listed through its public jobs RSS feed.',
  configSchema: teamtailorConfig,
  list,
  mapPosting,
};
