export { parseConfig, ConfigError, fragmentDefaults } from './parse.js';
export {
  EnvFileError,
  loadConfig,
  readEnvironment,
  type Env,
  type Environment,
  type LoadedConfig,
} from './environment.js';
export {
  booleanFromEnv,
  durationListFromEnv,
  integerFromEnv,
  listFromEnv,
  numberFromEnv,
  peersFromEnv,
} from './coerce.js';
export {
  apiFragment,
  databaseFragment,
  documentFragment,
  expiryFragment,
  expiryPolicyOf,
  extractionFragment,
  fetchFragment,
  loggingFragment,
  queueFragment,
  redisFragment,
  schedulerFragment,
  shutdownFragment,
  webhookFragment,
  workerFragment,
} from './fragments.js';
export type {
  ApiConfig,
  DatabaseConfig,
  DocumentConfig,
  ExpiryConfig,
  ExtractionConfig,
  FetchConfig,
  LoggingConfig,
  QueueConfig,
  RedisConfig,
  SchedulerConfig,
  ShutdownConfig,
  WebhookConfig,
  WorkerConfig,
} from './fragments.js';
