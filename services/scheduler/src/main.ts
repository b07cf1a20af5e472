import { hostname } from 'node:os';
import {
  documentFragment,
  expiryFragment,
  expiryPolicyOf,
  extractionFragment,
  schedulerFragment,
  webhookFragment,
} from '@gleaner/config';
import { startService } from '@gleaner/service';
import { pingDb } from '@gleaner/db';
import { readRunRequests, waitForRedis, writeSchedulerReplica } from '@gleaner/queue';
import { startForcedPasses } from './forced-passes.js';
import { createBackfillResumer } from './backfill.js';
import { createBodySweeper } from './body-sweeper.js';
import { createLlmReextractor } from './llm-reextraction.js';
import { createSearchIndexer } from './search-indexer.js';
import { createSiteWatch } from './site-watch.js';
import { createWebhookDispatcher } from './webhook-dispatcher.js';
import { createSiteLocks } from './locks.js';
import { createSchedulerLoop } from './loop.js';
import { createSchedulePass } from './pass.js';
import { createReconciler } from './reconciler.js';

const started = await startService({
  name: 'scheduler',
  env: process.env,
  settings: {
    ...schedulerFragment,
    ...documentFragment,
    ...extractionFragment,
    ...expiryFragment,
    ...webhookFragment,
  },
  // One pass at a time needs one connection, the body sweeper a second, the search indexer a
  // third, the LLM re-extraction a fourth, the webhook dispatcher a fifth; the sixth serves the
  // health check.
  poolMax: () => 6,
  healthPort: (config) => config.SCHEDULER_HEALTH_PORT,
  async start({ config, logger, database, redis, queues, workerConnection, onShutdown }) {
    // Unlike the API, the scheduler has nothing to do without both: wait for them, or fail.
    await waitForRedis(redis, 30_000);
    await pingDb(database.pool);
    const replica = `${hostname()}-${process.pid}`;
    const db = database.db;
    const pass = createSchedulePass({
      db,
      queues,
      logger,
      replica,
      batchSize: config.SCHEDULER_BATCH_SIZE,
      locks: createSiteLocks({
        redis,
        prefix: config.QUEUE_PREFIX,
        holder: replica,
        ttlMs: config.SCHEDULER_LOCK_TTL_MS,
      }),
      reconciler: createReconciler({
        db,
        queues,
        logger,
        runDeadlineMs: config.RUN_DEADLINE_MS,
        graceMs: config.RECONCILE_GRACE_MS,
        expiry: expiryPolicyOf(config),
        runRequests: (runId) =>
          readRunRequests(redis, config.QUEUE_PREFIX, runId).catch(() => null),
        documents: {
          maxRetries: config.DOCUMENT_MAX_RETRIES,
          staleAfterMs: config.DOCUMENT_STALE_AFTER_MS,
        },
        llm: config.EXTRACTION_ENABLED
          ? {
              version: config.EXTRACTION_VERSION,
              maxAttempts: config.EXTRACTION_MAX_ATTEMPTS,
              retryBaseMs: config.EXTRACTION_RETRY_BASE_SECONDS * 1000,
              // Past the worker's job timeout (two provider calls and a margin) and then some.
              staleAfterMs: 4 * config.EXTRACTION_REQUEST_TIMEOUT_MS + 120_000,
            }
          : undefined,
      }),
      backfills: createBackfillResumer({ db, queues, logger }),
    });
    const loop = createSchedulerLoop({
      replica,
      intervalMs: config.SCHEDULER_POLL_INTERVAL_MS,
      logger,
      pass,
      publish: (status) => writeSchedulerReplica(redis, config.QUEUE_PREFIX, status),
    });
    loop.start();
    onShutdown('scheduler loop', () => loop.stop());
    const sweeper = createBodySweeper({
      db,
      logger,
      replica,
      locks: createSiteLocks({
        redis,
        prefix: config.QUEUE_PREFIX,
        holder: replica,
        ttlMs: config.BODY_SWEEP_INTERVAL_MS,
      }),
      intervalMs: config.BODY_SWEEP_INTERVAL_MS,
      graceMs: config.BODY_SWEEP_GRACE_MS,
      batchSize: config.BODY_SWEEP_BATCH_SIZE,
      pauseMs: config.BODY_SWEEP_PAUSE_MS,
      historyVersions: config.POSTING_HISTORY_VERSIONS,
      changeRetentionMs: config.CHANGE_FEED_RETENTION_DAYS * 24 * 3_600_000,
    });
    sweeper.start();
    onShutdown('body sweeper', () => sweeper.stop());
    const indexer = createSearchIndexer({
      db,
      logger,
      intervalMs: config.SEARCH_INDEX_INTERVAL_MS,
      batchSize: config.SEARCH_INDEX_BATCH_SIZE,
      pauseMs: config.SEARCH_INDEX_PAUSE_MS,
    });
    indexer.start();
    onShutdown('search indexer', () => indexer.stop());
    if (config.SITE_OVERDUE_INTERVALS > 0) {
      const watch = createSiteWatch({
        db,
        logger,
        overdueIntervals: config.SITE_OVERDUE_INTERVALS,
        intervalMs: config.SITE_WATCH_INTERVAL_MS,
      });
      watch.start();
      onShutdown('site watch', () => watch.stop());
    }
    const dispatcher = createWebhookDispatcher({
      db,
      queues,
      logger,
      intervalMs: config.WEBHOOK_DISPATCH_INTERVAL_MS,
      batchSize: config.WEBHOOK_DISPATCH_BATCH_SIZE,
    });
    dispatcher.start();
    onShutdown('webhook dispatcher', () => dispatcher.stop());
    // A bumped EXTRACTION_VERSION re-extracts what older versions produced, at its own pace.
    if (config.EXTRACTION_ENABLED && config.EXTRACTION_REEXTRACT_PER_MINUTE > 0) {
      const reextractor = createLlmReextractor({
        db,
        queues,
        logger,
        settings: {
          version: config.EXTRACTION_VERSION,
          maxAttempts: config.EXTRACTION_MAX_ATTEMPTS,
          retryBaseMs: config.EXTRACTION_RETRY_BASE_SECONDS * 1000,
        },
        perMinute: config.EXTRACTION_REEXTRACT_PER_MINUTE,
      });
      reextractor.start();
      onShutdown('llm re-extraction', () => reextractor.stop());
    }
    const forced = startForcedPasses({
      connection: workerConnection(),
      prefix: config.QUEUE_PREFIX,
      loop,
      logger,
    });
    onShutdown('forced passes', () => forced.close());
    return {
      health: () => {
        const { healthy, passes, lastPass } = loop.status();
        return {
          ok: healthy,
          details: {
            healthy,
            passes,
            lastPassAt: lastPass?.startedAt ?? null,
            lastErrors: lastPass?.errors ?? [],
          },
        };
      },
      summary: {
        replica,
        pollIntervalMs: config.SCHEDULER_POLL_INTERVAL_MS,
        runDeadlineMs: config.RUN_DEADLINE_MS,
        bodySweepIntervalMs: config.BODY_SWEEP_INTERVAL_MS,
        postingHistoryVersions: config.POSTING_HISTORY_VERSIONS,
      },
    };
  },
});
if (!started.ok) {
  process.stderr.write(`scheduler: ${started.error.message}\n`);
  process.exit(1);
}
