import { PassThrough } from 'node:stream';
import {
  apiFragment,
  documentFragment,
  extractionFragment,
  fetchFragment,
  webhookFragment,
  fragmentDefaults,
} from '@gleaner/config';
import { createDb } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection } from '@gleaner/queue';
import { buildApp } from '../app.js';

/**
 * The API's OpenAPI document, built with no Redis or Postgres: the app is assembled on
 * connections that are never used (nothing listens at their address) and asked for its document.
 * `pnpm openapi` writes it to `packages/client/openapi.json`.
 */
export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  // Port 1 (tcpmux) is not Redis: BullMQ's queues try to connect once built, and fail quietly.
  const redis = createRedisConnection('redis://127.0.0.1:1', 'producer', {
    lazyConnect: true,
    retryStrategy: () => null,
  });
  redis.on('error', () => {
    // The refused connection is expected: the document needs no Redis.
  });
  const handle = createDb({ url: 'postgres://openapi@127.0.0.1:1/openapi', poolMax: 1 });
  const queues = createQueues(redis, 'openapi');
  const app = await buildApp({
    config: {
      ...fragmentDefaults(apiFragment),
      ...fragmentDefaults(documentFragment),
      ...fragmentDefaults(extractionFragment),
      HTTP_ALLOW_PRIVATE_NETWORKS: fragmentDefaults(fetchFragment).HTTP_ALLOW_PRIVATE_NETWORKS,
      HTTP_ALLOWED_PEERS: fragmentDefaults(fetchFragment).HTTP_ALLOWED_PEERS,
      WEBHOOK_SECRET_ROTATION_GRACE_MS:
        fragmentDefaults(webhookFragment).WEBHOOK_SECRET_ROTATION_GRACE_MS,
    },
    logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
    db: handle.db,
    pool: handle.pool,
    redis,
    queues,
  });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await closeQueues(queues);
    redis.disconnect();
    await handle.close();
  }
}
