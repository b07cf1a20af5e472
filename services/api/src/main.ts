import closeWithGrace from 'close-with-grace';
import { z } from 'zod';
import {
  apiFragment,
  databaseFragment,
  fetchFragment,
  loggingFragment,
  parseConfig,
  queueFragment,
  redisFragment,
  shutdownFragment,
} from '@gleaner/config';
import { createDb } from '@gleaner/db';
import { createLogger, prettyFromSetting } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection } from '@gleaner/queue';
import { buildApp } from './app.js';

const schema = z.object({
  ...loggingFragment,
  ...databaseFragment,
  ...redisFragment,
  ...queueFragment,
  ...shutdownFragment,
  ...apiFragment,
  HTTP_ALLOW_PRIVATE_NETWORKS: fetchFragment.HTTP_ALLOW_PRIVATE_NETWORKS,
});

let config: z.infer<typeof schema>;
try {
  config = parseConfig(schema, process.env);
} catch (error) {
  process.stderr.write(`api: ${(error as Error).message}\n`);
  process.exit(1);
}

const logger = createLogger({
  service: 'api',
  level: config.LOG_LEVEL,
  pretty: prettyFromSetting(config.LOG_PRETTY),
});
const database = createDb({
  url: config.DATABASE_URL,
  poolMax: config.DATABASE_POOL_MAX,
  applicationName: 'gleaner-api',
  onIdleError: (err) =>
    logger.warn({ err }, 'idle Postgres connection failed; it will be replaced'),
});
const redis = createRedisConnection(config.REDIS_URL, 'producer');
redis.on('error', (err) => logger.warn({ err }, 'redis connection error'));
const queues = createQueues(redis, config.QUEUE_PREFIX);

const app = await buildApp({ config, logger, db: database.db, pool: database.pool, redis, queues });

closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
  if (err) logger.error({ err }, 'api crashed; shutting down');
  logger.info({ signal }, 'api shutting down');
  await app.close();
  await closeQueues(queues);
  redis.disconnect();
  await database.close();
  logger.flush();
});

await app.listen({ host: config.API_HOST, port: config.API_PORT });
