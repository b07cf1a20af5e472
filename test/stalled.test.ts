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
  enqueue,
  type Queues,
} from '@gleaner/queue';
import {
  createFixtureCareerSite,
  createTestDatabase,
  createTestRedisNamespace,
  waitFor,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import { startWorkers, type RuntimeOptions, type WorkerRuntime } from '@gleaner/worker';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testWorkerDeps } from './support/in-process-system.js';
import { seedRunWithPostings } from './support/seed.js';

/**
 * A crawl job whose worker dies more often than its stage's stall limit allows is failed for good
 * by the next worker to take it, before its handler runs: its posting must still settle `error`,
 * its run must still end, and the job must be parked in the dead letters (as a transient failure,
 * so that a requeue can run it again).
 */
let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
const connections: Redis[] = [];
let queues: Queues;
let runtime: WorkerRuntime | undefined;

beforeAll(async () => {
  database = await createTestDatabase('stalled');
  namespace = createTestRedisNamespace('stalled');
  handle = createDb({ url: database.url, poolMax: 4 });
  const producer = createRedisConnection(namespace.url, 'producer');
  connections.push(producer);
  queues = createQueues(producer, namespace.prefix);
});

/** A worker that takes one job of `queue` and dies with it: its lock is no longer renewed. */
async function dieWithJob(queue: 'crawl'): Promise<void> {
  const connection = createRedisConnection(namespace.url, 'worker');
  connections.push(connection);
  let taken = false;
  const doomed = new Worker(
    queue,
    async () => {
      taken = true;
      await new Promise(() => undefined);
    },
    // It runs no stall check of its own: on a busy machine its lock can lapse before it is
    // closed, and its own check would then hand the job on where nothing listens.
    { connection, prefix: namespace.prefix, lockDuration: 500, skipStalledCheck: true },
  );
  await waitFor(() => (taken ? true : undefined), { what: 'the doomed worker to take the job' });
  await doomed.close(true);
}

/** A replica serving `crawl` as main.ts builds one, its stall check every 250 ms. */
function startCrawlReplica(
  fetcher: Fetcher,
  stalls: NonNullable<RuntimeOptions['stalls']>,
): WorkerRuntime {
  const workerConnection = createRedisConnection(namespace.url, 'worker');
  connections.push(workerConnection);
  return startWorkers(
    testWorkerDeps({
      db: handle.db,
      queues,
      fetcher,
      producer: connections[0]!,
      prefix: namespace.prefix,
    }),
    { connection: workerConnection, prefix: namespace.prefix, queues: ['crawl'], stalls },
  );
}

const testFetcher = () =>
  createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 5_000,
    maxBodyBytes: 1 << 20,
    maxRedirects: 3,
    allowPrivateNetworks: true,
  });

/** The run once it is no longer running. */
const runEnded = (runId: string) =>
  waitFor(
    async () => {
      const current = await getRun(handle.db, runId);
      return current?.status === 'running' ? undefined : current;
    },
    { timeoutMs: 20_000, what: 'the run to end' },
  );

afterAll(async () => {
  await runtime?.close(1_000);
  await closeQueues(queues);
  for (const connection of connections) connection.disconnect();
  await handle?.close();
  await namespace?.cleanup();
  await database?.drop();
});

describe('a job failed by the stall check', () => {
  it('settles its posting, ends its run and lands in the dead letters', async () => {
    const { run, site, postings } = await seedRunWithPostings(handle.db, 1, 'stalled');
    const posting = postings[0]!;
    await enqueue(queues, 'crawl', { runId: run.id, siteId: site.id, postingId: posting.id });

    // A worker takes the job and dies with it: closed by force, it no longer renews the lock.
    await dieWithJob('crawl');

    // A live replica's stall check finds the job; with no stall allowed, it fails it for good.
    const fetcher = testFetcher();
    runtime = startCrawlReplica(fetcher, {
      lockDuration: 500,
      stalledInterval: 250,
      maxStalledCount: 0,
    });

    const ended = await runEnded(run.id);
    expect(ended).toMatchObject({ status: 'failed', errorsCount: 1 });
    const { rows } = await handle.pool.query<{ status: string; error: string }>(
      'SELECT status, error FROM postings WHERE id = $1',
      [posting.id],
    );
    expect(rows[0]).toMatchObject({ status: 'error' });
    expect(rows[0]!.error).toMatch(/^crawl: .*stalled/);
    const parked = await waitFor(
      async () => {
        const [job] = await queues['dead-letter'].getJobs(['waiting'], 0, 0);
        return job;
      },
      { what: 'the job in the dead letters' },
    );
    expect(parked.data).toMatchObject({
      queue: 'crawl',
      payload: { postingId: posting.id },
      errorClass: 'transient',
    });
    expect(await queues['dead-letter'].getJobCounts('waiting')).toEqual({ waiting: 1 });
    await fetcher.close();
  });
});

describe('a job orphaned by a worker that died', () => {
  it('runs again elsewhere, without spending an attempt, and its posting ends ready', async () => {
    // No other replica runs: the doomed worker is the one to take the job.
    await runtime?.close(1_000);
    runtime = undefined;
    const fixture = await createFixtureCareerSite({ postings: 1 });
    const fetcher = testFetcher();
    let replica: WorkerRuntime | undefined;
    try {
      const site = await insertSite(handle.db, {
        siteName: 'orphaned',
        kind: 'career-site',
        config: { url: fixture.url, sitemapUrl: `${fixture.url}/sitemap.xml` },
        minPauseSeconds: 0,
        maxPauseSeconds: 0,
      });
      const run = await createRun(handle.db, { siteId: site.id, trigger: 'manual' });
      await startRun(handle.db, run.id);
      const [page] = fixture.postings();
      const [posting] = await upsertListedPostings(handle.db, site.id, run.id, [
        { externalId: page!.id, url: page!.url },
      ]);
      await completeListing(handle.db, run.id, { requestedPages: 1, listingComplete: true });
      const jobId = await enqueue(queues, 'crawl', {
        runId: run.id,
        siteId: site.id,
        postingId: posting!.id,
      });
      await dieWithJob('crawl');

      // A live replica with the stage's own stall limit: one death is far below it.
      replica = startCrawlReplica(fetcher, { lockDuration: 500, stalledInterval: 250 });
      const ended = await runEnded(run.id);
      expect(ended).toMatchObject({ status: 'succeeded', readyCount: 1, errorsCount: 0 });
      expect(await getPosting(handle.db, posting!.id)).toMatchObject({ status: 'ready' });
      // The run ends when the job settles its posting, a moment before BullMQ marks it completed.
      const job = await waitFor(
        async () => {
          const found = await queues.crawl.getJob(jobId);
          return (await found?.getState()) === 'completed' ? found : undefined;
        },
        { what: 'the crawl job completed' },
      );
      expect(job.stalledCounter).toBe(1);
      // Completed on its first attempt of its own: the death cost none.
      expect(job.attemptsMade).toBeLessThanOrEqual(1);
      const letters = await queues['dead-letter'].getJobs(['waiting']);
      expect(letters.map((letter) => (letter.data as { jobId: string }).jobId)).not.toContain(
        jobId,
      );
    } finally {
      await replica?.close(1_000);
      await fetcher.close();
      await fixture.close();
    }
  });
});
