import { extractionFragment, fragmentDefaults } from '@gleaner/config';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { createDb, type DbHandle } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection, type Queues } from '@gleaner/queue';
import { createTestDatabase, createTestRedisNamespace } from '@gleaner/testing';
import { buildApp } from './app.js';

type AppConfig = Parameters<typeof buildApp>[0]['config'];

/** A test file's own database, Redis namespace and queues, and the app built on them. */
export interface ApiTestStack {
  handle: DbHandle;
  queues: Queues;
  app: FastifyInstance;
  /** Another app on the same stores (the file's `app` is one). */
  buildApp(): Promise<FastifyInstance>;
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
  const redis = createRedisConnection(namespace.url, 'producer');
  const queues = createQueues(redis, namespace.prefix);
  const build = () =>
    buildApp({
      config: {
        API_BODY_LIMIT_BYTES: 4096,
        API_PUBLIC_URL: undefined,
        ADMIN_USERNAME: 'admin',
        ADMIN_PASSWORD: 'correct-horse',
        SYNC_SCRAPE_TIMEOUT_MS: 1000,
        HTTP_ALLOW_PRIVATE_NETWORKS: false,
        DOCUMENT_MAX_BYTES: 1024 * 1024,
        DOCUMENT_MAX_RETRIES: 3,
        ...fragmentDefaults(extractionFragment),
        ...config,
      },
      logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
      db: handle.db,
      pool: handle.pool,
      redis,
      queues,
    });
  const app = await build();
  return {
    handle,
    queues,
    app,
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
