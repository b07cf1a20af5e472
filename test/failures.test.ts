import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, createRun, getRun, insertSite, type DbHandle } from '@gleaner/db';
import { createFetcher, createRobotsCache, createSiteGate } from '@gleaner/http';
import { createLogger } from '@gleaner/logger';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  enqueue,
  type Queues,
} from '@gleaner/queue';
import {
  createTestDatabase,
  createTestRedisNamespace,
  waitFor,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import { startWorkers, type WorkerRuntime } from '@gleaner/worker';
import type { Redis } from 'ioredis';

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
let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let producer: Redis;
let workerConnection: Redis;
let queues: Queues;
let runtime: WorkerRuntime;
const fetcher = createFetcher({
  userAgent: 'GleanerTest',
  timeoutMs: 5000,
  maxBodyBytes: 1 << 20,
  maxRedirects: 3,
  allowPrivateNetworks: true,
});

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

  database = await createTestDatabase('failures');
  namespace = createTestRedisNamespace('failures');
  handle = createDb({ url: database.url, poolMax: 6 });
  producer = createRedisConnection(namespace.url, 'producer');
  workerConnection = createRedisConnection(namespace.url, 'worker');
  queues = createQueues(producer, namespace.prefix);
  runtime = startWorkers(
    {
      db: handle.db,
      queues,
      fetcher,
      gate: createSiteGate({ redis: producer, prefix: namespace.prefix }),
      robots: createRobotsCache({ fetcher, redis: producer, prefix: namespace.prefix, userAgent: 'GleanerTest' }),
      logger: createLogger({ service: 'worker', level: 'silent', destination: new PassThrough() }),
    },
    {
      connection: workerConnection,
      prefix: namespace.prefix,
      queues: ['scrape', 'crawl', 'extract'],
      concurrency: { scrape: 1, crawl: 2, extract: 2 },
    },
  );
});

afterAll(async () => {
  await runtime?.close(5000);
  await closeQueues(queues);
  producer?.disconnect();
  workerConnection?.disconnect();
  await fetcher.close();
  await handle?.close();
  await namespace?.cleanup();
  await database?.drop();
  await new Promise((resolve) => server?.close(resolve));
});

describe('failing postings', () => {
  it('settle as errors, park in the dead-letter queue, and let the run finalize', async () => {
    const site = await insertSite(handle.db, {
      siteName: 'flaky',
      kind: 'career-site',
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      config: { url: origin, sitemapUrl: `${origin}/sitemap.xml` },
    });
    const run = await createRun(handle.db, { siteId: site.id, trigger: 'manual' });
    await enqueue(queues, 'scrape', { runId: run.id, siteId: site.id });

    const finished = await waitFor(
      async () => {
        const current = await getRun(handle.db, run.id);
        return current && current.status !== 'queued' && current.status !== 'running'
          ? current
          : undefined;
      },
      { timeoutMs: 30_000, what: 'the run to finalize' },
    );
    expect(finished).toMatchObject({
      status: 'failed',
      requestedPages: 3,
      readyCount: 1,
      errorsCount: 2,
    });

    const { rows } = await handle.pool.query<{ url: string; status: string; error: string | null }>(
      'SELECT url, status, error FROM postings WHERE run_id = $1 ORDER BY url',
      [run.id],
    );
    expect(rows.map((r) => [new URL(r.url).pathname, r.status])).toEqual([
      ['/jobs/about', 'error'],
      ['/jobs/gone', 'error'],
      ['/jobs/good', 'ready'],
    ]);
    expect(rows[0]!.error).toMatch(/no job posting/);
    expect(rows[1]!.error).toMatch(/answered 404/);

    const parked = await waitFor(
      async () => {
        const jobs = await queues['dead-letter'].getJobs(['waiting'], 0, -1);
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
