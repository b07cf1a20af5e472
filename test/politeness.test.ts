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

let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
const connections: Redis[] = [];
const replicas: { runtime: WorkerRuntime; queues: Queues }[] = [];
const fetcher = createFetcher({
  userAgent: 'GleanerTest',
  timeoutMs: 5000,
  maxBodyBytes: 1 << 20,
  maxRedirects: 3,
  allowPrivateNetworks: true,
});

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

  database = await createTestDatabase('polite');
  namespace = createTestRedisNamespace('polite');
  handle = createDb({ url: database.url, poolMax: 8 });
  for (let replica = 0; replica < 2; replica += 1) {
    const producer = createRedisConnection(namespace.url, 'producer');
    const worker = createRedisConnection(namespace.url, 'worker');
    connections.push(producer, worker);
    const queues = createQueues(producer, namespace.prefix);
    const runtime = startWorkers(
      {
        db: handle.db,
        queues,
        fetcher,
        gate: createSiteGate({ redis: producer, prefix: namespace.prefix }),
        robots: createRobotsCache({
          fetcher,
          redis: producer,
          prefix: namespace.prefix,
          userAgent: 'GleanerTest',
        }),
        logger: createLogger({
          service: 'worker',
          level: 'silent',
          destination: new PassThrough(),
        }),
      },
      {
        connection: worker,
        prefix: namespace.prefix,
        queues: ['scrape', 'crawl', 'extract'],
        concurrency: { scrape: 1, crawl: 4, extract: 2 },
      },
    );
    replicas.push({ runtime, queues });
  }
});

afterAll(async () => {
  await Promise.all(replicas.map(({ runtime }) => runtime.close(5000)));
  await Promise.all(replicas.map(({ queues }) => closeQueues(queues)));
  for (const connection of connections) connection.disconnect();
  await fetcher.close();
  await handle?.close();
  await namespace?.cleanup();
  await database?.drop();
  await new Promise((resolve) => server?.close(resolve));
});

describe('a site that answers 429 with Retry-After: 5', () => {
  it('gets no request from any replica for 5 s, and its postings still complete', async () => {
    const site = await insertSite(handle.db, {
      siteName: 'throttled',
      kind: 'career-site',
      config: { url: origin, sitemapUrl: `${origin}/sitemap.xml` },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      maxConcurrency: 4,
    });
    const run = await createRun(handle.db, { siteId: site.id, trigger: 'manual' });
    await enqueue(replicas[0]!.queues, 'scrape', { runId: run.id, siteId: site.id });
    const finished = await waitFor(
      async () => {
        const current = await getRun(handle.db, run.id);
        return current && current.status !== 'queued' && current.status !== 'running'
          ? current
          : undefined;
      },
      { timeoutMs: 60_000, what: 'the run to finalize' },
    );
    expect(finished).toMatchObject({ status: 'succeeded', readyCount: POSTINGS });

    const throttledAt = postingRequests.find((r) => r.status === 429)!.at;
    const after = postingRequests.filter((r) => r.at > throttledAt);
    expect(after).toHaveLength(POSTINGS);
    // Up to maxConcurrency - 1 requests were already granted and on the wire while the 429 travelled
    // back; they land within milliseconds. After those, nothing reaches the site for 5 s.
    const inFlight = after.filter((r) => r.at - throttledAt < 100);
    expect(inFlight.length).toBeLessThanOrEqual(3);
    const later = after.filter((r) => r.at - throttledAt >= 100);
    expect(later.length).toBeGreaterThan(0);
    expect(Math.min(...later.map((r) => r.at)) - throttledAt).toBeGreaterThanOrEqual(4990);
  });
});
