import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOrigin } from '../listen.js';
import { createCatalog, type FixturePosting } from './catalog.js';
import { resolveOptions, type FixtureSiteOptions } from './options.js';
import { handleRequest } from './responses.js';

/**
 * The site's HTTP server: it counts requests, answers some with 429 or late as the options say,
 * and hands the rest to `responses.ts`.
 */

export interface FixtureCareerSite {
  /** Origin, e.g. http://127.0.0.1:40123 */
  url: string;
  sitemapUrl: string;
  listingUrl: string;
  /** Currently published postings, in id order. */
  postings(): FixturePosting[];
  /** A currently published posting. */
  get(id: string): FixturePosting | undefined;
  /** Unpublishes: gone from the sitemap and listings, the page answers 404. Already removed ids are ignored. */
  remove(ids: string[]): void;
  /** Changes the page (new ETag, later Last-Modified) and its expected record. */
  update(id: string, patch: { title?: string; description?: string }): FixturePosting;
  /** Requests received whose target (path and query) starts with `pathPrefix`; all when omitted. */
  requestCount(pathPrefix?: string): number;
  /** When the last request whose target starts with `pathPrefix` arrived (epoch ms), if any. */
  lastRequestAt(pathPrefix?: string): number | undefined;
  resetRequestCount(): void;
  /** Stops listening and closes connections; safe to call more than once. */
  close(): Promise<void>;
}

export async function createFixtureCareerSite(
  options: FixtureSiteOptions = {},
): Promise<FixtureCareerSite> {
  const settings = resolveOptions(options);
  const requestCounts = new Map<string, number>();
  const lastRequests = new Map<string, number>();
  const delays = new Set<NodeJS.Timeout>();

  const server = createServer();
  // Pages embed absolute URLs, so content is built once the port is known. The handler is
  // attached in the same tick, before any request can have been read.
  const origin = await listenOrigin(server, settings.port, settings.host);
  const catalog = createCatalog(origin, settings);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const target = request.url ?? '/';
    const nth = (requestCounts.get(target) ?? 0) + 1;
    requestCounts.set(target, nth);
    lastRequests.set(target, Date.now());
    if (options.tooManyRequests?.(target, nth)) {
      response.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' });
      response.end('slow down');
      return;
    }
    const delayMs =
      typeof options.responseDelayMs === 'function'
        ? options.responseDelayMs(target)
        : (options.responseDelayMs ?? 0);
    if (delayMs <= 0) return handleRequest(catalog, request, response, target);
    const timer = setTimeout(() => {
      delays.delete(timer);
      if (!response.destroyed) handleRequest(catalog, request, response, target);
    }, delayMs);
    delays.add(timer);
  });

  let closing: Promise<void> | undefined;
  return {
    url: origin,
    sitemapUrl: `${origin}/sitemap.xml`,
    listingUrl: `${origin}/jobs`,
    postings: () => catalog.published().map((record) => record.posting),
    get: (id) => catalog.publishedById(id)?.posting,
    remove: (ids) => catalog.remove(ids),
    update: (id, patch) => catalog.update(id, patch).posting,
    requestCount: (pathPrefix) => {
      let total = 0;
      for (const [target, count] of requestCounts) {
        if (pathPrefix === undefined || target.startsWith(pathPrefix)) total += count;
      }
      return total;
    },
    lastRequestAt: (pathPrefix) => {
      let last: number | undefined;
      for (const [target, at] of lastRequests) {
        if (pathPrefix === undefined || target.startsWith(pathPrefix))
          last = Math.max(last ?? at, at);
      }
      return last;
    },
    resetRequestCount: () => {
      requestCounts.clear();
      lastRequests.clear();
    },
    close: () => {
      for (const timer of delays) clearTimeout(timer);
      delays.clear();
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        // Keep-alive connections would hold close() open for keepAliveTimeout (5 s); every
        // response is written in one piece, so there is nothing in flight worth waiting for.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
