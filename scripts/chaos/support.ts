/**
 * Set-up shared by the chaos checks: a temp dir with every process's log, a `redis-server` and a
 * Postgres database of the check's own, the services as real OS processes that can be killed
 * and restarted, and waiting for a run while counting its postings. The teardown, settings
 * helpers and fixture sites come from the benches' support (scripts/bench/support.ts).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createDb,
  getRun,
  insertSite,
  type DbHandle,
  type RunRow,
  type SiteRow,
} from '@gleaner/db';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  waitForRedis,
  type Queues,
  type RedisClient,
  type RedisTarget,
} from '@gleaner/queue';
import {
  createTestDatabase,
  startRedisCluster,
  startRedisServer,
  startService,
  waitForLog,
  type RedisCluster,
  type RedisServer,
  type ServiceName,
  type ServiceProcess,
} from '@gleaner/testing';
import { integerFrom, TERMINAL_RUN_STATUSES, type Teardown } from '../bench/support.js';

export type Progress = (line: string) => void;

/** Progress lines on stderr, prefixed with the check's name. */
export function progressFor(check: string): Progress {
  return (line) => process.stderr.write(`chaos ${check}: ${line}\n`);
}

// ---------------------------------------------------------------------------------------------
// Timing every check hands its services

/** The stall and reconciler settings a check runs its services with (printed at its start). */
export interface ServiceTiming {
  /** SCHEDULER_POLL_INTERVAL_MS: one scheduler pass (scheduling, reconciling) this often. */
  pollIntervalMs: number;
  /** RECONCILE_GRACE_MS: how old a pending row must be before its missing job counts as lost. */
  reconcileGraceMs: number;
  /** RUN_DEADLINE_MS: a run still active this long after it started is failed. */
  runDeadlineMs: number;
  /** WORKER_LOCK_DURATION_MS, WORKER_STALLED_INTERVAL_MS. */
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** WORKER_MAX_STALLED_COUNT: one stall limit for every stage; unset keeps each stage's own. */
  maxStalledCount: number | undefined;
}

export const TIMING_USAGE = `  CHAOS_POLL_INTERVAL_MS (2000), CHAOS_RECONCILE_GRACE_MS (10000), CHAOS_RUN_DEADLINE_MS (900000),
  CHAOS_LOCK_DURATION_MS (10000), CHAOS_STALLED_INTERVAL_MS (5000),
  CHAOS_MAX_STALLED_COUNT (unset: each stage's own stall limit),
  CHAOS_KEEP_DIR=1 (keep the temp dir with the logs even when the check passes),
  CHAOS_LOG_LEVEL (info: the services' LOG_LEVEL; debug shows each scheduler pass)
`;

/**
 * The timing from the environment. Defaults: a pass every 2 s; a pending row quiet for 10 s has
 * lost its job; a run's deadline (15 min) beyond every check's own wait (10 min), so that a
 * check sees a stuck run as stuck rather than as failed by the deadline; locks of 10 s checked
 * every 5 s, so that a killed worker's jobs are back within ~15 s instead of BullMQ's 60 s;
 * each stage's own stall limit, as a worker runs by default.
 */
export function timingFrom(usage: string): ServiceTiming {
  return {
    pollIntervalMs: integerFrom('CHAOS_POLL_INTERVAL_MS', 2_000, { min: 100 }, usage),
    reconcileGraceMs: integerFrom('CHAOS_RECONCILE_GRACE_MS', 10_000, { min: 0 }, usage),
    runDeadlineMs: integerFrom('CHAOS_RUN_DEADLINE_MS', 900_000, { min: 1_000 }, usage),
    lockDurationMs: integerFrom('CHAOS_LOCK_DURATION_MS', 10_000, { min: 100 }, usage),
    stalledIntervalMs: integerFrom('CHAOS_STALLED_INTERVAL_MS', 5_000, { min: 100 }, usage),
    maxStalledCount: process.env.CHAOS_MAX_STALLED_COUNT
      ? integerFrom('CHAOS_MAX_STALLED_COUNT', 0, { min: 0, max: 100 }, usage)
      : undefined,
  };
}

function timingEnv(timing: ServiceTiming): Record<string, string> {
  return {
    SCHEDULER_POLL_INTERVAL_MS: String(timing.pollIntervalMs),
    RECONCILE_GRACE_MS: String(timing.reconcileGraceMs),
    RUN_DEADLINE_MS: String(timing.runDeadlineMs),
    WORKER_LOCK_DURATION_MS: String(timing.lockDurationMs),
    WORKER_STALLED_INTERVAL_MS: String(timing.stalledIntervalMs),
    ...(timing.maxStalledCount === undefined
      ? {}
      : { WORKER_MAX_STALLED_COUNT: String(timing.maxStalledCount) }),
  };
}

// ---------------------------------------------------------------------------------------------
// The check's own Redis, database and temp dir

export interface ChaosStack<R extends RedisServer | RedisCluster = RedisServer> {
  /** Temp dir: `logs/` (one file per process), `redis/` (the server's AOF and log). */
  dir: string;
  logDir: string;
  /** The check's own Redis: one `redis-server`, or a 3-master cluster (`redis: 'cluster'`). */
  redis: R;
  databaseName: string;
  handle: DbHandle;
  /** A producer connection to the check's Redis (fails fast while it is down). */
  producer: RedisClient;
  queues: Queues;
  /** Every variable the services read that matters here, set explicitly. */
  serviceEnv: Record<string, string>;
  /** Call when the check passed: its temp dir is then removed (unless CHAOS_KEEP_DIR=1). */
  passed(): void;
}

/** CHAOS_REDIS: `server` (one `redis-server`, the default) or `cluster` (3 masters). */
export function redisKindFrom(usage: string): 'server' | 'cluster' {
  const value = process.env.CHAOS_REDIS?.trim() || 'server';
  if (value === 'server' || value === 'cluster') return value;
  process.stderr.write(`CHAOS_REDIS must be server or cluster, not "${value}"\n${usage}`);
  process.exit(2);
}

/**
 * A temp dir, a `redis-server` on a free port with AOF on (or, with `redis: 'cluster'`, a
 * 3-master Redis Cluster of such servers), a fresh migrated database, a pool and producer queues
 * on them; all removed by the teardown. The temp dir is kept, and its path printed, when the
 * check did not call `passed()` (it failed or crashed).
 */
export async function createChaosStack(
  name: string,
  timing: ServiceTiming,
  teardown: Teardown,
  progress: Progress,
): Promise<ChaosStack>;
export async function createChaosStack(
  name: string,
  timing: ServiceTiming,
  teardown: Teardown,
  progress: Progress,
  redisKind: 'cluster',
): Promise<ChaosStack<RedisCluster>>;
export async function createChaosStack(
  name: string,
  timing: ServiceTiming,
  teardown: Teardown,
  progress: Progress,
  redisKind: 'server' | 'cluster' = 'server',
): Promise<ChaosStack<RedisServer | RedisCluster>> {
  const dir = mkdtempSync(path.join(tmpdir(), `gleaner-chaos-${name}-`));
  const logDir = path.join(dir, 'logs');
  const redisDir = path.join(dir, 'redis');
  mkdirSync(logDir);
  mkdirSync(redisDir);
  let passed = false;
  const keep = ['1', 'true'].includes(process.env.CHAOS_KEEP_DIR ?? '');
  teardown.add('remove temp dir', async () => {
    rmSync(redisDir, { recursive: true, force: true });
    if (passed && !keep) rmSync(dir, { recursive: true, force: true });
    else progress(`logs kept in ${logDir}`);
  });
  progress(`temp dir ${dir}`);

  let redis: RedisServer | RedisCluster;
  let redisEnv: Record<string, string>;
  let target: RedisTarget;
  if (redisKind === 'cluster') {
    const cluster = await startRedisCluster({ dir: redisDir });
    redis = cluster;
    teardown.add('stop the redis cluster', () => cluster.stop());
    progress(`redis cluster of 3 masters: ${cluster.nodes}`);
    redisEnv = { REDIS_URL: cluster.servers[0]!.url, REDIS_CLUSTER_NODES: cluster.nodes };
    target = { REDIS_URL: redisEnv.REDIS_URL!, REDIS_CLUSTER_NODES: cluster.nodes.split(',') };
  } else {
    const server = await startRedisServer({ dir: redisDir, detached: true });
    redis = server;
    teardown.add('stop redis-server', () => server.stop());
    progress(`redis-server on port ${server.port} (AOF on, data in ${redisDir})`);
    redisEnv = { REDIS_URL: server.url };
    target = { REDIS_URL: server.url };
  }

  const database = await createTestDatabase(`chaos_${name}`);
  teardown.add('drop chaos database', () => database.drop());
  const handle = createDb({ url: database.url, poolMax: 4, applicationName: 'gleaner-chaos' });
  teardown.add('close chaos db pool', () => handle.close());

  const producer = createRedisConnection(target, 'producer');
  // Down on purpose during outages; each command that needs it reports its own failure.
  producer.on('error', () => undefined);
  teardown.add('disconnect chaos redis', async () => producer.disconnect());
  await waitForRedis(producer);
  const prefix = 'gleaner-chaos';
  const queues = createQueues(producer, prefix);
  // BullMQ re-emits connection errors on each queue and prints them when nobody listens.
  for (const queue of Object.values(queues)) queue.on('error', () => undefined);
  teardown.add('close chaos queues', () => closeQueues(queues));

  return {
    dir,
    logDir,
    redis,
    databaseName: database.name,
    handle,
    producer,
    queues,
    serviceEnv: {
      DATABASE_URL: database.url,
      ...redisEnv,
      QUEUE_PREFIX: prefix,
      HTTP_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: process.env.CHAOS_LOG_LEVEL || 'info',
      LOG_PRETTY: 'false',
      WORKER_HEALTH_PORT: '0',
      SCHEDULER_HEALTH_PORT: '0',
      SHUTDOWN_GRACE_MS: '5000',
      ...timingEnv(timing),
    },
    passed: () => {
      passed = true;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Services as OS processes: replicas that can be killed and restarted

/**
 * `count` replicas of one service, each in the check's temp dir (so no `.env` is read) with its
 * log in `logs/<kind>-<slot>.<generation>.log`. Every process ever started stays in `all`, so
 * that log lines of killed replicas still count.
 */
export class Replicas {
  readonly all: ServiceProcess[] = [];
  private readonly live: (ServiceProcess | undefined)[];
  private readonly generations: number[];
  /** Processes this class killed or stopped on purpose: any other exit is unexpected. */
  private readonly endedOnPurpose = new Set<ServiceProcess>();
  kills = 0;
  /** Set by `stop()`: from then on nothing is killed or started. */
  private stopped = false;

  constructor(
    readonly kind: ServiceName,
    readonly count: number,
    private readonly stack: ChaosStack<RedisServer | RedisCluster>,
    private readonly extraEnv: Record<string, string> = {},
  ) {
    this.live = Array.from({ length: count }, () => undefined);
    this.generations = Array.from({ length: count }, () => 0);
  }

  private launch(slot: number): ServiceProcess {
    const generation = ++this.generations[slot]!;
    const label = `${this.kind}-${slot + 1}.${generation}`;
    const service = startService(this.kind, { ...this.stack.serviceEnv, ...this.extraEnv }, label, {
      cwd: this.stack.dir,
      logFile: path.join(this.stack.logDir, `${label}.log`),
      detached: true,
    });
    this.all.push(service);
    this.live[slot] = service;
    return service;
  }

  /** Starts every replica and waits until each logged "<kind> started". */
  async start(timeoutMs = 60_000): Promise<void> {
    const started = Array.from({ length: this.count }, (_, slot) => this.launch(slot));
    await Promise.all(
      started.map((service) => waitForLog(service, `${this.kind} started`, timeoutMs)),
    );
  }

  /** SIGKILLs one replica at random, waits for its exit and starts its successor at once. */
  async killRandom(): Promise<string | undefined> {
    if (this.stopped) return undefined;
    const slot = Math.floor(Math.random() * this.count);
    const victim = this.live[slot];
    if (
      victim !== undefined &&
      victim.child.exitCode === null &&
      victim.child.signalCode === null
    ) {
      this.endedOnPurpose.add(victim);
      const exited = new Promise((resolve) => victim.child.once('exit', resolve));
      victim.child.kill('SIGKILL');
      await exited;
      this.kills += 1;
    }
    if (this.stopped) return victim?.name;
    this.launch(slot);
    return victim?.name ?? `${this.kind}-${slot + 1}`;
  }

  /** Processes that exited although nobody killed them: "<name> exited with <code>: <stderr>". */
  unexpectedExits(): string[] {
    return this.all
      .filter((service) => !this.endedOnPurpose.has(service))
      .filter((service) => service.child.exitCode !== null || service.child.signalCode !== null)
      .map(
        (service) =>
          `${service.name} exited with ${service.child.exitCode ?? service.child.signalCode}: ${service.stderr().trim().slice(-500)}`,
      );
  }

  /** SIGTERM to the live replicas; resolves once they have exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const service of this.live) if (service !== undefined) this.endedOnPurpose.add(service);
    await Promise.all(
      this.live.flatMap((service) => (service === undefined ? [] : [service.stop()])),
    );
  }
}

/** Starts replicas, stopped by the teardown. */
export async function startReplicas(
  kind: ServiceName,
  count: number,
  stack: ChaosStack<RedisServer | RedisCluster>,
  teardown: Teardown,
  extraEnv: Record<string, string> = {},
): Promise<Replicas> {
  const replicas = new Replicas(kind, count, stack, extraEnv);
  teardown.add(`stop ${kind} processes`, () => replicas.stop());
  await replicas.start();
  return replicas;
}

export interface Killer {
  /** Stops killing; resolves with the names killed, once the kill in progress is done. */
  stop(): Promise<string[]>;
}

/** Every `everyMs`, SIGKILLs a random replica and restarts it at once, until stopped. */
export function startKiller(replicas: Replicas, everyMs: number, progress: Progress): Killer {
  const controller = new AbortController();
  const victims: string[] = [];
  const loop = (async () => {
    for (;;) {
      try {
        await sleep(everyMs, undefined, { signal: controller.signal });
      } catch {
        return; // stopped
      }
      try {
        const victim = await replicas.killRandom();
        if (victim !== undefined) victims.push(victim);
      } catch (error) {
        progress(`kill failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  })();
  return {
    async stop() {
      controller.abort();
      await loop;
      return victims;
    },
  };
}

/** Warning and error lines (pino level ≥ 40) per message, most frequent first (top `limit`). */
export function warningSummary(
  processes: readonly ServiceProcess[],
  limit = 10,
): { msg: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const service of processes)
    for (const line of service.logs)
      if (typeof line.level === 'number' && line.level >= 40) {
        const msg = String(line.msg);
        counts.set(msg, (counts.get(msg) ?? 0) + 1);
      }
  return [...counts]
    .sort(([, a], [, b]) => b - a)
    .slice(0, limit)
    .map(([msg, count]) => ({ msg, count }));
}

// ---------------------------------------------------------------------------------------------
// Sites and runs

/**
 * A fixture career site registered in Postgres with no politeness pauses and its next scheduled
 * run a year away: a check's runs are the ones it starts, not the scheduling pass's.
 */
export async function insertFixtureSite(
  handle: DbHandle,
  siteName: string,
  site: { url: string; sitemapUrl: string },
  extra: Partial<Parameters<typeof insertSite>[1]> = {},
): Promise<SiteRow> {
  return insertSite(handle.db, {
    siteName,
    kind: 'career-site',
    config: { url: site.url, sitemapUrl: site.sitemapUrl },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    maxConcurrency: 16,
    nextRunAt: new Date(Date.now() + 365 * 24 * 3_600_000),
    ...extra,
  });
}

/** Postings of a run by status. */
export async function postingStatusCounts(
  handle: DbHandle,
  runId: string,
): Promise<Record<string, number>> {
  const { rows } = await handle.pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM postings WHERE run_id = $1 GROUP BY status',
    [runId],
  );
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

export interface RunWait {
  run: RunRow | undefined;
  timedOut: boolean;
  seconds: number;
}

/**
 * Polls a run until it is terminal or `timeoutMs` has passed; every 10 s prints its postings
 * by status. Reads Postgres only, so it keeps going while Redis is down.
 */
export async function waitForRunEnd(
  handle: DbHandle,
  runId: string,
  timeoutMs: number,
  progress: Progress,
  label: string,
): Promise<RunWait> {
  const started = performance.now();
  let lastTick = started;
  for (;;) {
    const run = await getRun(handle.db, runId).catch(() => undefined);
    const now = performance.now();
    const seconds = (now - started) / 1000;
    if (run && TERMINAL_RUN_STATUSES.has(run.status)) return { run, timedOut: false, seconds };
    if (now - started > timeoutMs) return { run, timedOut: true, seconds };
    if (now - lastTick >= 10_000) {
      lastTick = now;
      const counts = await postingStatusCounts(handle, runId).catch(() => ({}));
      progress(
        `${label}: ${Math.round(seconds)} s, run ${run?.status ?? '?'}, postings ${JSON.stringify(counts)}`,
      );
    }
    await sleep(1_000);
  }
}

/** Waits until at least `fraction` of the run's `total` postings are no longer pending. */
export async function waitForSettledFraction(
  handle: DbHandle,
  runId: string,
  total: number,
  fraction: number,
  timeoutMs: number,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await handle.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM postings WHERE run_id = $1 AND status <> 'pending'",
      [runId],
    );
    const settled = rows[0]?.n ?? 0;
    if (settled >= total * fraction) return settled;
    if (Date.now() > deadline)
      throw new Error(
        `only ${settled}/${total} postings settled within ${timeoutMs} ms (waiting for ${Math.round(fraction * 100)} %)`,
      );
    await sleep(200);
  }
}
