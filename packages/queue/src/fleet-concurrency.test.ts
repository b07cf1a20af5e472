import { createTestRedisNamespace } from '@gleaner/testing';
import { Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisConnection, waitForRedis } from './connection.js';
import { applyFleetConcurrency } from './fleet-concurrency.js';
import { closeQueues, createQueues } from './queues.js';

const namespace = createTestRedisNamespace('fleet-concurrency');
const redis = createRedisConnection(namespace.url, 'producer');
const queues = createQueues(redis, namespace.prefix);

afterAll(async () => {
  await closeQueues(queues);
  redis.disconnect();
  await namespace.cleanup();
});

describe('fleet-wide concurrency', () => {
  it('sets the caps it is given, removes those set to 0 and leaves the other queues alone', async () => {
    await waitForRedis(redis);
    await queues.crawl.setGlobalConcurrency(7);
    expect(await applyFleetConcurrency(queues, { extract: 5, documents: 3 })).toEqual({
      extract: 5,
      documents: 3,
    });
    expect(await applyFleetConcurrency(queues, { documents: 0 })).toEqual({
      documents: undefined,
    });
    expect(await queues.documents.getGlobalConcurrency()).toBeNull();
    expect(await queues.extract.getGlobalConcurrency()).toBe(5);
    expect(await queues.crawl.getGlobalConcurrency()).toBe(7);
    await expect(applyFleetConcurrency(queues, { extract: -1 })).rejects.toThrow(
      /fleet concurrency of extract must be an integer >= 0/,
    );
    await expect(applyFleetConcurrency(queues, { extract: 1.5 })).rejects.toThrow(RangeError);
    expect(await queues.extract.getGlobalConcurrency()).toBe(5);
  });

  it('holds two workers of four jobs each to the cap between them', async () => {
    await waitForRedis(redis);
    const CAP = 2;
    const JOBS = 12;
    await applyFleetConcurrency(queues, { scrape: CAP });
    let running = 0;
    let most = 0;
    let done = 0;
    const connections = [1, 2].map(() => createRedisConnection(namespace.url, 'worker'));
    const workers = connections.map(
      (connection) =>
        new Worker(
          'scrape',
          async () => {
            running += 1;
            most = Math.max(most, running);
            await new Promise((resolve) => setTimeout(resolve, 60));
            running -= 1;
            done += 1;
          },
          { connection, prefix: namespace.prefix, concurrency: 4 },
        ),
    );
    try {
      await queues.scrape.addBulk(
        Array.from({ length: JOBS }, (_, index) => ({ name: 'probe', data: { index } })),
      );
      await expect.poll(() => done, { timeout: 30_000, interval: 50 }).toBe(JOBS);
      // Eight slots between them, two taken at once: the cap held, and was used.
      expect(most).toBe(CAP);
    } finally {
      await Promise.all(workers.map((worker) => worker.close()));
      connections.forEach((connection) => connection.disconnect());
    }
  });
});
