import {
  completeListing,
  createDb,
  createRun,
  getPosting,
  getRun,
  insertSite,
  startRun,
  upsertListedPostings,
  type DbHandle,
} from '@gleaner/db';
import { createFetcher, type Fetcher } from '@gleaner/http';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  crawlJob,
  enqueue,
  type Queues,
} from '@gleaner/queue';
import {
  createFixtureCareerSite,
  createTestDatabase,
  createTestRedisNamespace,
  waitFor,
  type FixtureCareerSite,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import { startWorkers, type WorkerRuntime } from '@gleaner/worker';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testWorkerDeps } from './support/in-process-system.js';

/**
 * A crawl job whose site never answers within the crawl queue's timeout: its fetch is aborted
 * (the fetcher's own deadline is far longer), it fails with JOB_TIMEOUT, is retried by its
 * queue's policy, and on its last attempt its posting settles `error` and the job is
 * dead-lettered as a transient failure.
 */
const JOB_TIMEOUT_MS = 1000;
const ATTEMPTS = 3;
/** Far past the job's timeout and the fetcher's deadline alike: the site never answers in time. */
const PAGE_DELAY_MS = 120_000;

let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let queues: Queues;
let fetcher: Fetcher;
let fixture: FixtureCareerSite;
let runtime: WorkerRuntime;
const connections: Redis[] = [];

beforeAll(async () => {
  database = await createTestDatabase('job-timeout');
  namespace = createTestRedisNamespace('job-timeout');
  handle = createDb({ url: database.url, poolMax: 4 });
  const producer = createRedisConnection(namespace.url, 'producer');
  const worker = createRedisConnection(namespace.url, 'worker');
  connections.push(producer, worker);
  queues = createQueues(producer, namespace.prefix);
  fixture = await createFixtureCareerSite({
    postings: 1,
    responseDelayMs: (target) => (target.startsWith('/jobs/') ? PAGE_DELAY_MS : 0),
  });
  fetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 60_000,
    maxBodyBytes: 1 << 20,
    maxRedirects: 3,
    allowPrivateNetworks: true,
  });
  runtime = startWorkers(
    testWorkerDeps({ db: handle.db, queues, fetcher, producer, prefix: namespace.prefix }),
    {
      connection: worker,
      prefix: namespace.prefix,
      queues: ['crawl'],
      policies: { crawl: { concurrency: 2, timeoutMs: JOB_TIMEOUT_MS } },
      extractThreads: 0,
    },
  );
});

afterAll(async () => {
  await runtime?.close(1000);
  await closeQueues(queues);
  for (const connection of connections) connection.disconnect();
  await fetcher?.close();
  await fixture?.close();
  await handle?.close();
  await namespace?.cleanup();
  await database?.drop();
});

describe('a crawl job past its timeout', () => {
  it('is aborted, retried, and on its last attempt settles its posting as error', async () => {
    const { db } = handle;
    const site = await insertSite(db, {
      siteName: 'never-answers',
      kind: 'career-site',
      config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
    });
    const run = await createRun(db, { siteId: site.id, trigger: 'manual' });
    await startRun(db, run.id);
    const page = fixture.postings()[0]!;
    const [posting] = await upsertListedPostings(db, site.id, run.id, [
      { externalId: page.id, url: page.url },
    ]);
    await completeListing(db, run.id, { requestedPages: 1, listingComplete: true });
    const payload = { runId: run.id, siteId: site.id, postingId: posting!.id };

    const started = Date.now();
    await enqueue(queues, 'crawl', payload, {
      attempts: ATTEMPTS,
      backoff: { type: 'fixed', delay: 200 },
    });
    const settled = await waitFor(
      async () => {
        const current = await getPosting(db, posting!.id);
        return current?.status === 'pending' ? undefined : current;
      },
      { timeoutMs: 60_000, what: 'the posting to settle' },
    );
    expect(settled).toMatchObject({ status: 'error' });
    expect(settled.error).toBe(`crawl: crawl job did not finish within ${JOB_TIMEOUT_MS} ms`);
    // Each attempt really fetched, and each fetch was cut at the job's timeout, not the
    // fetcher's deadline or the site's answer.
    expect(fixture.requestCount('/jobs/')).toBe(ATTEMPTS);
    expect(Date.now() - started).toBeLessThan(30_000);

    // The posting settles in the last attempt's handler, just before BullMQ records that attempt.
    // The state first, then the job: read the other way round, the job could be the one from
    // before its last attempt was recorded.
    const jobId = crawlJob.jobId(payload);
    const job = await waitFor(
      async () =>
        (await queues.crawl.getJobState(jobId)) === 'failed'
          ? queues.crawl.getJob(jobId)
          : undefined,
      { timeoutMs: 10_000, what: 'the crawl job to be failed' },
    );
    expect(job.attemptsMade).toBe(ATTEMPTS);
    expect(job.failedReason).toBe(`crawl job did not finish within ${JOB_TIMEOUT_MS} ms`);
    const parked = await waitFor(
      async () => {
        const [deadLetter] = await queues['dead-letter'].getJobs(['waiting'], 0, 0);
        return deadLetter;
      },
      { what: 'the job in the dead letters' },
    );
    expect(parked.data).toMatchObject({
      queue: 'crawl',
      errorCode: 'JOB_TIMEOUT',
      errorClass: 'transient',
      attemptsMade: ATTEMPTS,
    });
    // Its only posting errored: the run ends, failed.
    expect(await getRun(db, run.id)).toMatchObject({ status: 'failed', errorsCount: 1 });
  });
});
