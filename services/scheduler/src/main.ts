import { createServer, type Server } from 'node:http';
import closeWithGrace from 'close-with-grace';
import { z } from 'zod';
import {
  databaseFragment,
  loggingFragment,
  parseConfig,
  queueFragment,
  redisFragment,
  schedulerFragment,
  shutdownFragment,
} from '@gleaner/config';
import { createDb, pingDb } from '@gleaner/db';
import { createLogger, prettyFromSetting } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection, waitForRedis } from '@gleaner/queue';
import { createSchedulerLoop } from './loop.js';

const schema = z.object({
  ...loggingFragment,
  ...databaseFragment,
  ...redisFragment,
  ...queueFragment,
  ...shutdownFragment,
  ...schedulerFragment,
});

let config: z.infer<typeof schema>;
try {
  config = parseConfig(schema, process.env);
} catch (error) {
  process.stderr.write(`scheduler: ${(error as Error).message}\n`);
  process.exit(1);
}

const logger = createLogger({
  service: 'scheduler',
  level: config.LOG_LEVEL,
  pretty: prettyFromSetting(config.LOG_PRETTY),
});
const database = createDb({
  url: config.DATABASE_URL,
  poolMax: 2,
  applicationName: 'gleaner-scheduler',
  onIdleError: (err) =>
    logger.warn({ err }, 'idle Postgres connection failed; it will be replaced'),
});
const redis = createRedisConnection(config.REDIS_URL, 'producer');
redis.on('error', (err) => logger.warn({ err }, 'redis connection error'));
const queues = createQueues(redis, config.QUEUE_PREFIX);

await waitForRedis(redis, 30_000);
await pingDb(database.pool);

const loop = createSchedulerLoop({
  intervalMs: config.SCHEDULER_POLL_INTERVAL_MS,
  logger,
  pool: database.pool,
  redis,
});
loop.start();

let health: Server | undefined;
if (config.SCHEDULER_HEALTH_PORT > 0) {
  health = createServer((request, response) => {
    if (request.url !== '/health') {
      response.writeHead(404).end();
      return;
    }
    const status = loop.status();
    response
      .writeHead(status.healthy ? 200 : 503, { 'content-type': 'application/json' })
      .end(
        JSON.stringify({
          status: status.healthy ? 'healthy' : 'unhealthy',
          service: 'scheduler',
          ...status,
        }),
      );
  });
  health.listen(config.SCHEDULER_HEALTH_PORT, '0.0.0.0');
}

logger.info({ pollIntervalMs: config.SCHEDULER_POLL_INTERVAL_MS }, 'scheduler started');

closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
  if (err) logger.error({ err }, 'scheduler crashed; shutting down');
  logger.info({ signal }, 'scheduler shutting down');
  await loop.stop();
  health?.close();
  await closeQueues(queues);
  redis.disconnect();
  await database.close();
  logger.info('scheduler stopped');
  logger.flush();
});
