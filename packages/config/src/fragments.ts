import { STANDARD_WEBHOOK_RETRY_SCHEDULE_MS, workQueueNames } from '@gleaner/queue/catalogue';
import { z } from 'zod';
import {
  booleanFromEnv,
  durationListFromEnv,
  integerFromEnv,
  listFromEnv,
  numberFromEnv,
  optionalIntegerFromEnv,
  peersFromEnv,
} from './coerce.js';

/**
 * Zod fragments, one per concern. Each service spreads the ones it needs into one object
 * schema and parses `process.env` once in its `main.ts`. Every variable is documented in
 * `.env.example`.
 */

const url = (protocols: string[]) =>
  z
    .url({ message: `must be a ${protocols.join(' or ')} URL` })
    .refine((value) => protocols.some((p) => value.startsWith(`${p}://`)), {
      message: `must be a ${protocols.join(' or ')} URL`,
    });

export const loggingFragment = {
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Human-readable logs; defaults to on only when stdout is a terminal. */
  LOG_PRETTY: z.enum(['true', 'false', '1', '0', 'auto']).default('auto'),
};

export const databaseFragment = {
  DATABASE_URL: url(['postgres', 'postgresql']).default(
    'postgres://postgres@127.0.0.1:5432/gleaner',
  ),
  DATABASE_POOL_MAX: integerFromEnv(10, { min: 1, max: 200 }),
  /**
   * The Postgres connections the whole fleet may hold (every replica's pool of the API, workers
   * and scheduler under one QUEUE_PREFIX). Each process claims its pool from it in Redis when it
   * starts, and one that would go past it waits for room, then refuses to start. Unset: the
   * server's max_connections less its reserved connections and 5 spare (migrations, the CLI, an
   * operator). 0: no budget, for a pooler such as PgBouncer that holds the limit itself.
   */
  DATABASE_MAX_CONNECTIONS: optionalIntegerFromEnv({ min: 0, max: 100_000 }),
};

const clusterNode = /^(?:(?:redis|rediss):\/\/(?:[^@/\s]*@)?)?[A-Za-z0-9.-]+:\d{1,5}\/?$/;

export const redisFragment = {
  REDIS_URL: url(['redis', 'rediss']).default('redis://127.0.0.1:6379/0'),
  /**
   * A Redis Cluster instead of `REDIS_URL`: some of its nodes, comma-separated, as `host:port`
   * or `redis[s]://[user:password@]host:port` (credentials and TLS from the first that has
   * them). Queues get a hash tag each (decision 0018).
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .optional()
    .transform((value, context) => {
      const nodes = (value ?? '')
        .split(',')
        .map((node) => node.trim())
        .filter((node) => node !== '');
      const bad = nodes.find((node) => !clusterNode.test(node));
      if (bad !== undefined)
        context.addIssue({
          code: 'custom',
          message: `"${bad}" is not host:port or a redis:// URL with a port`,
        });
      return nodes.length > 0 ? nodes : undefined;
    }),
};

export const queueFragment = {
  /**
   * Key prefix; every Gleaner key in Redis starts with it. No hash tag: keys add their own after
   * it (a queue's, a site's), and the first tag in a key decides its slot (decision 0018).
   */
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be 1-64 letters, digits, - or _' })
    .default('gleaner'),
};

export const shutdownFragment = {
  /** How long in-flight work may take to finish on SIGTERM before it is released. */
  SHUTDOWN_GRACE_MS: integerFromEnv(10_000, { min: 0, max: 600_000 }),
};

export const apiFragment = {
  /** Loopback unless told otherwise: compose sets 0.0.0.0 inside its network. */
  API_HOST: z.string().min(1).default('127.0.0.1'),
  API_PORT: integerFromEnv(8000, { min: 0, max: 65_535 }),
  API_BODY_LIMIT_BYTES: integerFromEnv(64 * 1024, { min: 1024, max: 10 * 1024 * 1024 }),
  /** Public base URL used in links the API prints (status URLs); defaults to the listen address. */
  API_PUBLIC_URL: url(['http', 'https']).optional(),
  /**
   * An admin API key the API makes sure exists at start (compose's bootstrap; `npm start`
   * creates and prints one instead). 32 to 256 printable ASCII characters without spaces: it is
   * the operator's secret, and it must come through an HTTP header intact.
   */
  ADMIN_API_KEY: z
    .string()
    .min(32, { message: 'must be at least 32 characters' })
    .max(256)
    .regex(/^[\x21-\x7e]+$/, { message: 'must be printable ASCII characters without spaces' })
    .optional(),
  /** Requests per minute per API key (per client address without one), across replicas. */
  API_RATE_LIMIT_PER_MINUTE: integerFromEnv(1200, { min: 1, max: 1_000_000 }),
  /**
   * Requests without a valid key (401s) per client address per minute, across replicas; past it
   * the address is answered 429 and unknown keys are no longer looked up. Someone mistyping a key
   * stays well under 10; a script with a wrong or guessed key is stopped after 10 queries.
   */
  API_AUTH_FAILURES_PER_MINUTE: integerFromEnv(10, { min: 1, max: 100_000 }),
  /**
   * Uploads (POST /documents, /documents/batch) one key may have in flight at once, per API
   * process: each holds up to DOCUMENT_MAX_BYTES (a batch, all its files) in memory while it lasts.
   */
  API_UPLOADS_PER_KEY: integerFromEnv(4, { min: 1, max: 1000 }),
  /** Origins browsers may call the API from (CORS), comma-separated; none by default. */
  API_CORS_ORIGINS: z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((origin) => origin.trim())
        .filter(Boolean),
    )
    .pipe(z.array(url(['http', 'https']))),
  /** Log every request at info (otherwise at debug, out of the way). */
  API_LOG_REQUESTS: booleanFromEnv(false),
  /**
   * API processes sharing the API's port (node:cluster), one per core the API may use: a Node
   * process answers on one core. With more than one, a primary starts them and restarts one that
   * dies.
   */
  API_PROCESSES: integerFromEnv(1, { min: 1, max: 64 }),
  /**
   * How long an API process answers a repeated posting search from memory: a search reads and
   * ranks hundreds of postings' vectors (tens to a few hundred milliseconds at two million
   * postings), and the same words come back often. For as long again a stale answer is served
   * while one refresh runs. Postings change run by run, so two minutes stale cost little. 0: never.
   */
  POSTINGS_SEARCH_CACHE_MS: integerFromEnv(60_000, { min: 0, max: 3_600_000 }),
  /** Up to 5 minutes (seed 004's sync job timeout): a sync scrape waits that long at most. */
  SYNC_SCRAPE_TIMEOUT_MS: integerFromEnv(20_000, { min: 1000, max: 300_000 }),
  /**
   * Load shedding (services/api/src/admission.ts, plugins/load-shed.ts): a request the API cannot
   * start soon is answered 503 with Retry-After at once instead of queueing until its caller gives
   * up. Each bound is per API process; 0 turns that one off. /health and /metrics are never shed.
   *
   * The most requests started and not yet answered at once; the limit in force adapts below it
   * (API_SHED_LATENCY_MS). 0: no limit.
   */
  API_MAX_IN_FLIGHT: integerFromEnv(32, { min: 0, max: 100_000 }),
  /**
   * The median latency (ms) of quick reads (every GET but searches and run statuses) above which
   * the in-flight limit shrinks, a window of 100 ms at a time; it grows back while they keep it.
   */
  API_SHED_LATENCY_MS: integerFromEnv(10, { min: 1, max: 60_000 }),
  /** The event loop's mean delay (ms, over the last 100 ms) above which every request is shed. */
  API_SHED_EVENT_LOOP_DELAY_MS: integerFromEnv(50, { min: 0, max: 10_000 }),
  /** Queries already waiting for a Postgres connection at which a new request is shed. */
  API_SHED_POOL_WAITING: integerFromEnv(20, { min: 0, max: 10_000 }),
  /** Searches (`GET /postings?q=`, `GET /documents/search`) answered at once, each route apart. */
  API_SEARCH_CONCURRENCY: integerFromEnv(4, { min: 0, max: 1000 }),
  /** Run status requests (`GET /jobs/scrape/:runId`) answered at once. */
  API_RUN_STATUS_CONCURRENCY: integerFromEnv(4, { min: 0, max: 1000 }),
  /** How long a search or run status request may wait for its turn before it is shed (ms). */
  API_SHED_QUEUE_MS: integerFromEnv(25, { min: 0, max: 60_000 }),
};

export const workerFragment = {
  /** The catalogue's work queues (every queue but the dead letters), all by default. */
  WORKER_QUEUES: listFromEnv(workQueueNames, workQueueNames),
  WORKER_CONCURRENCY_SCRAPE: integerFromEnv(2, { min: 1, max: 64 }),
  /**
   * Crawl jobs wait on sites, the gate, Redis and Postgres far more than they compute: 128 keep a
   * worker's event loop busy and its settle batches full (`pnpm bench pipeline`: 16 left the
   * loop idle a fifth of the time and settled ~6 postings per statement; 64 gave 30 % more
   * pages per second for 15 % less CPU per page; on a faster machine, where 64 left the loop
   * waiting on replies at about 0.88 busy, 128 gave a median 8 % more pages per second over six
   * interleaved rounds each, with less Postgres CPU per page and peak RSS 226–242 MB). Bodies in
   * flight are at most this many times HTTP_MAX_BODY_BYTES. Per-site limits come from the gate.
   */
  WORKER_CONCURRENCY_CRAWL: integerFromEnv(128, { min: 1, max: 256 }),
  WORKER_CONCURRENCY_EXTRACT: integerFromEnv(8, { min: 1, max: 256 }),
  /**
   * Threads that read pages beside the event loop (the crawl's fingerprints and extraction, the
   * extract, LLM and backfill stages' reading of stored pages), so that one worker uses a second
   * core and a page that takes too long can be stopped. At least 1: on the event loop nothing
   * could stop a page that takes minutes (one of unclosed tags), and every job of the worker
   * would wait behind it past its lock.
   */
  WORKER_EXTRACT_THREADS: integerFromEnv(1, { min: 1, max: 32 }),
  /**
   * How long one page's reading may take in a thread before it is stopped and its posting fails
   * with `EXTRACT_PAGE_TOO_SLOW` (permanent: the same bytes would take as long again). Pages of
   * real sites take milliseconds, 4 MB of real markup under a second; a page still running after
   * the lesser of 1 s and half this leaves its thread, so the pages queued behind it move on.
   */
  WORKER_EXTRACT_PAGE_BUDGET_MS: integerFromEnv(5000, { min: 100, max: 600_000 }),
  /**
   * LLM extractions at once per worker. Each mostly waits on the provider, whose limits the
   * provider gate enforces across every replica; more only queue at the gate.
   */
  WORKER_CONCURRENCY_LLM_EXTRACT: integerFromEnv(4, { min: 1, max: 64 }),
  /**
   * Document extraction jobs at once per worker; each waits for a parser process. About two per
   * parser process, plus two, keep the parsers fed: per parser the document it parses and the
   * next one sent ahead, and two more being claimed or stored meanwhile (one parser with two
   * jobs waited on the worker's round trips for about a tenth of its time).
   */
  WORKER_CONCURRENCY_DOCUMENTS: integerFromEnv(6, { min: 1, max: 64 }),
  /** Webhook messages sent at once per worker; each mostly waits on its receiver. */
  WORKER_CONCURRENCY_WEBHOOKS: integerFromEnv(8, { min: 1, max: 256 }),
  /** Runs' LLM syncs at once per worker (decision 0025): one model call each, a few per run. */
  WORKER_CONCURRENCY_LLM_SYNC: integerFromEnv(2, { min: 1, max: 64 }),
  /** Jobs of multi-pass readings at once per worker (decision 0026): one model call each. */
  WORKER_CONCURRENCY_LLM_PAGES: integerFromEnv(4, { min: 1, max: 64 }),
  /**
   * Child processes parsing documents (PDF, DOCX, HTML, text) for a worker that serves
   * `documents`: a parse that runs past its timeout is stopped by killing its process, which the
   * event loop could not do to itself. Jobs beyond the parsers wait for one. Two use two cores;
   * each takes about 110 MB (parser-pool.ts has the measurements).
   */
  WORKER_DOCUMENT_PARSERS: integerFromEnv(2, { min: 1, max: 32 }),
  /**
   * How often a worker process writes its heartbeat (`GET /workers`): the queues it serves, the
   * jobs it completed, failed and is running. One silent for two intervals is dead (seed 001: 10 s).
   */
  WORKER_HEARTBEAT_INTERVAL_MS: integerFromEnv(10_000, { min: 100, max: 600_000 }),
  /** Port of the worker's /health endpoint; 0 turns it off (several local replicas). */
  WORKER_HEALTH_PORT: integerFromEnv(0, { min: 0, max: 65_535 }),
  /**
   * How long one run of a job may take before its work is aborted (its fetches, gate waits and
   * page analysis) and it fails with `JOB_TIMEOUT`, a transient error retried by its queue's
   * policy. Listing a site: a few minutes (up to 100 listing pages, each bounded by
   * HTTP_TIMEOUT_MS). Crawling one posting: 2 minutes, room for its fetch and a busy gate.
   * Extracting a stored body: 10 minutes (seed 004's extraction job timeout).
   */
  JOB_TIMEOUT_SCRAPE_MS: integerFromEnv(5 * 60_000, { min: 1000, max: 3_600_000 }),
  JOB_TIMEOUT_CRAWL_MS: integerFromEnv(2 * 60_000, { min: 1000, max: 3_600_000 }),
  JOB_TIMEOUT_EXTRACT_MS: integerFromEnv(10 * 60_000, { min: 1000, max: 3_600_000 }),
  /** One run's LLM sync: seed 004's SyncPostsJob timeout, 5 minutes. */
  JOB_TIMEOUT_LLM_SYNC_MS: integerFromEnv(5 * 60_000, { min: 1000, max: 3_600_000 }),
  /** One job of a multi-pass reading (a page, the merge, a post's own page): seed 004's 10 minutes. */
  JOB_TIMEOUT_LLM_PAGES_MS: integerFromEnv(10 * 60_000, { min: 1000, max: 3_600_000 }),
  /**
   * How jobs whose worker died are found (BullMQ's stall check): a job's lock lasts
   * `WORKER_LOCK_DURATION_MS` unless renewed, and every `WORKER_STALLED_INTERVAL_MS` a worker
   * moves jobs with an expired lock back to waiting. BullMQ's defaults (30 s, 30 s).
   */
  WORKER_LOCK_DURATION_MS: integerFromEnv(30_000, { min: 100, max: 600_000 }),
  WORKER_STALLED_INTERVAL_MS: integerFromEnv(30_000, { min: 100, max: 600_000 }),
  /**
   * How often a job may be orphaned by a dying worker before it is failed for good, for every
   * stage. Unset, each stage keeps its own limit (10: a worker's death is not the job's fault,
   * and a fleet's restarts and evictions orphan jobs often; the limit only stops a job that kills
   * each worker taking it).
   */
  WORKER_MAX_STALLED_COUNT: optionalIntegerFromEnv({ min: 0, max: 100 }),
  /**
   * Jobs of a queue at once across every worker replica (BullMQ's global concurrency, kept in
   * Redis beside the queue), on top of each replica's own `WORKER_CONCURRENCY_*`. 0: no
   * fleet-wide cap. Extract defaults to 5, seed 000's `ReservedConcurrentExecutions`: each
   * extraction holds a Postgres connection, and the cap protects the database however many
   * replicas run. Each replica serving a queue sets its cap when it starts, so the replicas of a
   * fleet must agree; the last one started wins.
   */
  FLEET_CONCURRENCY_SCRAPE: integerFromEnv(0, { min: 0, max: 100_000 }),
  FLEET_CONCURRENCY_CRAWL: integerFromEnv(0, { min: 0, max: 100_000 }),
  FLEET_CONCURRENCY_EXTRACT: integerFromEnv(5, { min: 0, max: 100_000 }),
  FLEET_CONCURRENCY_DOCUMENTS: integerFromEnv(0, { min: 0, max: 100_000 }),
  FLEET_CONCURRENCY_LLM_EXTRACT: integerFromEnv(0, { min: 0, max: 100_000 }),
  FLEET_CONCURRENCY_WEBHOOKS: integerFromEnv(0, { min: 0, max: 100_000 }),
  FLEET_CONCURRENCY_LLM_SYNC: integerFromEnv(0, { min: 0, max: 100_000 }),
  FLEET_CONCURRENCY_LLM_PAGES: integerFromEnv(0, { min: 0, max: 100_000 }),
  /**
   * The lowest level of the job lines copied to their run's log in Redis (the run page), apart
   * from LOG_LEVEL: per-posting lines are debug, so the page shows each posting's fate while
   * stdout stays at info. `silent` copies nothing.
   */
  RUN_LOG_LEVEL: z.enum(['error', 'warn', 'info', 'debug', 'silent']).default('debug'),
  /**
   * The extractor backfill (decision 0013): after an extractor upgrade, stored postings are
   * re-extracted from their stored bodies in batches of this many postings, one batch job at a
   * time across every replica...
   */
  BACKFILL_BATCH_SIZE: integerFromEnv(100, { min: 1, max: 5_000 }),
  /**
   * ...at this many postings per second at most (the next batch is delayed to keep to it), so
   * that re-extracting millions of postings leaves the pipeline its CPU and Postgres.
   */
  BACKFILL_RATE_PER_SECOND: integerFromEnv(50, { min: 1, max: 100_000 }),
};

export const fetchFragment = {
  HTTP_USER_AGENT: z
    .string()
    .min(1)
    .default('GleanerBot/0.1 (+https://github.com/gleaner/gleaner; job posting indexer)'),
  HTTP_TIMEOUT_MS: integerFromEnv(15_000, { min: 100, max: 300_000 }),
  HTTP_MAX_BODY_BYTES: integerFromEnv(5 * 1024 * 1024, { min: 1024, max: 100 * 1024 * 1024 }),
  HTTP_MAX_REDIRECTS: integerFromEnv(5, { min: 0, max: 20 }),
  /**
   * A site's circuit breaker opens after this many distinct pages of it fail in a row (5xx, a
   * timeout, a refused or reset connection), across every replica...
   */
  HTTP_BREAKER_FAILURES: integerFromEnv(5, { min: 1, max: 10_000 }),
  /** ...for this long at first, doubling after each failed probe (up to ten minutes). */
  HTTP_BREAKER_OPEN_MS: integerFromEnv(30_000, { min: 1_000, max: 600_000 }),
  /**
   * Lets fetches reach loopback and private addresses. Off in production; the demo and the
   * tests turn it on because their fixture sites listen on 127.0.0.1.
   */
  HTTP_ALLOW_PRIVATE_NETWORKS: booleanFromEnv(false),
  /**
   * Loopback or private addresses fetches may reach all the same, as `address:port` pairs
   * (`127.0.0.1:8100`, `[::1]:8100`), comma-separated: one local site (npm start's demo) is
   * reachable while every other private address and port stays blocked.
   */
  HTTP_ALLOWED_PEERS: peersFromEnv(),
};

/**
 * Keys of the job-search APIs the search-driven kinds read (decision 0024). Deployment secrets,
 * read by the worker only: a site's config is shown to its tenant by `GET /sites`, so keys never
 * go there. All optional; a site of a kind whose key is unset fails its runs with the permanent
 * `SOURCE_CREDENTIALS_MISSING`, naming the variable.
 */
export const searchApiFragment = {
  /** Adzuna's application id and key (developer.adzuna.com), sent as `app_id` and `app_key`. */
  ADZUNA_APP_ID: z.string().trim().min(1).optional(),
  ADZUNA_APP_KEY: z.string().trim().min(1).optional(),
  /** The USAJOBS API key (`Authorization-Key`)... */
  USAJOBS_API_KEY: z.string().trim().min(1).optional(),
  /** ...and the e-mail address it was issued to, sent as `User-Agent` as USAJOBS requires. */
  USAJOBS_USER_AGENT: z
    .email({ message: 'must be the e-mail address the key was issued to' })
    .optional(),
};

/**
 * When postings expire (decision 0019). Read where runs are finalized: the worker and the
 * scheduler's reconciler.
 */
export const expiryFragment = {
  /**
   * Complete listings in a row that must miss a posting before it expires. A site's
   * `expire_after_misses` overrides it (1 expires a posting at the first listing without it).
   */
  EXPIRE_AFTER_MISSES: integerFromEnv(2, { min: 1, max: 100 }),
  /**
   * A complete listing that finds fewer than (1 − this) of the median of the site's last 5
   * complete listings counts no miss: its run ends `partial`, naming the guard. 1 turns it off.
   */
  LISTING_DROP_GUARD: numberFromEnv(0.3, { min: 0, max: 1 }),
  /**
   * A run whose share of postings ending in `error` is at least this much above the median share
   * of the site's last 5 closed runs raises the site's `error_rate` alert (decision 0021), when it
   * has at least 5 postings and the site has closed runs to compare with. 1 turns it off.
   */
  ERROR_RATE_ALERT_RISE: numberFromEnv(0.2, { min: 0.01, max: 1 }),
  /**
   * The same for the share of the postings a run read without a title, without a company,
   * without a location (each field on its own): the site's `fields_missing` alert. 1 turns it off.
   */
  FIELDS_MISSING_ALERT_RISE: numberFromEnv(0.2, { min: 0.01, max: 1 }),
  /**
   * The same for the shares of a run's requests to its site answered 4xx (429 aside), 5xx, 429
   * or not at all, each on its own, over runs of at least 10 requests: `http_errors`.
   */
  HTTP_ERRORS_ALERT_RISE: numberFromEnv(0.2, { min: 0.01, max: 1 }),
};

/**
 * The expiry and drift alert settings as the run finalization takes them (`@gleaner/db`'s
 * `ExpiryPolicy`).
 */
export function expiryPolicyOf(config: {
  EXPIRE_AFTER_MISSES: number;
  LISTING_DROP_GUARD: number;
  ERROR_RATE_ALERT_RISE: number;
  FIELDS_MISSING_ALERT_RISE: number;
  HTTP_ERRORS_ALERT_RISE: number;
}) {
  return {
    expireAfterMisses: config.EXPIRE_AFTER_MISSES,
    listingDropGuard: config.LISTING_DROP_GUARD,
    errorRateRise: config.ERROR_RATE_ALERT_RISE,
    fieldsMissingRise: config.FIELDS_MISSING_ALERT_RISE,
    httpErrorsRise: config.HTTP_ERRORS_ALERT_RISE,
  };
}

export const schedulerFragment = {
  SCHEDULER_POLL_INTERVAL_MS: integerFromEnv(15_000, { min: 100, max: 3_600_000 }),
  /** Port of the scheduler's /health endpoint; 0 turns it off. */
  SCHEDULER_HEALTH_PORT: integerFromEnv(0, { min: 0, max: 65_535 }),
  /** Due sites started per statement; a pass takes up to 20 batches. */
  SCHEDULER_BATCH_SIZE: integerFromEnv(1_000, { min: 1, max: 10_000 }),
  /**
   * How long a replica's lock on a site lasts: held only while it starts the site's run, so it
   * bounds how long a replica killed mid-pass keeps others from the site.
   */
  SCHEDULER_LOCK_TTL_MS: integerFromEnv(10_000, { min: 1_000, max: 600_000 }),
  /** A run still active this long after it was created is failed by the reconciler. */
  RUN_DEADLINE_MS: integerFromEnv(6 * 3_600_000, { min: 10_000, max: 7 * 24 * 3_600_000 }),
  /**
   * How long a queued run or pending posting must have been quiet before the reconciler treats
   * its missing job as lost and queues it again. Jobs are added milliseconds after their rows.
   */
  RECONCILE_GRACE_MS: integerFromEnv(30_000, { min: 1_000, max: 3_600_000 }),
  /**
   * Storage (decision 0014). Earlier versions of a posting kept beyond its current fields: the
   * sweeper deletes older ones. A version row is small, but it keeps its page body from the sweep.
   */
  POSTING_HISTORY_VERSIONS: integerFromEnv(10, { min: 1, max: 10_000 }),
  /** How often the body sweeper passes, across every scheduler replica (one sweeps at a time). */
  BODY_SWEEP_INTERVAL_MS: integerFromEnv(3_600_000, { min: 60_000, max: 7 * 24 * 3_600_000 }),
  /**
   * A body nothing points at is deleted only once it has not been stored for this long: a worker
   * stores a body and then points its posting at it. At least 5 minutes, well past the minute
   * within which storing the same bytes again does not move `stored_at`.
   */
  BODY_SWEEP_GRACE_MS: integerFromEnv(3_600_000, { min: 5 * 60_000, max: 30 * 24 * 3_600_000 }),
  /**
   * The change feed's events (`GET /changes`, decision 0020) are kept this many days, then the
   * body sweeper deletes them oldest first; a reader whose cursor is older is told so (410).
   */
  CHANGE_FEED_RETENTION_DAYS: integerFromEnv(30, { min: 1, max: 3_650 }),
  /** Bodies (and postings' histories, and change feed events) looked at per statement. */
  BODY_SWEEP_BATCH_SIZE: integerFromEnv(500, { min: 1, max: 10_000 }),
  /** Pause between two batches, so that a pass never competes with the pipeline for Postgres. */
  BODY_SWEEP_PAUSE_MS: integerFromEnv(200, { min: 0, max: 60_000 }),
  /**
   * The search indexer (decision 0015): how often it looks for postings whose search vector is
   * behind their text, and how many it computes per statement. It works through all of them,
   * pausing SEARCH_INDEX_PAUSE_MS between statements, then waits for the next look.
   */
  SEARCH_INDEX_INTERVAL_MS: integerFromEnv(2_000, { min: 100, max: 3_600_000 }),
  SEARCH_INDEX_BATCH_SIZE: integerFromEnv(200, { min: 1, max: 10_000 }),
  SEARCH_INDEX_PAUSE_MS: integerFromEnv(20, { min: 0, max: 60_000 }),
  /**
   * The site watch (decision 0021): an enabled site of which no run has finished for this many
   * of its intervals (counted from its registration when none ever did) has an open `overdue`
   * alert, resolved when one of its runs finishes. 0 turns the watch off.
   */
  SITE_OVERDUE_INTERVALS: integerFromEnv(3, { min: 0, max: 1_000 }),
  /** How often the site watch looks, on every scheduler replica (its statement is idempotent). */
  SITE_WATCH_INTERVAL_MS: integerFromEnv(60_000, { min: 1_000, max: 3_600_000 }),
};

/**
 * Documents (seed 001): uploads, their extraction, retries and repairs. Read by the API (upload
 * size, attempts of the jobs it adds), the worker (all of it) and the scheduler (attempts,
 * the stale threshold).
 */
export const documentFragment = {
  /** Retries after a document's first attempt (seed 001's `max_retries`): jobs get this + 1 attempts. */
  DOCUMENT_MAX_RETRIES: integerFromEnv(3, { min: 0, max: 20 }),
  /**
   * How long one extraction may take (seed 001's `extraction_timeout`, 300 s): the parse is then
   * stopped and the attempt fails as `timeout`. It is also the worker's job timeout for the queue.
   */
  DOCUMENT_EXTRACTION_TIMEOUT_MS: integerFromEnv(300_000, { min: 1000, max: 3_600_000 }),
  /** Largest upload accepted (20 MiB); a larger one is answered 413. */
  DOCUMENT_MAX_BYTES: integerFromEnv(20 * 1024 * 1024, { min: 1024, max: 512 * 1024 * 1024 }),
  /** Pages a document may have; a longer one is read up to here and marked truncated. */
  DOCUMENT_MAX_PAGES: integerFromEnv(500, { min: 1, max: 100_000 }),
  /** Bytes a DOCX (a zip) may inflate to: a zip bomb fails as `corruption` rather than eat memory. */
  DOCUMENT_MAX_DECOMPRESSED_BYTES: integerFromEnv(200 * 1024 * 1024, {
    min: 1024,
    max: 4 * 1024 * 1024 * 1024,
  }),
  /** Characters of text kept per document; the rest is cut and the document marked truncated. */
  DOCUMENT_MAX_TEXT_CHARS: integerFromEnv(2_000_000, { min: 1000, max: 100_000_000 }),
  /** How often a worker serving `documents` writes its heartbeat row (seed 001: 10 s). */
  DOCUMENT_HEARTBEAT_INTERVAL_MS: integerFromEnv(10_000, { min: 100, max: 600_000 }),
  /**
   * A document `processing` this long with no active job is released to `pending` and queued
   * again by the scheduler's reconciler (seed 001's `cleanup_stale_jobs`, 30 min).
   */
  DOCUMENT_STALE_AFTER_MS: integerFromEnv(30 * 60_000, { min: 1000, max: 7 * 24 * 3_600_000 }),
};

/** A whole number that may be left unset (undefined), so that its default can depend on another. */
const optionalInteger = ({ min, max }: { min: number; max: number }) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      const parsed = /^\s*-?\d+\s*$/.test(value) ? Number(value) : Number.NaN;
      if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
        ctx.addIssue({ code: 'custom', message: `must be a whole number from ${min} to ${max}` });
        return z.NEVER;
      }
      return parsed;
    });

/**
 * LLM extraction (seed 002): resumes and unreadable posting pages enriched by Groq or any
 * OpenAI-compatible server. Read by the API (enabled, mode, version, tenant cap), the worker (all
 * of it) and the scheduler (enabled, version, attempts: the reconciler re-adds lost work).
 */
export const extractionFragment = {
  /** Off by default (seed 002): nothing is queued for the LLM and `llm-extract` is not served. */
  EXTRACTION_ENABLED: booleanFromEnv(false),
  /** `async`: store, answer, then extract; `sync`: a request waits for its extraction. */
  EXTRACTION_MODE: z.enum(['async', 'sync']).default('async'),
  /** The prompt's version: bumping it makes records extracted under another version eligible again. */
  EXTRACTION_VERSION: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, { message: 'must be 1-64 letters, digits, ., _ or -' })
    .default('1.0.0'),
  /**
   * Who answers: `groq` (GROQ_API_KEY, GROQ_BASE_URL) or `openai-compatible`: any server speaking
   * OpenAI's chat completions under LLM_BASE_URL — llama.cpp's llama-server, Ollama, vLLM.
   */
  LLM_PROVIDER: z.enum(['groq', 'openai-compatible']).default('groq'),
  /**
   * The OpenAI-compatible server's API root, `/v1` included (`http://127.0.0.1:8080/v1`, Ollama's
   * `http://127.0.0.1:11434/v1`, vLLM's `http://127.0.0.1:8000/v1`). Required with
   * `LLM_PROVIDER=openai-compatible`; unused with `groq`.
   */
  LLM_BASE_URL: url(['http', 'https']).optional(),
  /** Bearer key of the OpenAI-compatible server, when it asks for one (`llama-server --api-key`). */
  LLM_API_KEY: z.string().min(1).optional(),
  /** Groq API key; required by a worker serving `llm-extract` with `LLM_PROVIDER=groq`. */
  GROQ_API_KEY: z.string().min(1).optional(),
  /** Groq's origin; the client adds `/openai/v1/chat/completions`. */
  GROQ_BASE_URL: url(['http', 'https']).default('https://api.groq.com'),
  /**
   * Groq decommissioned seed 002's `llama-3.1-8b-instant` and `llama-3.3-70b-versatile` on
   * 2026-08-16 and named these as their replacements (decision 0017).
   */
  EXTRACTION_PRIMARY_MODEL: z.string().min(1).default('openai/gpt-oss-20b'),
  /**
   * Tried when the primary's JSON is invalid, misses required fields or is not confident enough,
   * and when the provider does not serve the primary (unknown, retired, down).
   */
  EXTRACTION_FALLBACK_MODEL: z.string().min(1).default('openai/gpt-oss-120b'),
  /** `reasoning_effort` of reasoning models (gpt-oss): extraction needs little. */
  EXTRACTION_REASONING_EFFORT: z.enum(['low', 'medium', 'high']).default('low'),
  /**
   * Room for a reasoning model's reasoning, added to EXTRACTION_MAX_TOKENS in
   * `max_completion_tokens`, so that reasoning cannot crowd out the answer.
   */
  EXTRACTION_REASONING_TOKENS: integerFromEnv(1024, { min: 0, max: 32_768 }),
  /** `auto`: strict `json_schema` where the model supports it, JSON mode otherwise. */
  EXTRACTION_RESPONSE_FORMAT: z.enum(['auto', 'json_schema', 'json_object']).default('auto'),
  EXTRACTION_CONFIDENCE_THRESHOLD: numberFromEnv(0.65, { min: 0, max: 1 }),
  /** Largest answer asked of the model, in tokens. */
  EXTRACTION_MAX_TOKENS: integerFromEnv(1024, { min: 16, max: 32_768 }),
  /** Characters of text sent to the model; the rest is cut. */
  EXTRACTION_MAX_INPUT_CHARS: integerFromEnv(12_000, { min: 200, max: 1_000_000 }),
  /**
   * Seed 002's "primary + fallback = 2": the model answers one extraction may pay for, across its
   * job's attempts (a retry goes on with the fallback), and the job's attempts for calls the
   * provider refused (5xx, timeouts; a 429 waits without spending one).
   */
  EXTRACTION_MAX_ATTEMPTS: integerFromEnv(2, { min: 1, max: 20 }),
  /** Retry n waits base × 2^(n−1) seconds, at most the max. */
  EXTRACTION_RETRY_BASE_SECONDS: integerFromEnv(10, { min: 0, max: 3600 }),
  EXTRACTION_RETRY_MAX_SECONDS: integerFromEnv(60, { min: 0, max: 86_400 }),
  /** Port of the /health of a worker serving `llm-extract`; 0 turns it off. */
  EXTRACTION_HEALTHCHECK_PORT: integerFromEnv(8080, { min: 0, max: 65_535 }),
  EXTRACTION_MAX_PRIMARY_SKILLS: integerFromEnv(12, { min: 1, max: 100 }),
  EXTRACTION_MAX_RECENT_TITLES: integerFromEnv(3, { min: 1, max: 20 }),
  EXTRACTION_MAX_CERTIFICATIONS: integerFromEnv(10, { min: 1, max: 100 }),
  EXTRACTION_MAX_INDUSTRIES: integerFromEnv(5, { min: 1, max: 50 }),
  /**
   * Deadline of one call to the provider, connecting and reading included: the request is aborted
   * then. Up to 30 minutes, for slow CPU models; no lower limit hides behind it.
   */
  EXTRACTION_REQUEST_TIMEOUT_MS: integerFromEnv(60_000, { min: 1000, max: 1_800_000 }),
  /**
   * The provider's limits, shared by every replica; its `x-ratelimit-*` headers and 429s tighten
   * them at run time. 0: no such limit. Unset: Groq's free tier (30 requests, 6000 tokens a
   * minute) with `LLM_PROVIDER=groq`, none with `openai-compatible`.
   */
  EXTRACTION_RATE_LIMIT_RPM: optionalInteger({ min: 0, max: 1_000_000 }),
  EXTRACTION_RATE_LIMIT_TPM: optionalInteger({ min: 0, max: 100_000_000 }),
  /** The length of the provider's "minute". Leave it at 60000; tests and benches shorten it. */
  EXTRACTION_RATE_WINDOW_MS: integerFromEnv(60_000, { min: 100, max: 3_600_000 }),
  /** Extractions a tenant may have queued or running; beyond it the API answers 429. */
  EXTRACTION_TENANT_MAX_PENDING: integerFromEnv(1_000, { min: 1, max: 10_000_000 }),
  /** Tokens a tenant may spend per UTC day; work beyond it waits for the next day. 0: no budget. */
  EXTRACTION_TENANT_DAILY_TOKENS: integerFromEnv(0, { min: 0, max: 10_000_000_000 }),
  /** How long a request in `sync` mode waits for its extraction before answering 202 (ms). */
  EXTRACTION_SYNC_TIMEOUT_MS: integerFromEnv(30_000, { min: 1000, max: 300_000 }),
  /**
   * After a bump of EXTRACTION_VERSION, the scheduler queues the resumes an older version
   * extracted again, at most this many a minute (a third of the default provider's 30 requests a
   * minute, the rest left to new work). 0: stored results stay as their version made them.
   */
  EXTRACTION_REEXTRACT_PER_MINUTE: integerFromEnv(10, { min: 0, max: 1_000_000 }),
};

type ConfigOf<T extends z.ZodRawShape> = z.infer<z.ZodObject<T>>;
export type LoggingConfig = ConfigOf<typeof loggingFragment>;
export type DatabaseConfig = ConfigOf<typeof databaseFragment>;
export type RedisConfig = ConfigOf<typeof redisFragment>;
export type QueueConfig = ConfigOf<typeof queueFragment>;
export type ShutdownConfig = ConfigOf<typeof shutdownFragment>;
export type ApiConfig = ConfigOf<typeof apiFragment>;
export type WorkerConfig = ConfigOf<typeof workerFragment>;
export type FetchConfig = ConfigOf<typeof fetchFragment>;
export type SchedulerConfig = ConfigOf<typeof schedulerFragment>;
export type WebhookConfig = ConfigOf<typeof webhookFragment>;
export type ExpiryConfig = ConfigOf<typeof expiryFragment>;
export type DocumentConfig = ConfigOf<typeof documentFragment>;
export type ExtractionConfig = ConfigOf<typeof extractionFragment>;
export type SearchApiConfig = ConfigOf<typeof searchApiFragment>;

/**
 * Webhooks (decision 0023): the worker sends messages, the scheduler's dispatcher makes them from
 * events, the API registers endpoints. Read by all three.
 */
export const webhookFragment = {
  /**
   * One attempt's deadline: connecting, sending and the receiver's whole answer. The Standard
   * Webhooks specification asks receivers to answer within 15–30 s.
   */
  WEBHOOK_TIMEOUT_MS: integerFromEnv(15_000, { min: 100, max: 120_000 }),
  /**
   * The waits between a message's attempts, comma-separated (`5s, 5m, 2h`): one attempt more
   * than the list is long, then the delivery fails. The specification's schedule by default, about
   * three days. A receiver's `Retry-After` replaces the wait it answers, up to a day.
   */
  WEBHOOK_RETRY_SCHEDULE: durationListFromEnv(STANDARD_WEBHOOK_RETRY_SCHEDULE_MS, {
    max: 7 * 86_400_000,
  }),
  /** How often the dispatcher turns new events into deliveries, on every scheduler replica. */
  WEBHOOK_DISPATCH_INTERVAL_MS: integerFromEnv(1_000, { min: 50, max: 600_000 }),
  /** Events read per statement and source; a full batch is followed by the next at once. */
  WEBHOOK_DISPATCH_BATCH_SIZE: integerFromEnv(1_000, { min: 1, max: 10_000 }),
  /** After a secret's rotation, how long messages are signed with the old one as well. */
  WEBHOOK_SECRET_ROTATION_GRACE_MS: integerFromEnv(24 * 3_600_000, {
    min: 0,
    max: 30 * 24 * 3_600_000,
  }),
};
