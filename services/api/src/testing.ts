/**
 * For tests that build the API in process (`@gleaner/api/testing`): settings with test
 * defaults, and an app whose `inject()` sends an API key unless the request names its own
 * `authorization` (an empty string sends none).
 */
import { extractionFragment, fragmentDefaults } from '@gleaner/config';
import { createApiKey, type ApiKeyScope, type Database } from '@gleaner/db';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ApiDeps } from './deps.js';

export type ApiConfig = ApiDeps['config'];

export function testApiConfig(overrides: Partial<ApiConfig> = {}): ApiConfig {
  return {
    API_BODY_LIMIT_BYTES: 4096,
    API_PUBLIC_URL: undefined,
    API_RATE_LIMIT_PER_MINUTE: 100_000,
    // Tests send wrong keys on purpose, all from one address; the flood test sets its own.
    API_AUTH_FAILURES_PER_MINUTE: 100_000,
    // Tests upload at once what one key would send in turn; the cap's own test sets it.
    API_UPLOADS_PER_KEY: 1000,
    API_CORS_ORIGINS: [],
    API_LOG_REQUESTS: false,
    // Tests change postings between searches; the cache's own test turns it on.
    POSTINGS_SEARCH_CACHE_MS: 0,
    SYNC_SCRAPE_TIMEOUT_MS: 1000,
    // Tests share a loaded machine: nothing is shed unless a test asks (the load-shed test does).
    API_MAX_IN_FLIGHT: 0,
    API_SHED_LATENCY_MS: 10,
    API_SHED_EVENT_LOOP_DELAY_MS: 0,
    API_SHED_POOL_WAITING: 0,
    API_SEARCH_CONCURRENCY: 0,
    API_RUN_STATUS_CONCURRENCY: 0,
    API_SHED_QUEUE_MS: 0,
    HTTP_ALLOW_PRIVATE_NETWORKS: false,
    HTTP_ALLOWED_PEERS: [],
    WEBHOOK_SECRET_ROTATION_GRACE_MS: 24 * 3_600_000,
    DOCUMENT_MAX_BYTES: 1024 * 1024,
    DOCUMENT_MAX_RETRIES: 3,
    ...fragmentDefaults(extractionFragment),
    ...overrides,
  };
}

/** Creates a key of `scope` (admin by default) and makes it `app.inject()`'s default. */
export async function injectWithKey(
  app: FastifyInstance,
  db: Database,
  scope: ApiKeyScope = { role: 'admin', tenantId: null },
): Promise<string> {
  const { key } = await createApiKey(db, { name: `test ${scope.role}`, scope });
  const inject = app.inject.bind(app) as (options: InjectOptions | string) => unknown;
  const withKey = (options: InjectOptions | string) => {
    const given = typeof options === 'string' ? { url: options } : options;
    const headers = { authorization: `Bearer ${key}`, ...given.headers };
    if (headers.authorization === '') delete (headers as { authorization?: string }).authorization;
    return inject({ ...given, headers });
  };
  Object.assign(app, { inject: withKey });
  return key;
}
