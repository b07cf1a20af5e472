/**
 * `pnpm bench politeness`: does the per-site gate (packages/http/src/gate) keep every site under
 * its configured `rate_limit_rps` while still using that budget, with several worker replicas
 * crawling many sites at once?
 *
 * Setup: BENCH_SITES (20) fixture career sites, each its own `createFixtureCareerSite` HTTP server,
 * all in ONE helper process (plain `node -e`, importing packages/testing/dist), each registered as
 * a site with its own `rate_limit_rps` (cycled from BENCH_LIMITS, default 2,3,…,10), no random
 * pauses (`min/max_pause_seconds` 0) and `max_concurrency` 4, with BENCH_POSTINGS_PER_SITE (100)
 * postings each. BENCH_WORKERS (4) worker processes share one fresh Postgres database and Redis
 * prefix; one run per site is created and all scrapes are enqueued at once.
 *
 * Arrival times: the helper timestamps every request its fixture servers receive through Node's
 * `http.server.request.start` diagnostics channel, published by node:http as soon as a request
 * head is parsed, before any handler runs (epoch ms, sub-ms precision). No change to
 * packages/testing and no proxy (a proxy would have to rewrite the sitemap's absolute URLs). The
 * helper does nothing else, runs at nice -10 when allowed, and reports its own event-loop delay
 * (`fixtureEventLoopDelayMs`): a stalled loop would bunch timestamps, so read it before blaming
 * the gate for a burst. Only posting pages (`/jobs/<id>`) count; robots.txt and the sitemap are
 * not the rate-limited work.
 *
 * Per site:
 *   maxObservedRps  the most posting requests that arrived in any window [t, t + 1000 ms), t
 *                   being an arrival time (a window holding the most arrivals can always be
 *                   slid to start at one). Half-open on purpose: with perfect spacing of exactly
 *                   1000/limit ms, a closed window [t, t + 1000] would hold limit + 1 starts
 *                   (t, …, t + 1000) although the long-run rate is exactly the limit; the
 *                   half-open window holds `limit`. Target: ≤ limitRps. This is strict: arrival
 *                   jitter of even 1 ms between two requests granted exactly 1000/limit ms apart
 *                   can put limit + 1 in a window; `minGapMs` (smallest gap between consecutive
 *                   arrivals) vs `intervalMs` (1000/limit) tells jitter from a real burst.
 *   utilisation     achieved rate over the busy period ÷ limit, where the busy period runs from
 *                   the site's first to its last posting request (all its crawl jobs are enqueued
 *                   together by the scrape, so it has a backlog the whole time) and the achieved
 *                   rate is (n − 1) / (last − first): n starts span n − 1 gaps, so a perfectly
 *                   paced site scores 1.0. Target: ≥ 0.9.
 *
 * Last stdout line:
 *   {"sites":[{"site","limitRps","maxObservedRps","utilisation",…}],"allWithinLimit",
 *    "minUtilisation","seconds",…}
 * Exit 1 when a run did not succeed or a target is missed (after the JSON line), 2 on bad settings.
 * Run it as `pnpm -s bench politeness`: without -s, pnpm prints its ELIFECYCLE line on stdout
 * after the JSON when the exit code is non-zero.
 *
 * Environment: BENCH_SITES (20), BENCH_POSTINGS_PER_SITE (100), BENCH_LIMITS ("2,3,4,5,6,7,8,9,10";
 * whole numbers, so that a 1-second window can hold exactly the limit), BENCH_WORKERS (4),
 * BENCH_CRAWL_CONCURRENCY (16), BENCH_MAX_CONCURRENCY (4), BENCH_PAGE_BYTES (8000),
 * BENCH_TIMEOUT_MS (240000). TEST_DATABASE_URL / TEST_REDIS_URL as for the tests.
 */
import { spawn } from 'node:child_process';
import { getPriority, setPriority } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createDb, createRun, getRun, insertSite, type DbHandle, type RunRow } from '@gleaner/db';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  enqueue,
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

const USAGE = `usage: pnpm bench politeness
environment: BENCH_SITES (20), BENCH_POSTINGS_PER_SITE (100), BENCH_LIMITS ("2,3,4,5,6,7,8,9,10"),
  BENCH_WORKERS (4), BENCH_CRAWL_CONCURRENCY (16), BENCH_MAX_CONCURRENCY (4),
  BENCH_PAGE_BYTES (8000), BENCH_TIMEOUT_MS (240000)
`;

const TARGET_UTILISATION = 0.9;
const WINDOW_MS = 1000;
const POLL_MS = 250;
/** Niceness of the fixture process, whose event loop is the arrival clock. */
const FIXTURE_NICE = -10;
const TERMINAL_RUN_STATUSES = new Set(['succeeded', 'partial', 'failed', 'cancelled']);

interface Settings {
  sites: number;
  postingsPerSite: number;
  limits: number[];
  workers: number;
  crawlConcurrency: number;
  maxConcurrency: number;
  pageBytes: number;
  timeoutMs: number;
}

function progress(line: string): void {
  process.stderr.write(`bench politeness: ${line}\n`);
}

const round2 = (value: number): number => Math.round(value * 100) / 100;
const round3 = (value: number): number => Math.round(value * 1000) / 1000;

// ---------------------------------------------------------------------------------------------
// Settings

function integerFrom(variable: string, fallback: number, min: number, max: number): number {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new BenchUsageError(
      `${variable} must be a whole number in [${min}, ${max}] (got "${raw}")`,
      USAGE,
    );
  }
  return value;
}

function limitsFrom(variable: string, fallback: number[]): number[] {
  const raw = process.env[variable];
  if (raw === undefined || raw.trim() === '') return fallback;
  const limits = raw.split(',').map((part) => Number(part.trim()));
  if (limits.some((limit) => !Number.isSafeInteger(limit) || limit < 1 || limit > 1000)) {
    throw new BenchUsageError(
      `${variable} must be a comma-separated list of whole numbers in [1, 1000] (got "${raw}")`,
      USAGE,
    );
  }
  return limits;
}

function readSettings(args: string[]): Settings | 'help' {
  let values: { help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (error) {
    throw new BenchUsageError(error instanceof Error ? error.message : String(error), USAGE);
  }
  if (values.help === true) return 'help';
  return {
    sites: integerFrom('BENCH_SITES', 20, 1, 200),
    postingsPerSite: integerFrom('BENCH_POSTINGS_PER_SITE', 100, 2, 10_000),
    limits: limitsFrom('BENCH_LIMITS', [2, 3, 4, 5, 6, 7, 8, 9, 10]),
    workers: integerFrom('BENCH_WORKERS', 4, 1, 32),
    crawlConcurrency: integerFrom('BENCH_CRAWL_CONCURRENCY', 16, 1, 1000),
    maxConcurrency: integerFrom('BENCH_MAX_CONCURRENCY', 4, 1, 1000),
    pageBytes: integerFrom('BENCH_PAGE_BYTES', 8000, 0, 1_000_000),
    timeoutMs: integerFrom('BENCH_TIMEOUT_MS', 240_000, 1000, 3_600_000),
  };
}

// ---------------------------------------------------------------------------------------------
// Teardown: LIFO, each step bounded by its own error handling, run once (also on Ctrl-C)

class Teardown {
  private readonly steps: { what: string; run: () => Promise<unknown> }[] = [];
  private chain: Promise<void> = Promise.resolve();

  add(what: string, run: () => Promise<unknown>): void {
    this.steps.push({ what, run });
  }

  run(): Promise<void> {
    this.chain = this.chain.then(async () => {
      for (let step = this.steps.pop(); step !== undefined; step = this.steps.pop()) {
        try {
          await step.run();
        } catch (error) {
          progress(
            `cleanup "${step.what}" failed: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }
    });
    return this.chain;
  }
}

// ---------------------------------------------------------------------------------------------
// Fixture process: the 20 fixture servers and their arrival log, in one small helper process

/**
 * Runs in the helper (plain Node, ESM, no tsx): creates the fixture sites, timestamps every
 * request from the `http.server.request.start` diagnostics channel (epoch ms with sub-ms
 * precision, `performance.timeOrigin + performance.now()`), and answers one JSON line per
 * command line on stdin: `counts` → {counts: [posting requests per site]}, `dump` →
 * {arrivals: [[ms…] per site], loopDelayMs: {p99, max}}.
 */
const HELPER_SOURCE = `
import diagnosticsChannel from 'node:diagnostics_channel';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
const { createFixtureCareerSite } = await import(process.env.FIXTURE_MODULE);
const config = JSON.parse(process.env.FIXTURE_CONFIG);
const sites = [];
const logs = new Map();
for (let index = 0; index < config.sites; index++) {
  const site = await createFixtureCareerSite({ postings: config.postings, pageBytes: config.pageBytes, seed: index + 1 });
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
    else reply({ error: 'unknown command ' + command });
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

interface FixtureProcess {
  pid: number;
  sites: { url: string; sitemapUrl: string }[];
  counts(): Promise<number[]>;
  dump(): Promise<{ arrivals: number[][]; loopDelayMs: { p99: number; max: number } }>;
  stop(): Promise<void>;
}

async function startFixtureProcess(settings: Settings): Promise<FixtureProcess> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', HELPER_SOURCE], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '',
      FIXTURE_MODULE: pathToFileURL(path.join(repoRoot, 'packages/testing/dist/index.js')).href,
      FIXTURE_CONFIG: JSON.stringify({
        sites: settings.sites,
        postings: settings.postingsPerSite,
        pageBytes: settings.pageBytes,
      }),
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
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  try {
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
    if (child.pid === undefined) throw new Error('fixture process did not start');
    return {
      pid: child.pid,
      sites: ready.sites,
      counts: async () => (await ask<{ counts: number[] }>('counts')).counts,
      dump: () => ask('dump'),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Measures

interface SiteMeasure {
  requests: number;
  /** Most arrivals in any half-open window [t, t + WINDOW_MS). */
  maxInWindow: number;
  /** Smallest gap between consecutive arrivals, ms (null below two requests). */
  minGapMs: number | null;
  /** Gaps between consecutive arrivals, ms: 10th, 50th and 90th percentile. */
  gapPercentilesMs: [number, number, number] | null;
  /** First to last arrival, ms. */
  busyMs: number;
  /** (n − 1) / busy seconds: requests per second while the site had a backlog. */
  achievedRps: number | null;
}

export function measureArrivals(unsorted: readonly number[]): SiteMeasure {
  const times = [...unsorted].sort((a, b) => a - b);
  let maxInWindow = 0;
  let minGapMs: number | null = null;
  for (let start = 0, end = 0; start < times.length; start++) {
    const from = times[start] as number;
    if (end < start) end = start;
    while (end < times.length && (times[end] as number) < from + WINDOW_MS) end++;
    maxInWindow = Math.max(maxInWindow, end - start);
    if (start > 0) {
      const gap = from - (times[start - 1] as number);
      minGapMs = minGapMs === null ? gap : Math.min(minGapMs, gap);
    }
  }
  const gaps = times
    .slice(1)
    .map((time, index) => time - (times[index] as number))
    .sort((a, b) => a - b);
  const percentile = (q: number): number =>
    gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] as number;
  const gapPercentilesMs: SiteMeasure['gapPercentilesMs'] =
    gaps.length > 0 ? [percentile(0.1), percentile(0.5), percentile(0.9)] : null;
  const busyMs = times.length > 1 ? (times.at(-1) as number) - (times[0] as number) : 0;
  return {
    requests: times.length,
    maxInWindow,
    minGapMs,
    gapPercentilesMs,
    busyMs,
    achievedRps: busyMs > 0 ? (times.length - 1) / (busyMs / 1000) : null,
  };
}

function aggregateRps(logs: readonly (readonly number[])[]): number | null {
  const all = logs.flat();
  if (all.length < 2) return null;
  const span = Math.max(...all) - Math.min(...all);
  return span > 0 ? round2((all.length - 1) / (span / 1000)) : null;
}

// ---------------------------------------------------------------------------------------------

interface BenchSite {
  name: string;
  limitRps: number;
  /** Position in the fixture process's lists. */
  index: number;
  siteId: string;
  runId: string;
  publicRunId: string;
}

async function waitForWorkers(
  queues: Queues,
  workers: readonly ServiceProcess[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const served = [queues.scrape, queues.crawl, queues.extract];
  while (Date.now() < deadline) {
    for (const worker of workers) {
      if (worker.child.exitCode !== null)
        throw new Error(
          `${worker.name} exited with ${worker.child.exitCode}: ${worker.stderr().trim()}`,
        );
    }
    const counts = await Promise.all(served.map((queue) => queue.getWorkersCount()));
    if (counts.every((count) => count >= workers.length)) return;
    await sleep(100);
  }
  throw new Error(`${workers.length} workers did not all connect within ${timeoutMs} ms`);
}

async function bench(settings: Settings, teardown: Teardown): Promise<number> {
  const failures: string[] = [];

  // Fixture sites and their arrival log, in one helper process at a raised priority, so that a
  // busy machine delays its timestamps as little as possible (best effort: needs CAP_SYS_NICE).
  const fixtures = await startFixtureProcess(settings);
  teardown.add('stop fixture process', () => fixtures.stop());
  let fixtureNice: number | null = null;
  try {
    setPriority(fixtures.pid, FIXTURE_NICE);
    fixtureNice = getPriority(fixtures.pid);
  } catch {
    progress(
      `could not renice the fixture process to ${FIXTURE_NICE}; timestamps may lag under load`,
    );
  }
  progress(
    `${settings.sites} fixture sites × ${settings.postingsPerSite} postings in process ${fixtures.pid} (nice ${fixtureNice ?? 'unchanged'})`,
  );

  // Database, Redis, workers.
  const database = await createTestDatabase('bench_polite');
  teardown.add('drop bench database', () => database.drop());
  const redis = createTestRedisNamespace('bench-polite');
  teardown.add('delete bench redis keys', () => redis.cleanup());
  const handle: DbHandle = createDb({
    url: database.url,
    poolMax: 4,
    applicationName: 'gleaner-bench',
  });
  teardown.add('close bench db pool', () => handle.close());
  const producer = createRedisConnection(redis.url, 'producer');
  teardown.add('disconnect bench redis', async () => producer.disconnect());
  await waitForRedis(producer);
  const queues = createQueues(producer, redis.prefix);
  teardown.add('close bench queues', () => closeQueues(queues));

  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    HTTP_ALLOW_PRIVATE_NETWORKS: 'true',
    LOG_LEVEL: 'warn',
    WORKER_CONCURRENCY_CRAWL: String(settings.crawlConcurrency),
  };
  const workers: ServiceProcess[] = [];
  teardown.add('stop workers', () => Promise.all(workers.map((worker) => worker.stop())));
  for (let index = 0; index < settings.workers; index++) {
    workers.push(startService('worker', env, `bench-worker-${index + 1}`));
  }
  await waitForWorkers(queues, workers);
  progress(
    `${settings.workers} workers ready (pids ${workers.map((w) => w.child.pid).join(', ')}; crawl concurrency ${settings.crawlConcurrency} each)`,
  );

  // Sites and runs.
  const sites: BenchSite[] = [];
  for (const [index, fixture] of fixtures.sites.entries()) {
    const limitRps = settings.limits[index % settings.limits.length] as number;
    const name = `bench-politeness-${String(index + 1).padStart(2, '0')}`;
    const row = await insertSite(handle.db, {
      siteName: name,
      kind: 'career-site',
      config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
      rateLimitRps: limitRps,
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      maxConcurrency: settings.maxConcurrency,
    });
    const created = await createRun(handle.db, { siteId: row.id, trigger: 'manual' });
    sites.push({
      name,
      limitRps,
      index,
      siteId: row.id,
      runId: created.id,
      publicRunId: created.runId,
    });
  }
  progress(`limits (rps): ${sites.map((site) => site.limitRps).join(', ')}`);

  const started = performance.timeOrigin + performance.now();
  await Promise.all(
    sites.map((site) => enqueue(queues, 'scrape', { runId: site.runId, siteId: site.siteId })),
  );
  progress(`${sites.length} scrapes enqueued`);

  const runs = new Map<string, RunRow>();
  let lastReport = started;
  let timedOut = false;
  for (;;) {
    await sleep(POLL_MS);
    const rows = await Promise.all(sites.map((site) => getRun(handle.db, site.runId)));
    for (const row of rows) if (row) runs.set(row.id, row);
    const done = rows.filter((row) => row && TERMINAL_RUN_STATUSES.has(row.status)).length;
    if (done === sites.length) break;
    for (const worker of workers) {
      if (worker.child.exitCode !== null)
        throw new Error(
          `${worker.name} exited with ${worker.child.exitCode} mid-run: ${worker.stderr().trim()}`,
        );
    }
    const now = performance.timeOrigin + performance.now();
    if (now - started > settings.timeoutMs) {
      timedOut = true;
      failures.push(
        `${sites.length - done} runs still not terminal after ${settings.timeoutMs} ms`,
      );
      break;
    }
    if (now - lastReport >= 5_000) {
      lastReport = now;
      const fetched = (await fixtures.counts()).reduce((sum, count) => sum + count, 0);
      progress(
        `  … ${((now - started) / 1000).toFixed(0)} s: ${fetched}/${sites.length * settings.postingsPerSite} posting requests, ${done}/${sites.length} runs done`,
      );
    }
  }
  const seconds = (performance.timeOrigin + performance.now() - started) / 1000;
  const { arrivals, loopDelayMs } = await fixtures.dump();

  // Per-site results.
  const results = sites.map((site) => {
    const log = arrivals[site.index] ?? [];
    const measure = measureArrivals(log);
    const run = runs.get(site.runId);
    const utilisation =
      measure.achievedRps === null ? null : round3(measure.achievedRps / site.limitRps);
    return {
      site: site.name,
      limitRps: site.limitRps,
      maxObservedRps: measure.maxInWindow,
      utilisation,
      requests: measure.requests,
      intervalMs: round2(1000 / site.limitRps),
      minGapMs: measure.minGapMs === null ? null : round2(measure.minGapMs),
      /** 10th, 50th, 90th percentile of the gaps between consecutive posting requests. */
      gapP10P50P90Ms: measure.gapPercentilesMs?.map(round2) ?? null,
      busySeconds: round2(measure.busyMs / 1000),
      /** From the scrape enqueue to the site's first posting request. */
      firstRequestSeconds: log.length > 0 ? round2((Math.min(...log) - started) / 1000) : null,
      runStatus: run?.status ?? null,
      readyCount: run?.readyCount ?? null,
      errorsCount: run?.errorsCount ?? null,
    };
  });

  for (const result of results) {
    progress(
      `${result.site}: limit ${result.limitRps} rps, max ${result.maxObservedRps} in 1 s, ` +
        `utilisation ${result.utilisation ?? '–'}, ${result.requests} requests over ${result.busySeconds} s, ` +
        `gaps min ${result.minGapMs ?? '–'} / p10-p50-p90 ${result.gapP10P50P90Ms?.join('-') ?? '–'} ms (interval ${result.intervalMs} ms), run ${result.runStatus}`,
    );
    if (result.maxObservedRps > result.limitRps)
      failures.push(
        `target missed: ${result.site} had ${result.maxObservedRps} requests in 1 s > limit ${result.limitRps} (min gap ${result.minGapMs} ms vs ${result.intervalMs} ms)`,
      );
    if (result.utilisation === null || result.utilisation < TARGET_UTILISATION)
      failures.push(
        `target missed: ${result.site} utilisation ${result.utilisation ?? 'n/a'} < ${TARGET_UTILISATION}`,
      );
    if (
      !timedOut &&
      (result.runStatus !== 'succeeded' || result.readyCount !== settings.postingsPerSite)
    )
      failures.push(
        `${result.site}: run ended ${result.runStatus} with ${result.readyCount}/${settings.postingsPerSite} ready (${result.errorsCount} errors)`,
      );
    if (result.requests !== settings.postingsPerSite)
      progress(
        `WARNING ${result.site}: ${result.requests} posting requests for ${settings.postingsPerSite} postings`,
      );
  }

  const warnings = workers.flatMap((worker) =>
    worker.logs.filter((line) => typeof line.level === 'number' && line.level >= 40),
  );
  for (const line of warnings.slice(0, 5))
    progress(`worker: ${JSON.stringify(line).slice(0, 500)}`);

  const utilisations = results.map((result) => result.utilisation ?? 0);
  const output = {
    sites: results,
    allWithinLimit: results.every((result) => result.maxObservedRps <= result.limitRps),
    minUtilisation: utilisations.length > 0 ? Math.min(...utilisations) : null,
    seconds: round2(seconds),
    postings: settings.sites * settings.postingsPerSite,
    workers: settings.workers,
    crawlConcurrency: settings.crawlConcurrency,
    maxConcurrency: settings.maxConcurrency,
    workerWarnings: warnings.length,
    /** All posting requests ÷ (last − first posting request of any site). */
    aggregateRps: aggregateRps(arrivals),
    fixtureNice,
    fixtureEventLoopDelayMs: { p99: round2(loopDelayMs.p99), max: round2(loopDelayMs.max) },
  };
  for (const failure of failures) progress(`FAIL ${failure}`);
  process.stdout.write(`${JSON.stringify(output)}\n`);
  return failures.length === 0 ? 0 : 1;
}

export const run: BenchModule['run'] = async (args) => {
  const settings = readSettings(args);
  if (settings === 'help') {
    process.stderr.write(USAGE);
    return 0;
  }
  const teardown = new Teardown();
  const onSignal = (signal: NodeJS.Signals): void => {
    progress(`${signal}: cleaning up`);
    void teardown.run().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await bench(settings, teardown);
  } finally {
    await teardown.run();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
};
