import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, parseConfig } from './parse.js';
import {
  apiFragment,
  databaseFragment,
  fetchFragment,
  queueFragment,
  redisFragment,
  schedulerFragment,
  webhookFragment,
  workerFragment,
} from './fragments.js';

const schema = z.object({
  ...apiFragment,
  ...databaseFragment,
  ...workerFragment,
  ...fetchFragment,
});

describe('parseConfig', () => {
  it('applies defaults', () => {
    const config = parseConfig(schema, {});
    expect(config.API_PORT).toBe(8000);
    expect(config.WORKER_QUEUES).toEqual([
      'scrape',
      'crawl',
      'extract',
      'documents',
      'llm-extract',
      'llm-sync',
      'llm-pages',
      'backfill',
      'webhooks',
    ]);
    expect(config.BACKFILL_BATCH_SIZE).toBe(100);
    expect(config.BACKFILL_RATE_PER_SECOND).toBe(50);
    expect(config.HTTP_ALLOW_PRIVATE_NETWORKS).toBe(false);
  });

  it('names every bad variable in one line', () => {
    let caught: unknown;
    try {
      parseConfig(schema, {
        API_PORT: '80a',
        HTTP_ALLOW_PRIVATE_NETWORKS: 'yes',
        DATABASE_URL: 'mysql://x',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toContain('API_PORT must be a whole number');
    expect(message).toContain('HTTP_ALLOW_PRIVATE_NETWORKS must be one of true, false, 1, 0');
    expect(message).toContain('DATABASE_URL must be a postgres or postgresql URL');
  });

  it('parses lists and rejects unknown queue names', () => {
    expect(parseConfig(schema, { WORKER_QUEUES: 'crawl, extract,crawl' }).WORKER_QUEUES).toEqual([
      'crawl',
      'extract',
    ]);
    expect(() => parseConfig(schema, { WORKER_QUEUES: 'crawl,bogus' })).toThrow(
      /WORKER_QUEUES .*unknown: bogus/,
    );
  });

  it('takes exact address:port peers and refuses names, ranges and bare addresses', () => {
    expect(parseConfig(schema, {}).HTTP_ALLOWED_PEERS).toEqual([]);
    expect(
      parseConfig(schema, { HTTP_ALLOWED_PEERS: '127.0.0.1:8100, [::1]:8100,127.0.0.1:8100' })
        .HTTP_ALLOWED_PEERS,
    ).toEqual(['127.0.0.1:8100', '::1:8100']);
    for (const bad of ['localhost:8100', '10.0.0.0/8', '127.0.0.1', '127.0.0.1:0', '::1:8100'])
      expect(() => parseConfig(schema, { HTTP_ALLOWED_PEERS: bad }), bad).toThrow(
        /HTTP_ALLOWED_PEERS must list address:port pairs/,
      );
  });

  it('takes Redis Cluster nodes as host:port or redis URLs with a port, and a prefix without a tag', () => {
    const redis = z.object({ ...redisFragment, ...queueFragment });
    expect(parseConfig(redis, {}).REDIS_CLUSTER_NODES).toBeUndefined();
    expect(
      parseConfig(redis, {
        REDIS_CLUSTER_NODES: 'redis-0.redis:6379, rediss://user:s3cret@10.0.0.5:7001,',
      }).REDIS_CLUSTER_NODES,
    ).toEqual(['redis-0.redis:6379', 'rediss://user:s3cret@10.0.0.5:7001']);
    for (const bad of ['redis-0.redis', 'http://redis:6379', 'redis://redis', 'a b:6379'])
      expect(() => parseConfig(redis, { REDIS_CLUSTER_NODES: bad }), bad).toThrow(
        /REDIS_CLUSTER_NODES .*is not host:port or a redis:\/\/ URL with a port/,
      );
    expect(() => parseConfig(redis, { QUEUE_PREFIX: '{gleaner}' })).toThrow(/QUEUE_PREFIX/);
  });

  it('treats empty strings as unset', () => {
    expect(parseConfig(schema, { API_PORT: '' }).API_PORT).toBe(8000);
  });

  it('bounds the storage settings: one version kept at least, a grace past the re-store minute', () => {
    const scheduler = z.object(schedulerFragment);
    expect(parseConfig(scheduler, {})).toMatchObject({
      POSTING_HISTORY_VERSIONS: 10,
      BODY_SWEEP_INTERVAL_MS: 3_600_000,
      BODY_SWEEP_GRACE_MS: 3_600_000,
      BODY_SWEEP_BATCH_SIZE: 500,
      BODY_SWEEP_PAUSE_MS: 200,
      CHANGE_FEED_RETENTION_DAYS: 30,
    });
    expect(() => parseConfig(scheduler, { CHANGE_FEED_RETENTION_DAYS: '0' })).toThrow(
      /CHANGE_FEED_RETENTION_DAYS must be a whole number from 1 to/,
    );
    expect(
      parseConfig(scheduler, { POSTING_HISTORY_VERSIONS: '1', BODY_SWEEP_GRACE_MS: '300000' }),
    ).toMatchObject({ POSTING_HISTORY_VERSIONS: 1, BODY_SWEEP_GRACE_MS: 300_000 });
    expect(() => parseConfig(scheduler, { POSTING_HISTORY_VERSIONS: '0' })).toThrow(
      /POSTING_HISTORY_VERSIONS must be a whole number from 1 to/,
    );
    expect(() => parseConfig(scheduler, { BODY_SWEEP_GRACE_MS: '299999' })).toThrow(
      /BODY_SWEEP_GRACE_MS must be a whole number from 300000 to/,
    );
    expect(() => parseConfig(scheduler, { BODY_SWEEP_BATCH_SIZE: '0' })).toThrow(
      /BODY_SWEEP_BATCH_SIZE must be a whole number from 1 to/,
    );
  });
});

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  it('is the Standard Webhooks schedule by default, about three days', () => {
    const schedule = parseConfig(z.object(webhookFragment), {}).WEBHOOK_RETRY_SCHEDULE;
    expect(schedule).toEqual([
      5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000,
      86_400_000,
    ]);
    expect(schedule.reduce((sum, wait) => sum + wait, 0) / 86_400_000).toBeCloseTo(3.15, 1);
  });

  it('reads durations with units, and refuses what is not one', () => {
    expect(
      parseConfig(z.object(webhookFragment), { WEBHOOK_RETRY_SCHEDULE: ' 250ms, 5s,2m ,1h' })
        .WEBHOOK_RETRY_SCHEDULE,
    ).toEqual([250, 5_000, 120_000, 3_600_000]);
    for (const bad of ['5', '5 s', '0s', '10d', '200h', '5s,,x'])
      expect(() => parseConfig(z.object(webhookFragment), { WEBHOOK_RETRY_SCHEDULE: bad }), bad).toThrow(
        /WEBHOOK_RETRY_SCHEDULE .*durations such as 5s/,
      );
  });
});
