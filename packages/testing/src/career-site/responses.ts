import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Catalog, PostingRecord } from './catalog.js';

/**
 * The answer to each request, from the catalog's pre-rendered bodies: robots.txt, sitemaps,
 * listing pages and posting pages (with ETag and Last-Modified, 304 to a conditional request, 302
 * where `redirects` says), 404 and 405. HEAD is answered as GET without the body.
 */

const HTML = 'text/html; charset=utf-8';
const METHOD_NOT_ALLOWED = Buffer.from('Method Not Allowed\n');
const NOT_FOUND_PAGE = Buffer.from(
  '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Page not found</title></head><body><h1>Page not found</h1><p><a href="/jobs">See all open positions</a></p></body></html>\n',
);

export function handleRequest(
  catalog: Catalog,
  request: IncomingMessage,
  response: ServerResponse,
  target: string,
): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    return send(request, response, 405, 'text/plain; charset=utf-8', METHOD_NOT_ALLOWED);
  }
  const queryStart = target.indexOf('?');
  const path = queryStart === -1 ? target : target.slice(0, queryStart);

  if (path === '/robots.txt')
    return send(request, response, 200, 'text/plain; charset=utf-8', catalog.robots);
  if (path === '/sitemap.xml')
    return send(request, response, 200, 'application/xml; charset=utf-8', catalog.sitemap());
  const sitemapFile = path.startsWith('/sitemaps/') ? catalog.sitemapFile(path) : null;
  if (sitemapFile !== null)
    return send(request, response, 200, sitemapFile.contentType, sitemapFile.body);
  if (path === '/jobs') {
    const pageParameter =
      new URLSearchParams(queryStart === -1 ? '' : target.slice(queryStart + 1)).get('page') ?? '1';
    const listing = /^[1-9]\d{0,5}$/.test(pageParameter)
      ? catalog.listingPage(Number(pageParameter))
      : null;
    return listing === null
      ? send(request, response, 404, HTML, NOT_FOUND_PAGE)
      : send(request, response, 200, HTML, listing);
  }
  const id = catalog.postingIdOf(path, queryStart === -1 ? '' : target.slice(queryStart + 1));
  if (id !== null) {
    const record = catalog.publishedById(id);
    if (record === undefined) return send(request, response, 404, HTML, NOT_FOUND_PAGE);
    const location = catalog.redirectOf(id);
    if (location !== undefined) {
      response.writeHead(302, { location });
      response.end();
      return;
    }
    response.setHeader('etag', record.etag);
    response.setHeader('last-modified', record.lastModifiedHeader);
    if (isNotModified(request, record)) {
      response.writeHead(304);
      response.end();
      return;
    }
    if (record.gzippedPage !== null && /\bgzip\b/.test(request.headers['accept-encoding'] ?? '')) {
      response.setHeader('content-encoding', 'gzip');
      return send(request, response, 200, HTML, record.gzippedPage);
    }
    return send(request, response, 200, HTML, record.page);
  }
  send(request, response, 404, HTML, NOT_FOUND_PAGE);
}

/** RFC 9110 §13.2.2: If-None-Match decides when present; If-Modified-Since only otherwise. */
function isNotModified(request: IncomingMessage, record: PostingRecord): boolean {
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    return ifNoneMatch
      .split(',')
      .map((tag) => tag.trim().replace(/^W\//, ''))
      .some((tag) => tag === '*' || tag === record.etag);
  }
  const ifModifiedSince = request.headers['if-modified-since'];
  if (ifModifiedSince === undefined) return false;
  const since = Date.parse(ifModifiedSince);
  return !Number.isNaN(since) && Math.floor(record.lastModified / 1000) * 1000 <= since;
}

function send(
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  contentType: string,
  body: Buffer,
): void {
  response.writeHead(status, { 'content-type': contentType, 'content-length': body.length });
  response.end(request.method === 'HEAD' ? undefined : body);
}
