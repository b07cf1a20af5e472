import { createRandom, mixSeed, pick } from '../random.js';
import { COMPANIES } from './pools.js';

/**
 * What a test may ask of the site, and the settings that resolves to (defaults filled in,
 * numbers checked).
 */

export interface FixtureSiteOptions {
  /** Number of postings published at start. Default 50. */
  postings?: number;
  /** Approximate size in bytes of each posting page. Default 8000; the benchmark uses 30000. */
  pageBytes?: number;
  /** Seed of the content generator; the same seed gives the same postings. Default 1. */
  seed?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** Links per listing page. Default 25. */
  listingPageSize?: number;
  /** The hiring company of every posting; by default one picked from the seed. */
  companyName?: string;
  /**
   * Posting ids (e.g. 'job-0007') whose page answers 302 to the given URL while the posting stays
   * listed: a posting that moved to another host, or a page that redirects somewhere hostile.
   */
  redirects?: Record<string, string>;
  /**
   * How long the site waits before answering a request, by its target (path and query), in ms:
   * a slow site, or with a delay longer than any timeout, one that never answers. Default 0.
   */
  responseDelayMs?: number | ((target: string) => number);
  /**
   * Requests answered `429 Too Many Requests` with `Retry-After: 1` instead of their page: called
   * with each request's target and how many requests for it arrived so far (1 for the first).
   */
  tooManyRequests?: (target: string, nth: number) => boolean;
  /**
   * Where each posting lives. 'path' (default): `/jobs/job-0007`. 'query': one page for every
   * posting, told apart by its query, `/careers/job?id=7`, as many career sites built in-house do.
   */
  postingPaths?: 'path' | 'query';
  /**
   * How the site points crawlers at its postings. `/sitemap.xml` (every posting) is served in each.
   * - 'robots' (default): robots.txt names `/sitemap.xml`.
   * - 'index': robots.txt names `/sitemaps/index.xml`, a sitemap index of a gzipped sitemap
   *   (`/sitemaps/postings-1.xml.gz`, served as `application/gzip` without Content-Encoding) with the
   *   first half of the postings, a plain one with the rest (`/sitemaps/postings-2.xml`), one of
   *   pages that are not postings (`/sitemaps/pages.xml`) and the index itself (a loop).
   * - 'unlisted': robots.txt names no sitemap; only the conventional `/sitemap.xml` finds them.
   */
  sitemaps?: 'robots' | 'index' | 'unlisted';
  /**
   * Every posting page is one unclosed tag repeated to `bytes` (`'<meta '` by default), sent
   * gzip-compressed to a client that accepts it (4 MB of `<meta ` is 12 KB gzipped, under any
   * body cap): a page on which a tag scanner quadratic in unclosed tags takes minutes. The
   * postings stay listed; their `expected` records do not apply, as the pages hold none.
   */
  hostilePages?: { bytes: number; tag?: string };
}

export interface Settings {
  postings: number;
  pageBytes: number;
  seed: number;
  host: string;
  port: number;
  listingPageSize: number;
  companyName: string;
  redirects: ReadonlyMap<string, string>;
  postingPaths: 'path' | 'query';
  sitemaps: 'robots' | 'index' | 'unlisted';
  hostilePages: { bytes: number; tag: string } | null;
}

export function resolveOptions(options: FixtureSiteOptions): Settings {
  const seed = options.seed ?? 1;
  const settings: Settings = {
    postings: options.postings ?? 50,
    pageBytes: options.pageBytes ?? 8000,
    seed,
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    listingPageSize: options.listingPageSize ?? 25,
    companyName: options.companyName ?? pick(createRandom(mixSeed(seed, 0x5eed)), COMPANIES),
    redirects: new Map(Object.entries(options.redirects ?? {})),
    postingPaths: options.postingPaths ?? 'path',
    sitemaps: options.sitemaps ?? 'robots',
    hostilePages: options.hostilePages
      ? { bytes: options.hostilePages.bytes, tag: options.hostilePages.tag ?? '<meta ' }
      : null,
  };
  requireInteger('postings', settings.postings, 0);
  requireInteger('pageBytes', settings.pageBytes, 0);
  requireInteger('seed', settings.seed, Number.MIN_SAFE_INTEGER);
  requireInteger('port', settings.port, 0);
  requireInteger('listingPageSize', settings.listingPageSize, 1);
  if (settings.hostilePages) {
    requireInteger('hostilePages.bytes', settings.hostilePages.bytes, 1);
    if (settings.hostilePages.tag === '')
      throw new RangeError('Fixture career site: hostilePages.tag must not be empty');
  }
  return settings;
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`Fixture career site: ${name} must be an integer >= ${min}, got ${value}`);
  }
}
