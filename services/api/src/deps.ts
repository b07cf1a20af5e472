import type {
  ApiConfig,
  DocumentConfig,
  ExtractionConfig,
  FetchConfig,
  WebhookConfig,
} from '@gleaner/config';
import type { Database } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import type { Queues, RedisClient } from '@gleaner/queue';
import type pg from 'pg';
import type { KeyLookup } from './plugins/key-lookup.js';

/** What the API reads of seed 002's settings. */
export type ApiExtractionSetting =
  | 'EXTRACTION_ENABLED'
  | 'EXTRACTION_MODE'
  | 'EXTRACTION_VERSION'
  | 'EXTRACTION_MAX_ATTEMPTS'
  | 'EXTRACTION_RETRY_BASE_SECONDS'
  | 'EXTRACTION_TENANT_MAX_PENDING'
  | 'EXTRACTION_TENANT_DAILY_TOKENS'
  | 'EXTRACTION_SYNC_TIMEOUT_MS';

/** Everything the API needs, built once in main.ts (or by a test) and passed in. */
export interface ApiDeps {
  config: Pick<
    ApiConfig,
    | 'API_BODY_LIMIT_BYTES'
    | 'API_PUBLIC_URL'
    | 'API_RATE_LIMIT_PER_MINUTE'
    | 'API_AUTH_FAILURES_PER_MINUTE'
    | 'API_UPLOADS_PER_KEY'
    | 'API_CORS_ORIGINS'
    | 'API_LOG_REQUESTS'
    | 'POSTINGS_SEARCH_CACHE_MS'
    | 'SYNC_SCRAPE_TIMEOUT_MS'
    | 'API_MAX_IN_FLIGHT'
    | 'API_SHED_LATENCY_MS'
    | 'API_SHED_EVENT_LOOP_DELAY_MS'
    | 'API_SHED_POOL_WAITING'
    | 'API_SEARCH_CONCURRENCY'
    | 'API_RUN_STATUS_CONCURRENCY'
    | 'API_SHED_QUEUE_MS'
  > &
    Pick<FetchConfig, 'HTTP_ALLOW_PRIVATE_NETWORKS' | 'HTTP_ALLOWED_PEERS'> &
    Pick<WebhookConfig, 'WEBHOOK_SECRET_ROTATION_GRACE_MS'> &
    Pick<DocumentConfig, 'DOCUMENT_MAX_BYTES' | 'DOCUMENT_MAX_RETRIES'> &
    Pick<ExtractionConfig, ApiExtractionSetting>;
  logger: Logger;
  db: Database;
  pool: pg.Pool;
  redis: RedisClient;
  queues: Queues;
  /** How API keys are checked; by default against `db`, cached for a few seconds. */
  keys?: KeyLookup;
}
