import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startRedisCluster, testRedisUrl, type RedisCluster } from '@gleaner/testing';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRedisConnection,
  duplicateConnection,
  getMany,
  keySlot,
  nodeOf,
  pipelinedConnection,
  queueKeyPrefix,
  sendTogether,
  waitForRedis,
  type RedisClient,
} from './connection.js';
import { closeQueues, createQueues, keyPrefixOf } from './queues.js';

/**
 * Gleaner on a Redis Cluster (decision 0018), against a 3-master cluster of the test's own:
 * the connection, commands sent together across slots, and queues under a hash tag each.
 */
const prefix = 'gleaner-test-connection';
let dir: string;
let cluster: RedisCluster;
let redis: Cluster;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'gleaner-connection-test-'));
  cluster = await startRedisCluster({ dir });
  // One node is enough to find the others.
  const connection: RedisClient = createRedisConnection(
    { REDIS_URL: testRedisUrl, REDIS_CLUSTER_NODES: cluster.nodes.split(',').slice(0, 1) },
    'worker',
  );
  if (!(connection instanceof Cluster)) throw new Error('not a cluster client');
  redis = connection;
  await waitForRedis(redis);
});

afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Keys whose slots differ: served, with three masters, by more than one of them. */
const keys = Array.from({ length: 30 }, (_, index) => `${prefix}:key-${index}`);

describe('a Redis Cluster connection', () => {
  it('is a cluster client when nodes are given, found from any one of them', async () => {
    expect(redis.nodes('master')).toHaveLength(3);
    const single = createRedisConnection({ REDIS_URL: testRedisUrl }, 'producer');
    try {
      expect(single).toBeInstanceOf(Redis);
    } finally {
      single.disconnect();
    }
  });

  it('sends commands of many slots together, each reply in its command order', async () => {
    expect(new Set(keys.map(keySlot)).size).toBe(keys.length);
    // A plain pipeline across slots is refused by ioredis: the reason for sendTogether.
    await expect(redis.pipeline(keys.map((key) => ['set', key, 'x'])).exec()).rejects.toThrow(
      /same slots allocation group/,
    );
    const replies = await sendTogether(redis, [
      ['time'],
      ...keys.map((key, index): [string, string, number] => ['incrby', key, index + 1]),
      ...keys.map((key): [string, string, number] => ['expire', key, 60]),
    ]);
    expect(replies).toHaveLength(1 + 2 * keys.length);
    expect(replies.every(([error]) => error === null)).toBe(true);
    expect((replies[0]![1] as string[]).length).toBe(2);
    expect(replies.slice(1, 1 + keys.length).map(([, reply]) => reply)).toEqual(
      keys.map((_, index) => index + 1),
    );
    const inTransactions = await sendTogether(
      redis,
      keys.map((key) => ['incrby', key, 1000]),
      { transaction: true },
    );
    expect(inTransactions.map(([, reply]) => reply)).toEqual(keys.map((_, index) => index + 1001));
  });

  it('reads many keys of many slots, missing ones as null', async () => {
    const values = await getMany(redis, [...keys.slice(0, 3), `${prefix}:missing`]);
    expect(values).toEqual(['1001', '1002', '1003', null]);
  });

  it('finds the node serving a key, whose own commands need no redirection', async () => {
    const key = keys[7]!;
    const node = nodeOf(redis, key);
    expect(node).toBeInstanceOf(Redis);
    expect(await node!.get(key)).toBe('1008');
    const other = redis.nodes('master').find((master) => master !== node)!;
    await expect(other.get(key)).rejects.toThrow(/MOVED/);
  });

  it('duplicates itself with the options it is given, on every node', async () => {
    const copy = duplicateConnection(redis, { connectionName: 'gleaner-connection-test' });
    try {
      await waitForRedis(copy);
      expect(copy).toBeInstanceOf(Cluster);
      expect(await copy.client('GETNAME')).toBe('gleaner-connection-test');
    } finally {
      copy.disconnect();
    }
  });

  it('is its own pipelined connection: ioredis would group scripts of many slots by their hash', async () => {
    expect(pipelinedConnection(redis)).toBe(redis);
    // Why: auto-pipelined EVALSHA calls are grouped by the slot of their first argument, the
    // script's hash, so calls for keys on different nodes end up in one refused pipeline.
    const pipelinedCluster = new Cluster(
      cluster.nodes.split(',').map((node) => {
        const [host, port] = node.split(':');
        return { host: host!, port: Number(port) };
      }),
      { enableAutoPipelining: true },
    );
    try {
      await waitForRedis(pipelinedCluster);
      const script = 'return redis.call("INCR", KEYS[1])';
      const sha = (await pipelinedCluster.script('LOAD', script)) as string;
      await Promise.all(redis.nodes('master').map((node) => node.script('LOAD', script)));
      const calls = keys.slice(0, 6).map((key) => pipelinedCluster.evalsha(sha, 1, key));
      const settled = await Promise.allSettled(calls);
      const refused = settled.flatMap((result) =>
        result.status === 'rejected' ? [String(result.reason)] : [],
      );
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0]).toMatch(/same slots allocation group/);
    } finally {
      pipelinedCluster.disconnect();
    }
  });
});

describe('a pipelined connection to one Redis', () => {
  it('is a connection of its own that sends the commands of one turn together', async () => {
    const single = createRedisConnection(testRedisUrl, 'worker');
    const pipelined = pipelinedConnection(single);
    const key = `${prefix}:pipelined:${process.pid}`;
    try {
      expect(pipelined).not.toBe(single);
      await waitForRedis(pipelined);
      const calls = [1, 2, 3].map((by) => pipelined.incrby(key, by));
      // Queued, not written: the turn's three commands leave together at its end.
      expect((pipelined as Redis).autoPipelineQueueSize).toBe(3);
      expect(await Promise.all(calls)).toEqual([1, 3, 6]);
      expect((pipelined as Redis).autoPipelineQueueSize).toBe(0);
    } finally {
      await single.del(key);
      pipelined.disconnect();
      single.disconnect();
    }
  });
});

describe('queues on a Redis Cluster', () => {
  it('keep each queue under a hash tag of its own, and every other key under the prefix', async () => {
    expect(queueKeyPrefix(redis, prefix, 'crawl')).toBe(`${prefix}:{crawl}`);
    const single = createRedisConnection(testRedisUrl, 'producer', { lazyConnect: true });
    expect(queueKeyPrefix(single, prefix, 'crawl')).toBe(prefix);
    single.disconnect();

    const queues = createQueues(redis, prefix);
    try {
      expect(keyPrefixOf(queues)).toBe(prefix);
      expect(keySlot(queues.crawl.toKey('wait'))).toBe(keySlot(queues.crawl.toKey('meta')));
      expect(keySlot(queues.crawl.toKey('wait'))).not.toBe(keySlot(queues.scrape.toKey('wait')));
      // BullMQ's scripts touch many of a queue's keys at once: they work under the tag.
      await queues.crawl.add('crawl', { n: 1 }, { jobId: 'connection-test-1' });
      await queues.crawl.add('crawl', { n: 1 }, { jobId: 'connection-test-1' });
      expect(await queues.crawl.getJobCounts('waiting')).toEqual({ waiting: 1 });
      await queues.crawl.obliterate({ force: true });
    } finally {
      await closeQueues(queues);
    }
  });
});
