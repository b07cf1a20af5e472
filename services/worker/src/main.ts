import {
  documentFragment,
  expiryFragment,
  expiryPolicyOf,
  extractionFragment,
  fetchFragment,
  searchApiFragment,
  webhookFragment,
  workerFragment,
} from '@gleaner/config';
import { startHealthServer, startService } from '@gleaner/service';
import { EXTRACTOR_VERSION } from '@gleaner/extraction';
import { createDocumentParserPool } from '@gleaner/extraction/documents';
import {
  applyFleetConcurrency,
  createCounters,
  createRunLogWriter,
  pipelinedConnection,
} from '@gleaner/queue';
import { allowListedPeers, createFetcher, createRobotsCache, createSiteGate } from '@gleaner/http';
import { keepStartingBackfill } from './backfill/start-backfill.js';
import type { BackfillSettings, DocumentDeps, WebhookDeps, WorkerDeps } from './context.js';
import { stagePolicies, startWorkers } from './index.js';
import { createLlmDeps } from './llm/llm-deps.js';

/** A site gate lease's life without renewal (renewed every third of it while held). */
const LEASE_TTL_MS = 15_000;

const started = await startService({
  name: 'worker',
  env: process.env,
  settings: {
    ...workerFragment,
    ...fetchFragment,
    ...documentFragment,
    ...extractionFragment,
    ...expiryFragment,
    ...webhookFragment,
    ...searchApiFragment,
  },
  // More connections than jobs at once would only sit idle.
  poolMax: (config) =>
    Math.min(
      config.DATABASE_POOL_MAX,
      Object.values(stagePolicies(config)).reduce((sum, policy) => sum + policy.concurrency, 0),
    ),
  healthPort: (config) => config.WORKER_HEALTH_PORT,
  async start({ config, logger, database, redis, queues, workerConnection, onShutdown }) {
    // The LLM stages are served only while extraction is on; off, no extraction is queued, and
    // the reconciler gives up the syncs of use_llm_sync sites' runs so that they close.
    const queueNames = config.EXTRACTION_ENABLED
      ? config.WORKER_QUEUES
      : config.WORKER_QUEUES.filter(
          (queue) => queue !== 'llm-extract' && queue !== 'llm-sync' && queue !== 'llm-pages',
        );
    const extraction = config.EXTRACTION_ENABLED
      ? {
          version: config.EXTRACTION_VERSION,
          maxAttempts: config.EXTRACTION_MAX_ATTEMPTS,
          retryBaseMs: config.EXTRACTION_RETRY_BASE_SECONDS * 1000,
        }
      : undefined;
    const llm =
      queueNames.includes('llm-extract') ||
      queueNames.includes('llm-sync') ||
      queueNames.includes('llm-pages')
        ? createLlmDeps(config, redis)
        : undefined;
    // After the workers (steps run in reverse): their calls have ended or been aborted by then.
    if (llm) onShutdown('llm client', () => llm.client.close());
    // On the worker's own health port (compose's 8080), that endpoint answers for both.
    if (
      llm &&
      config.EXTRACTION_HEALTHCHECK_PORT > 0 &&
      config.EXTRACTION_HEALTHCHECK_PORT !== config.WORKER_HEALTH_PORT
    ) {
      // Seed 002's probe of an extraction worker: healthy while its Redis connection is up.
      const health = await startHealthServer({
        port: config.EXTRACTION_HEALTHCHECK_PORT,
        service: 'extraction-worker',
        check: () => ({ ok: redis.status === 'ready' }),
      });
      onShutdown('extraction health server', () => health.close());
    }
    const fetcher = createFetcher({
      userAgent: config.HTTP_USER_AGENT,
      timeoutMs: config.HTTP_TIMEOUT_MS,
      maxBodyBytes: config.HTTP_MAX_BODY_BYTES,
      maxRedirects: config.HTTP_MAX_REDIRECTS,
      allowPrivateNetworks: config.HTTP_ALLOW_PRIVATE_NETWORKS,
      allowPeer: allowListedPeers(config.HTTP_ALLOWED_PEERS),
    });
    onShutdown('fetcher', () => fetcher.close());
    // The gate's acquires and releases of a turn of the event loop go to Redis in one write. An
    // outage is logged once, by the connection it duplicates; closed as that one is, at once.
    const gateRedis = pipelinedConnection(redis);
    if (gateRedis !== redis) {
      gateRedis.on('error', () => undefined);
      onShutdown('gate connection', () => gateRedis.disconnect());
    }
    // Leases are renewed while their fetch runs: a worker that dies frees its site's slots within
    // LEASE_TTL_MS, not after the longest fetch it might have made.
    const gate = createSiteGate({
      redis: gateRedis,
      prefix: config.QUEUE_PREFIX,
      leaseTtlMs: LEASE_TTL_MS,
      failureThreshold: config.HTTP_BREAKER_FAILURES,
      openMs: config.HTTP_BREAKER_OPEN_MS,
    });
    const robots = createRobotsCache({
      fetcher,
      redis,
      prefix: config.QUEUE_PREFIX,
      userAgent: config.HTTP_USER_AGENT,
    });
    // Parser processes only for a replica that serves documents; closed after the workers stop
    // (shutdown steps run last-registered first).
    let documents: DocumentDeps | undefined;
    if (config.WORKER_QUEUES.includes('documents')) {
      const parser = createDocumentParserPool({
        processes: config.WORKER_DOCUMENT_PARSERS,
        timeoutMs: config.DOCUMENT_EXTRACTION_TIMEOUT_MS,
      });
      onShutdown('document parsers', () => parser.close());
      documents = {
        parser,
        limits: {
          maxBytes: config.DOCUMENT_MAX_BYTES,
          maxPages: config.DOCUMENT_MAX_PAGES,
          maxDecompressedBytes: config.DOCUMENT_MAX_DECOMPRESSED_BYTES,
          maxTextChars: config.DOCUMENT_MAX_TEXT_CHARS,
        },
        redis,
        heartbeatIntervalMs: config.DOCUMENT_HEARTBEAT_INTERVAL_MS,
      };
    }
    // Webhook messages go out through a fetcher of their own: the SSRF policy of page fetches,
    // no redirect followed (a POST is not sent on to where a redirect points), the attempt's
    // deadline, and a connection per receiver at a time beyond the first few.
    let webhooks: WebhookDeps | undefined;
    if (queueNames.includes('webhooks')) {
      const webhookFetcher = createFetcher({
        userAgent: config.HTTP_USER_AGENT,
        timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        maxBodyBytes: 64 * 1024,
        maxRedirects: 0,
        allowPrivateNetworks: config.HTTP_ALLOW_PRIVATE_NETWORKS,
        allowPeer: allowListedPeers(config.HTTP_ALLOWED_PEERS),
      });
      onShutdown('webhook fetcher', () => webhookFetcher.close());
      webhooks = { fetcher: webhookFetcher, schedule: config.WEBHOOK_RETRY_SCHEDULE };
    }
    // Job lines about runs, copied to each run's log for the run page. Closed after the workers
    // stop (shutdown steps run last-registered first), so their last lines are sent.
    let runLog: WorkerDeps['runLog'];
    if (config.RUN_LOG_LEVEL !== 'silent') {
      const writer = createRunLogWriter({
        redis,
        prefix: config.QUEUE_PREFIX,
        onError: (err) => logger.warn({ err }, 'run log lines lost'),
      });
      onShutdown('run log', () => writer.close());
      runLog = { writer, level: config.RUN_LOG_LEVEL };
    }
    // Counted for `GET /metrics` on the producer connection, a pipeline every 250 ms at most:
    // while Redis is away, counts are lost.
    const counters = createCounters({
      redis,
      prefix: config.QUEUE_PREFIX,
      onError: (error) => logger.warn({ err: error }, 'could not count in Redis for the metrics'),
    });
    // What is still buffered is sent once the jobs are done (shutdown steps run last-registered first).
    onShutdown('counters', () => counters.close());
    const backfill: BackfillSettings = {
      version: EXTRACTOR_VERSION,
      batchSize: config.BACKFILL_BATCH_SIZE,
      ratePerSecond: config.BACKFILL_RATE_PER_SECOND,
    };
    // The fleet-wide caps of the queues this replica serves (FLEET_CONCURRENCY_*), set again each
    // time the connection is ready: a Redis restarted without persistence, or failed over to a
    // replica that missed the write, has forgotten them.
    const policies = stagePolicies(config);
    const caps = Object.fromEntries(
      queueNames.map((queue) => [queue, policies[queue].fleetConcurrency]),
    );
    const applyCaps = () => {
      applyFleetConcurrency(queues, caps).then(
        (held) => logger.info({ fleetConcurrency: held }, 'fleet-wide concurrency set'),
        (err: unknown) =>
          logger.warn({ err }, 'could not set the fleet-wide concurrency; will again on reconnect'),
      );
    };
    redis.on('ready', applyCaps);
    if (redis.status === 'ready') applyCaps();
    const runtime = startWorkers(
      {
        db: database.db,
        queues,
        fetcher,
        gate,
        robots,
        logger,
        runLog,
        counters,
        documents,
        extraction,
        llm,
        backfill,
        webhooks,
        sourceCredentials: {
          adzuna: { appId: config.ADZUNA_APP_ID, appKey: config.ADZUNA_APP_KEY },
          usajobs: { apiKey: config.USAJOBS_API_KEY, userAgent: config.USAJOBS_USER_AGENT },
        },
      },
      {
        connection: workerConnection(),
        prefix: config.QUEUE_PREFIX,
        queues: queueNames,
        // Each stage's concurrency, deadline, stall limit and backoff: its ledger's.
        policies,
        extractThreads: config.WORKER_EXTRACT_THREADS,
        pageBudgetMs: config.WORKER_EXTRACT_PAGE_BUDGET_MS,
        expiry: expiryPolicyOf(config),
        stalls: {
          lockDuration: config.WORKER_LOCK_DURATION_MS,
          stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
        },
        heartbeatIntervalMs: config.WORKER_HEARTBEAT_INTERVAL_MS,
      },
    );
    // A new extractor version re-extracts the stored postings (decision 0013): the first worker
    // of a release that serves the queue starts it; the others find it started.
    const stopStarting = new AbortController();
    const starting = queueNames.includes('backfill')
      ? keepStartingBackfill(
          { db: database.db, queues, logger },
          backfill.version,
          stopStarting.signal,
        )
      : Promise.resolve();
    // Stops taking jobs (and starting the backfill), waits up to the grace period for those in
    // flight, releases the rest.
    onShutdown('workers', async () => {
      stopStarting.abort();
      await starting;
      await runtime.close(config.SHUTDOWN_GRACE_MS);
    });
    return {
      health: () => ({ ok: true, details: { queues: queueNames } }),
      summary: { queues: queueNames },
    };
  },
});
if (!started.ok) {
  process.stderr.write(`worker: ${started.error.message}\n`);
  process.exit(1);
}
