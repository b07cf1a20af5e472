import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { createDb, type DbHandle } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  type Queues,
  type RedisClient,
} from '@gleaner/queue';
import { createTestDatabase, createTestRedisNamespace } from '@gleaner/testing';
import { buildApp } from './app.js';
import { injectWithKey, testApiConfig } from './testing.js';

type AppConfig = Parameters<typeof buildApp>[0]['config'];

/** A test file's own database, Redis namespace and queues, and the app built on them. */
export interface ApiTestStack {
  handle: DbHandle;
  queues: Queues;
  /** The stack's Redis connection, and the prefix of its queues and counters. */
  redis: RedisClient;
  prefix: string;
  app: FastifyInstance;
  /** The admin key `app.inject()` sends unless a request names its own `authorization`. */
  adminKey: string;
  /** Another app on the same stores (the file's `app` is one); it sends no key by itself. */
  buildApp(overrides?: Partial<AppConfig>): Promise<FastifyInstance>;
  /** Closes the app, the connections and the pool, and drops what the stack created. */
  close(): Promise<void>;
}

export async function createApiTestStack(
  name: string,
  config: Partial<AppConfig> = {},
): Promise<ApiTestStack> {
  const database = await createTestDatabase(name);
  const namespace = createTestRedisNamespace(name);
  const handle = createDb({ url: database.url, poolMax: 4 });
  // A cluster's when the suite runs on one (npm test's cluster pass).
  const redis = createRedisConnection(namespace.target, 'producer');
  const queues = createQueues(redis, namespace.prefix);
  const build = (overrides: Partial<AppConfig> = {}) =>
    buildApp({
      config: testApiConfig({ ...config, ...overrides }),
      logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
      db: handle.db,
      pool: handle.pool,
      redis,
      queues,
    });
  const app = await build();
  const adminKey = await injectWithKey(app, handle.db);
  return {
    handle,
    queues,
    redis,
    prefix: namespace.prefix,
    app,
    adminKey,
    buildApp: build,
    async close() {
      await app.close();
      await closeQueues(queues);
      redis.disconnect();
      await handle.close();
      await namespace.cleanup();
      await database.drop();
    },
  };
}

/** A career site's config that passes the kind's validation, for tests that register sites. */
export const careerSiteConfig = {
  url: 'https://careers.acme.example',
  sitemapUrl: 'https://careers.acme.example/sitemap.xml',
};
