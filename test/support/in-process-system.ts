import { PassThrough, type Writable } from 'node:stream';
import { createDb, getRun, type DbHandle, type RunRow } from '@gleaner/db';
import {
  createFetcher,
  createRobotsCache,
  createSiteGate,
  type Fetcher,
  type FetcherOptions,
} from '@gleaner/http';
import { createLogger } from '@gleaner/logger';
import {
  closeQueues,
  createCounters,
  createQueues,
  createRedisConnection,
  createRunLogWriter,
  startScrapeRun,
  type RedisClient,
  type RunLogWriter,
  type Queues,
  type WorkQueueName,
} from '@gleaner/queue';
import {
  createTestDatabase,
  createTestRedisNamespace,
  waitFor,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import {
  startWorkers,
  type RuntimeOptions,
  type WorkerDeps,
  type WorkerRuntime,
} from '@gleaner/worker';

export interface InProcessSystem {
  database: TestDatabase;
  namespace: TestRedisNamespace;
  handle: DbHandle;
  fetcher: Fetcher;
  /** One entry per worker replica: its own Redis connections, queues and gate. */
  replicas: { runtime: WorkerRuntime; queues: Queues }[];
  queues: Queues;
  /** Creates a manual run of a site, enqueues its scrape and waits until it finalizes. */
  runToEnd(siteId: string, timeoutMs?: number): Promise<RunRow>;
  close(): Promise<void>;
}

export interface InProcessSystemOptions {
  replicas?: number;
  crawlConcurrency?: number;
  extractConcurrency?: number;
  /**
   * Overrides of the shared fetcher's options. By default it may reach any private address; an
   * SSRF test sets `allowPrivateNetworks: false` with an `allowPeer` for its fixture origin.
   */
  fetcher?: Partial<FetcherOptions>;
  /** Where the workers' JSON log lines go (at `info`); by default they are discarded. */
  logDestination?: Writable;
  /**
   * More for each replica, built on its producer connection: the LLM stage's dependencies, say.
   * Its queues are served beside scrape, crawl and extract.
   */
  more?: (
    producer: RedisClient,
    prefix: string,
  ) => {
    deps: Partial<WorkerDeps>;
    queues: WorkQueueName[];
    concurrency?: Partial<Record<WorkQueueName, number>>;
  };
}

/**
 * Worker replicas running inside the test process against their own database and Redis prefix,
 * each as a main.ts would build it (own connections, gate and robots cache), sharing one fetcher
 * that may reach loopback fixture servers.
 */
export async function startInProcessSystem(
  label: string,
  {
    replicas = 1,
    crawlConcurrency = 2,
    extractConcurrency = 2,
    fetcher: fetcherOverrides = {},
    logDestination,
    more,
  }: InProcessSystemOptions = {},
): Promise<InProcessSystem> {
  const database = await createTestDatabase(label);
  const namespace = createTestRedisNamespace(label);
  const handle = createDb({ url: database.url, poolMax: 4 + 4 * replicas });
  const fetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 5000,
    maxBodyBytes: 20 << 20,
    maxRedirects: 3,
    allowPrivateNetworks: true,
    ...fetcherOverrides,
  });
  const connections: RedisClient[] = [];
  const runLogs: RunLogWriter[] = [];
  const started = Array.from({ length: replicas }, () => {
    const producer = createRedisConnection(namespace.target, 'producer');
    const worker = createRedisConnection(namespace.target, 'worker');
    connections.push(producer, worker);
    const queues = createQueues(producer, namespace.prefix);
    const extra = more?.(producer, namespace.prefix);
    const deps = testWorkerDeps({
      db: handle.db,
      queues,
      fetcher,
      producer,
      prefix: namespace.prefix,
      logDestination,
    });
    // Each run's log, as main.ts writes it at the default RUN_LOG_LEVEL.
    const runLog = createRunLogWriter({
      redis: producer,
      prefix: namespace.prefix,
      onError: (err) => deps.logger.warn({ err }, 'run log lines lost'),
    });
    runLogs.push(runLog);
    const runtime = startWorkers(
      { ...deps, runLog: { writer: runLog, level: 'debug' }, ...extra?.deps },
      {
        connection: worker,
        prefix: namespace.prefix,
        queues: ['scrape', 'crawl', 'extract', ...(extra?.queues ?? [])],
        policies: policiesOf({
          scrape: 1,
          crawl: crawlConcurrency,
          extract: extractConcurrency,
          ...extra?.concurrency,
        }),
        // As a worker runs by default: pages are analysed in a thread of their own.
        extractThreads: 1,
      },
    );
    return { runtime, queues };
  });
  const queues = started[0]!.queues;

  return {
    database,
    namespace,
    handle,
    fetcher,
    replicas: started,
    queues,
    async runToEnd(siteId, timeoutMs = 60_000) {
      const run = await startScrapeRun({ db: handle.db, queues }, { siteId, trigger: 'manual' });
      return waitFor(
        async () => {
          const current = await getRun(handle.db, run.id);
          return current && current.status !== 'queued' && current.status !== 'running'
            ? current
            : undefined;
        },
        { timeoutMs, what: `run ${run.runId} to finalize` },
      );
    },
    async close() {
      await Promise.all(started.map(({ runtime }) => runtime.close(5000)));
      await Promise.all(runLogs.map((runLog) => runLog.close()));
      await Promise.all(started.map(({ queues: q }) => closeQueues(q)));
      for (const connection of connections) connection.disconnect();
      await fetcher.close();
      await handle.close();
      await namespace.cleanup();
      await database.drop();
    },
  };
}

/** Jobs at once per queue as the runtime's policies; a queue left out runs one at a time. */
function policiesOf(
  concurrency: Partial<Record<WorkQueueName, number>>,
): NonNullable<RuntimeOptions['policies']> {
  return Object.fromEntries(
    Object.entries(concurrency).map(([queue, jobs]) => [queue, { concurrency: jobs }]),
  );
}

/**
 * A worker replica's dependencies as main.ts builds them (its gate and robots cache on its
 * producer connection), with a logger that writes to `logDestination` at `info` or nowhere.
 */
export function testWorkerDeps(parts: {
  db: WorkerDeps['db'];
  queues: Queues;
  fetcher: Fetcher;
  producer: RedisClient;
  prefix: string;
  logDestination?: Writable;
}): WorkerDeps {
  const { producer, prefix, fetcher, logDestination } = parts;
  return {
    db: parts.db,
    queues: parts.queues,
    fetcher,
    gate: createSiteGate({ redis: producer, prefix }),
    robots: createRobotsCache({ fetcher, redis: producer, prefix, userAgent: 'GleanerTest' }),
    counters: createCounters({ redis: producer, prefix }),
    logger: createLogger({
      service: 'worker',
      level: logDestination ? 'info' : 'silent',
      destination: logDestination ?? new PassThrough(),
    }),
  };
}
