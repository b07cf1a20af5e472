import { PassThrough } from 'node:stream';
import { buildApp } from '@gleaner/api';
import { injectWithKey, testApiConfig, type ApiConfig } from '@gleaner/api/testing';
import { createLogger } from '@gleaner/logger';
import type { DbHandle } from '@gleaner/db';
import { createRedisConnection, type Queues, type RedisClient } from '@gleaner/queue';
import type { Redis } from 'ioredis';
import type { InProcessSystem } from './in-process-system.js';

export type TestApp = Awaited<ReturnType<typeof buildApp>>;

/**
 * The API in process on stores a test already has (its pool, a producer connection, queues), as
 * main.ts builds it with the test settings, its `inject()` sending an admin key (`adminKey`)
 * unless a request names its own `authorization`. Closing the app is the test's; the stores too.
 */
export async function buildTestApp(
  stores: { handle: DbHandle; redis: RedisClient; queues: Queues },
  config: Partial<ApiConfig> = {},
): Promise<{ app: TestApp; adminKey: string }> {
  const app = await buildApp({
    config: testApiConfig(config),
    logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
    db: stores.handle.db,
    pool: stores.handle.pool,
    redis: stores.redis,
    queues: stores.queues,
  });
  return { app, adminKey: await injectWithKey(app, stores.handle.db) };
}

/**
 * The API in process on an in-process system's database and queues, as main.ts builds it, its
 * `inject()` sending an admin key (`adminKey`) unless a request names its own `authorization`.
 * It may register sites on loopback fixture servers (HTTP_ALLOW_PRIVATE_NETWORKS). `redis` is
 * the producer connection it uses (its own by default, closed with it).
 */
export async function startTestApi(
  system: InProcessSystem,
  config: Partial<ApiConfig> = {},
  redis?: Redis,
): Promise<{ app: TestApp; adminKey: string; close(): Promise<void> }> {
  const producer = redis ?? createRedisConnection(system.namespace.url, 'producer');
  const { app, adminKey } = await buildTestApp(
    { handle: system.handle, redis: producer, queues: system.queues },
    { API_BODY_LIMIT_BYTES: 64 * 1024, HTTP_ALLOW_PRIVATE_NETWORKS: true, ...config },
  );
  return {
    app,
    adminKey,
    async close() {
      await app.close();
      if (redis === undefined) producer.disconnect();
    },
  };
}

export interface ApiServer {
  app: TestApp;
  /** Where it listens: `http://127.0.0.1:<port>`. */
  url: string;
  close(): Promise<void>;
}

/**
 * The API on an in-process system's database and queues, listening on a free loopback port, as
 * main.ts would run it: for clients that speak HTTP (the CLI, fetch), where `inject()` will not do.
 * It may register sites on loopback fixture servers (HTTP_ALLOW_PRIVATE_NETWORKS).
 */
export async function startApiServer(
  system: InProcessSystem,
  config: Partial<ApiConfig> = {},
): Promise<ApiServer> {
  const api = await startTestApi(system, config);
  const url = await api.app.listen({ host: '127.0.0.1', port: 0 });
  return { app: api.app, url, close: () => api.close() };
}
