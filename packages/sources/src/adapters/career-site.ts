import { boundNesting, htmlToText } from '@gleaner/extraction';
import * as cheerio from 'cheerio/slim';
import { z } from 'zod';
import type {
  ListedPage,
  ListedPosting,
  ListingDiscovery,
  ListOptions,
  ListingResult,
  SiteAdapter,
  SourceContext,
} from '../types.js';
import { checkDiscoveredUrl, RefusalLog } from './discovered-url.js';
import { postingKey, postingUrl } from './posting-identity.js';
import {
  commonSitemapUrls,
  robotsSitemaps,
  walkSitemaps,
  type SitemapRoot,
  type SitemapWalkReport,
} from './sitemaps.js';

const httpUrl = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .max(2048, { message: 'must be at most 2048 characters' });

const safePattern = z
  .string()
  .max(200)
  .refine(
    (value) => {
      try {
        new RegExp(value);
        return true;
      } catch {
        return false;
      }
    },
    { message: 'must be a valid regular expression' },
  );

export const careerSiteConfig = z
  .object({
    /**
     * The site's home or careers page; postings must live on the same host. Alone, it is enough:
     * the postings are found through robots.txt's sitemaps or the usual sitemap locations.
     */
    url: httpUrl,
    /** A sitemap listing the postings (urlset or sitemap index, plain or gzipped). */
    sitemapUrl: httpUrl.optional(),
    /** The first listing page; later pages are followed through `rel="next"` links. */
    listingUrl: httpUrl.optional(),
    /**
     * Only URLs whose path matches become postings. Default: every URL of `sitemapUrl`, `/jobs/`
     * links of `listingUrl`, posting-looking URLs of discovered sitemaps (`isPostingLikeUrl`).
     */
    postingUrlPattern: safePattern.optional(),
    /** Budget of listing or sitemap pages fetched per run. */
    maxPages: z.int().min(1).max(1000).default(100),
    /** Budget of postings per run. */
    maxPostings: z.int().min(1).max(100_000).default(10_000),
    /**
     * The listing pages carry the posts themselves (seed 004's multi-pass reading, decision
     * 0026): each page's text goes to the LLM, which reads the posts on it, instead of each link
     * being crawled. Needs `listingUrl` here and the site's `llm_extraction` (the API refuses it
     * otherwise).
     */
    postsOnListing: z.boolean().optional(),
  })
  .strict()
  .refine((config) => !config.postsOnListing || config.listingUrl !== undefined, {
    message: 'postsOnListing needs listingUrl',
    path: ['postsOnListing'],
  });

export type CareerSiteConfig = z.output<typeof careerSiteConfig>;

/**
 * The natural key of a career-site posting: host, path and the query parameters that identify
 * it, without tracking parameters or fragment (see posting-identity.ts). A URL without a query
 * keys as `host + path`, as it always has.
 */
export function externalIdFromUrl(url: URL): string {
  return postingKey(url);
}

/** A path segment under which sites publish postings. */
const POSTING_SECTION = String.raw`(?:jobs?|careers?|positions?|vacanc(?:y|ies)|openings?|opportunit(?:y|ies))`;
/** `/jobs/<something>`, `/careers/<something>`, `/positions/<something>`… */
const POSTING_PATH = new RegExp(String.raw`/${POSTING_SECTION}/[^/]+`, 'i');
/** `/job`, `/careers/`… without anything after: a posting only with an identifying query. */
const POSTING_SECTION_PATH = new RegExp(String.raw`/${POSTING_SECTION}(?:/|$)`, 'i');
/** Query parameters naming a posting. */
const POSTING_QUERY =
  /(?:^|[?&])(?:id|jid|jobid|job_id|job-id|postingid|posting_id|reqid|req_id)=[^&]/i;

/**
 * The default filter of a site configured with `url` alone, whose discovered sitemaps list the
 * whole site: a URL is taken as a posting when it has a Greenhouse embed id (`gh_jid`), or a path
 * with a posting section and something after it (`/jobs/123`, `/careers/engineering/backend`,
 * `/positions/x`, `/vacancies/x`, `/openings/x`, `/opportunities/x`), or a posting section with an
 * identifying query (`/careers/job?id=7`, `/job?jobId=7`). `postingUrlPattern` replaces it.
 */
export function isPostingLikeUrl(pathname: string, search: string): boolean {
  if (/(?:^|[?&])gh_jid=[^&]/i.test(search)) return true;
  if (POSTING_PATH.test(pathname)) return true;
  return POSTING_SECTION_PATH.test(pathname) && POSTING_QUERY.test(search);
}

type PostingFilter = (pathname: string, search: string) => boolean;

class Collector {
  readonly postings: ListedPosting[] = [];
  /** The listing pages read, with their text and posting links (`postsOnListing`). */
  readonly pages: ListedPage[] = [];
  readonly refusals = new RefusalLog();
  private readonly seen = new Set<string>();
  truncated = false;
  constructor(
    private readonly site: URL,
    private readonly isPosting: PostingFilter | undefined,
    private readonly limit: number,
  ) {}

  get full(): boolean {
    return this.postings.length >= this.limit;
  }

  /**
   * Takes a URL found on `relativeTo` as a posting when it matches the posting pattern. A link
   * that does not look like a posting is ignored silently (a listing page links to much else); one
   * that does but may not be crawled is refused with its reason.
   */
  add(raw: string, relativeTo: string): void {
    const url = this.postingLink(raw, relativeTo);
    if (!url) return;
    const externalId = externalIdFromUrl(url);
    if (this.seen.has(externalId)) return;
    if (this.full) {
      this.truncated = true;
      return;
    }
    this.seen.add(externalId);
    this.postings.push({ externalId, url: postingUrl(url).toString() });
  }

  /**
   * The posting URL a link names, when it matches the posting pattern and passes discovery's
   * checks (same host, http(s), no credentials); a refused one is recorded with its reason.
   */
  postingLink(raw: string, relativeTo: string): URL | undefined {
    const checked = checkDiscoveredUrl(raw, relativeTo, this.site);
    if (this.isPosting) {
      const { pathname, search } = checked.accepted ? checked.url : locationParts(checked);
      if (!this.isPosting(pathname, search)) return undefined;
    }
    if (!checked.accepted) {
      this.refusals.record(checked.code, checked.url);
      return undefined;
    }
    return checked.url;
  }

  /** A sitemap or listing page to fetch next, or undefined (refused ones are recorded). */
  follow(raw: string, relativeTo: string): string | undefined {
    const checked = checkDiscoveredUrl(raw, relativeTo, this.site);
    if (checked.accepted) return checked.url.toString();
    this.refusals.record(checked.code, checked.url);
    return undefined;
  }
}

/** Path and query of a refused URL, for the posting filter (the text itself when it does not parse). */
function locationParts(refused: { url: string; pathname: string }): {
  pathname: string;
  search: string;
} {
  try {
    return { pathname: refused.pathname, search: new URL(refused.url).search };
  } catch {
    return { pathname: refused.pathname, search: '' };
  }
}

async function fetchText(
  context: SourceContext,
  url: string,
  accept: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  const result = await context.fetcher.fetch({ url, accept, signal });
  return result.body.toString('utf8');
}

/**
 * How a listing found its postings. Kept on the result of `listCareerSite` (the adapter's result
 * carries it too, beside the common fields).
 */
/** How a career site's postings were found (`ListingResult.discovery`). */
export type CareerSiteDiscovery = ListingDiscovery;

export interface CareerSiteListing extends ListingResult {
  discovery: CareerSiteDiscovery;
}

/**
 * Sitemaps of a site configured with `url` alone: robots.txt's `Sitemap:` lines (each checked
 * like any discovered URL: same host, http(s), no credentials), else the usual locations.
 */
async function discoverSitemaps(
  context: SourceContext,
  site: URL,
  collector: Collector,
): Promise<{ method: 'robots-sitemaps' | 'common-sitemaps'; roots: SitemapRoot[] }> {
  const robotsUrl = `${site.origin}/robots.txt`;
  const listed = new Set<string>();
  for (const raw of await robotsSitemaps(context, site)) {
    const url = collector.follow(raw, robotsUrl);
    if (url !== undefined) listed.add(url);
  }
  if (listed.size > 0) {
    return {
      method: 'robots-sitemaps',
      roots: [...listed].map((url) => ({ url, role: 'optional' })),
    };
  }
  return {
    method: 'common-sitemaps',
    roots: commonSitemapUrls(site).map((url) => ({ url, role: 'optional' })),
  };
}

async function listFromListingPages(
  firstPage: string,
  config: CareerSiteConfig,
  context: SourceContext,
  collector: Collector,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  let next: string | undefined = firstPage;
  const visited = new Set<string>();
  let pages = 0;
  while (next) {
    signal?.throwIfAborted();
    if (visited.has(next)) break;
    visited.add(next);
    if (pages >= config.maxPages) return false;
    pages += 1;
    const pageUrl: string = next;
    const html = await fetchText(context, pageUrl, 'text/html', signal);
    // Nested at most 512 deep: a tree 200,000 levels deep takes minutes to build.
    const bounded = boundNesting(html);
    const $ = cheerio.load(bounded);
    const links: ListedPage['links'] = [];
    const linked = new Set<string>();
    $('a[href]').each((_, element) => {
      const link = $(element);
      if ((link.attr('rel') ?? '').split(/\s+/).includes('next')) return;
      if (!config.postsOnListing) return void collector.add(link.attr('href')!, pageUrl);
      // The posts are read from the page: its posting links are what a post may name as its own.
      const url = collector.postingLink(link.attr('href')!, pageUrl);
      if (!url) return;
      const href = postingUrl(url).toString();
      if (linked.has(href)) return;
      linked.add(href);
      links.push({ url: href, text: link.text().replace(/\s+/g, ' ').trim() });
    });
    if (config.postsOnListing)
      collector.pages.push({ url: pageUrl, text: htmlToText(bounded) ?? '', links });
    if (collector.truncated) return false;
    const nextHref = $('a[rel~="next"], link[rel~="next"]').first().attr('href');
    next = nextHref ? collector.follow(nextHref, pageUrl) : undefined;
  }
  return true;
}

/**
 * Lists a career site: through `sitemapUrl`, else `listingUrl`, else by discovery from `url`
 * (robots.txt's sitemaps, the usual sitemap locations, and last `url` as a listing page).
 */
export async function listCareerSite(
  config: CareerSiteConfig,
  context: SourceContext,
  options: ListOptions = {},
): Promise<CareerSiteListing> {
  const { signal } = options;
  const limit = Math.min(options.limit ?? Infinity, config.maxPostings);
  const site = new URL(config.url);
  const configured = config.postingUrlPattern ? new RegExp(config.postingUrlPattern) : undefined;
  const matching =
    (pattern: RegExp): PostingFilter =>
    (pathname) =>
      pattern.test(pathname);
  const report: SitemapWalkReport = { read: 0, skipped: [] };
  const result = (
    collector: Collector,
    complete: boolean,
    discovery: Omit<CareerSiteDiscovery, 'sitemapsRead' | 'skipped'>,
  ): CareerSiteListing => ({
    postings: collector.postings,
    ...(config.postsOnListing && { pages: collector.pages }),
    complete: complete && !collector.truncated,
    refused: collector.refusals.summary(),
    discovery: { ...discovery, sitemapsRead: report.read, skipped: report.skipped },
  });

  if (config.sitemapUrl) {
    const collector = new Collector(site, configured && matching(configured), limit);
    const roots: SitemapRoot[] = [{ url: config.sitemapUrl, role: 'required' }];
    const complete = await walkSitemaps(
      context,
      roots,
      collector,
      { maxFiles: config.maxPages, signal },
      report,
    );
    return result(collector, complete, { method: 'sitemap', sitemaps: [config.sitemapUrl] });
  }
  if (config.listingUrl) {
    const collector = new Collector(site, matching(configured ?? /\/jobs?\/[^/]+/), limit);
    const complete = await listFromListingPages(
      config.listingUrl,
      config,
      context,
      collector,
      signal,
    );
    return result(collector, complete, { method: 'listing-pages', sitemaps: [] });
  }

  const collector = new Collector(
    site,
    configured ? matching(configured) : isPostingLikeUrl,
    limit,
  );
  const { method, roots } = await discoverSitemaps(context, site, collector);
  const complete = await walkSitemaps(
    context,
    roots,
    collector,
    { maxFiles: config.maxPages, signal },
    report,
  );
  const sitemaps = roots.map((root) => root.url);
  if (collector.postings.length > 0) return result(collector, complete, { method, sitemaps });
  // No sitemap, or none listing a posting: `url` is likely the careers page that links them.
  const fromPages = await listFromListingPages(config.url, config, context, collector, signal);
  return result(collector, fromPages, { method: 'url-listing-page', sitemaps });
}

/** A company career site: postings found through its sitemaps or its listing pages. */
export const careerSiteAdapter: SiteAdapter<typeof careerSiteConfig> = {
  kind: 'career-site',
  description:
    'A career site whose posting pages embed schema.org JobPosting; listed via sitemaps (given, or found through robots.txt) or listing pages.',
  configSchema: careerSiteConfig,
  list: listCareerSite,
};
