import { Redis, type RedisOptions } from 'ioredis';

export type RedisRole = 'producer' | 'worker';

/**
 * Redis connections by role (BullMQ production guide):
 * - producers (API, scheduler) fail fast: no offline queue and one retry per command, so a
 *   request answers 503 while Redis is down instead of hanging;
 * - workers retry forever (`maxRetriesPerRequest: null`), as blocking commands require.
 */
export function createRedisConnection(
  url: string,
  role: RedisRole,
  extra: RedisOptions = {},
): Redis {
  const common: RedisOptions = {
    connectionName: `gleaner-${role}`,
    // Back off up to 2 s between reconnects; never give up.
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  };
  const byRole: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5_000 };
  return new Redis(url, { ...common, ...byRole, ...extra });
}

/** Resolves once the connection is ready, or rejects after `timeoutMs`. */
export async function waitForRedis(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis not ready after ${timeoutMs} ms (status ${redis.status})`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}
