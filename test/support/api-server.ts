import { PassThrough } from 'node:stream';
import { buildApp } from '@gleaner/api';
import { testApiConfig, type ApiConfig } from '@gleaner/api/testing';
import { createLogger } from '@gleaner/logger';
import { createRedisConnection } from '@gleaner/queue';
import type { InProcessSystem } from './in-process-system.js';

export interface ApiServer {
  app: Awaited<ReturnType<typeof buildApp>>;
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
  const producer = createRedisConnection(system.namespace.url, 'producer');
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
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    url,
    async close() {
      await app.close();
      producer.disconnect();
    },
  };
}
