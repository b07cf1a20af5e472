import * as cheerio from 'cheerio/slim';
import { z } from 'zod';
import type {
  ListedPosting,
  ListOptions,
  ListingResult,
  SiteAdapter,
  SourceContext,
} from '../types.js';
import { SourceError } from '../types.js';
import { checkDiscoveredUrl, RefusalLog } from './discovered-url.js';

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
    /** The site's home or careers page; postings must live on the same host. */
    url: httpUrl,
    /** A sitemap listing the postings (urlset or sitemap index). */
    sitemapUrl: httpUrl.optional(),
    /** The first listing page; later pages are followed through `rel="next"` links. */
    listingUrl: httpUrl.optional(),
    /** Only URLs whose path matches become postings (default: every sitemap URL, or `/jobs/` links). */
    postingUrlPattern: safePattern.optional(),
    /** Budget of listing or sitemap pages fetched per run. */
    maxPages: z.int().min(1).max(1000).default(100),
    /** Budget of postings per run. */
    maxPostings: z.int().min(1).max(100_000).default(10_000),
  })
  .strict()
  .refine((config) => config.sitemapUrl !== undefined || config.listingUrl !== undefined, {
    message: 'needs sitemapUrl or listingUrl',
    path: ['sitemapUrl'],
  });

export type CareerSiteConfig = z.output<typeof careerSiteConfig>;

/** The natural key of a career-site posting: its URL without query noise or fragment. */
export function externalIdFromUrl(url: URL): string {
  const pathname = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
  return `${url.host.toLowerCase()}${pathname}`;
}

class Collector {
  readonly postings: ListedPosting[] = [];
  readonly refusals = new RefusalLog();
  private readonly seen = new Set<string>();
  truncated = false;
  constructor(
    private readonly site: URL,
    private readonly pattern: RegExp | undefined,
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
    const checked = checkDiscoveredUrl(raw, relativeTo, this.site);
    const pathname = checked.accepted ? checked.url.pathname : checked.pathname;
    if (this.pattern && !this.pattern.test(pathname)) return;
    if (!checked.accepted) {
      this.refusals.record(checked.code, checked.url);
      return;
    }
    const { url } = checked;
    const externalId = externalIdFromUrl(url);
    if (this.seen.has(externalId)) return;
    if (this.full) {
      this.truncated = true;
      return;
    }
    this.seen.add(externalId);
    this.postings.push({ externalId, url: url.toString() });
  }

  /** A sitemap or listing page to fetch next, or undefined (refused ones are recorded). */
  follow(raw: string, relativeTo: string): string | undefined {
    const checked = checkDiscoveredUrl(raw, relativeTo, this.site);
    if (checked.accepted) return checked.url.toString();
    this.refusals.record(checked.code, checked.url);
    return undefined;
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

async function listFromSitemap(
  config: CareerSiteConfig,
  context: SourceContext,
  collector: Collector,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const queue = [config.sitemapUrl!];
  const visited = new Set<string>();
  let pages = 0;
  while (queue.length > 0) {
    signal?.throwIfAborted();
    const next = queue.shift()!;
    if (visited.has(next)) continue;
    visited.add(next);
    if (pages >= config.maxPages) return false;
    pages += 1;
    const xml = await fetchText(context, next, 'application/xml,text/xml;q=0.9,*/*;q=0.5', signal);
    const $ = cheerio.load(xml, { xml: true });
    const isIndex = $('sitemapindex').length > 0;
    if (!isIndex && $('urlset').length === 0) {
      throw new SourceError(
        `${next} is not a sitemap (no <urlset> or <sitemapindex>)`,
        'SOURCE_SITEMAP_INVALID',
      );
    }
    $(isIndex ? 'sitemap > loc' : 'url > loc').each((_, element) => {
      const loc = $(element).text().trim();
      if (isIndex) {
        const child = collector.follow(loc, next);
        if (child) queue.push(child);
      } else {
        collector.add(loc, next);
      }
    });
    if (collector.truncated) return false;
  }
  return true;
}

async function listFromListingPages(
  config: CareerSiteConfig,
  context: SourceContext,
  collector: Collector,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  let next: string | undefined = config.listingUrl;
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
    const $ = cheerio.load(html);
    $('a[href]').each((_, element) => {
      const link = $(element);
      if ((link.attr('rel') ?? '').split(/\s+/).includes('next')) return;
      collector.add(link.attr('href')!, pageUrl);
    });
    if (collector.truncated) return false;
    const nextHref = $('a[rel~="next"], link[rel~="next"]').first().attr('href');
    next = nextHref ? collector.follow(nextHref, pageUrl) : undefined;
  }
  return true;
}

/** A company career site: postings found through its sitemap or its listing pages. */
export const careerSiteAdapter: SiteAdapter<typeof careerSiteConfig> = {
  kind: 'career-site',
  description:
    'A career site whose posting pages embed schema.org JobPosting; listed via sitemap or listing pages.',
  configSchema: careerSiteConfig,
  async list(config, context, options: ListOptions = {}): Promise<ListingResult> {
    const limit = Math.min(options.limit ?? Infinity, config.maxPostings);
    const defaultPattern = config.sitemapUrl ? undefined : /\/jobs?\/[^/]+/;
    const pattern = config.postingUrlPattern
      ? new RegExp(config.postingUrlPattern)
      : defaultPattern;
    const collector = new Collector(new URL(config.url), pattern, limit);
    const complete = config.sitemapUrl
      ? await listFromSitemap(config, context, collector, options.signal)
      : await listFromListingPages(config, context, collector, options.signal);
    return {
      postings: collector.postings,
      complete: complete && !collector.truncated,
      refused: collector.refusals.summary(),
    };
  },
};
