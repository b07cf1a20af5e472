/**
 * Reading a career site's sitemaps: finding them (robots.txt `Sitemap:` lines, then the usual
 * places), fetching them (gzipped files included) and walking sitemap indexes, within bounds
 * a hostile or merely enormous site cannot push past.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { createRobotsCache, HttpStatusError } from '@gleaner/http';
import { Parser } from 'htmlparser2';
import type { SourceContext } from '../types.js';
import { SourceError } from '../types.js';

const gunzipAsync = promisify(gunzip);

/**
 * Bytes of one sitemap once decompressed: the sitemaps.org protocol's limit ("no larger than
 * 50MB uncompressed"). A gzipped file larger than that is refused (`SOURCE_SITEMAP_TOO_LARGE`);
 * the fetcher's own body cap applies to the bytes on the wire before that.
 */
export const MAX_SITEMAP_BYTES = 50 * 1024 * 1024;
/**
 * Bytes a gzipped sitemap may inflate to (`SOURCE_SITEMAP_TOO_LARGE` past it). A few KB on the
 * wire can inflate to the protocol's 50 MB, and the worker holds that string and its parse in
 * memory; 10 MiB still holds a full file of 50,000 entries with every optional tag and
 * 95-character URLs (10.3 MB), where job sitemaps usually carry only `<loc>` and `<lastmod>`.
 */
export const MAX_INFLATED_SITEMAP_BYTES = 10 * 1024 * 1024;
/** `<loc>` entries read from one file: the protocol's limit is 50,000. */
export const MAX_SITEMAP_ENTRIES = 50_000;
/** Levels of sitemap index below the first file: an index of indexes of indexes is read, no deeper. */
export const MAX_SITEMAP_DEPTH = 3;
/**
 * Elements open at once in one file: a sitemap nests four deep (`urlset`, `url`, `loc`, an
 * extension's child). htmlparser2 keeps open elements in an array it shifts at the front, so
 * 10 MB of `<a>` (2.6 million open elements) would take hours; past this the file is invalid.
 */
const MAX_SITEMAP_NESTING = 64;
/** `Sitemap:` lines of robots.txt taken; the rest are ignored. */
export const MAX_ROBOTS_SITEMAPS = 50;

/** Where a site keeps its sitemap when robots.txt names none, tried in this order. */
export const COMMON_SITEMAP_PATHS = [
  '/sitemap.xml',
  '/sitemap_index.xml',
  '/careers/sitemap.xml',
  '/jobs/sitemap.xml',
] as const;

export interface ParsedSitemap {
  kind: 'urlset' | 'index';
  /** The `<loc>` texts as written (trimmed), at most `MAX_SITEMAP_ENTRIES`. */
  locations: string[];
  /** More entries than `MAX_SITEMAP_ENTRIES` were listed. */
  truncated: boolean;
}

function isGzip(body: Buffer): boolean {
  return body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b;
}

/**
 * A sitemap file's XML. A gzipped one (`.xml.gz`, served as `application/gzip` rather than with
 * `Content-Encoding`, so the fetcher hands over the compressed bytes) is inflated here, with
 * zlib stopping at `maxInflatedBytes` of output: a gzip bomb costs that much and no more.
 */
export async function sitemapXml(
  body: Buffer,
  url: string,
  maxBytes = MAX_SITEMAP_BYTES,
  maxInflatedBytes = MAX_INFLATED_SITEMAP_BYTES,
): Promise<string> {
  let bytes = body;
  if (isGzip(body)) {
    try {
      bytes = await gunzipAsync(body, { maxOutputLength: Math.min(maxBytes, maxInflatedBytes) });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new SourceError(
          `${url} inflates to more than ${Math.min(maxBytes, maxInflatedBytes)} bytes`,
          'SOURCE_SITEMAP_TOO_LARGE',
        );
      }
      throw new SourceError(
        `${url} is not a readable gzip file: ${(error as Error).message}`,
        'SOURCE_SITEMAP_INVALID',
      );
    }
  } else if (body.length > maxBytes) {
    throw new SourceError(`${url} is larger than ${maxBytes} bytes`, 'SOURCE_SITEMAP_TOO_LARGE');
  }
  // The protocol requires UTF-8; TextDecoder drops a BOM.
  return new TextDecoder('utf-8').decode(bytes);
}

const localName = (name: string): string => name.slice(name.lastIndexOf(':') + 1).toLowerCase();

/**
 * The `<loc>` entries of a urlset (`<url><loc>`) or sitemap index (`<sitemap><loc>`). Parsed as
 * a stream of tags (htmlparser2 in XML mode), so a file of 50,000 entries costs its strings and
 * not a document tree. Throws `SOURCE_SITEMAP_INVALID` when the root is neither.
 */
export function parseSitemap(xml: string, url: string): ParsedSitemap {
  let kind: ParsedSitemap['kind'] | undefined;
  let root: string | undefined;
  const stack: string[] = [];
  const locations: string[] = [];
  let truncated = false;
  let text: string | undefined;
  const parser = new Parser(
    {
      onopentagname(name) {
        const tag = localName(name);
        if (root === undefined) {
          root = tag;
          if (tag === 'urlset') kind = 'urlset';
          else if (tag === 'sitemapindex') kind = 'index';
        }
        stack.push(tag);
        if (stack.length > MAX_SITEMAP_NESTING)
          throw new SourceError(
            `${url} nests elements more than ${MAX_SITEMAP_NESTING} deep: not a sitemap`,
            'SOURCE_SITEMAP_INVALID',
          );
        const parent = stack[stack.length - 2];
        const entry = kind === 'urlset' ? 'url' : 'sitemap';
        if (tag === 'loc' && parent === entry && stack.length === 3) text = '';
      },
      ontext(chunk) {
        if (text !== undefined) text += chunk;
      },
      onclosetag() {
        const tag = stack.pop();
        if (tag === 'loc' && text !== undefined) {
          const loc = text.trim();
          text = undefined;
          if (loc === '') return;
          if (locations.length < MAX_SITEMAP_ENTRIES) locations.push(loc);
          else truncated = true;
        }
      },
    },
    { xmlMode: true, decodeEntities: true, recognizeCDATA: true },
  );
  parser.end(xml);
  if (kind === undefined) {
    throw new SourceError(
      `${url} is not a sitemap (no <urlset> or <sitemapindex>${root ? `, but <${root}>` : ''})`,
      'SOURCE_SITEMAP_INVALID',
    );
  }
  return { kind, locations, truncated };
}

/** Fetches and parses one sitemap file. */
export async function fetchSitemap(
  context: SourceContext,
  url: string,
  signal: AbortSignal | undefined,
): Promise<ParsedSitemap> {
  const result = await context.fetcher.fetch({
    url,
    accept: 'application/xml,text/xml;q=0.9,application/gzip;q=0.8,*/*;q=0.5',
    maxBodyBytes: MAX_SITEMAP_BYTES,
    signal,
  });
  return parseSitemap(await sitemapXml(result.body, url), url);
}

/** How one walk of sitemaps went: what was read and what was passed over. */
export interface SitemapWalkReport {
  /** Files fetched and read. */
  read: number;
  /** Files passed over, with why (at most `MAX_REPORTED_SKIPS`). */
  skipped: { url: string; reason: string }[];
}

const MAX_REPORTED_SKIPS = 20;

/** Where the URLs a walk finds go: postings to the collector, child sitemaps back to the walk. */
export interface SitemapSink {
  /** A posting candidate found in `sitemapUrl`. */
  add(raw: string, sitemapUrl: string): void;
  /** A child sitemap found in `sitemapUrl`: the URL to fetch, or undefined when refused. */
  follow(raw: string, sitemapUrl: string): string | undefined;
  /** No more postings are wanted. */
  readonly truncated: boolean;
}

export interface SitemapRoot {
  url: string;
  /**
   * How a failure to read it counts. 'required': it fails the listing (a configured sitemap).
   * 'optional': a 4xx answer or a file that is not a sitemap is passed over (a sitemap named by
   * robots.txt that no longer exists, a guessed location).
   */
  role: 'required' | 'optional';
}

export interface SitemapWalkOptions {
  /** Files fetched at most (the site's `maxPages`). */
  maxFiles: number;
  signal?: AbortSignal;
}

/** A 4xx answer other than 429: the file is not there, asking again will not change that. */
function isMissing(error: unknown): boolean {
  return (
    error instanceof HttpStatusError &&
    error.status >= 400 &&
    error.status < 500 &&
    error.status !== 429
  );
}

/**
 * Reads `roots` and every sitemap their indexes list, breadth first: URLs already read are not
 * read again (indexes that list each other), indexes deeper than `MAX_SITEMAP_DEPTH` are not
 * followed, and at most `maxFiles` files are fetched. Returns whether everything listed was read.
 *
 * A child of an optional root is optional too; one passed over makes the walk incomplete, since
 * postings it lists were not seen. An optional root passed over does not: it is a guess that
 * missed. Errors that are not about the file (timeouts, 5xx, a refused address, a gzip bomb)
 * always end the walk.
 */
export async function walkSitemaps(
  context: SourceContext,
  roots: readonly SitemapRoot[],
  sink: SitemapSink,
  options: SitemapWalkOptions,
  report: SitemapWalkReport,
): Promise<boolean> {
  const queue = roots.map((root) => ({ ...root, depth: 0 }));
  const visited = new Set<string>();
  let complete = true;
  const skip = (url: string, reason: string) => {
    if (report.skipped.length < MAX_REPORTED_SKIPS) report.skipped.push({ url, reason });
  };
  while (queue.length > 0) {
    options.signal?.throwIfAborted();
    const next = queue.shift()!;
    if (visited.has(next.url)) continue;
    visited.add(next.url);
    if (next.depth > MAX_SITEMAP_DEPTH) {
      skip(next.url, `nested more than ${MAX_SITEMAP_DEPTH} sitemap indexes deep`);
      complete = false;
      continue;
    }
    if (report.read >= options.maxFiles) return false;
    let sitemap: ParsedSitemap;
    try {
      sitemap = await fetchSitemap(context, next.url, options.signal);
    } catch (error) {
      const passable =
        isMissing(error) ||
        (error instanceof SourceError && error.code === 'SOURCE_SITEMAP_INVALID');
      if (next.role === 'required' || !passable) throw error;
      report.read += 1;
      skip(next.url, (error as { code?: string }).code ?? 'unknown');
      if (next.depth > 0) complete = false;
      continue;
    }
    report.read += 1;
    if (sitemap.truncated) complete = false;
    for (const loc of sitemap.locations) {
      if (sitemap.kind === 'urlset') {
        sink.add(loc, next.url);
        if (sink.truncated) return false;
      } else {
        const child = sink.follow(loc, next.url);
        if (child !== undefined) queue.push({ url: child, role: next.role, depth: next.depth + 1 });
      }
    }
  }
  return complete;
}

/**
 * The sitemaps robots.txt names for the origin of `site`, as written (to be checked by the
 * caller). Read through @gleaner/http's robots cache (RFC 9309: a missing robots.txt names
 * none; an unreachable one throws `HttpRobotsUnavailableError`, transient).
 */
export async function robotsSitemaps(context: SourceContext, site: URL): Promise<string[]> {
  // Sitemap lines belong to no group: the product token does not matter here.
  const robots = createRobotsCache({ fetcher: context.fetcher, userAgent: 'Gleaner', lruSize: 1 });
  const verdict = await robots.check(`${site.origin}/robots.txt`);
  return verdict.sitemaps.slice(0, MAX_ROBOTS_SITEMAPS);
}

/** The places to look for a sitemap when robots.txt names none (origin, then the site's path). */
export function commonSitemapUrls(site: URL): string[] {
  const urls: string[] = COMMON_SITEMAP_PATHS.map((path) => new URL(path, site.origin).href);
  const directory = site.pathname.endsWith('/') ? site.pathname : `${site.pathname}/`;
  const own = new URL(`${directory}sitemap.xml`, site.origin);
  if (!urls.includes(own.href)) urls.push(own.href);
  return urls;
}
