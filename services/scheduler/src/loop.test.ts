import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createLogger } from '@gleaner/logger';
import { createRedisConnection, waitForRedis } from '@gleaner/queue';
import { createSchedulerLoop } from './loop.js';

// The loop only pings: the server's own `postgres` database and Redis will do.
const pool = new pg.Pool({
  connectionString: 'postgres://postgres@127.0.0.1:5432/postgres',
  max: 2,
});
const redis = createRedisConnection('redis://127.0.0.1:6379/0', 'producer');
const logger = createLogger({
  service: 'scheduler',
  level: 'silent',
  destination: new PassThrough(),
});

beforeAll(async () => {
  await waitForRedis(redis);
});

afterAll(async () => {
  redis.disconnect();
  await pool.end();
});

describe('scheduler loop', () => {
  it('passes, reports its status, and stops mid-sleep at once', async () => {
    const loop = createSchedulerLoop({ intervalMs: 60_000, logger, pool, redis });
    expect(loop.status()).toMatchObject({ healthy: true, passes: 0, lastPassAt: null });
    loop.start();
    loop.start(); // a second start does not start a second loop
    await expect.poll(() => loop.status().passes).toBe(1);
    expect(loop.status()).toMatchObject({ healthy: true, lastError: null });

    const started = performance.now();
    await loop.stop();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(loop.status().passes).toBe(1);
  });

  it('reports a failed pass as unhealthy with its error, and keeps going', async () => {
    // Nothing listens on port 1: every ping fails at once (producers do not queue commands).
    const down = createRedisConnection('redis://127.0.0.1:1/0', 'producer');
    down.on('error', () => {});
    const loop = createSchedulerLoop({ intervalMs: 20, logger, pool, redis: down });
    loop.start();
    await expect.poll(() => loop.status().passes).toBeGreaterThanOrEqual(2);
    expect(loop.status()).toMatchObject({ healthy: false, lastError: expect.any(String) });
    await loop.stop();
    down.disconnect();
  });
});
