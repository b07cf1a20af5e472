import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSite } from '@gleaner/db';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * Two worker replicas (separate runtimes, Redis connections and gates) crawl one site. The site
 * answers its first posting request with 429 and `Retry-After: 5`: no replica may send it
 * another request for 5 s, and every posting still ends ready.
 */
const POSTINGS = 12;
const posting = (n: number) =>
  `<html><head><script type="application/ld+json">${JSON.stringify({
    '@context': 'https://schema.org',
    '@type': 'JobPosting',
    title: `Role ${n}`,
    hiringOrganization: { '@type': 'Organization', name: 'Acme' },
    datePosted: '2026-11-01',
    description: `<p>Role ${n}</p>`,
  })}</script></head><body></body></html>`;

let server: Server;
let origin: string;
const postingRequests: { at: number; status: number }[] = [];
let answered429 = false;

let system: InProcessSystem;

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = request.url ?? '/';
    if (url === '/sitemap.xml') {
      const locs = Array.from(
        { length: POSTINGS },
        (_, i) => `<url><loc>${origin}/jobs/${i}</loc></url>`,
      ).join('');
      response
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(`<urlset>${locs}</urlset>`);
      return;
    }
    const match = /^\/jobs\/(\d+)$/.exec(url);
    if (!match) {
      response.writeHead(404).end();
      return;
    }
    if (!answered429) {
      answered429 = true;
      postingRequests.push({ at: Date.now(), status: 429 });
      response.writeHead(429, { 'retry-after': '5' }).end();
      return;
    }
    postingRequests.push({ at: Date.now(), status: 200 });
    response.writeHead(200, { 'content-type': 'text/html' }).end(posting(Number(match[1])));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  system = await startInProcessSystem('polite', { replicas: 2, crawlConcurrency: 4 });
});

afterAll(async () => {
  await system?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('a site that answers 429 with Retry-After: 5', () => {
  it('gets no request from any replica for 5 s, and its postings still complete', async () => {
    const site = await insertSite(system.handle.db, {
      siteName: 'throttled',
      kind: 'career-site',
      config: { url: origin, sitemapUrl: `${origin}/sitemap.xml` },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      // One fetch at a time: the 429's lease is released together with the cooldown it starts,
      // so no other request can be granted in between.
      maxConcurrency: 1,
    });
    const finished = await system.runToEnd(site.id);
    expect(finished).toMatchObject({ status: 'succeeded', readyCount: POSTINGS });

    const throttledAt = postingRequests.find((r) => r.status === 429)!.at;
    const after = postingRequests.filter((r) => r.at > throttledAt);
    expect(after).toHaveLength(POSTINGS);
    expect(Math.min(...after.map((r) => r.at)) - throttledAt).toBeGreaterThanOrEqual(4990);
  });
});
