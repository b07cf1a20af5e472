import { createDb, getRun, type DbHandle } from '@gleaner/db';
import { createFetcher } from '@gleaner/http';
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
    const doomedConnection = createRedisConnection(namespace.url, 'worker');
    connections.push(doomedConnection);
    let taken = false;
    const doomed = new Worker(
      'crawl',
      async () => {
        taken = true;
        await new Promise(() => undefined);
      },
      // It runs no stall check of its own: on a busy machine its lock can lapse before it is
      // closed, and its own check would then fail the job where nothing listens.
      {
        connection: doomedConnection,
        prefix: namespace.prefix,
        lockDuration: 500,
        skipStalledCheck: true,
      },
    );
    await waitFor(() => (taken ? true : undefined), { what: 'the doomed worker to take the job' });
    await doomed.close(true);

    // A live replica's stall check finds the job; with no stall allowed, it fails it for good.
    const workerConnection = createRedisConnection(namespace.url, 'worker');
    connections.push(workerConnection);
    const fetcher = createFetcher({
      userAgent: 'GleanerTest',
      timeoutMs: 5_000,
      maxBodyBytes: 1 << 20,
      maxRedirects: 3,
      allowPrivateNetworks: true,
    });
    runtime = startWorkers(
      testWorkerDeps({
        db: handle.db,
        queues,
        fetcher,
        producer: connections[0]!,
        prefix: namespace.prefix,
      }),
      {
        connection: workerConnection,
        prefix: namespace.prefix,
        queues: ['crawl'],
        stalls: { lockDuration: 500, stalledInterval: 250, maxStalledCount: 0 },
      },
    );

    const ended = await waitFor(
      async () => {
        const current = await getRun(handle.db, run.id);
        return current?.status === 'running' ? undefined : current;
      },
      { timeoutMs: 20_000, what: 'the run to end' },
    );
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
