import { createTestRedisNamespace, freePort } from '@gleaner/testing';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createRedisConnection, waitForRedis } from './connection.js';
import {
  createCounters,
  readJobCounts,
  readLlmCounts,
  readRunRequests,
  readSiteCounts,
  runRequestsKey,
} from './counters.js';

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
      // A worker died under one of its jobs: a stall, not a failure.
      counters.jobStalled('crawl');
      counters.siteRequest('site-a', { status: 200 }, 'run-1');
      counters.siteRequest('site-a', { status: 429 }, 'run-1');
      counters.siteRequest('site-a', { failed: true }, 'run-1');
      counters.siteRequest('site-a', { status: 404 }, 'run-1');
      counters.siteRequest('site-a', { status: 503 });
      // Refused or never sent: no verdict on the site, not a request to it.
      counters.siteRequest('site-a', {}, 'run-1');
    }
    await expect
      .poll(() => readSiteCounts(redis, namespace.prefix))
      .toEqual(
        new Map([
          [
            'site-a',
            { requests: 10, rateLimited: 2, errors: { '4xx': 2, '5xx': 2, unanswered: 2 } },
          ],
        ]),
      );
    // Under its run too, for the run's http_errors alert, kept a week.
    expect(await replicas[0]!.runRequests('run-1')).toEqual({
      requests: 8,
      clientErrors: 2,
      serverErrors: 0,
      rateLimited: 2,
      unanswered: 2,
    });
    const ttl = await redis.ttl(runRequestsKey(namespace.prefix, 'run-1'));
    expect(ttl).toBeGreaterThan(6 * 24 * 3600);
    expect(await readRunRequests(redis, namespace.prefix, 'run-2')).toBeNull();
    expect(await readJobCounts(redis, namespace.prefix)).toEqual({
      completed: [{ queue: 'crawl', count: 2 }],
      failed: [{ queue: 'crawl', errorClass: 'transient', code: 'HTTP_STATUS_429', count: 2 }],
      stalled: [{ queue: 'crawl', count: 2 }],
    });
  });

  it("add up grounding's kept and dropped values per source, and skip zeros", async () => {
    await waitForRedis(redis);
    const prefix = `${namespace.prefix}:grounding`;
    const replicas = [1, 2].map(() => createCounters({ redis, prefix }));
    try {
      for (const counters of replicas) {
        counters.llmGrounding('resume', 7, 2);
        counters.llmGrounding('resume', 3, 0);
        counters.llmGrounding('posting', 4, 1);
      }
      await Promise.all(replicas.map((counters) => counters.flush()));
      const { grounding } = await readLlmCounts(redis, prefix);
      expect(grounding).toHaveLength(4);
      expect(grounding).toEqual(
        expect.arrayContaining([
          { source: 'resume', outcome: 'kept', count: 20 },
          { source: 'resume', outcome: 'dropped', count: 4 },
          { source: 'posting', outcome: 'kept', count: 8 },
          { source: 'posting', outcome: 'dropped', count: 2 },
        ]),
      );
      // A zero is never sent: an extraction with nothing dropped adds no dropped field.
      const clean = createCounters({ redis, prefix: `${prefix}:clean` });
      clean.llmGrounding('posting', 5, 0);
      await clean.close();
      expect(await redis.hgetall(`${prefix}:clean:metrics:llm`)).toEqual({
        'grounding|posting|kept': '5',
      });
    } finally {
      await Promise.all(replicas.map((counters) => counters.close()));
      await redis.del(`${prefix}:metrics:llm`, `${prefix}:clean:metrics:llm`);
    }
  });

  it('send what was added up together when flushed, and what is left when closed', async () => {
    await waitForRedis(redis);
    const prefix = `${namespace.prefix}:buffered`;
    const sent: string[][] = [];
    // Every HINCRBY the writer puts in a pipeline, to see what it sent. (Not MONITOR: on a
    // Redis that other work keeps busy, ioredis can take a monitored line for a reply.)
    const pipeline = redis.pipeline.bind(redis);
    const spy = vi.spyOn(redis, 'pipeline').mockImplementation((commands?: unknown[][]) => {
      for (const [name, key, field, by] of commands ?? [])
        if (name === 'hincrby' && String(key).startsWith(prefix))
          sent.push([String(field), String(by)]);
      return pipeline(commands);
    });
    try {
      const counters = createCounters({ redis, prefix, flushIntervalMs: 60_000 });
      for (let i = 0; i < 100; i += 1) counters.jobCompleted('documents');
      counters.llmCall({ model: 'm', outcome: 'ok', promptTokens: 10 });
      counters.llmCall({ model: 'm', outcome: 'ok', promptTokens: 5 });
      // Held in memory until the interval is up, or a flush.
      expect(await readJobCounts(redis, prefix)).toEqual({
        completed: [],
        failed: [],
        stalled: [],
      });
      await counters.flush();
      expect(await readJobCounts(redis, prefix)).toEqual({
        completed: [{ queue: 'documents', count: 100 }],
        failed: [],
        stalled: [],
      });
      // One HINCRBY per field, whatever the number of increments.
      expect(sent).toEqual([
        ['completed|documents', '100'],
        ['requests|m|ok', '2'],
        ['tokens|m|prompt', '15'],
      ]);
      counters.jobCompleted('documents');
      await counters.close();
      counters.jobCompleted('documents');
      await counters.flush();
      expect((await readJobCounts(redis, prefix)).completed).toEqual([
        { queue: 'documents', count: 101 },
      ]);
    } finally {
      spy.mockRestore();
      await redis.del(`${prefix}:metrics:jobs`, `${prefix}:metrics:llm`);
    }
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
