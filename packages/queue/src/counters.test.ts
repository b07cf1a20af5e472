import { createTestRedisNamespace, freePort } from '@gleaner/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisConnection, waitForRedis } from './connection.js';
import { createCounters, readJobCounts, readSiteCounts } from './counters.js';

const namespace = createTestRedisNamespace('counters');
const redis = createRedisConnection(namespace.url, 'producer');

afterAll(async () => {
  redis.disconnect();
  await namespace.cleanup();
});

describe('counters', () => {
  it('add up what several writers count, and ignore requests that never reached the site', async () => {
    await waitForRedis(redis);
    const replicas = [1, 2].map(() => createCounters({ redis, prefix: namespace.prefix }));
    for (const counters of replicas) {
      counters.jobCompleted('crawl');
      counters.jobFailed('crawl', { errorClass: 'transient', code: 'HTTP_STATUS_429' });
      counters.siteRequest('site-a', { status: 200 });
      counters.siteRequest('site-a', { status: 429 });
      counters.siteRequest('site-a', { failed: true });
      // Refused or never sent: no verdict on the site, not a request to it.
      counters.siteRequest('site-a', {});
    }
    await expect
      .poll(() => readSiteCounts(redis, namespace.prefix))
      .toEqual(new Map([['site-a', { requests: 6, rateLimited: 2 }]]));
    expect(await readJobCounts(redis, namespace.prefix)).toEqual({
      completed: [{ queue: 'crawl', count: 2 }],
      failed: [{ queue: 'crawl', errorClass: 'transient', code: 'HTTP_STATUS_429', count: 2 }],
    });
  });

  it('report the first failure of an outage once, without throwing at the caller', async () => {
    // Nothing listens there: a producer connection fails each command at once.
    const away = createRedisConnection(`redis://127.0.0.1:${await freePort()}`, 'producer');
    const errors: unknown[] = [];
    // The connection's own reconnect errors, which its owner logs (startService does).
    away.on('error', () => undefined);
    try {
      const counters = createCounters({
        redis: away,
        prefix: namespace.prefix,
        onError: (error) => errors.push(error),
      });
      for (let i = 0; i < 5; i += 1) counters.jobCompleted('scrape');
      await expect.poll(() => errors.length).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(errors).toHaveLength(1);
    } finally {
      away.disconnect();
    }
  });
});
