import type { Server } from 'node:http';
import closeWithGrace from 'close-with-grace';
import { z } from 'zod';
import {
  databaseFragment,
  fetchFragment,
  loggingFragment,
  parseConfig,
  queueFragment,
  redisFragment,
  shutdownFragment,
  workerFragment,
} from '@gleaner/config';
import { createDb, pingDb } from '@gleaner/db';
import { createFetcher, createRobotsCache, createSiteGate } from '@gleaner/http';
import { createLogger, prettyFromSetting } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection } from '@gleaner/queue';
import { startHealthServer } from './health.js';
import { startWorkers } from './runtime.js';

const schema = z.object({
  ...loggingFragment,
  ...databaseFragment,
  ...redisFragment,
  ...queueFragment,
  ...shutdownFragment,
  ...workerFragment,
  ...fetchFragment,
});

let config: z.infer<typeof schema>;
try {
  config = parseConfig(schema, process.env);
} catch (error) {
  process.stderr.write(`worker: ${(error as Error).message}\n`);
  process.exit(1);
}

const logger = createLogger({
  service: 'worker',
  level: config.LOG_LEVEL,
  pretty: prettyFromSetting(config.LOG_PRETTY),
});
const totalConcurrency =
  config.WORKER_CONCURRENCY_SCRAPE +
  config.WORKER_CONCURRENCY_CRAWL +
  config.WORKER_CONCURRENCY_EXTRACT;
const database = createDb({
  url: config.DATABASE_URL,
  poolMax: Math.min(config.DATABASE_POOL_MAX, totalConcurrency),
  applicationName: 'gleaner-worker',
  onIdleError: (err) =>
    logger.warn({ err }, 'idle Postgres connection failed; it will be replaced'),
});
const workerConnection = createRedisConnection(config.REDIS_URL, 'worker');
const producerConnection = createRedisConnection(config.REDIS_URL, 'producer');
const queues = createQueues(producerConnection, config.QUEUE_PREFIX);
const fetcher = createFetcher({
  userAgent: config.HTTP_USER_AGENT,
  timeoutMs: config.HTTP_TIMEOUT_MS,
  maxBodyBytes: config.HTTP_MAX_BODY_BYTES,
  maxRedirects: config.HTTP_MAX_REDIRECTS,
  allowPrivateNetworks: config.HTTP_ALLOW_PRIVATE_NETWORKS,
});

// A lease outlives the longest fetch, so a slow fetch never loses its concurrency slot.
const gate = createSiteGate({
  redis: producerConnection,
  prefix: config.QUEUE_PREFIX,
  leaseTtlMs: config.HTTP_TIMEOUT_MS + 30_000,
});
const robots = createRobotsCache({
  fetcher,
  redis: producerConnection,
  prefix: config.QUEUE_PREFIX,
  userAgent: config.HTTP_USER_AGENT,
});

const runtime = startWorkers(
  { db: database.db, queues, fetcher, gate, robots, logger },
  {
    connection: workerConnection,
    prefix: config.QUEUE_PREFIX,
    queues: config.WORKER_QUEUES,
    concurrency: {
      scrape: config.WORKER_CONCURRENCY_SCRAPE,
      crawl: config.WORKER_CONCURRENCY_CRAWL,
      extract: config.WORKER_CONCURRENCY_EXTRACT,
    },
    extractThreads: config.WORKER_EXTRACT_THREADS,
  },
);

let health: Server | undefined;
if (config.WORKER_HEALTH_PORT > 0) {
  health = await startHealthServer(config.WORKER_HEALTH_PORT, 'worker', async () => {
    const redisOk = workerConnection.status === 'ready';
    const dbOk = await pingDb(database.pool).then(
      () => true,
      () => false,
    );
    return {
      ok: redisOk && dbOk,
      details: { redis: redisOk, postgres: dbOk, queues: config.WORKER_QUEUES },
    };
  });
}

logger.info({ queues: config.WORKER_QUEUES }, 'worker started');

// close-with-grace's own delay is a backstop past our grace period.
closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS + 5_000 }, async ({ signal, err }) => {
  if (err) logger.error({ err }, 'worker crashed; shutting down');
  logger.info({ signal }, 'worker shutting down');
  await runtime.close(config.SHUTDOWN_GRACE_MS);
  health?.close();
  await closeQueues(queues);
  await fetcher.close();
  await database.close();
  workerConnection.disconnect();
  producerConnection.disconnect();
  logger.info('worker stopped');
  logger.flush();
});
