/**
 * Set-up shared by the benches that run the real workers against fixture career sites: settings
 * from the environment, a LIFO teardown that also runs on Ctrl-C, the fixture sites with their
 * arrival log in one helper process, a fresh database + Redis prefix + worker processes, and
 * waiting for runs to end.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { workerFragment } from '@gleaner/config';
import { createDb, getRun, type DbHandle, type RunRow } from '@gleaner/db';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  waitForRedis,
  type Queues,
} from '@gleaner/queue';
import {
  createTestDatabase,
  createTestRedisNamespace,
  repoRoot,
  startService,
  type ServiceProcess,
} from '@gleaner/testing';
import { BenchUsageError, type BenchModule } from './bench.js';

export const TERMINAL_RUN_STATUSES = new Set(['succeeded', 'partial', 'failed', 'cancelled']);

export const round2 = (value: number): number => Math.round(value * 100) / 100;
export const round3 = (value: number): number => Math.round(value * 1000) / 1000;

export type Progress = (line: string) => void;

/** Progress lines on stderr, prefixed with the bench's name. */
export function progressFor(bench: string): Progress {
  return (line) => process.stderr.write(`bench ${bench}: ${line}\n`);
}

// ---------------------------------------------------------------------------------------------
// Settings

/** True for `--help`/`-h`; any other argument is a usage error (settings come from the environment). */
export function wantsHelp(args: string[], usage: string): boolean {
  try {
    const { values } = parseArgs({
      args,
      options: { help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    return values.help === true;
  } catch (error) {
    throw new BenchUsageError(error instanceof Error ? error.message : String(error), usage);
  }
}

/** A whole number from the environment, or `fallback` when unset or empty. */
export function integerFrom(
  variable: string,
  fallback: number,
  bounds: { min: number; max?: number },
  usage: string,
): number {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return fallback;
  const max = bounds.max ?? Number.MAX_SAFE_INTEGER;
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < bounds.min || value > max) {
    const range = bounds.max === undefined ? `>= ${bounds.min}` : `in [${bounds.min}, ${max}]`;
    throw new BenchUsageError(`${variable} must be a whole number ${range} (got "${raw}")`, usage);
  }
  return value;
}

/** A concurrency knob parsed by the worker's own schema: same defaults, same bounds. */
export function concurrencyFrom(
  variable: string,
  schema: (typeof workerFragment)['WORKER_CONCURRENCY_CRAWL'],
  usage: string,
): number {
  const raw = process.env[variable];
  const result = schema.safeParse(raw === '' ? undefined : raw);
  if (!result.success)
    throw new BenchUsageError(
      `${variable} ${result.error.issues[0]?.message ?? 'is invalid'} (got "${raw}")`,
      usage,
    );
  return result.data;
}

// ---------------------------------------------------------------------------------------------
// Teardown: LIFO, each step bounded by its own error handling, run once (also on Ctrl-C)

export class Teardown {
  private readonly steps: { what: string; run: () => Promise<unknown> }[] = [];
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly progress: Progress) {}

  add(what: string, run: () => Promise<unknown>): void {
    this.steps.push({ what, run });
  }

  /** Runs (and forgets) every step added so far, last first; safe to call again and concurrently. */
  run(): Promise<void> {
    this.chain = this.chain.then(async () => {
      for (let step = this.steps.pop(); step !== undefined; step = this.steps.pop()) {
        try {
          await step.run();
        } catch (error) {
          this.progress(
            `cleanup "${step.what}" failed: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }
    });
    return this.chain;
  }
}

/**
 * Runs a bench body with a teardown that runs when it settles and on SIGINT/SIGTERM (then the
 * process exits 130). Resolves with the body's exit code.
 */
export async function runWithTeardown(
  progress: Progress,
  body: (teardown: Teardown) => Promise<number>,
): Promise<number> {
  const teardown = new Teardown(progress);
  let cleaning = false;
  // A Ctrl-C often arrives twice (from the terminal, and relayed by pnpm or tsx): a second signal
  // must not kill the process halfway through its cleanup.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (cleaning) return;
    cleaning = true;
    progress(`${signal}: cleaning up`);
    void teardown.run().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await body(teardown);
  } finally {
    await teardown.run();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the child has exited (`exited`). */
export async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** What a forked bench child (the API load generator, the documents bare loop) answers. */
export type ChildAnswer<Result> = { result: Result } | { error: string };

/**
 * Sends a forked bench child one request and resolves with its `{ result }`; rejects with its
 * `{ error }`, or when it exits before it answers. `what` names the child in those errors.
 */
export function askChild<Result>(
  child: ChildProcess,
  request: unknown,
  what: string,
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null, signal: string | null) =>
      reject(new Error(`${what} exited (${signal ?? code}) before it answered`));
    child.once('exit', onExit);
    child.once('message', (answer: ChildAnswer<Result>) => {
      child.off('exit', onExit);
      if ('result' in answer) resolve(answer.result);
      else reject(new Error(`${what}: ${answer.error}`));
    });
    child.send(request as object);
  });
}

/**
 * A bench module's `run`: `--help` prints the usage, anything else runs the body under
 * `runWithTeardown` with the settings read from the arguments and the environment.
 */
export function benchRun<S>(
  progress: Progress,
  usage: string,
  readSettings: (args: string[]) => S | 'help',
  body: (settings: S, teardown: Teardown) => Promise<number>,
): BenchModule['run'] {
  return async (args) => {
    const settings = readSettings(args);
    if (settings === 'help') {
      process.stderr.write(usage);
      return 0;
    }
    return runWithTeardown(progress, (teardown) => body(settings, teardown));
  };
}

/**
 * Ends a bench: each missed target on stderr, the result as JSON on the last line of stdout.
 * Resolves with the exit code (1 when a target was missed).
 */
export function report(progress: Progress, failures: readonly string[], result: unknown): number {
  for (const failure of failures) progress(`FAIL ${failure}`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  return failures.length === 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// Fixture sites and their arrival log, in one helper process

export interface FixtureSiteSpec {
  postings: number;
  pageBytes: number;
  /** Content seed: sites with different seeds have different postings. */
  seed: number;
  /** How long the site takes to answer each request; 0 by default. */
  responseDelayMs?: number;
}

export interface FixtureArrivals {
  /** Posting-page (`/jobs/…`) arrival times per site, epoch ms with sub-ms precision. */
  arrivals: number[][];
  /** The helper's own event-loop delay since start or the last `reset()`. */
  loopDelayMs: { p99: number; max: number };
}

export interface FixtureSites {
  pid: number;
  sites: { url: string; sitemapUrl: string }[];
  /** Posting requests received so far, per site. */
  counts(): Promise<number[]>;
  dump(): Promise<FixtureArrivals>;
  /** Forgets the arrivals and the event-loop delay recorded so far. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs in the helper (plain Node, ESM, no tsx): creates the fixture sites, timestamps every
 * request from the `http.server.request.start` diagnostics channel, which node:http publishes as
 * soon as a request head is parsed, before any handler runs (epoch ms with sub-ms precision,
 * `performance.timeOrigin + performance.now()`), and answers one JSON line per command line on
 * stdin: `counts` → {counts: [posting requests per site]}, `dump` → {arrivals: [[ms…] per site],
 * loopDelayMs: {p99, max}}, `reset` → {reset: true}. Only posting pages (`/jobs/<id>`) are
 * logged: robots.txt and the sitemap are not the rate-limited work.
 */
const HELPER_SOURCE = `
import diagnosticsChannel from 'node:diagnostics_channel';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
const { createFixtureCareerSite } = await import(process.env.FIXTURE_MODULE);
const specs = JSON.parse(process.env.FIXTURE_SITES);
const sites = [];
const logs = new Map();
for (const spec of specs) {
  const site = await createFixtureCareerSite({ postings: spec.postings, pageBytes: spec.pageBytes, seed: spec.seed, responseDelayMs: spec.responseDelayMs ?? 0 });
  sites.push(site);
  logs.set(Number(new URL(site.url).port), []);
}
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
diagnosticsChannel.subscribe('http.server.request.start', ({ request }) => {
  const at = performance.timeOrigin + performance.now();
  const log = logs.get(request.socket.localPort);
  if (log !== undefined && request.url.startsWith('/jobs/')) log.push(at);
});
const ports = sites.map((site) => Number(new URL(site.url).port));
const reply = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
let pending = '';
process.stdin.setEncoding('utf8').on('data', (chunk) => {
  pending += chunk;
  for (let newline = pending.indexOf('\\n'); newline >= 0; newline = pending.indexOf('\\n')) {
    const command = pending.slice(0, newline).trim();
    pending = pending.slice(newline + 1);
    if (command === 'counts') reply({ counts: ports.map((port) => logs.get(port).length) });
    else if (command === 'dump')
      reply({
        arrivals: ports.map((port) => logs.get(port)),
        loopDelayMs: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      });
    else if (command === 'reset') {
      for (const log of logs.values()) log.length = 0;
      loop.reset();
      reply({ reset: true });
    } else reply({ error: 'unknown command ' + command });
  }
});
const shutDown = () => {
  process.stdin.destroy();
  Promise.all(sites.map((site) => site.close())).finally(() => process.exit(0));
};
process.once('SIGTERM', shutDown);
process.once('SIGINT', shutDown);
reply({ sites: sites.map((site) => ({ url: site.url, sitemapUrl: site.sitemapUrl })) });
`;

/** Niceness of the fixture process, whose event loop is the arrival clock. */
const FIXTURE_NICE = -10;

/**
 * Starts the fixture sites in one helper process (packages/testing/dist) and raises its priority
 * where allowed (CAP_SYS_NICE), so that a busy machine delays its timestamps as little as
 * possible. Stopped by the teardown.
 */
export async function startFixtureSites(
  specs: readonly FixtureSiteSpec[],
  teardown: Teardown,
  progress: Progress,
): Promise<FixtureSites & { nice: number | null }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', HELPER_SOURCE], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '',
      FIXTURE_MODULE: pathToFileURL(path.join(repoRoot, 'packages/testing/dist/index.js')).href,
      FIXTURE_SITES: JSON.stringify(specs),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-10_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiters: { resolve: (line: string) => void; reject: (error: Error) => void }[] = [];
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      waiters.shift()?.resolve(line);
    }
  });
  child.once('exit', (code, signal) => {
    for (const waiter of waiters.splice(0))
      waiter.reject(
        new Error(`fixture process exited (${code ?? signal}): ${stderr.trim().slice(-2000)}`),
      );
  });
  const nextLine = (): Promise<string> =>
    new Promise((resolve, reject) => waiters.push({ resolve, reject }));
  const ask = async <T>(command: string): Promise<T> => {
    const line = nextLine();
    child.stdin.write(`${command}\n`);
    return JSON.parse(await line) as T;
  };
  const stop = (): Promise<void> => stopChild(child, exited);
  teardown.add('stop fixture process', stop);

  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`fixture process not ready within 60 s: ${stderr.trim()}`)),
      60_000,
    );
  });
  const ready = JSON.parse(
    await Promise.race([nextLine(), timeout]).finally(() => clearTimeout(timer)),
  ) as { sites: { url: string; sitemapUrl: string }[] };
  const pid = child.pid;
  if (pid === undefined) throw new Error('fixture process did not start');

  let nice: number | null = null;
  try {
    setPriority(pid, FIXTURE_NICE);
    nice = getPriority(pid);
  } catch {
    progress(
      `could not renice the fixture process to ${FIXTURE_NICE}; timestamps may lag under load`,
    );
  }
  return {
    pid,
    nice,
    sites: ready.sites,
    counts: async () => (await ask<{ counts: number[] }>('counts')).counts,
    dump: () => ask('dump'),
    reset: async () => {
      await ask('reset');
    },
    stop,
  };
}

/**
 * Most arrivals in any half-open window [t, t + windowMs), t being an arrival time (a window
 * holding the most arrivals can always be slid to start at one). Half-open on purpose: with
 * perfect spacing of exactly windowMs / limit, a closed window would hold limit + 1 starts
 * although the long-run rate is exactly the limit.
 */
export function maxInWindow(sortedTimes: readonly number[], windowMs: number): number {
  let most = 0;
  for (let start = 0, end = 0; start < sortedTimes.length; start++) {
    const from = sortedTimes[start] as number;
    if (end < start) end = start;
    while (end < sortedTimes.length && (sortedTimes[end] as number) < from + windowMs) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

// ---------------------------------------------------------------------------------------------
// Database, Redis and worker processes

export interface BenchStack {
  databaseName: string;
  handle: DbHandle;
  queues: Queues;
  /** Environment for worker processes on this database and Redis prefix. */
  workerEnv: Record<string, string>;
}

/**
 * A fresh database and Redis prefix, a pool (`poolMax` connections, 4 by default) and producer
 * queues on them; removed by the teardown.
 */
export async function createBenchStack(
  name: string,
  teardown: Teardown,
  { poolMax = 4 }: { poolMax?: number } = {},
): Promise<BenchStack> {
  const database = await createTestDatabase(`bench_${name}`);
  teardown.add('drop bench database', () => database.drop());
  const redis = createTestRedisNamespace(`bench-${name}`);
  teardown.add('delete bench redis keys', () => redis.cleanup());
  const handle = createDb({ url: database.url, poolMax, applicationName: 'gleaner-bench' });
  teardown.add('close bench db pool', () => handle.close());
  // TEST_REDIS_CLUSTER_NODES (`pnpm with-redis-cluster pnpm bench …`): on a Redis Cluster.
  const producer = createRedisConnection(redis.target, 'producer');
  teardown.add('disconnect bench redis', async () => producer.disconnect());
  await waitForRedis(producer);
  const queues = createQueues(producer, redis.prefix);
  teardown.add('close bench queues', () => closeQueues(queues));
  return {
    databaseName: database.name,
    handle,
    queues,
    workerEnv: {
      DATABASE_URL: database.url,
      ...redis.env,
      QUEUE_PREFIX: redis.prefix,
      HTTP_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'warn',
    },
  };
}

/** Throws when a worker process has exited. */
export function assertWorkersAlive(workers: readonly ServiceProcess[], when = ''): void {
  for (const worker of workers) {
    if (worker.child.exitCode !== null)
      throw new Error(
        `${worker.name} exited with ${worker.child.exitCode}${when}: ${worker.stderr().trim()}`,
      );
  }
}

/**
 * What every bench adds to its workers' environment from its own: BENCH_WORKER_NODE_OPTIONS
 * (extra NODE_OPTIONS) and BENCH_WORKER_CPU_PROFILE=<dir>, which writes each worker's
 * .cpuprofile there when it exits (cpu-profile.mjs; Node 20 refuses --cpu-prof in NODE_OPTIONS,
 * so a preload starts the inspector's profiler instead).
 */
export function workerProcessEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const nodeOptions = [process.env.BENCH_WORKER_NODE_OPTIONS ?? ''];
  const profileDir = process.env.BENCH_WORKER_CPU_PROFILE;
  if (profileDir) {
    nodeOptions.push(`--import=${new URL('./cpu-profile.mjs', import.meta.url).href}`);
    env.BENCH_CPU_PROFILE_DIR = path.resolve(profileDir);
  }
  const joined = nodeOptions.join(' ').trim();
  if (joined !== '') env.NODE_OPTIONS = joined;
  return env;
}

/**
 * Starts `count` worker processes (services/worker/dist/main.js) and waits until every one of
 * them serves the `served` queues (scrape, crawl and extract by default). Stopped by the teardown.
 */
export async function startWorkerProcesses(
  count: number,
  env: Record<string, string>,
  stack: BenchStack,
  teardown: Teardown,
  timeoutMs = 60_000,
  served: readonly { getWorkersCount(): Promise<number> }[] = [
    stack.queues.scrape,
    stack.queues.crawl,
    stack.queues.extract,
  ],
): Promise<ServiceProcess[]> {
  const workers: ServiceProcess[] = [];
  teardown.add('stop workers', () => Promise.all(workers.map((worker) => worker.stop())));
  for (let index = 0; index < count; index++)
    workers.push(
      startService('worker', { ...env, ...workerProcessEnv() }, `bench-worker-${index + 1}`),
    );
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    assertWorkersAlive(workers);
    const counts = await Promise.all(served.map((queue) => queue.getWorkersCount()));
    if (counts.every((served) => served >= count)) return workers;
    await sleep(100);
  }
  throw new Error(`${count} workers did not all connect within ${timeoutMs} ms`);
}

/** Warning and error lines the workers logged (pino levels ≥ 40). */
export function workerWarnings(workers: readonly ServiceProcess[]): Record<string, unknown>[] {
  return workers.flatMap((worker) =>
    worker.logs.filter((line) => typeof line.level === 'number' && line.level >= 40),
  );
}

export interface RunsOutcome {
  /** The latest row of every run, by run id. */
  runs: Map<string, RunRow>;
  /** performance.now() when each run was first seen terminal, by run id. */
  endedAt: Map<string, number>;
  timedOut: boolean;
}

/**
 * Polls the runs until all are terminal or `timeoutMs` has passed since `startedAt` (a
 * performance.now() value); calls `onTick` about every 5 s with the seconds elapsed and the
 * count of terminal runs. Throws when a worker exits meanwhile.
 */
export async function waitForRuns(
  handle: DbHandle,
  runIds: readonly string[],
  options: {
    workers: readonly ServiceProcess[];
    startedAt: number;
    timeoutMs: number;
    pollMs: number;
    onTick?: (seconds: number, done: number) => Promise<void> | void;
  },
): Promise<RunsOutcome> {
  const runs = new Map<string, RunRow>();
  const endedAt = new Map<string, number>();
  let lastTick = options.startedAt;
  for (;;) {
    await sleep(options.pollMs);
    const rows = await Promise.all(runIds.map((id) => getRun(handle.db, id)));
    const now = performance.now();
    for (const row of rows) {
      if (!row) continue;
      runs.set(row.id, row);
      if (TERMINAL_RUN_STATUSES.has(row.status) && !endedAt.has(row.id)) endedAt.set(row.id, now);
    }
    if (endedAt.size === runIds.length) return { runs, endedAt, timedOut: false };
    assertWorkersAlive(options.workers, ' mid-run');
    if (now - options.startedAt > options.timeoutMs) return { runs, endedAt, timedOut: true };
    if (options.onTick && now - lastTick >= 5_000) {
      lastTick = now;
      await options.onTick((now - options.startedAt) / 1000, endedAt.size);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Peak RSS of a process, from /proc

/** kB value of one `/proc/<pid>/status` field, or 0 when the process is gone. */
function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

export interface RssSampler {
  /** Max of the polled VmRSS and the kernel's VmHWM, in MB; call before the process exits. */
  peakMb(): number;
  stop(): void;
}

export function sampleRss(pid: number, intervalMs = 200): RssSampler {
  let maxRssKb = procStatusKb(pid, 'VmRSS');
  const timer = setInterval(() => {
    maxRssKb = Math.max(maxRssKb, procStatusKb(pid, 'VmRSS'));
  }, intervalMs);
  return {
    peakMb: () => Math.max(maxRssKb, procStatusKb(pid, 'VmRSS'), procStatusKb(pid, 'VmHWM')) / 1024,
    stop: () => clearInterval(timer),
  };
}

/** `pid` and every process below it, from /proc (children of each of its threads). */
export function processTree(pid: number): number[] {
  const pids = [pid];
  for (let index = 0; index < pids.length; index++) {
    try {
      for (const task of readdirSync(`/proc/${pids[index]}/task`)) {
        const children = readFileSync(`/proc/${pids[index]}/task/${task}/children`, 'utf8');
        for (const child of children.split(' ')) if (child.trim()) pids.push(Number(child));
      }
    } catch {
      // The process ended between two reads.
    }
  }
  return pids;
}

/**
 * Peak of the summed VmRSS of a process and its children (a worker and its document parsers),
 * polled every `intervalMs`: the kernel keeps no high-water mark across processes.
 */
export function sampleTreeRss(pid: number, intervalMs = 100): RssSampler {
  const sum = () =>
    processTree(pid).reduce((total, each) => total + procStatusKb(each, 'VmRSS'), 0);
  let maxRssKb = sum();
  const timer = setInterval(() => {
    maxRssKb = Math.max(maxRssKb, sum());
  }, intervalMs);
  return { peakMb: () => Math.max(maxRssKb, sum()) / 1024, stop: () => clearInterval(timer) };
}

// ---------------------------------------------------------------------------------------------
// CPU time per process over a window, from /proc: where a bench's cores went

const CLOCK_TICKS_PER_SECOND =
  Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

export interface CpuSnapshot {
  /** `title` is a Postgres backend's process title, which names its database. */
  processes: Map<number, { comm: string; ticks: number; title?: string }>;
  /**
   * Machine-wide user + nice + system ticks (what processes' utime + stime add up to; irq and
   * softirq time, much of it our own loopback traffic, is left out) and ticks stolen by the host.
   */
  busyTicks: number;
  stealTicks: number;
}

function readProcessTitle(pid: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return undefined;
  }
}

/**
 * Postgres serves everyone on this machine: a backend counts for the bench only when it is
 * connected to the bench's database; server-wide processes (WAL writer, checkpointer…) count too.
 */
function postgresLabel(title: string | undefined, benchDatabase: string | undefined): string {
  // e.g. "postgres: 15/main: postgres gleaner_t_bench_1a2b 127.0.0.1(51234) idle"
  const backend = /^postgres: (?:\S+: )?\S+ (\S+) (?:\S+\(\d+\)|\[local\])/.exec(title ?? '');
  if (!backend) return 'postgres';
  return backend[1] === benchDatabase ? 'postgres' : 'postgres (other databases)';
}

export function cpuSnapshot(): CpuSnapshot {
  const processes: CpuSnapshot['processes'] = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' '); // fields[0] is field 3 (state)
      const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const title = comm === 'postgres' ? readProcessTitle(entry) : undefined;
      processes.set(Number(entry), { comm, ticks, title });
    } catch {
      // The process ended between readdir and read.
    }
  }
  const { busy, steal } = machineTicks();
  return { processes, busyTicks: busy, stealTicks: steal };
}

/** The machine's CPU ticks so far, all cores: busy (user + nice + system) and stolen by the host. */
function machineTicks(): { busy: number; steal: number } {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
  const [user = 0, nice = 0, system = 0, , , , , steal = 0] = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { busy: user + nice + system, steal };
}

/**
 * Waits until the machine is quiet: less than `busyCores` of a core busy over a `windowMs`
 * window, all processes together, or `maxMs` at most. What a timed phase leaves behind (a
 * worker closing its warm-up runs, Postgres writing back what they wrote) otherwise lands in
 * the next phase's time. Returns how long it waited and how busy the last window was.
 */
export async function waitUntilQuiet({
  busyCores = 0.15,
  windowMs = 500,
  maxMs = 20_000,
}: { busyCores?: number; windowMs?: number; maxMs?: number } = {}): Promise<{
  waitedMs: number;
  busyCores: number;
}> {
  const started = performance.now();
  for (;;) {
    const before = machineTicks().busy;
    const from = performance.now();
    await sleep(windowMs);
    const busy =
      (machineTicks().busy - before) / CLOCK_TICKS_PER_SECOND / ((performance.now() - from) / 1000);
    const waitedMs = performance.now() - started;
    if (busy < busyCores || waitedMs >= maxMs) return { waitedMs, busyCores: busy };
  }
}

/** Labels that are not processes: CPU nobody alive at the end accounts for, and host steal. */
const UNTRACKED_CPU = 'exited processes';
const STOLEN_CPU = 'stolen by the host';

/**
 * CPU seconds per label between two snapshots; processes born in between count in full, and
 * processes that came and went in between (another tsc or eslint run) show up as UNTRACKED_CPU.
 */
export function cpuSecondsBetween(
  before: CpuSnapshot,
  after: CpuSnapshot,
  labels: Map<number, string>,
  benchDatabase?: string,
): Record<string, number> {
  const totals: Record<string, number> = {};
  let trackedTicks = 0;
  for (const [pid, { comm, ticks, title }] of after.processes) {
    const spent = ticks - (before.processes.get(pid)?.ticks ?? 0);
    if (spent <= 0) continue;
    trackedTicks += spent;
    const label =
      labels.get(pid) ??
      (comm === 'postgres'
        ? postgresLabel(title, benchDatabase)
        : comm === 'node' || comm.startsWith('node ')
          ? 'other node'
          : comm);
    totals[label] = (totals[label] ?? 0) + spent / CLOCK_TICKS_PER_SECOND;
  }
  const untracked = after.busyTicks - before.busyTicks - trackedTicks;
  if (untracked > 0) totals[UNTRACKED_CPU] = untracked / CLOCK_TICKS_PER_SECOND;
  totals[STOLEN_CPU] = (after.stealTicks - before.stealTicks) / CLOCK_TICKS_PER_SECOND;
  return Object.fromEntries(
    Object.entries(totals)
      .filter(([, seconds]) => seconds >= 0.05)
      .sort(([, a], [, b]) => b - a)
      .map(([label, seconds]) => [label, round2(seconds)]),
  );
}
