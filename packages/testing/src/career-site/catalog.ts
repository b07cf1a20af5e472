import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { buildExpected, buildJsonLd, type ExpectedPostingFields } from './json-ld.js';
import type { Settings } from './options.js';
import {
  renderListingPage,
  renderPagesSitemap,
  renderPostingPage,
  renderSitemap,
  renderSitemapIndex,
} from './pages.js';
import { generatePosting, type PostingSpec } from './postings.js';

/**
 * The site's published postings and their pre-rendered responses: pages, listings and sitemaps
 * are rendered once, and again only when a posting is removed or updated.
 */

/** A published posting. Treat as read-only: `update` replaces it with a new object. */
export interface FixturePosting {
  /** e.g. 'job-0001' */
  id: string;
  /** Path and query, e.g. '/jobs/job-0001' (or '/careers/job?id=1' with `postingPaths: 'query'`) */
  path: string;
  url: string;
  /** The JobPosting node embedded in the page. */
  jsonLd: Record<string, unknown>;
  expected: ExpectedPostingFields;
}

/** A posting's path and query on the site. */
function postingPathOf(id: string, style: Settings['postingPaths']): string {
  return style === 'query' ? `/careers/job?id=${Number(id.slice('job-'.length))}` : `/jobs/${id}`;
}

/** The posting id a request target names, if it names one (the posting may not exist). */
function postingIdOf(path: string, query: string, style: Settings['postingPaths']): string | null {
  if (style === 'query') {
    if (path !== '/careers/job') return null;
    const id = new URLSearchParams(query).get('id') ?? '';
    return /^[1-9]\d{0,5}$/.test(id) ? `job-${id.padStart(4, '0')}` : null;
  }
  return path.startsWith('/jobs/') ? decodeURIComponentSafe(path.slice('/jobs/'.length)) : null;
}

export interface PostingRecord {
  spec: PostingSpec;
  posting: FixturePosting;
  page: Buffer;
  /** The page gzip-compressed, for a client that accepts it (`hostilePages` only). */
  gzippedPage: Buffer | null;
  etag: string;
  lastModified: number;
  lastModifiedHeader: string;
}

export interface Catalog {
  published(): readonly PostingRecord[];
  publishedById(id: string): PostingRecord | undefined;
  remove(ids: string[]): void;
  update(id: string, patch: { title?: string; description?: string }): PostingRecord;
  sitemap(): Buffer;
  /** Files under `/sitemaps/` (`sitemaps: 'index'`), by path; null when there is none. */
  sitemapFile(path: string): { contentType: string; body: Buffer } | null;
  /** Null when the page does not exist. */
  listingPage(page: number): Buffer | null;
  robots: Buffer;
  /** Where a posting's page redirects to instead of answering (`redirects` option). */
  redirectOf(id: string): string | undefined;
  /** The posting id a request names (`postingPaths`), or null when it names none. */
  postingIdOf(path: string, query: string): string | null;
}

function createRecord(
  spec: PostingSpec,
  origin: string,
  settings: Settings,
  lastModified: number,
): PostingRecord {
  const path = postingPathOf(spec.id, settings.postingPaths);
  const jsonLd = buildJsonLd(spec, origin, `${origin}${path}`);
  const { hostilePages } = settings;
  const page = hostilePages
    ? Buffer.from(
        hostilePages.tag.repeat(Math.ceil(hostilePages.bytes / hostilePages.tag.length)),
      ).subarray(0, hostilePages.bytes)
    : Buffer.from(renderPostingPage(spec, jsonLd, origin, `${origin}${path}`, settings.pageBytes));
  return {
    spec,
    posting: { id: spec.id, path, url: `${origin}${path}`, jsonLd, expected: buildExpected(spec) },
    page,
    gzippedPage: hostilePages ? gzipSync(page) : null,
    etag: `"${createHash('sha1').update(page).digest('base64url').slice(0, 20)}"`,
    lastModified,
    lastModifiedHeader: new Date(lastModified).toUTCString(),
  };
}

export function createCatalog(origin: string, settings: Settings): Catalog {
  const all = new Map<string, PostingRecord>();
  for (let index = 0; index < settings.postings; index++) {
    const spec = generatePosting(index, settings);
    all.set(spec.id, createRecord(spec, origin, settings, spec.initialLastModified));
  }
  const removed = new Set<string>();
  let published: PostingRecord[] = [...all.values()];
  // Sitemap and listings change only on remove/update; cache them until then.
  let sitemapCache: Buffer | undefined;
  const listingCache = new Map<number, Buffer>();
  const sitemapFiles = new Map<string, { contentType: string; body: Buffer }>();
  const invalidate = (): void => {
    sitemapCache = undefined;
    listingCache.clear();
    sitemapFiles.clear();
  };
  const renderSitemapFile = (path: string): { contentType: string; body: Buffer } | null => {
    const xml = 'application/xml; charset=utf-8';
    const half = Math.ceil(published.length / 2);
    switch (path) {
      case '/sitemaps/index.xml':
        return { contentType: xml, body: Buffer.from(renderSitemapIndex(origin)) };
      case '/sitemaps/postings-1.xml.gz':
        return {
          contentType: 'application/gzip',
          body: gzipSync(renderSitemap(published.slice(0, half))),
        };
      case '/sitemaps/postings-2.xml':
        return { contentType: xml, body: Buffer.from(renderSitemap(published.slice(half))) };
      case '/sitemaps/pages.xml':
        return { contentType: xml, body: Buffer.from(renderPagesSitemap(origin)) };
      default:
        return null;
    }
  };
  const robotsSitemap = {
    robots: `Sitemap: ${origin}/sitemap.xml\n`,
    index: `Sitemap: ${origin}/sitemaps/index.xml\n`,
    unlisted: '',
  }[settings.sitemaps];
  const pageCount = (): number =>
    Math.max(1, Math.ceil(published.length / settings.listingPageSize));

  return {
    published: () => published,
    publishedById: (id) => (removed.has(id) ? undefined : all.get(id)),
    remove(ids) {
      // Check every id first so that a typo leaves the site unchanged.
      const unknown = ids.filter((id) => !all.has(id));
      if (unknown.length > 0)
        throw new Error(`Fixture career site has no posting ${unknown.join(', ')}`);
      for (const id of ids) removed.add(id);
      published = [...all.values()].filter((record) => !removed.has(record.spec.id));
      invalidate();
    },
    update(id, patch) {
      const current = all.get(id);
      if (current === undefined || removed.has(id)) {
        throw new Error(`Fixture career site has no published posting "${id}"`);
      }
      if (patch.title?.trim() === '' || patch.description?.trim() === '') {
        throw new RangeError(
          'Fixture career site: an updated title or description must not be blank',
        );
      }
      const spec: PostingSpec = {
        ...current.spec,
        title: patch.title?.trim() ?? current.spec.title,
        titlePadding: patch.title === undefined ? current.spec.titlePadding : '',
        description: patch.description ?? current.spec.description,
      };
      // HTTP dates have one-second resolution: step at least a second so that a conditional
      // request made before the update never matches after it.
      const lastModified = Math.max(
        Math.floor(Date.now() / 1000) * 1000,
        current.lastModified + 1000,
      );
      const record = createRecord(spec, origin, settings, lastModified);
      all.set(id, record);
      published = published.map((entry) => (entry.spec.id === id ? record : entry));
      invalidate();
      return record;
    },
    sitemap() {
      sitemapCache ??= Buffer.from(renderSitemap(published));
      return sitemapCache;
    },
    sitemapFile(path) {
      if (settings.sitemaps !== 'index') return null;
      let file = sitemapFiles.get(path) ?? null;
      if (file === null) {
        file = renderSitemapFile(path);
        if (file !== null) sitemapFiles.set(path, file);
      }
      return file;
    },
    listingPage(page) {
      if (page > pageCount()) return null;
      let cached = listingCache.get(page);
      if (cached === undefined) {
        const start = (page - 1) * settings.listingPageSize;
        const links = published.slice(start, start + settings.listingPageSize);
        cached = Buffer.from(
          renderListingPage(settings.companyName, links, page, page < pageCount()),
        );
        listingCache.set(page, cached);
      }
      return cached;
    },
    robots: Buffer.from(`User-agent: *\nAllow: /\n\n${robotsSitemap}`),
    redirectOf: (id) => settings.redirects.get(id),
    postingIdOf: (path, query) => postingIdOf(path, query, settings.postingPaths),
  };
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // malformed escapes: look the raw text up, which simply finds nothing
  }
}
