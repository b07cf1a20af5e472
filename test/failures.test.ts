import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSite, listSiteAlerts } from '@gleaner/db';
import { waitFor } from '@gleaner/testing';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * Failures end as recorded errors, not stuck runs: a page that is gone (404) and a page that
 * holds no posting fail permanently on their first attempt, are parked in the dead-letter
 * queue with their payload, and the run still finalizes — `failed`, since 2 of 3 errored.
 */
const posting = {
  '@context': 'https://schema.org',
  '@type': 'JobPosting',
  title: 'Staff Engineer',
  hiringOrganization: { '@type': 'Organization', name: 'Acme' },
  datePosted: '2026-11-01',
  description: '<p>Build things.</p>',
};

let server: Server;
let origin: string;
let system: InProcessSystem;

beforeAll(async () => {
  server = createServer((request, response) => {
    switch (request.url) {
      case '/sitemap.xml':
        response
          .writeHead(200, { 'content-type': 'application/xml' })
          .end(
            `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[
              '/jobs/good',
              '/jobs/gone',
              '/jobs/about',
            ]
              .map((p) => `<url><loc>${origin}${p}</loc></url>`)
              .join('')}</urlset>`,
          );
        return;
      case '/jobs/good':
        response
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<html><head><script type="application/ld+json">${JSON.stringify(posting)}</script></head><body></body></html>`,
          );
        return;
      case '/jobs/about':
        response
          .writeHead(200, { 'content-type': 'text/html' })
          .end('<html><head><title>About us</title></head><body>Hi</body></html>');
        return;
      default:
        response.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  system = await startInProcessSystem('failures');
});

afterAll(async () => {
  await system?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('failing postings', () => {
  it('settle as errors, park in the dead-letter queue, and let the run finalize', async () => {
    const site = await insertSite(system.handle.db, {
      siteName: 'flaky',
      kind: 'career-site',
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      config: { url: origin, sitemapUrl: `${origin}/sitemap.xml` },
    });
    const run = await system.runToEnd(site.id, 30_000);
    expect(run).toMatchObject({
      status: 'failed',
      requestedPages: 3,
      readyCount: 1,
      errorsCount: 2,
    });

    const { rows } = await system.handle.pool.query<{
      url: string;
      status: string;
      error: string | null;
    }>('SELECT url, status, error FROM postings WHERE run_id = $1 ORDER BY url', [run.id]);
    expect(rows.map((r) => [new URL(r.url).pathname, r.status])).toEqual([
      ['/jobs/about', 'error'],
      ['/jobs/gone', 'error'],
      ['/jobs/good', 'ready'],
    ]);
    expect(rows[0]!.error).toMatch(/no job posting/);
    expect(rows[1]!.error).toMatch(/answered 404/);

    const parked = await waitFor(
      async () => {
        const jobs = await system.queues['dead-letter'].getJobs(['waiting'], 0, -1);
        return jobs.length === 2 ? jobs : undefined;
      },
      { what: 'two dead letters' },
    );
    const letters = parked
      .map((job) => job.data as Record<string, unknown>)
      .sort((a, b) => String(a.queue).localeCompare(String(b.queue)));
    expect(letters).toEqual([
      expect.objectContaining({
        queue: 'crawl',
        jobName: 'crawl.fetch-posting',
        errorClass: 'permanent',
        errorCode: 'HTTP_STATUS_404',
        attemptsMade: 1,
      }),
      expect.objectContaining({
        queue: 'extract',
        jobName: 'extract.parse-posting',
        errorClass: 'permanent',
        errorCode: 'EXTRACT_NOT_A_POSTING',
        attemptsMade: 1,
      }),
    ]);
    expect(letters[0]!.payload).toMatchObject({ runId: run.id, siteId: site.id });
  });
});

describe("a site's answers retried away", () => {
  it('count under their run, and a run whose 5xx share jumps raises http_errors with every posting read', async () => {
    const pages = Array.from({ length: 12 }, (_, i) => `/jobs/${i}`);
    /** Pages that answer 500 the first time they are asked in the current run. */
    let failingOnce = new Set<string>();
    const flaky = createServer((request, response) => {
      const path = request.url ?? '/';
      if (path === '/sitemap.xml') {
        response
          .writeHead(200, { 'content-type': 'application/xml' })
          .end(
            `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${pages
              .map((p) => `<url><loc>${flakyOrigin}${p}</loc></url>`)
              .join('')}</urlset>`,
          );
        return;
      }
      if (!pages.includes(path)) return void response.writeHead(404).end('not found');
      if (failingOnce.delete(path)) return void response.writeHead(500).end('busy');
      const job = { ...posting, title: `Engineer ${path.slice('/jobs/'.length)}` };
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(
          `<html><head><script type="application/ld+json">${JSON.stringify(job)}</script></head><body></body></html>`,
        );
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    const flakyOrigin = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`;
    try {
      const site = await insertSite(system.handle.db, {
        siteName: 'busy-at-times',
        kind: 'career-site',
        minPauseSeconds: 0,
        maxPauseSeconds: 0,
        config: { url: flakyOrigin, sitemapUrl: `${flakyOrigin}/sitemap.xml` },
      });
      const calm = [await system.runToEnd(site.id), await system.runToEnd(site.id)];
      for (const run of calm) {
        expect(run).toMatchObject({ status: 'succeeded', serverErrorsCount: 0 });
        // The sitemap and the twelve pages, and whatever else the site was asked (robots.txt).
        expect(run.requestsCount).toBeGreaterThanOrEqual(13);
      }
      // Four pages answer 500 once: each crawl job's retry reads its page.
      failingOnce = new Set(pages.slice(0, 4));
      const busy = await system.runToEnd(site.id);
      expect(busy).toMatchObject({
        status: 'succeeded',
        errorsCount: 0,
        serverErrorsCount: 4,
        requestsCount: calm[0]!.requestsCount! + 4,
      });
      expect(await listSiteAlerts(system.handle.db, { siteId: site.id })).toEqual([
        expect.objectContaining({
          kind: 'http_errors',
          runId: busy.runId,
          details: expect.objectContaining({
            classes: ['5xx'],
            answers: expect.objectContaining({ '5xx': 4 }),
          }),
        }),
      ]);
    } finally {
      await new Promise((resolve) => flaky.close(resolve));
    }
  });
});
