import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';

export const testRedisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/**
 * `TEST_REDIS_CLUSTER_NODES` (`host:port,…`): the tests that read their Redis from a namespace
 * run against that Redis Cluster instead of `testRedisUrl` (`scripts/test.sh` starts one).
 */
export const testRedisClusterNodes = process.env.TEST_REDIS_CLUSTER_NODES?.trim() || undefined;

export interface TestRedisNamespace {
  /** Use as QUEUE_PREFIX: every key the code under test writes starts with it. */
  prefix: string;
  /** The single Redis's URL; on a cluster, still set (services ignore it there). */
  url: string;
  /** The cluster's nodes, when the tests run against one. */
  clusterNodes: string | undefined;
  /** `REDIS_URL`, and on a cluster `REDIS_CLUSTER_NODES`: a service's Redis settings. */
  env: { REDIS_URL: string; REDIS_CLUSTER_NODES?: string };
  /** The same, in the shape `createRedisConnection` takes. */
  target: { REDIS_URL: string; REDIS_CLUSTER_NODES?: string[] };
  /** Deletes every key under the prefix, and nothing else. */
  cleanup(): Promise<void>;
}

export function createTestRedisNamespace(label = 'test'): TestRedisNamespace {
  const prefix = `gleaner-test-${label.replace(/[^A-Za-z0-9_-]/g, '-')}-${randomBytes(4).toString('hex')}`;
  const clusterNodes = testRedisClusterNodes;
  return {
    prefix,
    url: testRedisUrl,
    clusterNodes,
    env: clusterNodes
      ? { REDIS_URL: testRedisUrl, REDIS_CLUSTER_NODES: clusterNodes }
      : { REDIS_URL: testRedisUrl },
    target: clusterNodes
      ? { REDIS_URL: testRedisUrl, REDIS_CLUSTER_NODES: clusterNodes.split(',') }
      : { REDIS_URL: testRedisUrl },
    cleanup: async () => {
      if (!clusterNodes) {
        const redis = new Redis(testRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
        await redis.connect();
        try {
          await deleteUnder(redis, prefix);
        } finally {
          redis.disconnect();
        }
        return;
      }
      const cluster = new Cluster(
        clusterNodes.split(',').map((node) => {
          const [host, port] = node.split(':');
          return { host: host!, port: Number(port) };
        }),
        { redisOptions: { maxRetriesPerRequest: 1 } },
      );
      try {
        await new Promise<void>((resolve, reject) => {
          cluster.once('ready', resolve);
          cluster.once('error', reject);
        });
        // Each master holds its own keys: SCAN sees one server's.
        await Promise.all(cluster.nodes('master').map((node) => deleteUnder(node, prefix)));
      } finally {
        cluster.disconnect();
      }
    },
  };
}

/** SCANs one server for keys under `prefix` and unlinks them, one key per command (any slot). */
async function deleteUnder(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.pipeline(keys.map((key) => ['unlink', key])).exec();
  } while (cursor !== '0');
}
