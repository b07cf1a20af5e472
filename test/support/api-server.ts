import { PassThrough } from 'node:stream';
import { buildApp } from '@gleaner/api';
import { injectWithKey, testApiConfig, type ApiConfig } from '@gleaner/api/testing';
import { createLogger } from '@gleaner/logger';
import { createRedisConnection } from '@gleaner/queue';
import type { Redis } from 'ioredis';
import type { InProcessSystem } from './in-process-system.js';

export type TestApp = Awaited<ReturnType<typeof buildApp>>;

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
  const app = await buildApp({
    config: testApiConfig({
      API_BODY_LIMIT_BYTES: 64 * 1024,
      HTTP_ALLOW_PRIVATE_NETWORKS: true,
      ...config,
    }),
    logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
    db: system.handle.db,
    pool: system.handle.pool,
    redis: producer,
    queues: system.queues,
  });
  const adminKey = await injectWithKey(app, system.handle.db);
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
