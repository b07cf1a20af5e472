import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const MiB = 1 << 20;

/** Error codes of @gleaner/http a crawler must end each hostile posting with. */
export type HostileOutcome =
  | 'HTTP_BODY_TOO_LARGE'
  | 'HTTP_FETCH_TIMEOUT'
  | 'HTTP_TOO_MANY_REDIRECTS'
  | 'HTTP_ENCODING_UNSUPPORTED'
  | 'HTTP_BODY_CORRUPT';

export interface HostilePosting {
  /** Path of the posting page on the site, e.g. `/jobs/gzip-bomb`. */
  path: string;
  description: string;
  expected: HostileOutcome;
}

/**
 * The site's postings, each a response built to hurt a crawler. A fetcher with a body cap of a
 * few MiB, a total deadline of a few seconds and a handful of redirects must end each with the
 * code given.
 */
export const hostilePostings: readonly HostilePosting[] = [
  {
    path: '/jobs/gzip-bomb',
    description: 'a gzip body of ~1 MB inflating to 1 GiB',
    expected: 'HTTP_BODY_TOO_LARGE',
  },
  {
    path: '/jobs/nested-gzip-bomb',
    description: 'the gzip bomb gzipped again (Content-Encoding: gzip, gzip), ~5 KB on the wire',
    expected: 'HTTP_BODY_TOO_LARGE',
  },
  {
    path: '/jobs/brotli-bomb',
    description: 'a few hundred bytes of brotli inflating to 64 MiB',
    expected: 'HTTP_BODY_TOO_LARGE',
  },
  {
    path: '/jobs/endless-gzip',
    description: 'gzip members of 1 MiB of zeros, sent for ever',
    expected: 'HTTP_BODY_TOO_LARGE',
  },
  {
    path: '/jobs/endless',
    description: 'a plain body that never ends, as fast as the client reads',
    expected: 'HTTP_BODY_TOO_LARGE',
  },
  {
    path: '/jobs/huge-declared',
    description: 'Content-Length: 10 GiB, then one byte and silence',
    expected: 'HTTP_BODY_TOO_LARGE',
  },
  {
    path: '/jobs/triple-gzip',
    description: 'three stacked gzip layers (a bomb amplifier)',
    expected: 'HTTP_ENCODING_UNSUPPORTED',
  },
  {
    path: '/jobs/corrupt-gzip',
    description: 'Content-Encoding: gzip over bytes that are not gzip',
    expected: 'HTTP_BODY_CORRUPT',
  },
  {
    path: '/jobs/trickle',
    description: 'one byte a second, never idle long enough for an idle timeout',
    expected: 'HTTP_FETCH_TIMEOUT',
  },
  {
    path: '/jobs/redirect-loop',
    description: 'a page that redirects to itself',
    expected: 'HTTP_TOO_MANY_REDIRECTS',
  },
  {
    path: '/jobs/ping',
    description: 'two pages redirecting to each other',
    expected: 'HTTP_TOO_MANY_REDIRECTS',
  },
  {
    path: '/jobs/chain/0',
    description: 'an endless chain of new URLs, each redirecting to the next',
    expected: 'HTTP_TOO_MANY_REDIRECTS',
  },
];

export interface HostileRequest {
  path: string;
  startedAt: number;
  /** When the connection closed (the client gave up or the response was done); null while open. */
  endedAt: number | null;
}

export interface HostileSite {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  sitemapUrl: string;
  /** Path of a well-formed posting, to show the site is otherwise crawlable. */
  controlPath: string;
  /** Every request, in arrival order. */
  requests: HostileRequest[];
  close(): Promise<void>;
}

interface Payloads {
  gzipMember: Buffer;
  gzipBomb: Buffer;
  nestedBomb: Buffer;
  brotliBomb: Buffer;
}

let payloads: Payloads | undefined;

/** Built once per process: the brotli bomb takes a moment to compress. */
function buildPayloads(): Payloads {
  if (!payloads) {
    const gzipMember = gzipSync(Buffer.alloc(MiB), { level: 9 });
    // gzip allows members back to back: 1024 of them inflate to 1 GiB.
    const gzipBomb = Buffer.concat(Array.from({ length: 1024 }, () => gzipMember));
    payloads = {
      gzipMember,
      gzipBomb,
      nestedBomb: gzipSync(gzipBomb, { level: 9 }),
      brotliBomb: brotliCompressSync(Buffer.alloc(64 * MiB), {
        params: { [constants.BROTLI_PARAM_QUALITY]: 5 },
      }),
    };
  }
  return payloads;
}

/** Writes `chunk` for ever, as fast as the client reads (backpressure), until it goes away. */
function writeForever(response: ServerResponse, chunk: Buffer): void {
  const pump = () => {
    while (!response.destroyed && response.write(chunk));
    if (!response.destroyed) response.once('drain', pump);
  };
  pump();
}

const controlPosting = JSON.stringify({
  '@context': 'https://schema.org',
  '@type': 'JobPosting',
  title: 'Site Reliability Engineer',
  hiringOrganization: { '@type': 'Organization', name: 'Hostile Corp' },
  datePosted: '2026-11-01',
  description: '<p>Keep the crawler standing.</p>',
});

/**
 * A career site on 127.0.0.1 whose sitemap lists `hostilePostings` plus one well-formed posting.
 * Each request's arrival and the close of its connection are recorded, so a test can tell how
 * long the crawler held on to each hostile response.
 */
export async function createHostileSite(): Promise<HostileSite> {
  const { gzipMember, gzipBomb, nestedBomb, brotliBomb } = buildPayloads();
  const requests: HostileRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let origin = '';
  const controlPath = '/jobs/control';

  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    const record: HostileRequest = { path, startedAt: Date.now(), endedAt: null };
    requests.push(record);
    response.on('close', () => {
      record.endedAt = Date.now();
    });
    response.on('error', () => undefined);
    const chain = /^\/jobs\/chain\/(\d+)$/.exec(path);
    if (chain) {
      response.writeHead(301, { location: `/jobs/chain/${Number(chain[1]) + 1}` }).end();
      return;
    }
    switch (path) {
      case '/sitemap.xml':
        response
          .writeHead(200, { 'content-type': 'application/xml' })
          .end(
            `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[
              controlPath,
              ...hostilePostings.map((p) => p.path),
            ]
              .map((p) => `<url><loc>${origin}${p}</loc></url>`)
              .join('')}</urlset>`,
          );
        return;
      case controlPath:
        response
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<html><head><script type="application/ld+json">${controlPosting}</script></head><body></body></html>`,
          );
        return;
      case '/jobs/gzip-bomb':
        response.writeHead(200, {
          'content-type': 'text/html',
          'content-encoding': 'gzip',
          'content-length': gzipBomb.length,
        });
        response.end(gzipBomb);
        return;
      case '/jobs/nested-gzip-bomb':
        response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip, gzip' });
        response.end(nestedBomb);
        return;
      case '/jobs/brotli-bomb':
        response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br' });
        response.end(brotliBomb);
        return;
      case '/jobs/endless-gzip':
        response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
        writeForever(response, gzipMember);
        return;
      case '/jobs/endless':
        response.writeHead(200, { 'content-type': 'text/html' });
        writeForever(response, Buffer.alloc(64 * 1024, 'a'));
        return;
      case '/jobs/huge-declared':
        response.writeHead(200, {
          'content-type': 'text/html',
          'content-length': String(10 * 1024 * MiB),
        });
        response.write('a');
        return;
      case '/jobs/triple-gzip':
        response.writeHead(200, {
          'content-type': 'text/html',
          'content-encoding': 'gzip, gzip, gzip',
        });
        response.end(gzipSync(gzipSync(gzipSync('<html></html>'))));
        return;
      case '/jobs/corrupt-gzip':
        response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
        response.end(Buffer.from('this is not gzip at all'));
        return;
      case '/jobs/trickle': {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.write('<');
        const timer = setInterval(() => response.write('a'), 1000);
        timers.add(timer);
        response.on('close', () => {
          clearInterval(timer);
          timers.delete(timer);
        });
        return;
      }
      case '/jobs/redirect-loop':
        response.writeHead(302, { location: '/jobs/redirect-loop' }).end();
        return;
      case '/jobs/ping':
        response.writeHead(302, { location: '/jobs/pong' }).end();
        return;
      case '/jobs/pong':
        response.writeHead(302, { location: '/jobs/ping' }).end();
        return;
      default:
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  origin = `http://127.0.0.1:${port}`;
  return {
    url: origin,
    port,
    sitemapUrl: `${origin}/sitemap.xml`,
    controlPath,
    requests,
    async close() {
      timers.forEach(clearInterval);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
