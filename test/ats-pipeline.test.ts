import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, createRun, getRun, insertSite, type DbHandle, type RunRow } from '@gleaner/db';
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
  createFixtureLever,
  createTestDatabase,
  createTestRedisNamespace,
  waitFor,
  type FixtureLever,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import { startWorkers, type WorkerRuntime } from '@gleaner/worker';
import type { Redis } from 'ioredis';

/**
 * An ATS board through the real pipeline: the listing carries each whole posting, so crawl
 * hands the payload on without fetching posting pages, and extract maps it with the adapter.
 */
const POSTINGS = 120;

let lever: FixtureLever;
let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let producer: Redis;
let workerConnection: Redis;
let queues: Queues;
let runtime: WorkerRuntime;
let siteId: string;
const fetcher = createFetcher({
  userAgent: 'GleanerTest',
  timeoutMs: 5000,
  maxBodyBytes: 20 << 20,
  maxRedirects: 3,
  allowPrivateNetworks: true,
});

beforeAll(async () => {
  lever = await createFixtureLever({ postings: POSTINGS, seed: 11 });
  database = await createTestDatabase('ats');
  namespace = createTestRedisNamespace('ats');
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
      concurrency: { scrape: 1, crawl: 4, extract: 4 },
    },
  );
  const site = await insertSite(handle.db, {
    siteName: 'lever-acme',
    kind: 'lever',
    config: { site: lever.site, baseUrl: lever.baseUrl },
  });
  siteId = site.id;
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
  await lever?.close();
});

async function runToEnd(): Promise<RunRow> {
  const run = await createRun(handle.db, { siteId, trigger: 'manual' });
  await enqueue(queues, 'scrape', { runId: run.id, siteId });
  return waitFor(
    async () => {
      const current = await getRun(handle.db, run.id);
      return current && current.status !== 'queued' && current.status !== 'running'
        ? current
        : undefined;
    },
    { timeoutMs: 60_000, what: 'the run to finalize' },
  );
}

describe('an ATS board through the pipeline', () => {
  it('maps every posting from its listing payload, without fetching posting pages', async () => {
    lever.resetRequests();
    const run = await runToEnd();
    expect(run).toMatchObject({
      status: 'succeeded',
      requestedPages: POSTINGS,
      readyCount: POSTINGS,
      errorsCount: 0,
    });
    // Only the paged postings API was called: 120 postings at 100 a page.
    expect(lever.requests().every((r) => r.path.startsWith('/v0/postings/'))).toBe(true);
    expect(lever.requests()).toHaveLength(2);

    const { rows } = await handle.pool.query<Record<string, unknown>>(
      'SELECT * FROM postings WHERE run_id = $1',
      [run.id],
    );
    const byExternalId = new Map(rows.map((row) => [row.external_id as string, row]));
    for (const fixture of lever.postings()) {
      const row = byExternalId.get(fixture.externalId)!;
      const e = fixture.expected;
      expect(row).toMatchObject({
        status: 'ready',
        title: e.title,
        company: e.company,
        location: e.location,
        is_remote: e.isRemote,
        employment_type: e.employmentType,
        salary_min: e.salaryMin,
        salary_max: e.salaryMax,
        salary_currency: e.salaryCurrency,
        salary_period: e.salaryPeriod,
        date_posted: e.datePosted,
        description: e.description,
        requirements: e.requirements,
      });
      expect((row.provenance as Record<string, string>).title).toBe('ats');
    }
  });

  it('skips every posting when the board is unchanged', async () => {
    const run = await runToEnd();
    expect(run).toMatchObject({ status: 'succeeded', skippedCount: POSTINGS, readyCount: 0 });
  });
});
