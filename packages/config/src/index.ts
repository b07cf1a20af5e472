export { parseConfig, ConfigError } from './parse.js';
export { booleanFromEnv, integerFromEnv, listFromEnv, numberFromEnv } from './coerce.js';
export {
  apiFragment,
  databaseFragment,
  fetchFragment,
  loggingFragment,
  queueFragment,
  redisFragment,
  schedulerFragment,
  shutdownFragment,
  workerFragment,
} from './fragments.js';
export type {
  ApiConfig,
  DatabaseConfig,
  FetchConfig,
  LoggingConfig,
  QueueConfig,
  RedisConfig,
  SchedulerConfig,
  ShutdownConfig,
  WorkerConfig,
} from './fragments.js';
