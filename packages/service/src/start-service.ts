import closeWithGrace from 'close-with-grace';
import { z } from 'zod';
import { createDb, pingDb, type DbHandle } from '@gleaner/db';
import { createLogger, endLogger, prettyFromSetting, type Logger } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection, type Queues } from '@gleaner/queue';
import {
  databaseFragment,
  loadConfig,
  loggingFragment,
  queueFragment,
  redisFragment,
  shutdownFragment,
  type ConfigError,
  type Env,
  type EnvFileError,
} from '@gleaner/config';
import {
  claimConnectionBudget,
  serverConnectionBudget,
  type BudgetClaim,
} from './connection-budget.js';
import { createShutdown, SHUTDOWN_FLUSH_MS, shutdownBoundMs } from './shutdown.js';
import { startHealthServer, type HealthCheck, type HealthReport } from './health-server.js';
import { startTelemetry } from './telemetry.js';

type Redis = ReturnType<typeof createRedisConnection>;

/** What every long-running service reads: logs, Postgres, Redis, the queue prefix, the grace period. */
const serviceSettings = {
  ...loggingFragment,
  ...databaseFragment,
  ...redisFragment,
  ...queueFragment,
  ...shutdownFragment,
};

type CommonConfig = z.infer<z.ZodObject<typeof serviceSettings>>;

/** A service's settings: the common ones and its own fragments'. */
export type ServiceConfig<S extends z.ZodRawShape> = CommonConfig & z.infer<z.ZodObject<S>>;

export interface ServiceContext<C> {
  config: C;
  logger: Logger;
  database: DbHandle;
  /** The producer connection: fails fast while Redis is down, so callers get an error, not a hang. */
  redis: Redis;
  /** The job catalogue's queues on `redis`. */
  queues: Queues;
  /** Opens a connection for BullMQ workers (retries forever, as blocking commands need). */
  workerConnection: () => Redis;
  /**
   * Registers a step that stops taking work or finishes what is in flight. On shutdown these run
   * last-registered first, within SHUTDOWN_GRACE_MS (plus time to release what is left), before
   * the health server, the queues, Postgres, the connection-budget claim and Redis are closed.
   */
  onShutdown: (name: string, run: () => unknown) => void;
}

export interface ServicePart {
  /** Adds to the health server's verdict (Redis and Postgres are checked already). */
  health?: HealthCheck;
  /** Logged with the "started" line. */
  summary?: Record<string, unknown>;
}

export interface ServiceDefinition<S extends z.ZodRawShape> {
  /** `api`, `worker` or `scheduler`: the name on every log line and in pg_stat_activity. */
  name: string;
  /** The process environment; `.env` (or `envFile`) fills in what it leaves unset. */
  env: Env;
  envFile?: string;
  /** Fragments this service reads beside logging, database, Redis, queue and shutdown. */
  settings: S;
  /** Size of the Postgres pool; DATABASE_POOL_MAX unless given. */
  poolMax?: (config: ServiceConfig<S>) => number;
  /** Port of a `/health` endpoint of its own; none when absent or 0. */
  healthPort?: (config: ServiceConfig<S>) => number;
  /** Builds and starts the service; a throw stops the start (what was opened is closed). */
  start(
    context: ServiceContext<ServiceConfig<S>>,
  ): Promise<ServicePart | void> | ServicePart | void;
}

/** The service did not start: a bad setting, an unreadable env file, or `start` failed. */
export class ServiceStartError extends Error {
  readonly code = 'SERVICE_START_FAILED';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ServiceStartError';
  }
}

export type StartResult<S extends z.ZodRawShape> =
  | { ok: true; config: ServiceConfig<S>; logger: Logger }
  | { ok: false; error: ConfigError | EnvFileError | ServiceStartError };

/** How long a health probe waits for Postgres before reporting it down. */
const HEALTH_PROBE_MS = 2_000;

async function answersWithin(check: () => Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      check().then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
  } catch {
    return false; // the check failed: that is the answer
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The start every service shares: settings (environment over `.env`), the logger, Postgres and
 * Redis with their error handlers, the queues, an optional health server, and close-with-grace
 * running an ordered, bounded shutdown that logs each step with its duration.
 *
 * Returns an error instead of exiting: `main.ts` prints it and exits. Once started, a signal or
 * an uncaught error shuts the service down, and close-with-grace ends the process (0 after a
 * clean shutdown, 1 otherwise).
 */
export async function startService<S extends z.ZodRawShape>(
  definition: ServiceDefinition<S>,
): Promise<StartResult<S>> {
  const { name } = definition;
  const schema = z.object({ ...serviceSettings, ...definition.settings });
  const loaded = loadConfig(schema, definition.env, definition.envFile);
  if (!loaded.ok) return loaded;
  const config = loaded.config as ServiceConfig<S>;
  const common: CommonConfig = config;
  const telemetry = startTelemetry(name, definition.env);

  const logger = createLogger({
    service: name,
    level: common.LOG_LEVEL,
    pretty: prettyFromSetting(common.LOG_PRETTY),
  });
  const { envFile } = loaded.environment;
  if (envFile.supplied.length > 0) {
    logger.info(
      { envFile: envFile.path, variables: envFile.supplied },
      'settings read from env file',
    );
  }

  const shutdown = createShutdown({ graceMs: common.SHUTDOWN_GRACE_MS, logger });
  const graceful = closeWithGrace(
    {
      // A backstop: every step is bounded already, unless the event loop itself is stuck.
      delay: shutdownBoundMs(common.SHUTDOWN_GRACE_MS) + 1_000,
      logger: false,
      onTimeout: (delayMs) => logger.fatal({ delayMs }, `${name} did not stop in time; exiting`),
      onSecondSignal: (signal) => logger.warn({ signal }, `second ${signal}: exiting at once`),
      onSecondError: (err) => logger.fatal({ err }, `${name} failed again while stopping; exiting`),
    },
    async ({ signal, err }) => {
      if (err) logger.error({ err }, `${name} crashed; shutting down`);
      else logger.info({ signal }, `${name} shutting down`);
      const report = await shutdown.run();
      logger.info({ durationMs: report.durationMs, clean: report.clean }, `${name} stopped`);
      await endLogger(logger, SHUTDOWN_FLUSH_MS);
      if (!report.clean) throw new Error(`${name} did not stop cleanly`); // exit code 1
    },
  );

  const poolMax = definition.poolMax?.(config) ?? common.DATABASE_POOL_MAX;
  const database = createDb({
    url: common.DATABASE_URL,
    poolMax,
    applicationName: `gleaner-${name}`,
    onIdleError: (err) =>
      logger.warn({ err }, 'idle Postgres connection failed; it will be replaced'),
  });

  const connections: Redis[] = [];
  const connect = (role: 'producer' | 'worker') => {
    const connection = createRedisConnection(common, role);
    connection.on('error', (err: Error) => logger.warn({ err, role }, 'redis connection error'));
    connections.push(connection);
    return connection;
  };
  const redis = connect('producer');
  shutdown.add('connections', {
    name: 'redis',
    run: () => connections.forEach((connection) => connection.disconnect()),
  });
  // Steps run last-added first: Postgres closes, then this process's claim on the fleet's
  // connection budget (connection-budget.ts) is given back, then Redis closes.
  let budgetClaim: BudgetClaim | undefined;
  const budgetSetting = common.DATABASE_MAX_CONNECTIONS;
  if (budgetSetting !== 0)
    shutdown.add('connections', {
      name: 'connection budget',
      run: () => budgetClaim?.release(),
    });
  shutdown.add('connections', { name: 'postgres', run: () => database.close() });
  const queues = createQueues(redis, common.QUEUE_PREFIX);
  shutdown.add('connections', { name: 'queues', run: () => closeQueues(queues) });
  // Spans still buffered go out last; with no exporter there is nothing to flush.
  if (telemetry.isExporting)
    shutdown.add('connections', { name: 'telemetry', run: () => telemetry.shutdown() });

  try {
    // This process's pool, claimed from the fleet's Postgres budget before any work starts.
    if (budgetSetting !== 0) {
      const claim = await claimConnectionBudget({
        redis,
        prefix: common.QUEUE_PREFIX,
        service: name,
        pool: poolMax,
        budget: async () =>
          budgetSetting === undefined
            ? {
                connections: await serverConnectionBudget(database.pool),
                source: 'max_connections',
              }
            : { connections: budgetSetting, source: 'DATABASE_MAX_CONNECTIONS' },
      });
      budgetClaim = claim;
      logger.info(
        { pool: poolMax, budget: claim.budget, heldByOthers: claim.usedByOthers },
        'postgres connections claimed from the fleet budget',
      );
    }
    const part =
      (await definition.start({
        config,
        logger,
        database,
        redis,
        queues,
        workerConnection: () => connect('worker'),
        onShutdown: (step, run) => shutdown.add('work', { name: step, run }),
      })) ?? {};

    const healthPort = definition.healthPort?.(config) ?? 0;
    if (healthPort > 0) {
      const health = await startHealthServer({
        port: healthPort,
        service: name,
        check: async (): Promise<HealthReport> => {
          const [postgres, own] = await Promise.all([
            answersWithin(() => pingDb(database.pool), HEALTH_PROBE_MS),
            part.health?.() ?? { ok: true },
          ]);
          const redisReady = connections.every((connection) => connection.status === 'ready');
          return {
            ok: redisReady && postgres && own.ok,
            details: { redis: redisReady, postgres, ...own.details },
          };
        },
      });
      shutdown.add('connections', { name: 'health server', run: () => health.close() });
    }
    logger.info(
      {
        ...part.summary,
        // One Redis, or a cluster (REDIS_CLUSTER_NODES) and how many nodes it was given.
        redis: redis.isCluster
          ? `cluster of ${common.REDIS_CLUSTER_NODES?.length} nodes`
          : 'server',
        healthPort: healthPort || undefined,
        tracesExported: telemetry.isExporting || undefined,
      },
      `${name} started`,
    );
    return { ok: true, config, logger };
  } catch (error) {
    logger.error({ err: error }, `${name} failed to start`);
    graceful.uninstall();
    await shutdown.run();
    await endLogger(logger, SHUTDOWN_FLUSH_MS);
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, error: new ServiceStartError(message, { cause: error }) };
  }
}
