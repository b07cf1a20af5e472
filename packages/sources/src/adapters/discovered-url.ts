/**
 * URLs found in a site's robots.txt (`Sitemap:` lines), sitemaps, sitemap indexes and listing
 * pages are written by whoever controls those pages. Before one becomes a posting (a row, a crawl
 * job) or a fetch (a sitemap, an index's child, a next page) it must be an http(s) URL on the
 * site's own host, without credentials. The fetcher refuses hostile addresses on every
 * connection and redirect hop anyway; refusing here as well keeps such URLs out of the database
 * and the queues, and tells the operator why a listed URL was not crawled.
 */

/** Why a discovered URL was not taken, one stable code per reason. */
export const discoveryRefusalCodes = [
  /** The text does not parse as a URL. */
  'SOURCE_URL_INVALID',
  /** Not http(s): `file:`, `javascript:`, `gopher:`, `ftp:` and the like. */
  'SOURCE_URL_SCHEME',
  /** Userinfo in the URL: `http://example.com@127.0.0.1/` reads as one host and goes to another. */
  'SOURCE_URL_CREDENTIALS',
  /** Another host than the site's (name and explicit port): postings are crawled only on their site. */
  'SOURCE_URL_OFF_SITE',
] as const;

export type DiscoveryRefusalCode = (typeof discoveryRefusalCodes)[number];

export type DiscoveredUrl =
  | { accepted: true; url: URL }
  | {
      accepted: false;
      code: DiscoveryRefusalCode;
      /** The resolved URL, or the text as found when it does not parse. */
      url: string;
      /** The resolved URL's path (the text as found when it does not parse), for posting patterns. */
      pathname: string;
    };

/**
 * Resolves `raw` against the page it was found on and decides whether the crawler may take it.
 * `site` is the site's configured URL: only its exact host (name and explicit port) is accepted,
 * over http or https. The fragment is dropped from an accepted URL.
 */
export function checkDiscoveredUrl(raw: string, relativeTo: string, site: URL): DiscoveredUrl {
  let url: URL;
  try {
    url = new URL(raw.trim(), relativeTo);
  } catch {
    const text = raw.trim();
    return { accepted: false, code: 'SOURCE_URL_INVALID', url: text, pathname: text };
  }
  url.hash = '';
  const refuse = (code: DiscoveryRefusalCode): DiscoveredUrl => ({
    accepted: false,
    code,
    url: url.href,
    pathname: url.pathname,
  });
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse('SOURCE_URL_SCHEME');
  if (url.username !== '' || url.password !== '') return refuse('SOURCE_URL_CREDENTIALS');
  if (url.host.toLowerCase() !== site.host.toLowerCase()) return refuse('SOURCE_URL_OFF_SITE');
  return { accepted: true, url };
}

export interface RefusedUrl {
  /** The URL as resolved (cut to `MAX_EXAMPLE_URL_LENGTH` characters). */
  url: string;
  code: DiscoveryRefusalCode;
}

/** What discovery refused during one listing: counts per reason and the first few URLs. */
export interface DiscoveryRefusals {
  total: number;
  byCode: Partial<Record<DiscoveryRefusalCode, number>>;
  examples: RefusedUrl[];
}

/** A run's log line carries examples, not every URL: a sitemap can list tens of thousands. */
const MAX_EXAMPLES = 20;
const MAX_EXAMPLE_URL_LENGTH = 200;

/** Collects refusals for a listing's result. */
export class RefusalLog {
  private total = 0;
  private readonly byCode: Partial<Record<DiscoveryRefusalCode, number>> = {};
  private readonly examples: RefusedUrl[] = [];

  record(code: DiscoveryRefusalCode, url: string): void {
    this.total += 1;
    this.byCode[code] = (this.byCode[code] ?? 0) + 1;
    if (this.examples.length < MAX_EXAMPLES) {
      this.examples.push({ url: url.slice(0, MAX_EXAMPLE_URL_LENGTH), code });
    }
  }

  summary(): DiscoveryRefusals {
    return { total: this.total, byCode: { ...this.byCode }, examples: [...this.examples] };
  }
}
