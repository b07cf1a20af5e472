import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const testRedisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

export interface TestRedisNamespace {
  /** Use as QUEUE_PREFIX: every key the code under test writes starts with it. */
  prefix: string;
  url: string;
  /** Deletes every key under the prefix, and nothing else. */
  cleanup(): Promise<void>;
}

export function createTestRedisNamespace(label = 'test'): TestRedisNamespace {
  const prefix = `gleaner-test-${label.replace(/[^A-Za-z0-9_-]/g, '-')}-${randomBytes(4).toString('hex')}`;
  return {
    prefix,
    url: testRedisUrl,
    cleanup: async () => {
      const redis = new Redis(testRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await redis.connect();
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.unlink(...keys);
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
    },
  };
}
